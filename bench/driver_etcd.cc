// etcd 3.4 through its JSON gRPC gateway over HTTP/1.1 (bench/http_client.h), one keep-alive
// connection per client, client i on member i % n:
//   session  /v3/lease/grant (TTL 3600 s unless set_session_timeout says otherwise: longer than
//            any run, so no keepalives are needed except by lock.failover's holder),
//            /v3/lease/revoke when the client closes
//   lock     /v3/lock/lock {name, lease} (the server-side v3lock recipe: a key under the name's
//            prefix, waiting for every older key to go), /v3/lock/unlock {key}
//   kv       /v3/kv/put and /v3/kv/range (linearizable: serializable is false by default)
//   watch    /v3/watch, a chunked stream on a second connection read by its own thread
//   keepalive  /v3/lease/keepalive with one message (the gateway ends the stream after it)
//   idle     leases of their own (bench/idle_etcd.cc)

#include <algorithm>
#include <atomic>
#include <thread>

#include <fmt/format.h>

#include "bench/driver.h"
#include "bench/http_client.h"
#include "bench/idle_sessions.h"
#include "bench/json_text.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto kIoTimeout = 60s;
constexpr int64_t kDefaultLeaseTtlSeconds = 3600;

class EtcdSession final : public Session {
public:
    EtcdSession(HostPort member, int64_t ttl_s)
        : member_(member), http_(member, kIoTimeout), ttl_s_(ttl_s) {}

    ~EtcdSession() override {
        if (watch_thread_.joinable()) {
            stop_ = true;
            watch_http_->shutdown();
            watch_thread_.join();
        }
        if (!lease_id_.empty()) {
            (void)call("/v3/lease/revoke", fmt::format(R"({{"ID":"{}"}})", lease_id_));
        }
    }

    Status open() {
        auto r = call("/v3/lease/grant", fmt::format(R"({{"TTL":{}}})", ttl_s_));
        if (!r.ok()) {
            return "lease grant: " + r.error();
        }
        auto id = json_string_field(r->text, "ID");
        if (!id) {
            return "lease grant: no ID in " + r->text;
        }
        lease_id_ = *id;
        return Done{};
    }

    Status lock(const std::string& name,
                std::chrono::milliseconds /*wait: bounded by kIoTimeout*/,
                LockHandle& out) override {
        auto r = call("/v3/lock/lock", fmt::format(R"({{"name":"{}","lease":"{}"}})",
                                                   base64_encode("lock/" + name), lease_id_));
        if (!r.ok()) {
            return "lock: " + r.error();
        }
        auto key = json_string_field(r->text, "key");
        if (!key) {
            return "lock: no key in " + r->text;
        }
        out.name = name;
        out.key = *key;  // still base64, as unlock wants it
        return Done{};
    }

    Status unlock(const LockHandle& handle) override {
        auto r = call("/v3/lock/unlock", fmt::format(R"({{"key":"{}"}})", handle.key));
        if (!r.ok()) {
            return "unlock: " + r.error();
        }
        return Done{};
    }

    Status prepare_key(const std::string& key, const std::string& value) override {
        return put(key, value);
    }

    Status put(const std::string& key, const std::string& value) override {
        auto r = call("/v3/kv/put", fmt::format(R"({{"key":"{}","value":"{}"}})",
                                                base64_encode("kv/" + key), base64_encode(value)));
        if (!r.ok()) {
            return "put: " + r.error();
        }
        return Done{};
    }

    Result<Text, std::string> get(const std::string& key) override {
        auto r = call("/v3/kv/range", fmt::format(R"({{"key":"{}"}})", base64_encode("kv/" + key)));
        if (!r.ok()) {
            return "range: " + r.error();
        }
        const size_t kvs = r->text.find("\"kvs\"");
        if (kvs == std::string::npos) {
            return std::string("range: no such key");
        }
        auto value = json_string_field(std::string_view(r->text).substr(kvs), "value");
        auto decoded = value ? base64_decode(*value) : std::nullopt;
        if (!decoded) {
            return "range: no value in " + r->text;
        }
        return Text{std::move(*decoded)};
    }

    Status watch(const std::string& key, WatchSink& sink) override {
        if (watch_thread_.joinable()) {
            return std::string("one watch per session");
        }
        watch_http_ = std::make_unique<HttpClient>(member_, 0ms);
        auto status = watch_http_->post_stream(
            "/v3/watch",
            fmt::format(R"({{"create_request":{{"key":"{}"}}}})", base64_encode("kv/" + key)));
        if (!status.ok()) {
            return "watch: " + status.error();
        }
        if (*status != 200) {
            return fmt::format("watch: HTTP {}", *status);
        }
        // The first message confirms the watch ("created": true); changes after it are seen.
        for (;;) {
            auto chunk = watch_http_->next_chunk();
            if (!chunk.ok()) {
                return "watch: " + chunk.error();
            }
            if (chunk->text.find("\"created\"") != std::string::npos) {
                break;
            }
        }
        watch_thread_ = std::thread([this, &sink] { read_events(sink); });
        return Done{};
    }

    Status keep_alive() override {
        auto r = call("/v3/lease/keepalive", fmt::format(R"({{"ID":"{}"}})", lease_id_));
        if (!r.ok()) {
            return "lease keepalive: " + r.error();
        }
        if (r->text.find("\"TTL\"") == std::string::npos) {
            return "lease keepalive: the lease expired: " + r->text;
        }
        return Done{};
    }

private:
    Result<Text, std::string> call(const std::string& path, const std::string& body) {
        auto r = http_.post(path, body);
        if (!r.ok()) {
            return r.error();
        }
        if (r->status != 200) {
            return fmt::format("HTTP {}: {}", r->status, r->body);
        }
        return Text{std::move(r->body)};
    }

    void read_events(WatchSink& sink) {
        while (!stop_) {
            auto chunk = watch_http_->next_chunk();
            if (!chunk.ok() || chunk->text.empty()) {
                return;
            }
            const auto now = Clock::now();
            if (chunk->text.find("\"events\"") != std::string::npos) {
                sink.event(now);
                sink.armed();
            }
        }
    }

    HostPort member_;
    HttpClient http_;
    int64_t ttl_s_;
    std::string lease_id_;
    std::unique_ptr<HttpClient> watch_http_;
    std::thread watch_thread_;
    std::atomic<bool> stop_{false};
};

class EtcdDriver final : public Driver {
public:
    explicit EtcdDriver(std::vector<HostPort> members) : members_(std::move(members)) {}

    std::string name() const override { return "etcd"; }

    // etcd leases have whole-second TTLs: rounded up.
    void set_session_timeout(std::chrono::milliseconds timeout) override {
        ttl_s_ = std::max<int64_t>(1, (timeout.count() + 999) / 1000);
    }

    Result<std::unique_ptr<IdleSessions>, std::string> open_idle(
        size_t count, std::chrono::milliseconds timeout) override {
        return open_etcd_idle(members_, count, timeout);
    }

    Result<std::unique_ptr<Session>, std::string> open(int index) override {
        const HostPort& member = members_[static_cast<size_t>(index) % members_.size()];
        auto session = std::make_unique<EtcdSession>(member, ttl_s_);
        if (Status s = session->open(); !s.ok()) {
            return s.error();
        }
        return std::unique_ptr<Session>(std::move(session));
    }

private:
    std::vector<HostPort> members_;
    int64_t ttl_s_ = kDefaultLeaseTtlSeconds;
};

}  // namespace

std::unique_ptr<Driver> make_etcd_driver(const std::string& endpoints) {
    auto members = parse_host_ports(endpoints);
    if (!members.ok()) {
        return nullptr;
    }
    return std::make_unique<EtcdDriver>(std::move(*members));
}

}  // namespace raftlock::bench
