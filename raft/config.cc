#include "raft/config.h"

namespace raftlock::raft {

Status Config::validate() const {
    auto invalid = [](const char* message) { return Status(ErrorCode::kInvalidArgument, message); };
    if (id == kNoNode) {
        return invalid("config: id must be positive (0 means no node)");
    }
    if (heartbeat_tick <= 0) {
        return invalid("config: heartbeat_tick must be positive");
    }
    if (election_tick <= heartbeat_tick) {
        return invalid("config: election_tick must be greater than heartbeat_tick");
    }
    if (max_inflight_msgs == 0) {
        return invalid("config: max_inflight_msgs must be positive");
    }
    if (max_size_per_msg_bytes == 0 || max_committed_size_per_ready_bytes == 0) {
        return invalid("config: message and Ready size limits must be positive");
    }
    if (snapshot_chunk_bytes == 0) {
        return invalid("config: snapshot_chunk_bytes must be positive");
    }
    if (max_pending_reads == 0) {
        return invalid("config: max_pending_reads must be positive");
    }
    return Status();
}

}  // namespace raftlock::raft
