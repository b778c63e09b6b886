// Membership changes one server at a time (Raft thesis §4.1). A node uses the latest
// configuration in its log, committed or not, from the moment the entry is appended; a
// truncated configuration entry reverts to the previous one. The leader accepts a change only
// when no other change is uncommitted and it has committed an entry of its own term, which
// closes the hole Ongaro described in the single-server algorithm (raft-dev, 2015).

#include "base/assert.h"
#include "raft/conf_change.h"
#include "raft/raft.h"

namespace raftlock::raft {

void Raft::load_config_from_log() {
    // Restart: the latest configuration entry between the snapshot and the end of the log wins.
    // The scan reads the stored log once; logs are kept short by snapshots.
    log_confs_.clear();
    const Storage& storage = log_.storage();
    const Index last = storage.last_index();
    for (Index lo = storage.first_index(); lo <= last;) {
        StorageResult<std::vector<Entry>> batch = storage.entries(lo, last + 1, 4 << 20);
        RL_ASSERT_MSG(batch.ok(), "cannot read the stored log at startup");
        RL_ASSERT(!batch->empty());
        for (const Entry& e : *batch) {
            if (e.type != EntryType::kConfChange) {
                continue;
            }
            auto record = decode_conf_change(e.data);
            RL_ASSERT_MSG(record.ok(), "corrupt configuration entry in the stored log");
            log_confs_[e.index] = record->conf_state;
        }
        lo += batch->size();
    }
    apply_active_config();
}

void Raft::note_configs(const std::vector<Entry>& entries, Index first_written) {
    // Entries from first_written on were replaced: their configurations are gone (§4.1: a
    // server that truncates a configuration entry falls back to the previous one).
    const bool truncated = log_confs_.lower_bound(first_written) != log_confs_.end();
    log_confs_.erase(log_confs_.lower_bound(first_written), log_confs_.end());
    bool added = false;
    for (const Entry& e : entries) {
        if (e.type != EntryType::kConfChange || e.index < first_written) {
            continue;
        }
        auto record = decode_conf_change(e.data);
        // Our own entries are encoded by us; received ones were checked by check_message
        // (peer_input.h).
        RL_ASSERT_MSG(record.ok(), "malformed configuration entry reached the log");
        log_confs_[e.index] = record->conf_state;
        added = true;
    }
    if (truncated || added) {
        apply_active_config();
    }
}

void Raft::apply_active_config() {
    const ConfState& active = log_confs_.empty() ? base_conf_ : log_confs_.rbegin()->second;
    tracker_.set_conf(active, log_.last_index() + 1);
    if (role_ == Role::kLeader) {
        if (Progress* self = tracker_.progress(id_)) {
            self->match = std::max(self->match, log_.last_stable_index());
            self->recent_active = true;
        }
    }
}

void Raft::on_commit_advanced() {
    // Committed configurations other than the latest committed one can never matter again.
    const Index committed = log_.committed();
    auto first_uncommitted = log_confs_.upper_bound(committed);
    if (first_uncommitted != log_confs_.begin()) {
        base_conf_ = std::prev(first_uncommitted)->second;
        log_confs_.erase(log_confs_.begin(), first_uncommitted);
    }
    if (role_ != Role::kLeader) {
        return;
    }
    // A leader removed (or demoted) by a committed change steps down (thesis §4.2.2).
    if (log_confs_.empty() && !is_voter(base_conf_, id_)) {
        // Tell the remaining members the change is committed before leaving, so they do not
        // wait for the next leader to learn it.
        bcast_append();
        become_follower(current_term_, kNoNode);
        return;
    }
    release_deferred_reads();
}

Status Raft::check_conf_change(const ConfChange& change, std::string* data) const {
    if (role_ != Role::kLeader) {
        return Status(ErrorCode::kProposalDropped, "not the leader");
    }
    if (pending_conf_index_ > log_.committed()) {
        return Status(ErrorCode::kConfChangeRejected,
                      "another configuration change is not committed yet");
    }
    if (!committed_in_current_term()) {
        return Status(ErrorCode::kConfChangeRejected,
                      "the leader has not committed an entry of its term yet");
    }
    auto next = apply_conf_change(tracker_.conf(), change);
    if (!next.ok()) {
        return Status(next.error().code, next.error().message);
    }
    *data = encode_conf_change(ConfChangeRecord{change, *next});
    return Status();
}

Status Raft::propose_conf_change(const ConfChange& change) {
    if (role_ != Role::kLeader) {
        if (role_ == Role::kFollower && leader_id_ != kNoNode &&
            !cfg_.disable_proposal_forwarding) {
            // The leader recomputes the resulting configuration from its own log.
            std::vector<Entry> entries(1);
            entries[0].type = EntryType::kConfChange;
            entries[0].data = encode_conf_change(ConfChangeRecord{change, {}});
            send(Message{
                .type = MessageType::kPropose, .to = leader_id_, .entries = std::move(entries)});
            return Status();
        }
        return Status(ErrorCode::kProposalDropped, "no leader is known");
    }
    std::string data;
    Status valid = check_conf_change(change, &data);
    if (!valid.ok()) {
        return valid;
    }
    std::vector<Entry> entries(1);
    entries[0].type = EntryType::kConfChange;
    entries[0].data = std::move(data);
    return append_proposal(std::move(entries));
}

}  // namespace raftlock::raft
