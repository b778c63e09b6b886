#pragma once

// Simulated clients of the Redis port doing optimistic locking as Redis documents it: WATCH the
// counter and GET it (pipelined), then MULTI, SET counter v+1, EXEC. An EXEC that answers an array
// committed v+1; nil means another write got in after the WATCH (the client starts over); an
// error or a timeout leaves the outcome unknown (the client starts over on a new connection).
// Each round first pipelines three more GETs ahead of the WATCH, each its own send (so the node
// may put them in different ReadIndex rounds).
//
// WATCH is served after ReadIndex at some applied index, and the state machine aborts EXEC when
// the counter changed after it (docs/decisions/0018-redis-watch-by-index.md). So, checked on
// every committed EXEC:
//   unique      no two committed EXECs set the same value (one of them read a stale counter and
//               should have aborted)
//   fresh       every value read is at least every value committed before the round was sent
//   in order    of the pipelined GETs, each reads at least what the one before it did (the node
//               serves a connection's reads at states in the order they were sent)
//   answered    a command sent to a cluster with no fault active is answered within the request
//               timeout

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "tests/sim/replica/client_group.h"
#include "tests/sim/replica/redis_clients.h"

namespace raftlock::sim::replica {

struct RedisCounterParams {
    size_t clients = 2;
    // Between rounds: enough contention for WATCH to abort, at a fraction of a seed's time.
    uint64_t pause_min_ms = 100;
    uint64_t pause_max_ms = 400;
    bool trace = false;
};

struct RedisCounterStats {
    uint64_t committed = 0;  // EXECs that answered an array
    uint64_t aborted = 0;    // EXECs that answered nil
    uint64_t unknown = 0;    // rounds given up without an answer (a fault, a timeout)
};

struct RedisCounterClient;  // redis_counter_clients.cc

class RedisCounterClients final : public ClientGroup<RedisCounterClient> {
public:
    RedisCounterClients(World& world, const RedisCounterParams& params);
    ~RedisCounterClients() override;

    const RedisCounterStats& stats() const { return stats_; }

    // ClientObserver
    void on_resp(ConnId conn, const std::string& bytes) override;
    void on_closed(ConnId conn) override;

private:
    using Client = RedisCounterClient;
    friend struct RedisCounterClient;

    void step(Client& c) override;
    // Sends the commands of the client's current phase on its connection (opening one).
    void send_phase(Client& c);
    void on_reply(Client& c, const RespReply& r);
    void give_up(Client& c, std::string_view why);
    void committed(Client& c, int64_t value);
    template <typename... Args>
    void trace(const Client& c, fmt::format_string<Args...> format, Args&&... args) {
        if (params_.trace) {
            trace_line(c, fmt::format(format, std::forward<Args>(args)...));
        }
    }
    void trace_line(const Client& c, std::string_view what);

    RedisCounterParams params_;
    RedisCounterStats stats_;
    std::set<int64_t> committed_values_;
    int64_t committed_max_ = 0;
};

}  // namespace raftlock::sim::replica
