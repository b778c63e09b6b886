// Log replication: proposals, AppendEntries on both sides, flow control and commitment.

#include <algorithm>

#include "base/assert.h"
#include "raft/conf_change.h"
#include "raft/raft.h"

namespace raftlock::raft {

void Raft::append_entries(std::vector<Entry>&& entries) {
    RL_ASSERT(role_ == Role::kLeader && !entries.empty());
    Index index = log_.last_index();
    for (Entry& e : entries) {
        e.term = current_term_;
        e.index = ++index;
        if (!e.data.empty()) {
            uncommitted_bytes_ += entry_size_bytes(e);
        }
    }
    const Index first = entries.front().index;
    note_configs(entries, first);
    log_.append(std::move(entries));
    // Leader Append-Only (Figure 3): the leader's log only grows, with entries of its term.
    RL_ASSERT(log_.last_index() == index && log_.last_term() == current_term_);
}

Status Raft::append_proposal(std::vector<Entry>&& entries) {
    RL_ASSERT(role_ == Role::kLeader);
    if (entries.empty()) {
        return Status(ErrorCode::kInvalidArgument, "empty proposal");
    }
    if (lead_transferee_ != kNoNode) {
        return Status(ErrorCode::kProposalDropped, "leadership transfer in progress");
    }
    if (!tracker_.is_member(id_)) {
        return Status(ErrorCode::kProposalDropped, "the leader is being removed from the cluster");
    }
    uint64_t bytes = 0;
    for (const Entry& e : entries) {
        bytes += entry_size_bytes(e);
    }
    if (cfg_.max_uncommitted_entries_bytes > 0 && uncommitted_bytes_ > 0 &&
        uncommitted_bytes_ + bytes > cfg_.max_uncommitted_entries_bytes) {
        return Status(ErrorCode::kProposalDropped, "too many uncommitted bytes; retry later");
    }
    // Configuration entries forwarded by followers are checked here, by the leader, against its
    // own log; an invalid one becomes an empty entry so the batch keeps its shape.
    Index index = log_.last_index();
    for (Entry& e : entries) {
        ++index;
        if (e.type != EntryType::kConfChange) {
            continue;
        }
        auto record = decode_conf_change(e.data);
        std::string data;
        if (record.ok() && record->change && check_conf_change(*record->change, &data).ok()) {
            e.data = std::move(data);
            pending_conf_index_ = index;
        } else {
            e = Entry{};
        }
    }
    append_entries(std::move(entries));
    request_bcast();
    return Status();
}

bool Raft::maybe_send_append(NodeId to, bool send_if_empty) {
    RL_ASSERT(role_ == Role::kLeader && to != id_);
    Progress* pr = tracker_.progress(to);
    if (pr == nullptr || pr->is_paused()) {
        return false;
    }
    RL_ASSERT(pr->next >= 1 && pr->next <= log_.last_index() + 1);
    const Index prev_index = pr->next - 1;
    const std::optional<Term> prev_term = log_.term(prev_index);
    if (!prev_term) {
        return start_snapshot(to, *pr);  // the entries the peer needs are compacted away
    }
    std::optional<std::vector<Entry>> entries =
        log_.slice(pr->next, log_.last_index() + 1, cfg_.max_size_per_msg_bytes);
    if (!entries) {
        return start_snapshot(to, *pr);
    }
    if (entries->empty() && !send_if_empty) {
        return false;
    }
    RL_ASSERT(entries->empty() || entries->front().index == pr->next);
    const Index last = entries->empty() ? prev_index : entries->back().index;
    pr->sent_entries(last, !entries->empty());
    pr->commit_sent = std::max(pr->commit_sent, std::min(log_.committed(), last));
    send(Message{.type = MessageType::kAppend,
                 .to = to,
                 .log_term = *prev_term,
                 .index = prev_index,
                 .entries = std::move(*entries),
                 .commit = log_.committed()});
    return true;
}

void Raft::send_append_all(NodeId to, bool send_if_empty) {
    // Bounded by the in-flight window: each send in replicate state takes a slot.
    for (uint32_t i = 0; i <= cfg_.max_inflight_msgs; ++i) {
        if (!maybe_send_append(to, send_if_empty && i == 0)) {
            return;
        }
        const Progress* pr = tracker_.progress(to);
        if (pr == nullptr || pr->state != ProgressState::kReplicate ||
            pr->next > log_.last_index()) {
            return;
        }
    }
}

void Raft::flush() {
    if (bcast_pending_) {
        bcast_pending_ = false;
        if (role_ == Role::kLeader) {
            bcast_append();
        }
    }
}

void Raft::bcast_append() {
    RL_ASSERT(role_ == Role::kLeader);
    for (auto& [id, pr] : tracker_.all()) {
        // A peer that was already sent every entry and the current commit index needs nothing.
        const bool up_to_date = pr.next > log_.last_index() && pr.commit_sent >= log_.committed();
        if (id != id_ && !up_to_date) {
            send_append_all(id, /*send_if_empty=*/true);
        }
    }
}

void Raft::send_heartbeat(NodeId to) {
    const Progress* pr = tracker_.progress(to);
    RL_ASSERT(pr != nullptr);
    // Never tell a follower to commit beyond what it is known to hold (it may lag).
    send(Message{.type = MessageType::kHeartbeat,
                 .to = to,
                 .commit = std::min(pr->match, log_.committed()),
                 .read_round = read_round_});
}

void Raft::bcast_heartbeat() {
    for (auto& [id, pr] : tracker_.all()) {
        if (id != id_) {
            send_heartbeat(id);
        }
    }
}

bool Raft::maybe_commit() {
    RL_ASSERT(role_ == Role::kLeader);
    const Index index = tracker_.committed();
    if (index <= log_.committed()) {
        return false;
    }
    // Acknowledged by a majority: followers acknowledge only what this leader sent them.
    RL_ASSERT(index <= log_.last_index());
    bool countable = log_.term(index) == current_term_;
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
    if (cfg_.negative_controls.commit_earlier_terms_by_counting) {
        countable = true;
    }
#endif
    // Raft §5.4.2: only entries of the current term commit by counting replicas; earlier ones
    // commit with them (Figure 8 shows why).
    if (!countable) {
        return false;
    }
    log_.commit_to(index);
    RL_ASSERT(log_.committed() == index);
    on_commit_advanced();
    return true;
}

void Raft::handle_append_entries(Message& m) {
    // step() made this node a follower of the sender, in the sender's term.
    RL_ASSERT(role_ == Role::kFollower && m.term == current_term_ && leader_id_ == m.from);
    if (m.index < log_.committed()) {
        // Everything up to our commit index is already settled; tell the leader where we are.
        send(
            Message{.type = MessageType::kAppendResponse, .to = m.from, .index = log_.committed()});
        return;
    }
    // Configuration entries are noted before the entries move into the log.
    std::vector<Entry> configs;
    for (const Entry& e : m.entries) {
        if (e.type == EntryType::kConfChange) {
            configs.push_back(e);
        }
    }
    const Index committed_before = log_.committed();
    auto result = log_.maybe_append(m.index, m.log_term, m.commit, std::move(m.entries));
    if (result) {
        if (result->first_written) {
            note_configs(configs, *result->first_written);
        }
        // Committed entries are never rewritten, and the commit index never passes the log.
        RL_ASSERT(log_.committed() >= committed_before && log_.committed() <= log_.last_index());
        if (log_.committed() > committed_before) {
            on_commit_advanced();
        }
        send(
            Message{.type = MessageType::kAppendResponse, .to = m.from, .index = result->last_new});
        return;
    }
    RL_ASSERT(log_.committed() == committed_before);  // a rejected append changes nothing
    // Rejected: hint the leader at the last entry that could match (fast back-off, §5.3).
    const LogPosition hint =
        log_.find_conflict_by_term(std::min(m.index, log_.last_index()), m.log_term);
    send(Message{.type = MessageType::kAppendResponse,
                 .to = m.from,
                 .log_term = hint.term,
                 .index = m.index,
                 .reject = true,
                 .reject_hint = hint.index});
}

void Raft::handle_heartbeat(const Message& m) {
    RL_ASSERT(role_ == Role::kFollower && m.term == current_term_ && leader_id_ == m.from);
    const Index committed_before = log_.committed();
    // A leader never sends a commit index beyond what we acknowledged; one that is beyond our log
    // is ignored (committing a shorter, possibly divergent log would be unsafe).
    if (m.commit <= log_.last_index()) {
        log_.commit_to(m.commit);
    }
    RL_ASSERT(log_.committed() >= committed_before && log_.committed() <= log_.last_index());
    if (log_.committed() > committed_before) {
        on_commit_advanced();
    }
    send(
        Message{.type = MessageType::kHeartbeatResponse, .to = m.from, .read_round = m.read_round});
}

void Raft::handle_append_response(const Message& m) {
    RL_ASSERT(role_ == Role::kLeader && m.term == current_term_);
    Progress* pr = tracker_.progress(m.from);
    if (pr == nullptr) {
        return;
    }
    pr->recent_active = true;
    if (m.reject) {
        Index next_probe = m.reject_hint;
        if (m.log_term > 0) {
            // Skip our own entries of terms the follower cannot have (thesis §5.3 optimization).
            next_probe = log_.find_conflict_by_term(m.reject_hint, m.log_term).index;
        }
        if (pr->maybe_decrease_to(m.index, next_probe)) {
            if (pr->state == ProgressState::kReplicate) {
                pr->become_probe();
            }
            send_append_all(m.from, /*send_if_empty=*/true);
        }
        return;
    }
    const bool updated = pr->maybe_update(m.index);
    // A follower acknowledges only entries this leader sent it (check_message refuses more).
    RL_ASSERT(pr->match <= log_.last_index() && pr->match < pr->next);
    if (pr->state == ProgressState::kSnapshot) {
        // An acknowledgement at or past the snapshot, even a repeated one, ends the transfer;
        // so does the leader's log covering the peer again. If the leader compacted further
        // meanwhile, the next append finds the gap and starts a transfer of the newer snapshot.
        if (pr->match < pr->pending_snapshot && pr->match + 1 < log_.first_index()) {
            return;
        }
        pr->become_probe();
    } else if (!updated) {
        return;  // a stale or duplicate acknowledgement
    }
    if (updated && pr->state == ProgressState::kProbe) {
        pr->become_replicate();
    } else if (pr->state == ProgressState::kReplicate) {
        pr->inflights.free_le(m.index);
    }
    if (maybe_commit()) {
        if (role_ != Role::kLeader) {
            return;  // the commit removed this leader from the configuration
        }
        request_bcast();
    } else {
        send_append_all(m.from);
    }
    if (m.from == lead_transferee_ && pr->match == log_.last_index()) {
        send(Message{.type = MessageType::kTimeoutNow, .to = m.from});
    }
}

void Raft::handle_heartbeat_response(const Message& m) {
    RL_ASSERT(role_ == Role::kLeader && m.term == current_term_);
    Progress* pr = tracker_.progress(m.from);
    if (pr == nullptr) {
        return;
    }
    pr->recent_active = true;
    pr->probe_sent = false;
    if (pr->state == ProgressState::kReplicate && pr->inflights.full()) {
        // Appends may have been lost: free a slot so one more probe-like append goes out.
        pr->inflights.free_first_one();
    }
    if (pr->match < log_.last_index()) {
        send_append_all(m.from, /*send_if_empty=*/true);
    }
    if (m.read_round > pr->read_round_acked) {
        pr->read_round_acked = m.read_round;
        maybe_release_reads();
    }
}

}  // namespace raftlock::raft
