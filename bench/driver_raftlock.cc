// raftlock through its own client library (client/client.h): each benchmark client is one
// raftlock::client::Client with one session, started at endpoint `index` modulo the list.
//   lock    acquire(name, wait) / release(lease): the server's FIFO queue hands the lock over
//   kv      set / get of the node /bench/<key> (reads are linearizable: ReadIndex)
//   watch   a persistent watch on /bench/<key>
//   idle    many sessions over few connections of our own (bench/idle_raftlock.cc)

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "bench/driver.h"
#include "bench/idle_sessions.h"
#include "client/client.h"
#include "net/tls.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;
namespace rc = raftlock::client;

constexpr auto kDefaultSessionTimeout = 30s;
constexpr std::string_view kParent = "/bench";

std::string node_path(const std::string& key) {
    return fmt::format("{}/{}", kParent, key);
}

class RaftlockSession final : public Session {
public:
    RaftlockSession(rc::ClientOptions options, std::chrono::milliseconds timeout)
        : client_(std::move(options)), timeout_(timeout) {}

    ~RaftlockSession() override { (void)client_.close_session(); }

    Status open() {
        auto s = client_.open_session(timeout_);
        if (!s.ok()) {
            return "open_session: " + rc::to_string(s.error());
        }
        return Done{};
    }

    Status lock(const std::string& name, std::chrono::milliseconds wait, LockHandle& out) override {
        rc::AcquireOptions options;
        options.wait = wait;
        auto lease = client_.acquire(name, options);
        if (!lease.ok()) {
            return "acquire: " + rc::to_string(lease.error());
        }
        out.name = name;
        out.token = lease->token;
        out.owner = lease->session;
        return Done{};
    }

    Status unlock(const LockHandle& handle) override {
        rc::Lease lease;
        lease.name = handle.name;
        lease.token = handle.token;
        lease.session = handle.owner;
        auto r = client_.release(lease);
        if (!r.ok()) {
            return "release: " + rc::to_string(r.error());
        }
        return Done{};
    }

    Status prepare_key(const std::string& key, const std::string& value) override {
        for (const std::string& path : {std::string(kParent), node_path(key)}) {
            auto r = client_.create(path, value);
            if (!r.ok() && r.error().code != rc::ErrorCode::kNodeExists) {
                return fmt::format("create {}: {}", path, rc::to_string(r.error()));
            }
        }
        return put(key, value);
    }

    Status put(const std::string& key, const std::string& value) override {
        auto r = client_.set(node_path(key), value);
        if (!r.ok()) {
            return "set: " + rc::to_string(r.error());
        }
        return Done{};
    }

    Result<Text, std::string> get(const std::string& key) override {
        auto r = client_.get(node_path(key));
        if (!r.ok()) {
            return "get: " + rc::to_string(r.error());
        }
        return Text{std::move(r->data)};
    }

    Status watch(const std::string& key, WatchSink& sink) override {
        auto r = client_.add_watch(node_path(key), false, [&sink](const rc::WatchEvent&) {
            sink.event(Clock::now());
            sink.armed();
        });
        if (!r.ok()) {
            return "add_watch: " + rc::to_string(r.error());
        }
        return Done{};
    }

    Status keep_alive() override {
        auto r = client_.keep_alive();
        if (!r.ok()) {
            return "keep_alive: " + rc::to_string(r.error());
        }
        return Done{};
    }

private:
    rc::Client client_;
    std::chrono::milliseconds timeout_;
};

class RaftlockDriver final : public Driver {
public:
    RaftlockDriver(std::vector<rc::Endpoint> endpoints,
                   bool leader_routing,
                   std::shared_ptr<const net::TlsContext> tls)
        : endpoints_(std::move(endpoints)), leader_routing_(leader_routing), tls_(std::move(tls)) {
        // As the CLI: a cluster with authentication on is measured logged in (the cost of it).
        if (const char* user = std::getenv("RAFTLOCK_USER"); user != nullptr) {
            user_ = user;
        }
        if (const char* file = std::getenv("RAFTLOCK_PASSWORD_FILE"); file != nullptr) {
            std::ifstream in(file);
            std::getline(in, password_);
        }
    }

    void set_session_timeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }

    Result<std::unique_ptr<IdleSessions>, std::string> open_idle(
        size_t count, std::chrono::milliseconds timeout) override {
        std::vector<HostPort> nodes;
        for (const rc::Endpoint& e : endpoints_) {
            nodes.push_back(HostPort{e.host, e.port});
        }
        return open_raftlock_idle(nodes, count, timeout);
    }

    std::string name() const override { return "raftlock"; }

    Result<std::unique_ptr<Session>, std::string> open(int index) override {
        rc::ClientOptions options;
        options.endpoints = endpoints_;
        // The seed picks the client's first endpoint, so seeds 1..N spread the clients over the
        // nodes the way lock_load does (pseudo-randomly, not round robin).
        options.seed = static_cast<uint64_t>(index) + 1;
        options.prefer_leader = leader_routing_;
        options.tls = tls_;
        options.user = user_;
        options.password = password_;
        auto session = std::make_unique<RaftlockSession>(std::move(options), timeout_);
        if (Status s = session->open(); !s.ok()) {
            return s.error();
        }
        return std::unique_ptr<Session>(std::move(session));
    }

private:
    std::vector<rc::Endpoint> endpoints_;
    bool leader_routing_ = true;
    std::shared_ptr<const net::TlsContext> tls_;  // shared by every client
    std::string user_;  // $RAFTLOCK_USER; its password from $RAFTLOCK_PASSWORD_FILE
    std::string password_;
    std::chrono::milliseconds timeout_ = kDefaultSessionTimeout;
};

}  // namespace

std::unique_ptr<Driver> make_raftlock_driver(const std::string& endpoints,
                                             bool leader_routing,
                                             const std::string& cacert,
                                             std::string* error) {
    auto parsed = rc::parse_endpoints(endpoints);
    if (!parsed.ok()) {
        if (error != nullptr) {
            *error = parsed.error();
        }
        return nullptr;
    }
    std::shared_ptr<const net::TlsContext> tls;
    if (!cacert.empty()) {
        auto made = net::TlsContext::make({.role = net::TlsRole::kClient, .ca_file = cacert});
        if (!made.ok()) {
            if (error != nullptr) {
                *error = made.error();
            }
            return nullptr;
        }
        tls = std::move(made).value();
    }
    return std::make_unique<RaftlockDriver>(std::move(*parsed), leader_routing, std::move(tls));
}

}  // namespace raftlock::bench
