#pragma once

// The safety invariants, checked continuously: the cluster calls in after every event (for the
// node the event touched) and on every disk write and every application of an entry. The first
// violation is kept; the run stops there.
//
//   election safety     at most one leader per term
//   log matching        two entries with the same index and term hold the same data and follow
//                       entries of the same term (so, by induction, the same prefix), across all
//                       nodes' written logs
//   leader completeness a new leader of term T holds every entry committed in a term before T
//   commit durability   a node replaces a committed entry it holds only on the word of a stale
//                       leader (of a term below the one the entry was committed in: the copy
//                       was never counted), and every node's commit index points at the
//                       committed entry
//   state machine       every node applies exactly the committed sequence (entry and digest)
//   exactly-once        a command (client, seq) takes effect at one log index only
//   corrupt disks       a node whose disk was corrupted at rest refuses its next start and never
//                       runs (observes, applies, restores) again; no other node ever refuses

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "raft/raw_node.h"
#include "raft/storage.h"
#include "raft/types.h"
#include "tests/sim/trace.h"

namespace raftlock::sim {

class Checker {
public:
    explicit Checker(Trace& trace) : trace_(trace) {}

    bool failed() const { return violation_.has_value(); }
    const std::string& violation() const { return *violation_; }
    // Records a violation (the first one wins) and traces it.
    void fail(std::string what);

    // The bootstrap entry is committed before anything runs.
    void on_bootstrap(const raft::Entry& entry);
    // After every event at node `id`.
    void observe(raft::NodeId id, const raft::RawNode& node);
    // The write path: entries about to be written at `id`, whose current term is `term`, over
    // its log `before` (the node's storage as it is just before the write).
    void on_entries_written(raft::NodeId id,
                            raft::Term term,
                            const raft::Storage& before,
                            const std::vector<raft::Entry>& entries);
    void on_snapshot_written(raft::NodeId id, const raft::SnapshotMetadata& meta);
    // The application: one entry applied (digest after it), or a snapshot restored.
    void on_applied(raft::NodeId id, const raft::Entry& entry, uint64_t digest);
    void on_snapshot_restored(raft::NodeId id, raft::Index index, uint64_t digest);
    void on_executed(raft::NodeId id, uint32_t client, uint64_t seq, raft::Index index);
    // Every entry of a node's durable log must have been checked when written.
    void audit_log(raft::NodeId id, const raft::Storage& storage);
    // A bit of a record on `id`'s disk was flipped while it was down.
    void on_disk_corrupted(raft::NodeId id);
    // A start opened the disk (`refusal`: the store's reason to refuse, if it did).
    void on_disk_opened(raft::NodeId id, const std::optional<std::string>& refusal);
    // At the end: every corruption was detected.
    void check_corruption_detected();

    // The highest index known committed.
    raft::Index committed_index() const { return committed_.size() - 1; }
    bool executed(uint32_t client, uint64_t seq) const {
        return executed_at_.count({client, seq}) > 0;
    }
    size_t terms_with_leader() const { return leaders_.size(); }
    uint64_t conf_changes_committed() const { return conf_changes_committed_; }

private:
    struct CommittedEntry {
        raft::Term term = 0;
        uint64_t hash = 0;
        raft::Term commit_term = 0;  // the term in which the entry was first seen committed
    };
    struct LogFact {
        uint64_t hash = 0;
        std::optional<raft::Term> prev_term;
    };

    void check_new_leader(raft::NodeId id, const raft::RawNode& node);
    // A node that refused to start on a corrupt disk must never act again.
    void check_not_refused(raft::NodeId id, std::string_view what);
    void extend_committed(raft::NodeId id, const raft::RawNode& node);
    void check_log_fact(raft::NodeId id, const raft::Entry& e, std::optional<raft::Term> prev);
    void check_overwrite(raft::NodeId id,
                         raft::Term term,
                         const raft::Storage& before,
                         const raft::Entry& e);

    Trace& trace_;
    std::optional<std::string> violation_;
    std::map<raft::Term, raft::NodeId> leaders_;
    std::vector<CommittedEntry> committed_ = std::vector<CommittedEntry>(1);  // [index]
    std::unordered_map<uint64_t, LogFact> log_facts_;  // key: index and term (lookups only)
    std::vector<std::optional<uint64_t>> digest_at_;   // [index]: state digest after it
    std::map<std::pair<uint32_t, uint64_t>, raft::Index> executed_at_;
    uint64_t conf_changes_committed_ = 0;
    uint64_t corrupted_nodes_ = 0;  // bit id: a corrupt disk, not yet opened
    uint64_t refused_nodes_ = 0;    // bit id: refused to start on a corrupt disk
};

// A stable content hash of an entry (type and data), for comparing entries cheaply.
uint64_t entry_hash(const raft::Entry& entry);

}  // namespace raftlock::sim
