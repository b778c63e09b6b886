#pragma once

// Clients of the replicated register map. Each client runs one operation at a time (write, cas
// or a ReadIndex read) through some node, retries a command that times out under the same
// (client, seq) so the session makes it exactly-once, and records a history in the format of
// DESIGN §6 (invoke, then ok / fail / info). Reads are checked as they complete: a read's index
// must cover every command acknowledged before the read was invoked (otherwise the read could
// miss a completed write: not linearizable).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/rng.h"
#include "raft/types.h"
#include "tests/sim/app.h"
#include "tests/sim/invariants.h"
#include "tests/sim/trace.h"

namespace raftlock::sim {

// What a client may do to the cluster.
class ClusterAccess {
public:
    virtual ~ClusterAccess() = default;
    virtual uint64_t now_us() const = 0;
    // A live node to talk to, preferring one that believes it leads; kNoNode when all are down.
    virtual raft::NodeId pick_node(Rng& rng) = 0;
    virtual raft::Status propose(raft::NodeId id, std::string data) = 0;
    virtual void read_index(raft::NodeId id, std::string context) = 0;
    virtual void wake_client(uint32_t client, uint64_t at_us, uint64_t token) = 0;
};

struct HistoryEvent {
    uint64_t time_us = 0;
    uint64_t process = 0;
    std::string type;  // invoke, ok, fail, info
    std::string f;     // read, write, cas
    uint32_t key = 0;
    std::string value;  // JSON: a number, [from,to] or null
    std::string error;  // "mismatch" for a cas whose compare failed (a fail that observed)

    std::string to_json(uint64_t index) const;
};

struct WorkloadStats {
    uint64_t ok = 0;
    uint64_t fail = 0;
    uint64_t info = 0;
};

class Workload {
public:
    Workload(uint64_t seed, uint32_t clients, ClusterAccess& cluster, Checker& checker, Trace& t);

    void start();
    // A client's timer fired (`token` tells a current timer from a stale one).
    void on_wake(uint32_t client, uint64_t token);
    // Node `node` applied a command at `index`, or served a read.
    void on_command_applied(raft::NodeId node, const ApplyOutcome& outcome, raft::Index index);
    // The read may now be served from `app` (it has applied at least up to read_index).
    void on_read_served(raft::NodeId node,
                        const std::string& context,
                        raft::Index read_index,
                        const SimApp& app);

    // Liveness: from now on, count commands committed above the current commit index.
    void begin_heal();
    bool committed_since_heal() const { return committed_since_heal_; }
    // End of run: every acknowledged command took effect.
    void finish();

    const std::vector<HistoryEvent>& history() const { return history_; }
    // The history as JSON lines (DESIGN §6), for jepsen's raftlock-check.
    std::string history_jsonl() const;
    const WorkloadStats& stats() const { return stats_; }

private:
    struct Client {
        uint32_t id = 0;
        uint64_t process = 0;
        uint64_t seq = 0;
        bool busy = false;
        bool is_read = false;
        Command command;  // for writes and cas; for reads: client, seq and key
        raft::NodeId node = raft::kNoNode;
        uint32_t attempts = 0;
        bool maybe_proposed = false;  // an earlier attempt may have reached the log
        uint64_t token = 0;
        raft::Index required_read_index = 0;
    };

    void invoke(Client& c);
    void attempt(Client& c);
    void complete(Client& c,
                  const std::string& type,
                  const std::string& value,
                  const std::string& error = "");
    void wake_at(Client& c, uint64_t delay_us);
    void record(const Client& c,
                const std::string& type,
                const std::string& value,
                const std::string& error = "");
    std::string invoke_value(const Client& c) const;

    Rng rng_;
    ClusterAccess& cluster_;
    Checker& checker_;
    Trace& trace_;
    std::vector<Client> clients_;
    uint64_t next_process_;
    std::vector<HistoryEvent> history_;
    WorkloadStats stats_;
    // The highest index of any acknowledged command: a later read must be at or above it.
    raft::Index max_acked_index_ = 0;
    std::vector<std::pair<uint32_t, uint64_t>> acked_commands_;
    std::optional<raft::Index> heal_commit_index_;
    bool committed_since_heal_ = false;
};

}  // namespace raftlock::sim
