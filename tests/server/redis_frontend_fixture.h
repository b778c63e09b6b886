#pragma once

// The Redis front end with a recording output and a backend that only records commands, so that a
// test answers them in any order (redis_frontend_test.cc, redis_pubsub_test.cc).

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/redis_frontend.h"

namespace raftlock::server {
// Named, not anonymous: in a unity build its helpers stay apart from other test files'.
namespace redis_frontend_test {

using redis::Value;

constexpr net::ConnectionId kConn = net::kRespConnectionBit | 1;

struct Output final : RespOutput {
    void send(net::ConnectionId id, std::string bytes) override {
        sent += bytes;
        to[id] += bytes;
    }
    void close(net::ConnectionId) override { closed = true; }
    bool is_open(net::ConnectionId id) const override { return !gone.contains(id); }
    void pause_reading(net::ConnectionId, bool paused) override { this->paused = paused; }
    std::string sent;                             // to any connection
    std::map<net::ConnectionId, std::string> to;  // by connection
    std::set<net::ConnectionId> gone;             // closed for not reading, say
    bool closed = false;
    bool paused = false;
};

struct Backend final : RedisBackend {
    // A WATCH is recorded as argv {"WATCH"}, an EXEC as {"EXEC"} with its transaction.
    struct Call {
        uint64_t ticket;
        redis::Argv argv;
        std::string user;
        redis::Transaction transaction;
    };
    void redis_command(net::ConnectionId,
                       uint64_t ticket,
                       redis::Argv&& argv,
                       const std::string& user) override {
        calls.push_back(Call{ticket, std::move(argv), user, {}});
    }
    void redis_watch(net::ConnectionId, uint64_t ticket, const std::string& user) override {
        calls.push_back(Call{ticket, {"WATCH"}, user, {}});
    }
    void redis_wait(net::ConnectionId,
                    uint64_t ticket,
                    int64_t numreplicas,
                    int64_t timeout_ms) override {
        calls.push_back(Call{
            ticket, {"WAIT", std::to_string(numreplicas), std::to_string(timeout_ms)}, "", {}});
    }
    int64_t redis_replicas_holding() const override { return 2; }
    void redis_transaction(net::ConnectionId,
                           uint64_t ticket,
                           redis::Transaction&& transaction,
                           const std::string& user) override {
        calls.push_back(Call{ticket, {"EXEC"}, user, std::move(transaction)});
    }
    bool redis_users_enabled() const override { return users; }
    bool redis_login(const std::string& user, const std::string& password) override {
        ++logins;
        return user == "bob" && password == "secret";
    }
    std::optional<std::string> redis_read_refusal(const std::string& user) const override {
        if (user == "reader-not") {
            return "NOPERM user \"reader-not\" lacks read on the Redis keyspace";
        }
        return std::nullopt;
    }
    bool users = false;
    int logins = 0;
    void redis_closed(net::ConnectionId) override { ++closes; }
    std::string redis_replication_info() const override { return "role:master\r\n"; }
    size_t redis_key_count() const override { return 3; }
    std::vector<Call> calls;
    int closes = 0;
};

struct Fixture {
    explicit Fixture(RedisFrontendOptions options = {})
        : frontend(std::move(options), output, backend) {
        frontend.on_resp_open(kConn, "127.0.0.1:5000");
    }
    void command(redis::Argv argv) { frontend.on_resp_command(kConn, std::move(argv)); }
    void command_on(net::ConnectionId id, redis::Argv argv) {
        frontend.on_resp_command(id, std::move(argv));
    }
    void answer(size_t call, Value v) {
        frontend.on_reply(kConn, backend.calls.at(call).ticket, v);
    }
    std::string take() { return std::exchange(output.sent, {}); }
    std::string take_from(net::ConnectionId id) { return std::exchange(output.to[id], {}); }

    Output output;
    Backend backend;
    RedisFrontend frontend;
};

}  // namespace redis_frontend_test
}  // namespace raftlock::server
