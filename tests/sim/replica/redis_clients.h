#pragma once

// Simulated clients of the Redis port (the real server::RedisFrontend in front of each replica),
// using the lock recipe of the Redis documentation: SET key token NX PX ttl to take it, a Lua
// compare-and-delete to release it. A client counts the lock as its own from the SET's answer
// until (send time of its first attempt + ttl), with no margin (the simulated clocks do not
// drift), or until it sends the release; a retried SET that answers nil is followed by a GET to
// learn whether an earlier attempt took the lock.
//
// raftlock's Redis writes go through the log and its reads through ReadIndex, and a key's TTL runs
// on cluster time, which never runs ahead of the leader's clock. So, checked on every event:
//   one holder     no two clients count the lock as theirs at once
//   reads          a GET answered before the holder's validity ends returns the holder's token
//   answered       a command sent to a cluster with no fault active is answered within the
//                  request timeout

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/sim/replica/client_group.h"

namespace raftlock::sim::replica {

struct RedisClientParams {
    size_t clients = 3;
    int64_t ttl_ms = 1000;
    uint64_t hold_min_ms = 10;
    uint64_t hold_max_ms = 300;
    bool trace = false;
};

struct RedisClientStats {
    uint64_t acquired = 0;
    uint64_t reads_checked = 0;  // GETs answered while the lock was valid
    uint64_t lapses = 0;
    uint64_t retries = 0;
};

// One RESP reply (the kinds the clients' commands get back).
struct RespReply {
    char kind = 0;     // '+', '-', ':', '$' (bulk), '_' (null), '*' (array)
    std::string text;  // simple string, error, bulk string
    int64_t integer = 0;
    bool nil = false;              // $-1, *-1 or _
    std::vector<RespReply> items;  // an array's
};

// Takes one complete reply off the front of `buffer`; nullopt while it is incomplete. A reply of
// another kind is a failure of the caller's expectations: kind '?' with the text.
std::optional<RespReply> take_resp_reply(std::string& buffer);

struct RedisClient;  // redis_clients.cc

class RedisLockClients final : public ClientGroup<RedisClient> {
public:
    RedisLockClients(World& world, const RedisClientParams& params);
    ~RedisLockClients() override;

    const RedisClientStats& stats() const { return stats_; }

    // ClientObserver
    void on_resp(ConnId conn, const std::string& bytes) override;
    void on_closed(ConnId conn) override;

private:
    using Client = RedisClient;
    friend struct RedisClient;
    enum class Op : uint8_t { kNone, kSet, kGet, kRelease };

    void step(Client& c) override;
    void send(Client& c, Op op, statemachine::redis::Argv argv);
    void resend(Client& c);
    void on_reply(Client& c, const RespReply& r);
    void begin_hold(Client& c);
    void end_hold(Client& c, uint64_t at_us, bool lapsed);
    void check_lapse(Client& c);
    // A trace line, formatted only when tracing is on.
    template <typename... Args>
    void trace(const Client& c, fmt::format_string<Args...> format, Args&&... args) {
        if (params_.trace) {
            trace_line(c, fmt::format(format, std::forward<Args>(args)...));
        }
    }
    void trace_line(const Client& c, std::string_view what);

    RedisClientParams params_;
    RedisClientStats stats_;
};

}  // namespace raftlock::sim::replica
