// ZooKeeper 3.8 through its multi-threaded C client (Debian libzookeeper-mt-dev): each benchmark
// client is one zhandle_t (its own session) given every server; the C client picks one at random.
//   lock    the standard recipe: create an ephemeral-sequential child of /bench-locks/<name>, list
//           the children, done if ours is the lowest, else watch the next lower one (exists
//           watch) and look again when it goes
//   unlock  delete our child
//   kv      create once, then setData / getData of /bench-kv/<key>; a read is preceded by sync()
//           so it reflects every write the leader committed before it (ZooKeeper's reads are
//           otherwise served from the connected server's possibly stale state)
//   watch   a one-shot data watch re-registered (exists) after each event; `armed` fires when the
//           re-registration's reply arrives
//   idle    one handle per session (a ZooKeeper session is a connection), each with the C
//           client's own two threads that send its pings; over 5,000, in child processes

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <zookeeper/zookeeper.h>

#include "bench/driver.h"
#include "bench/idle_sessions.h"
#include "bench/run_clock.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr int kDefaultSessionTimeoutMs = 30'000;
constexpr size_t kCloseThreads = 8;
// Each handle holds three descriptors (its socket, the C client's wake-up pipe); one process may
// have 20,000 here and cannot raise that, so larger counts are spread over child processes.
constexpr size_t kIdleHandlesPerProcess = 5000;
constexpr auto kConnectTimeout = 10s;
constexpr int kValueBytesMax = 1 << 20;
constexpr std::string_view kLockRoot = "/bench-locks";
constexpr std::string_view kKvRoot = "/bench-kv";

std::string zk_error(const char* what, int rc) {
    return fmt::format("{}: {}", what, zerror(rc));
}

class ZkSession;

// A flag a watcher sets and a thread waits for.
struct Signal {
    std::mutex mutex;
    std::condition_variable cv;
    bool set = false;

    void notify() {
        std::lock_guard lock(mutex);
        set = true;
        cv.notify_all();
    }
    void reset() {
        std::lock_guard lock(mutex);
        set = false;
    }
    bool wait_until(Clock::time_point deadline) {
        std::unique_lock lock(mutex);
        return cv.wait_until(lock, deadline, [this] { return set; });
    }
};

class ZkSession final : public Session {
public:
    ~ZkSession() override {
        if (zh_ != nullptr) {
            zookeeper_close(zh_);
        }
    }

    Status open(const std::string& hosts, int timeout_ms) {
        zh_ = zookeeper_init(hosts.c_str(), &ZkSession::on_session_event, timeout_ms, nullptr, this,
                             0);
        if (zh_ == nullptr) {
            return fmt::format("zookeeper_init({}) failed", hosts);
        }
        if (!connected_.wait_until(Clock::now() + kConnectTimeout)) {
            return fmt::format("no ZooKeeper session with {} after 10 s", hosts);
        }
        return Done{};
    }

    Status lock(const std::string& name, std::chrono::milliseconds wait, LockHandle& out) override {
        const std::string dir = fmt::format("{}/{}", kLockRoot, name);
        if (known_dirs_.insert(dir).second) {
            if (Status s = create_parents(dir); !s.ok()) {
                known_dirs_.erase(dir);
                return s;
            }
        }
        std::string mine(dir.size() + 32, '\0');
        const std::string prefix = dir + "/lock-";
        int rc = zoo_create(zh_, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                            ZOO_EPHEMERAL_SEQUENTIAL, mine.data(), static_cast<int>(mine.size()));
        if (rc != ZOK) {
            return zk_error("create lock node", rc);
        }
        mine.resize(std::strlen(mine.c_str()));
        const std::string my_name = mine.substr(dir.size() + 1);
        const auto deadline = Clock::now() + wait;
        for (;;) {
            String_vector children{};
            rc = zoo_get_children(zh_, dir.c_str(), 0, &children);
            if (rc != ZOK) {
                return zk_error("get_children", rc);
            }
            std::vector<std::string> names(children.data, children.data + children.count);
            deallocate_String_vector(&children);
            std::sort(names.begin(), names.end());
            const auto it = std::lower_bound(names.begin(), names.end(), my_name);
            if (it == names.end() || *it != my_name) {
                return std::string("our lock node vanished (session expired?)");
            }
            if (it == names.begin()) {
                out.name = name;
                out.key = mine;
                return Done{};
            }
            const std::string predecessor = dir + "/" + *(it - 1);
            predecessor_gone_.reset();
            Stat stat{};
            rc = zoo_wexists(zh_, predecessor.c_str(), &ZkSession::on_predecessor_event, this,
                             &stat);
            if (rc == ZNONODE) {
                continue;
            }
            if (rc != ZOK) {
                return zk_error("exists (watch predecessor)", rc);
            }
            if (!predecessor_gone_.wait_until(deadline)) {
                (void)zoo_delete(zh_, mine.c_str(), -1);
                return std::string("lock wait timed out");
            }
        }
    }

    Status unlock(const LockHandle& handle) override {
        const int rc = zoo_delete(zh_, handle.key.c_str(), -1);
        if (rc != ZOK) {
            return zk_error("delete lock node", rc);
        }
        return Done{};
    }

    Status prepare_key(const std::string& key, const std::string& value) override {
        if (Status s = create_parents(kv_path(key)); !s.ok()) {
            return s;
        }
        return put(key, value);
    }

    Status put(const std::string& key, const std::string& value) override {
        const int rc =
            zoo_set(zh_, kv_path(key).c_str(), value.data(), static_cast<int>(value.size()), -1);
        if (rc != ZOK) {
            return zk_error("set", rc);
        }
        return Done{};
    }

    Result<Text, std::string> get(const std::string& key) override {
        const std::string path = kv_path(key);
        if (Status s = sync(path); !s.ok()) {
            return s.error();
        }
        read_buffer_.resize(kValueBytesMax);
        int length = kValueBytesMax;
        Stat stat{};
        const int rc = zoo_get(zh_, path.c_str(), 0, read_buffer_.data(), &length, &stat);
        if (rc != ZOK) {
            return zk_error("get", rc);
        }
        return Text{read_buffer_.substr(0, static_cast<size_t>(std::max(0, length)))};
    }

    Status watch(const std::string& key, WatchSink& sink) override {
        if (watch_sink_ != nullptr) {
            return std::string("one watch per session");
        }
        watch_sink_ = &sink;
        watch_path_ = kv_path(key);
        Stat stat{};
        const int rc =
            zoo_wexists(zh_, watch_path_.c_str(), &ZkSession::on_data_event, this, &stat);
        if (rc != ZOK) {
            return zk_error("exists (watch)", rc);
        }
        return Done{};
    }

    // The C client's own thread pings at a third of the negotiated timeout.
    Status keep_alive() override { return Done{}; }

private:
    static std::string kv_path(const std::string& key) {
        return fmt::format("{}/{}", kKvRoot, key);
    }

    // Creates every proper ancestor of `path` and `path` itself (persistent, empty), ignoring
    // those that exist.
    Status create_parents(const std::string& path) {
        for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
            const std::string part = path.substr(0, slash);
            const int rc = zoo_create(zh_, part.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE,
                                      ZOO_PERSISTENT, nullptr, 0);
            if (rc != ZOK && rc != ZNODEEXISTS) {
                return zk_error(fmt::format("create {}", part).c_str(), rc);
            }
            if (slash == std::string::npos) {
                return Done{};
            }
        }
    }

    Status sync(const std::string& path) {
        std::promise<int> done;
        auto future = done.get_future();
        const int rc = zoo_async(
            zh_, path.c_str(),
            [](int result, const char*, const void* data) {
                static_cast<std::promise<int>*>(const_cast<void*>(data))->set_value(result);
            },
            &done);
        if (rc != ZOK) {
            return zk_error("sync", rc);
        }
        if (const int result = future.get(); result != ZOK) {
            return zk_error("sync", result);
        }
        return Done{};
    }

    static void on_session_event(zhandle_t*, int type, int state, const char*, void* context) {
        if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
            static_cast<ZkSession*>(context)->connected_.notify();
        }
    }

    static void on_predecessor_event(zhandle_t*, int, int, const char*, void* context) {
        // Any event (deleted, or a session event) means: look at the children again.
        static_cast<ZkSession*>(context)->predecessor_gone_.notify();
    }

    static void on_data_event(zhandle_t* zh, int type, int, const char*, void* context) {
        const auto now = Clock::now();
        auto* self = static_cast<ZkSession*>(context);
        if (type != ZOO_CHANGED_EVENT && type != ZOO_CREATED_EVENT && type != ZOO_DELETED_EVENT) {
            return;
        }
        self->watch_sink_->event(now);
        // One-shot: register again; the writer waits for `armed` before its next write.
        (void)zoo_awexists(
            zh, self->watch_path_.c_str(), &ZkSession::on_data_event, self,
            [](int, const Stat*, const void* data) {
                static_cast<const ZkSession*>(data)->watch_sink_->armed();
            },
            self);
    }

    zhandle_t* zh_ = nullptr;
    Signal connected_;
    Signal predecessor_gone_;
    std::set<std::string> known_dirs_;
    std::string read_buffer_;
    WatchSink* watch_sink_ = nullptr;
    std::string watch_path_;
};

// Idle sessions: one handle each. Connected handles are counted by the session watcher; an
// expired or lost session counts as a keepalive error.
class ZkIdleSessions final : public IdleSessions {
public:
    ~ZkIdleSessions() override {
        // zookeeper_close waits for the server's answer to CloseSession: close in parallel.
        std::vector<std::thread> closers;
        for (size_t t = 0; t < kCloseThreads; ++t) {
            closers.emplace_back([this, t] {
                for (size_t i = t; i < handles_.size(); i += kCloseThreads) {
                    zookeeper_close(handles_[i]);
                }
            });
        }
        for (std::thread& t : closers) {
            t.join();
        }
    }

    Status open(const std::string& hosts, size_t count, int timeout_ms) {
        {
            std::lock_guard lock(mutex_);
            expected_ = count;
        }
        for (size_t i = 0; i < count; ++i) {
            zhandle_t* zh = zookeeper_init(hosts.c_str(), &ZkIdleSessions::on_event, timeout_ms,
                                           nullptr, this, 0);
            if (zh == nullptr) {
                return fmt::format("zookeeper_init failed after {} handles: {}", i,
                                   std::strerror(errno));
            }
            handles_.push_back(zh);
        }
        const auto deadline = Clock::now() + kConnectTimeout + std::chrono::milliseconds(count * 5);
        std::unique_lock lock(mutex_);
        if (!cv_.wait_until(lock, deadline, [&] { return connected_ >= count; })) {
            return fmt::format("{} of {} sessions connected", connected_, count);
        }
        return Done{};
    }

    size_t open_count() const override {
        std::lock_guard lock(mutex_);
        return connected_;
    }
    uint64_t keepalive_errors() const override { return errors_.count(); }
    std::string first_error() const override { return errors_.first(); }

private:
    static void on_event(zhandle_t*, int type, int state, const char*, void* context) {
        auto* self = static_cast<ZkIdleSessions*>(context);
        if (type != ZOO_SESSION_EVENT) {
            return;
        }
        if (state == ZOO_CONNECTED_STATE) {
            std::lock_guard lock(self->mutex_);
            // A reconnect after a lost connection reports CONNECTED again; count sessions once.
            if (self->connected_ < self->expected_) {
                ++self->connected_;
            }
            self->cv_.notify_all();
        } else if (state == ZOO_EXPIRED_SESSION_STATE) {
            self->errors_.add("session expired");
        } else if (state == ZOO_CONNECTING_STATE) {
            self->errors_.add("connection lost");
        }
    }

    std::vector<zhandle_t*> handles_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    size_t expected_ = 0;   // under mutex_
    size_t connected_ = 0;  // under mutex_
    ErrorLog errors_;
};

class ZkDriver final : public Driver {
public:
    explicit ZkDriver(std::string hosts) : hosts_(std::move(hosts)) {
        zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    }

    std::string name() const override { return "zookeeper"; }

    // The servers bound it by minSessionTimeout / maxSessionTimeout (bench/peers.sh sets 1 s and
    // ZooKeeper's default 40 s).
    void set_session_timeout(std::chrono::milliseconds timeout) override {
        timeout_ms_ = static_cast<int>(timeout.count());
    }

    Result<std::unique_ptr<IdleSessions>, std::string> open_idle(
        size_t count, std::chrono::milliseconds timeout) override {
        if (count > kIdleHandlesPerProcess) {
            return open_idle_in_children("zookeeper", hosts_, count, kIdleHandlesPerProcess,
                                         timeout);
        }
        auto sessions = std::make_unique<ZkIdleSessions>();
        if (Status s = sessions->open(hosts_, count, static_cast<int>(timeout.count())); !s.ok()) {
            return s.error();
        }
        return std::unique_ptr<IdleSessions>(std::move(sessions));
    }

    Result<std::unique_ptr<Session>, std::string> open(int /*index*/) override {
        auto session = std::make_unique<ZkSession>();
        if (Status s = session->open(hosts_, timeout_ms_); !s.ok()) {
            return s.error();
        }
        return std::unique_ptr<Session>(std::move(session));
    }

private:
    std::string hosts_;
    int timeout_ms_ = kDefaultSessionTimeoutMs;
};

}  // namespace

std::unique_ptr<Driver> make_zookeeper_driver(const std::string& endpoints) {
    if (!parse_host_ports(endpoints).ok()) {
        return nullptr;
    }
    return std::make_unique<ZkDriver>(endpoints);
}

}  // namespace raftlock::bench
