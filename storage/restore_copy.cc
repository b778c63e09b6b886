#include "storage/restore_copy.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/codec.h"
#include "statemachine/state_machine.h"
#include "storage/durable_store.h"

namespace raftlock::storage {

namespace {

namespace sm = statemachine;

constexpr uint64_t kReadBatchBytes = 16 * 1024 * 1024;

std::string check_members(const raft::ConfState& members) {
    if (members.voters.empty() || !members.learners.empty()) {
        return "the new cluster needs at least one voter (--member ID=HOST:PORT), and no learners";
    }
    for (raft::NodeId id : members.voters) {
        auto address = members.addresses.find(id);
        if (id == raft::kNoNode || address == members.addresses.end() || address->second.empty()) {
            return fmt::format("member {} needs an id above 0 and a Raft address", id);
        }
    }
    return {};
}

// Applies the copy's entries (from, to] to `machine`, as Replica::apply_entries does.
Result<uint64_t, std::string> apply_log(const StoreCore& copy,
                                        raft::Index from,
                                        raft::Index to,
                                        sm::StateMachine& machine) {
    uint64_t applied = 0;
    raft::Index next = from + 1;
    while (next <= to) {
        auto batch = copy.entries(next, to + 1, kReadBatchBytes);
        if (!batch.ok() || batch->empty()) {
            return fmt::format("cannot read the copy's entry {} (its log starts at {})", next,
                               copy.first_index());
        }
        for (const raft::Entry& e : *batch) {
            RL_ASSERT(e.index == next);
            ++next;
            if (e.type == raft::EntryType::kConfChange) {
                continue;  // the old configuration; the new cluster has its own
            }
            if (e.data.empty()) {
                (void)machine.apply(e.index, e.data);  // a leader's term-start entry
                ++applied;
                continue;
            }
            // An entry the state machine cannot decode stops a node; it stops the restore too.
            Result<sm::Command, sm::ErrorCode> command = sm::decode_command(e.data);
            if (!command.ok()) {
                return fmt::format(
                    "the copy's committed entry {} (term {}) does not decode as a command: "
                    "written by a newer raftlockd? Restore with a version that reads it",
                    e.index, e.term);
            }
            (void)machine.apply(e.index, e.data);
            ++applied;
        }
    }
    RL_ASSERT(next == to + 1);
    return applied;
}

}  // namespace

Result<RestoreSummary, std::string> restore_copy(const RestoreOptions& options) {
    if (std::string why = check_members(options.members); !why.empty()) {
        return why;
    }
    std::error_code ec;
    if (std::filesystem::exists(options.to_dir, ec) &&
        !std::filesystem::is_empty(options.to_dir, ec)) {
        return fmt::format("{} is not empty: restore writes a new store, never over one",
                           options.to_dir);
    }
    DurableStoreOptions read_only;
    read_only.read_only = true;
    read_only.entry_cache_bytes_max = 0;
    auto copy = open_durable_store(options.from_dir, read_only);
    if (!copy.ok()) {
        return fmt::format("the copy {}: {}", options.from_dir, copy.error().message);
    }
    const StoreCore& from = **copy;
    const raft::InitialState init = from.initial_state();
    // Committed: what the hard state recorded (lazily: it may lag) and what the snapshot covers.
    const raft::Index last = std::max(init.hard_state.commit, init.snapshot_meta.index);
    if (last == 0) {
        return fmt::format("the copy {} holds no committed entry", options.from_dir);
    }

    sm::StateMachine machine(options.state_machine);
    RestoreSummary summary;
    summary.copy_snapshot_index = init.snapshot_meta.index;
    if (init.snapshot_meta.index > 0) {
        auto snapshot = from.snapshot();
        if (!snapshot.ok()) {
            return fmt::format("cannot read the copy's snapshot at index {}",
                               init.snapshot_meta.index);
        }
        if (machine.restore(snapshot->data) != sm::ErrorCode::kOk) {
            return fmt::format(
                "the copy's snapshot at index {} does not restore: written by a newer "
                "raftlockd?",
                init.snapshot_meta.index);
        }
    }
    auto applied = apply_log(from, init.snapshot_meta.index, last, machine);
    if (!applied.ok()) {
        return applied.error();
    }
    summary.entries_applied = applied.value();
    if (std::string broken = machine.check_invariants(); !broken.empty()) {
        return fmt::format("the rebuilt state breaks an invariant ({}); nothing was written",
                           broken);
    }
    auto term = from.term(last);
    if (!term.ok()) {
        return fmt::format("the copy does not know the term of entry {}", last);
    }
    summary.index = last;
    summary.term = *term;

    raft::Snapshot snapshot;
    snapshot.metadata.index = last;
    snapshot.metadata.term = *term;
    snapshot.metadata.conf_state = options.members;
    snapshot.data = machine.snapshot();
    summary.snapshot_bytes = snapshot.data.size();
    std::filesystem::create_directories(options.to_dir, ec);
    if (ec) {
        return fmt::format("cannot create {}: {}", options.to_dir, ec.message());
    }
    auto fresh = open_durable_store(options.to_dir);
    if (!fresh.ok()) {
        return fmt::format("cannot create the store {}: {}", options.to_dir, fresh.error().message);
    }
    StoreCore& to = **fresh;
    RL_ASSERT(to.last_index() == 0 && to.initial_state().hard_state.empty());
    const bool installed = to.apply_snapshot(snapshot);
    RL_ASSERT(installed);
    // The term goes on from the copy's; nobody has voted in it on the new cluster.
    to.set_hard_state(raft::HardState{*term, raft::kNoNode, last});
    RL_ASSERT(to.last_index() == last && to.first_index() == last + 1);
    return summary;
}

}  // namespace raftlock::storage
