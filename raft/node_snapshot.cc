// InstallSnapshot in chunks (Raft §7): the leader streams the latest snapshot to a follower whose
// next entry was compacted away, one acknowledged chunk at a time, resending a chunk when a
// heartbeat interval passes without progress. The follower assembles the chunks in memory and
// hands the complete snapshot to the application through Ready.

#include <algorithm>
#include <memory>

#include "base/assert.h"
#include "raft/raft.h"

namespace raftlock::raft {

bool Raft::start_snapshot(NodeId to, Progress& pr) {
    StorageResult<Snapshot> snap = log_.storage().snapshot();
    if (!snap.ok()) {
        // The application is producing one; the next heartbeat response retries.
        RL_ASSERT(snap.error().code == ErrorCode::kSnapshotTemporarilyUnavailable);
        return false;
    }
    RL_ASSERT_MSG(!snap->empty(), "log compacted without a snapshot");
    pr.become_snapshot(std::make_shared<const Snapshot>(std::move(snap).value()));
    send_snapshot_chunk(to, pr);
    return true;
}

void Raft::send_snapshot_chunk(NodeId to, const Progress& pr) {
    RL_ASSERT(pr.snapshot != nullptr);
    const Snapshot& snap = *pr.snapshot;
    const uint64_t size = snap.data.size();
    const uint64_t offset = std::min(pr.snapshot_acked_bytes, size);
    const uint64_t length = std::min<uint64_t>(cfg_.snapshot_chunk_bytes, size - offset);
    send(Message{.type = MessageType::kSnapshot,
                 .to = to,
                 .snapshot_meta = snap.metadata,
                 .snapshot_size_bytes = size,
                 .snapshot_offset = offset,
                 .snapshot_chunk = snap.data.substr(offset, length)});
}

void Raft::resend_stalled_snapshots() {
    for (auto& [id, pr] : tracker_.all()) {
        if (pr.state != ProgressState::kSnapshot || id == id_) {
            continue;
        }
        if (!pr.snapshot_progressed) {
            send_snapshot_chunk(id, pr);
        }
        pr.snapshot_progressed = false;
    }
}

void Raft::handle_snapshot_response(const Message& m) {
    Progress* pr = tracker_.progress(m.from);
    if (pr == nullptr || pr->state != ProgressState::kSnapshot || pr->snapshot == nullptr ||
        m.snapshot_meta.index != pr->pending_snapshot) {
        return;
    }
    pr->recent_active = true;
    const uint64_t size = pr->snapshot->data.size();
    const uint64_t received = std::min(m.snapshot_offset, size);
    if (m.reject) {
        pr->snapshot_acked_bytes = received;  // the follower says where to restart
    } else if (received > pr->snapshot_acked_bytes) {
        pr->snapshot_acked_bytes = received;
    } else {
        return;  // duplicate acknowledgement
    }
    pr->snapshot_progressed = true;
    if (pr->snapshot_acked_bytes < size) {
        send_snapshot_chunk(m.from, *pr);
    }
    // When the last chunk is in, the follower answers with an append response instead.
}

void Raft::handle_snapshot_chunk(Message& m) {
    const SnapshotMetadata& meta = m.snapshot_meta;
    auto respond = [&](uint64_t received, bool reject) {
        send(Message{.type = MessageType::kSnapshotResponse,
                     .to = m.from,
                     .reject = reject,
                     .snapshot_meta = meta,
                     .snapshot_offset = received});
    };
    if (meta.index <= log_.committed()) {
        incoming_snapshot_ = IncomingSnapshot{};
        send(
            Message{.type = MessageType::kAppendResponse, .to = m.from, .index = log_.committed()});
        return;
    }
    IncomingSnapshot& in = incoming_snapshot_;
    if (in.meta != meta || in.size_bytes != m.snapshot_size_bytes) {
        if (m.snapshot_offset != 0) {
            respond(0, /*reject=*/true);  // a chunk of a snapshot we have not started
            return;
        }
        in = IncomingSnapshot{meta, m.snapshot_size_bytes, {}};
    }
    if (m.snapshot_offset != in.data.size()) {
        // A duplicate (behind) is acknowledged; a gap (ahead) asks for a resend from here.
        respond(in.data.size(), /*reject=*/m.snapshot_offset > in.data.size());
        return;
    }
    if (m.snapshot_chunk.size() > in.size_bytes - in.data.size()) {
        incoming_snapshot_ = IncomingSnapshot{};  // malformed: longer than announced
        respond(0, /*reject=*/true);
        return;
    }
    in.data += m.snapshot_chunk;
    if (in.data.size() < in.size_bytes) {
        respond(in.data.size(), /*reject=*/false);
        return;
    }
    Snapshot snap{in.meta, std::move(in.data)};
    incoming_snapshot_ = IncomingSnapshot{};
    const Index index = restore(snap) ? log_.last_index() : log_.committed();
    send(Message{.type = MessageType::kAppendResponse, .to = m.from, .index = index});
}

bool Raft::restore(const Snapshot& snap) {
    const SnapshotMetadata& meta = snap.metadata;
    if (meta.index <= log_.committed()) {
        return false;
    }
    RL_ASSERT_MSG(role_ == Role::kFollower, "only a follower installs a snapshot");
    if (log_.match_term(meta.index, meta.term)) {
        // We already hold the entries the snapshot covers: just learn that they are committed.
        log_.commit_to(meta.index);
        on_commit_advanced();
        return false;
    }
    log_.restore(snap);
    base_conf_ = meta.conf_state;
    log_confs_.clear();
    apply_active_config();
    return true;
}

}  // namespace raftlock::raft
