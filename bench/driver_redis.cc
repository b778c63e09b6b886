// Redis through our own RESP2 client (bench/resp_client.h), the usual single-instance lock:
//   lock    SET lock:<name> <random> NX PX <ttl>, retried every kRetryDelay while it answers nil
//   unlock  EVALSHA of a compare-and-delete script (delete only if the value is still ours)
//   kv      SET / GET kv:<key>
//   watch   keyspace notifications (CONFIG SET notify-keyspace-events K$, SUBSCRIBE
//           __keyspace@0__:kv:<key>) on a second connection read by its own thread
//   keepalive  a compare-and-PEXPIRE script on the last lock taken (the lock's TTL is its lease)
// Redis has no waiter queue: waiting is polling, so hand-off latency and fairness depend on the
// retry delay. Redis is one process, no consensus; it is durable only through its append-only file.

#include <atomic>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "bench/driver.h"
#include "bench/resp_client.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto kIoTimeout = 30s;
constexpr auto kRetryDelay = 1ms;
constexpr int64_t kDefaultLockTtlMs = 30'000;
constexpr std::string_view kReleaseScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";
constexpr std::string_view kExtendScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
    "else return 0 end";

std::string reply_error(const RespReply& r) {
    return r.is_error() ? r.text : std::string("unexpected reply");
}

class RedisSession final : public Session {
public:
    RedisSession(HostPort server, uint64_t seed, int64_t lock_ttl_ms)
        : server_(std::move(server)), random_(seed), lock_ttl_ms_(lock_ttl_ms) {}

    ~RedisSession() override {
        if (watch_thread_.joinable()) {
            stop_ = true;
            watch_conn_.shutdown();
            watch_thread_.join();
            (void)conn_.call({"CONFIG", "SET", "notify-keyspace-events", ""});
        }
    }

    Status open() {
        if (Status s = conn_.connect(server_, kIoTimeout); !s.ok()) {
            return s;
        }
        auto r = conn_.call({"SCRIPT", "LOAD", kReleaseScript});
        if (!r.ok()) {
            return r.error();
        }
        if (r->type != RespReply::Type::kBulk) {
            return "SCRIPT LOAD: " + reply_error(*r);
        }
        release_sha_ = r->text;
        return Done{};
    }

    Status lock(const std::string& name, std::chrono::milliseconds wait, LockHandle& out) override {
        out.name = name;
        out.key = "lock:" + name;
        out.value = fmt::format("{:016x}", random_());
        const std::string ttl = std::to_string(lock_ttl_ms_);
        const auto deadline = Clock::now() + wait;
        for (;;) {
            auto r = conn_.call({"SET", out.key, out.value, "NX", "PX", ttl});
            if (!r.ok()) {
                return r.error();
            }
            if (r->type == RespReply::Type::kSimple) {
                held_ = out;
                return Done{};
            }
            if (r->type != RespReply::Type::kNil) {
                return "SET NX: " + reply_error(*r);
            }
            if (Clock::now() >= deadline) {
                return std::string("lock wait timed out");
            }
            std::this_thread::sleep_for(kRetryDelay);
        }
    }

    Status unlock(const LockHandle& handle) override {
        auto r = conn_.call({"EVALSHA", release_sha_, "1", handle.key, handle.value});
        if (!r.ok()) {
            return r.error();
        }
        if (r->type != RespReply::Type::kInteger) {
            return "EVALSHA: " + reply_error(*r);
        }
        if (r->integer != 1) {
            return std::string("unlock: the lock was no longer ours");
        }
        return Done{};
    }

    Status prepare_key(const std::string& key, const std::string& value) override {
        return put(key, value);
    }

    Status put(const std::string& key, const std::string& value) override {
        auto r = conn_.call({"SET", "kv:" + key, value});
        if (!r.ok()) {
            return r.error();
        }
        if (r->type != RespReply::Type::kSimple) {
            return "SET: " + reply_error(*r);
        }
        return Done{};
    }

    Result<Text, std::string> get(const std::string& key) override {
        auto r = conn_.call({"GET", "kv:" + key});
        if (!r.ok()) {
            return r.error();
        }
        if (r->type == RespReply::Type::kNil) {
            return std::string("GET: no such key");
        }
        if (r->type != RespReply::Type::kBulk) {
            return "GET: " + reply_error(*r);
        }
        return Text{std::move(r->text)};
    }

    Status watch(const std::string& key, WatchSink& sink) override {
        if (watch_thread_.joinable()) {
            return std::string("one watch per session");
        }
        auto c = conn_.call({"CONFIG", "SET", "notify-keyspace-events", "K$"});
        if (!c.ok() || c->type != RespReply::Type::kSimple) {
            return "CONFIG SET notify-keyspace-events: " + (c.ok() ? reply_error(*c) : c.error());
        }
        if (Status s = watch_conn_.connect(server_, 0ms); !s.ok()) {
            return s;
        }
        auto r = watch_conn_.call({"SUBSCRIBE", "__keyspace@0__:kv:" + key});
        if (!r.ok()) {
            return r.error();
        }
        if (r->type != RespReply::Type::kArray) {
            return "SUBSCRIBE: " + reply_error(*r);
        }
        watch_thread_ = std::thread([this, &sink] { read_events(sink); });
        return Done{};
    }

    Status keep_alive() override {
        if (held_.key.empty()) {
            return Done{};
        }
        auto r = conn_.call(
            {"EVAL", kExtendScript, "1", held_.key, held_.value, std::to_string(lock_ttl_ms_)});
        if (!r.ok()) {
            return r.error();
        }
        if (r->type != RespReply::Type::kInteger || r->integer != 1) {
            return "extend: the lock was no longer ours: " + reply_error(*r);
        }
        return Done{};
    }

private:
    void read_events(WatchSink& sink) {
        while (!stop_) {
            auto r = watch_conn_.read_reply();
            if (!r.ok()) {
                return;
            }
            const auto now = Clock::now();
            if (r->type == RespReply::Type::kArray && !r->elements.empty() &&
                r->elements[0].text == "message") {
                sink.event(now);
                sink.armed();
            }
        }
    }

    HostPort server_;
    std::mt19937_64 random_;
    int64_t lock_ttl_ms_;
    LockHandle held_;  // the last lock taken, which keep_alive() extends
    RespClient conn_;
    std::string release_sha_;
    RespClient watch_conn_;
    std::thread watch_thread_;
    std::atomic<bool> stop_{false};
};

class RedisDriver final : public Driver {
public:
    explicit RedisDriver(std::vector<HostPort> servers) : servers_(std::move(servers)) {}

    std::string name() const override { return "redis"; }

    void set_session_timeout(std::chrono::milliseconds timeout) override {
        lock_ttl_ms_ = timeout.count();
    }

    Result<std::unique_ptr<IdleSessions>, std::string> open_idle(
        size_t, std::chrono::milliseconds) override {
        return std::string("not applicable: Redis has no sessions (a lock's lease is its PX)");
    }

    Result<std::unique_ptr<Session>, std::string> open(int index) override {
        const HostPort& server = servers_[static_cast<size_t>(index) % servers_.size()];
        auto session =
            std::make_unique<RedisSession>(server, std::random_device{}() + index, lock_ttl_ms_);
        if (Status s = session->open(); !s.ok()) {
            return s.error();
        }
        return std::unique_ptr<Session>(std::move(session));
    }

private:
    std::vector<HostPort> servers_;
    int64_t lock_ttl_ms_ = kDefaultLockTtlMs;
};

}  // namespace

std::unique_ptr<Driver> make_redis_driver(const std::string& endpoints) {
    auto servers = parse_host_ports(endpoints);
    if (!servers.ok()) {
        return nullptr;
    }
    return std::make_unique<RedisDriver>(std::move(*servers));
}

}  // namespace raftlock::bench
