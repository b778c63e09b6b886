#pragma once

// The interface every measured system implements (raftlock, Redis, ZooKeeper, etcd, PostgreSQL),
// so the same scenario code drives them all.
//
// A Driver names a system and opens Sessions. A Session is one client of that system (its own
// connection and, where the system has them, its own session or lease) used by one load thread at
// a time; its calls block until the system answered. Errors are strings for people: a benchmark
// counts them and shows the first, it never branches on their kind.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace raftlock::bench {

using Clock = std::chrono::steady_clock;

struct Done {};
using Status = Result<Done, std::string>;
// A string result (Result<T, E> needs T and E to differ).
struct Text {
    std::string text;
};

// What a lock grant needs to be released again; each system fills the fields it uses.
struct LockHandle {
    std::string name;    // the lock's name as the scenario gave it
    std::string key;     // the system's own key or node path of the grant
    std::string value;   // Redis: the random value that proves ownership
    uint64_t token = 0;  // raftlock: the fencing token
    uint64_t owner = 0;  // raftlock: the session id
};

// Receives a watch's events. `event` is called once per change notification, on a thread of the
// driver, with the time the notification arrived. `armed` is called when the watch is in place
// for the next change: at once after `event` for systems with persistent watches, after the
// re-registration round trip for one-shot watches (ZooKeeper), so a writer that waits for it
// never writes into a gap where nobody watches.
class WatchSink {
public:
    virtual ~WatchSink() = default;
    virtual void event(Clock::time_point received) = 0;
    virtual void armed() = 0;
};

class Session {
public:
    virtual ~Session() = default;

    // Acquires the exclusive lock `name`, waiting up to `wait` for another holder to release it.
    virtual Status lock(const std::string& name,
                        std::chrono::milliseconds wait,
                        LockHandle& out) = 0;
    virtual Status unlock(const LockHandle& handle) = 0;

    // Makes `key` writable by put() (creates the node where the system needs one) with `value`.
    virtual Status prepare_key(const std::string& key, const std::string& value) = 0;
    virtual Status put(const std::string& key, const std::string& value) = 0;
    // A linearizable read where the system offers one (docs/performance.md says how, per system).
    virtual Result<Text, std::string> get(const std::string& key) = 0;

    // Delivers every later change of `key` to `sink` until the session is destroyed. The sink
    // must outlive the session. When watch() returns the watch is armed.
    virtual Status watch(const std::string& key, WatchSink& sink) = 0;

    // Does now what keeps this session, and the locks it holds, alive: a raftlock KeepAlive, an
    // etcd lease keepalive, a PEXPIRE of the held Redis lock; nothing for ZooKeeper, whose client
    // pings by itself. A holder that must outlive its session timeout calls it at a third of it.
    virtual Status keep_alive() = 0;
};

// Sessions that only stay alive (session.keepalive): opened in bulk, kept alive from threads of
// their own until destroyed (which closes them where the system can).
class IdleSessions {
public:
    virtual ~IdleSessions() = default;
    virtual size_t open_count() const = 0;
    // Keepalives that failed since the sessions were opened, and the first failure's text.
    virtual uint64_t keepalive_errors() const = 0;
    virtual std::string first_error() const = 0;
    // The processes other than this one that hold the sessions' client side (child processes).
    virtual std::vector<int> client_pids() const { return {}; }
};

class Driver {
public:
    virtual ~Driver() = default;
    virtual std::string name() const = 0;
    // Opens client number `index` (drivers spread clients over the system's nodes by index).
    virtual Result<std::unique_ptr<Session>, std::string> open(int index) = 0;

    // The session (raftlock, ZooKeeper), lease (etcd) or lock expiry (Redis PX) timeout of the
    // sessions opened after this call; each driver has a long default, longer than any run.
    virtual void set_session_timeout(std::chrono::milliseconds timeout) = 0;

    // Opens `count` sessions of `timeout` that do nothing but stay alive. An error says why the
    // system has none (Redis) or why they could not all be opened.
    virtual Result<std::unique_ptr<IdleSessions>, std::string> open_idle(
        size_t count, std::chrono::milliseconds timeout) = 0;
};

// endpoints: "host:port,host:port,..." of the system's client ports.
// leader_routing: ClientOptions::prefer_leader of every client.
// cacert: non-empty, the clients speak TLS and trust this CA file (the cost of TLS, issue 18).
// Null when the endpoints do not parse or the CA file does not load (`error` says which).
std::unique_ptr<Driver> make_raftlock_driver(const std::string& endpoints,
                                             bool leader_routing = true,
                                             const std::string& cacert = "",
                                             std::string* error = nullptr);
std::unique_ptr<Driver> make_redis_driver(const std::string& endpoints);
std::unique_ptr<Driver> make_etcd_driver(const std::string& endpoints);
// Empty when this build has no ZooKeeper C client (libzookeeper-mt-dev was not found).
std::unique_ptr<Driver> make_zookeeper_driver(const std::string& endpoints);
// PostgreSQL's wire protocol through libpq, for raftlock's SQL mode (its nodes' pg ports) and a
// real PostgreSQL alike (bench/driver_postgres.cc says how each operation is done). Empty when
// this build has no libpq (libpq-dev was not found) or `endpoints` does not parse.
std::unique_ptr<Driver> make_postgres_driver(const std::string& endpoints);

// "a:1,b:2" -> {{"a", 1}, {"b", 2}}; an error names the bad item.
struct HostPort {
    std::string host;
    uint16_t port = 0;
};
Result<std::vector<HostPort>, std::string> parse_host_ports(const std::string& text);

}  // namespace raftlock::bench
