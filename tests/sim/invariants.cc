#include "tests/sim/invariants.h"

#include <algorithm>

#include "base/assert.h"
#include "raft/raft.h"
#include "raft/text.h"
#include "tests/sim/app.h"

namespace raftlock::sim {

namespace {

uint64_t fact_key(raft::Index index, raft::Term term) {
    // Runs stay far below these limits; the asserts make a silent key collision impossible.
    RL_ASSERT(term < (uint64_t{1} << 24));
    RL_ASSERT(index < (uint64_t{1} << 40));
    return index << 24 | term;
}

// A node's bit in the checker's node sets (ids are small).
uint64_t node_bit(raft::NodeId id) {
    RL_ASSERT(id >= 1 && id < 64);
    return uint64_t{1} << id;
}

}  // namespace

uint64_t entry_hash(const raft::Entry& entry) {
    return hash_bytes(entry.data) ^ (static_cast<uint64_t>(entry.type) << 63);
}

void Checker::fail(std::string what) {
    trace_.log("VIOLATION {}", what);
    if (!violation_) {
        violation_ = std::move(what);
    }
}

void Checker::on_bootstrap(const raft::Entry& entry) {
    RL_ASSERT(committed_.size() == 1);
    RL_ASSERT(entry.index == 1);
    committed_.push_back(CommittedEntry{entry.term, entry_hash(entry), entry.term});
}

void Checker::observe(raft::NodeId id, const raft::RawNode& node) {
    check_not_refused(id, "runs");
    const raft::Raft& r = node.raft();
    r.check_invariants();
    if (r.role() == raft::Role::kLeader) {
        auto [it, inserted] = leaders_.emplace(r.term(), id);
        if (!inserted && it->second != id) {
            fail(fmt::format("election safety: nodes {} and {} are both leaders of term {}",
                             it->second, id, r.term()));
        }
        if (inserted) {
            check_new_leader(id, node);
        }
    }
    extend_committed(id, node);
}

void Checker::check_new_leader(raft::NodeId id, const raft::RawNode& node) {
    // Leader completeness (Raft §5.4): entries committed in earlier terms are in the new
    // leader's log. Entries below its first index are inside its snapshot, which only ever
    // holds committed state (checked when snapshots are written).
    const raft::RaftLog& log = node.raft().log();
    const raft::Term term = node.raft().term();
    for (raft::Index i = std::max<raft::Index>(1, log.first_index()); i < committed_.size(); ++i) {
        const CommittedEntry& c = committed_[i];
        if (c.commit_term >= term) {
            continue;
        }
        const std::optional<raft::Term> t = log.term(i);
        if (!t || *t != c.term) {
            fail(fmt::format(
                "leader completeness: node {} became leader of term {} without committed entry "
                "{}/{} (committed in term {}; its log has {})",
                id, term, c.term, i, c.commit_term, t ? fmt::format("term {}", *t) : "nothing"));
            return;
        }
    }
}

void Checker::extend_committed(raft::NodeId id, const raft::RawNode& node) {
    const raft::RaftLog& log = node.raft().log();
    const raft::Index committed = log.committed();
    if (committed < committed_.size()) {
        // The entry at the node's commit index must be the committed one.
        const std::optional<raft::Term> t = log.term(committed);
        if (committed > 0 && t && *t != committed_[committed].term) {
            fail(
                fmt::format("commit durability: node {} has entry {}/{} at its commit index, "
                            "but {}/{} was committed",
                            id, *t, committed, committed_[committed].term, committed));
        }
        return;
    }
    // Bounded by the commit advance; each slice returns at least one entry.
    while (committed_.size() <= committed) {
        const raft::Index lo = committed_.size();
        std::optional<std::vector<raft::Entry>> got = log.slice(lo, committed + 1, 1 << 30);
        if (!got || got->empty()) {
            fail(fmt::format("node {} committed up to {} but cannot read entry {}", id, committed,
                             lo));
            return;
        }
        for (const raft::Entry& e : *got) {
            RL_ASSERT(e.index == committed_.size());
            committed_.push_back(CommittedEntry{e.term, entry_hash(e), node.raft().term()});
            conf_changes_committed_ += e.type == raft::EntryType::kConfChange ? 1 : 0;
            trace_.log("committed {} (seen at node {})", e, id);
        }
    }
}

void Checker::check_log_fact(raft::NodeId id,
                             const raft::Entry& e,
                             std::optional<raft::Term> prev) {
    const LogFact fact{entry_hash(e), prev};
    auto [it, inserted] = log_facts_.emplace(fact_key(e.index, e.term), fact);
    if (!inserted) {
        if (it->second.hash != fact.hash) {
            fail(
                fmt::format("log matching: node {} wrote {} but another node holds different "
                            "data at {}/{}",
                            id, e, e.term, e.index));
        } else if (prev && it->second.prev_term && *prev != *it->second.prev_term) {
            fail(
                fmt::format("log matching: node {} wrote {}/{} after an entry of term {}, "
                            "another node after term {}",
                            id, e.term, e.index, *prev, *it->second.prev_term));
        } else if (!it->second.prev_term) {
            it->second.prev_term = prev;
        }
    }
}

void Checker::check_overwrite(raft::NodeId id,
                              raft::Term term,
                              const raft::Storage& before,
                              const raft::Entry& e) {
    // A lagging node may write an uncommitted entry where another term's entry is committed (it
    // is replaced later). It may even replace its own copy of a committed entry, when a stale
    // leader (of a term before the commit) tells it to: that copy was not among those counted.
    // A leader of the commit term or later must hold the entry, so it can never say so.
    if (e.index >= committed_.size() || committed_[e.index].term == e.term) {
        return;
    }
    const CommittedEntry& c = committed_[e.index];
    raft::StorageResult<raft::Term> held = before.term(e.index);
    if (held.ok() && *held == c.term && term >= c.commit_term) {
        fail(
            fmt::format("commit durability: node {} in term {} replaces entry {}/{}, committed "
                        "in term {}, with {}",
                        id, term, c.term, e.index, c.commit_term, e));
    }
}

void Checker::on_entries_written(raft::NodeId id,
                                 raft::Term term,
                                 const raft::Storage& before,
                                 const std::vector<raft::Entry>& entries) {
    RL_ASSERT(!entries.empty());
    std::optional<raft::Term> prev;
    raft::StorageResult<raft::Term> t = before.term(entries.front().index - 1);
    if (t.ok()) {
        prev = *t;
    }
    for (const raft::Entry& e : entries) {
        check_log_fact(id, e, prev);
        check_overwrite(id, term, before, e);
        prev = e.term;
    }
}

void Checker::on_snapshot_written(raft::NodeId id, const raft::SnapshotMetadata& meta) {
    if (meta.index >= committed_.size()) {
        fail(fmt::format("node {} stores snapshot {} beyond the commit index {}", id,
                         raft::to_string(meta), committed_index()));
    } else if (committed_[meta.index].term != meta.term) {
        fail(fmt::format("node {} stores snapshot {} but {}/{} was committed", id,
                         raft::to_string(meta), committed_[meta.index].term, meta.index));
    }
}

void Checker::on_applied(raft::NodeId id, const raft::Entry& e, uint64_t digest) {
    check_not_refused(id, "applies an entry");
    if (e.index >= committed_.size()) {
        fail(fmt::format("state machine: node {} applied {} beyond the commit index {}", id, e,
                         committed_index()));
        return;
    }
    const CommittedEntry& c = committed_[e.index];
    if (c.term != e.term || c.hash != entry_hash(e)) {
        fail(fmt::format("state machine: node {} applied {} but {}/{} was committed", id, e, c.term,
                         e.index));
        return;
    }
    on_snapshot_restored(id, e.index, digest);
}

void Checker::on_snapshot_restored(raft::NodeId id, raft::Index index, uint64_t digest) {
    check_not_refused(id, "restores a snapshot");
    if (digest_at_.size() <= index) {
        digest_at_.resize(index + 1);
    }
    std::optional<uint64_t>& known = digest_at_[index];
    if (!known) {
        known = digest;
    } else if (*known != digest) {
        fail(
            fmt::format("state machine: node {} diverged at index {} (digest {:016x}, others "
                        "{:016x})",
                        id, index, digest, *known));
    }
}

void Checker::on_executed(raft::NodeId id, uint32_t client, uint64_t seq, raft::Index index) {
    auto [it, inserted] = executed_at_.emplace(std::make_pair(client, seq), index);
    if (!inserted && it->second != index) {
        fail(
            fmt::format("exactly-once: node {} executed command {}.{} at index {}, already "
                        "executed at {}",
                        id, client, seq, index, it->second));
    }
}

void Checker::audit_log(raft::NodeId id, const raft::Storage& storage) {
    const raft::Index first = storage.first_index();
    const raft::Index last = storage.last_index();
    for (raft::Index lo = first; lo <= last;) {
        raft::StorageResult<std::vector<raft::Entry>> got = storage.entries(lo, last + 1, 1 << 30);
        RL_ASSERT(got.ok() && !got->empty());
        for (const raft::Entry& e : *got) {
            auto it = log_facts_.find(fact_key(e.index, e.term));
            if (it == log_facts_.end() || it->second.hash != entry_hash(e)) {
                fail(fmt::format("audit: node {} holds {} that was never written", id, e));
                return;
            }
        }
        lo += got->size();
    }
    const raft::HardState hs = storage.initial_state().hard_state;
    if (hs.commit > last) {
        fail(fmt::format("audit: node {} stores commit {} beyond its last index {}", id, hs.commit,
                         last));
    }
}

void Checker::check_not_refused(raft::NodeId id, std::string_view what) {
    if ((refused_nodes_ & node_bit(id)) != 0) {
        fail(fmt::format("corrupt disk: node {} {} after it refused to start", id, what));
    }
}

void Checker::on_disk_corrupted(raft::NodeId id) {
    corrupted_nodes_ |= node_bit(id);
}

void Checker::on_disk_opened(raft::NodeId id, const std::optional<std::string>& refusal) {
    const bool corrupted = (corrupted_nodes_ & node_bit(id)) != 0;
    if (corrupted && !refusal) {
        fail(fmt::format("corrupt disk: node {} started on a disk corrupted at rest", id));
    } else if (!corrupted && refusal) {
        fail(fmt::format("node {} refused to start on an intact disk: {}", id, *refusal));
    } else if (refusal) {
        corrupted_nodes_ &= ~node_bit(id);
        refused_nodes_ |= node_bit(id);
    }
}

void Checker::check_corruption_detected() {
    for (raft::NodeId id = 1; id < 64; ++id) {
        if ((corrupted_nodes_ & node_bit(id)) != 0) {
            fail(fmt::format("corrupt disk: node {} was never restarted to detect it", id));
        }
    }
}

}  // namespace raftlock::sim
