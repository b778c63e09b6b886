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
    if (peer_input.term_jump_max == 0 || peer_input.read_context_bytes_max == 0) {
        return invalid("config: peer_input limits must be positive");
    }
    // Far below kIndexMax, so kIndexMax - entries cannot wrap (peer_input.cc).
    if (peer_input.entries_per_message_max > (uint64_t{1} << 32)) {
        return invalid("config: peer_input.entries_per_message_max must be at most 2^32");
    }
    // Every entry counts at least 16 bytes (entry_size_bytes), and a message holds at least one:
    // a peer with this node's settings sends at most max_size_per_msg_bytes / 16 + 1 entries, which
    // this node must accept.
    if (peer_input.entries_per_message_max < max_size_per_msg_bytes / 16 + 1) {
        return invalid(
            "config: peer_input.entries_per_message_max is below what max_size_per_msg_bytes lets "
            "a leader send");
    }
    return Status();
}

}  // namespace raftlock::raft
