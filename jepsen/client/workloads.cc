#include "jepsen/client/workloads.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "client/client.h"

namespace raftlock::jepsen {

namespace {

using namespace std::chrono_literals;
namespace rc = raftlock::client;

constexpr const char* kRoot = "/jepsen";
constexpr const char* kResource = "/jepsen/resource";
constexpr const char* kSequentialParent = "/jepsen/seq";
constexpr const char* kEphemeralParent = "/jepsen/eph";
// Watch chains are processes of their own, numbered far above the workers' (which grow by
// `processes` after every info): 1,000,000 + watcher * 100,000 + chain.
constexpr uint64_t kChainProcessBase = 1'000'000;
constexpr uint64_t kChainsPerWatcher = 100'000;
// Lost leases are recorded on processes of their own (Worker::record_loss), numbered from here.
constexpr uint64_t kLossProcessBase = 2'000'000;
constexpr uint64_t kLossesPerWorker = 100'000;
constexpr int64_t kValuesMax = 5;  // register values are 0..4: small, so cas often matches

// Register k<i> of the history is node /jepsen/k<i>.
std::string register_key(uint32_t index) {
    return "k" + std::to_string(index);
}
std::string node_path(const std::string& key) {
    return std::string(kRoot) + "/" + key;
}

// The session ended: a write on it may have been applied before it did (rc::certainly_not_applied
// decides between `fail` and `info` for everything else).
bool session_gone(rc::ErrorCode code) {
    return code == rc::ErrorCode::kSessionExpired || code == rc::ErrorCode::kSessionLost;
}

int64_t to_ns(rc::SteadyTime t) {
    // steady_clock is CLOCK_MONOTONIC on Linux, the clock the history is stamped with.
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// `worker` is the worker the client belongs to (none for the harness's own set-up client): with
// leader routing "pinned" it is the one endpoint the client may use.
rc::ClientOptions client_options(const WorkloadOptions& options,
                                 uint64_t seed,
                                 std::optional<uint32_t> worker) {
    rc::ClientOptions o;
    o.endpoints = options.endpoints;
    if (options.leader_routing == "pinned" && worker) {
        o.endpoints = {options.endpoints[*worker % options.endpoints.size()]};
    }
    o.connect_timeout = 500ms;
    o.request_timeout = std::chrono::milliseconds(options.request_timeout_ms);
    o.seed = seed;
    o.prefer_leader =
        options.leader_routing == "on" || (options.leader_routing == "mixed" && seed % 2 == 0);
    o.tls = options.tls;
    o.user = options.user;
    o.password = options.password;
    return o;
}

// Where a session stands by its client's safe-until deadline (client/safe_until.h): the cluster
// cannot end the session before that deadline, and may at any moment after it. Once the session
// is lost the client reports no deadline any more, so the tracker keeps the last one it saw.
class SafeUntilTracker {
public:
    // A session was just opened by `client`: until a keepalive is acknowledged, the open itself
    // is the last moment the session was certainly live.
    void opened(const rc::Client& client) {
        last_ns_ = monotonic_ns();
        (void)safe(&client);
    }
    // True while the session is certainly live (its deadline is ahead).
    bool safe(const rc::Client* client) {
        const auto until = client != nullptr ? client->safe_until() : std::nullopt;
        if (until) {
            last_ns_ = std::max(last_ns_, to_ns(*until));
        }
        return until && to_ns(*until) > monotonic_ns();
    }
    // The earliest moment the cluster may have ended the session.
    int64_t lost_at(int64_t now) const { return std::min(last_ns_, now); }

private:
    int64_t last_ns_ = 0;
};

// Paths of the ephemeral nodes made so far, for the other workers to read.
class PathBoard {
public:
    void add(std::string path) {
        std::lock_guard lock(mutex_);
        if (paths_.size() >= kPathsMax) {
            paths_.erase(paths_.begin());  // old sessions are done: read the recent ones
        }
        paths_.push_back(std::move(path));
    }
    std::optional<std::string> pick(std::mt19937_64& rng) const {
        std::lock_guard lock(mutex_);
        if (paths_.empty()) {
            return std::nullopt;
        }
        return paths_[std::uniform_int_distribution<size_t>(0, paths_.size() - 1)(rng)];
    }

private:
    static constexpr size_t kPathsMax = 64;
    mutable std::mutex mutex_;
    std::vector<std::string> paths_;
};

// What the watch workload saw, turned into history events once every worker is done: the change
// that preceded each write (from the writers) and each event delivered (to the watchers).
class WatchLog {
public:
    struct Delivery {
        int64_t time_ns = 0;
        uint32_t watcher = 0;
        uint64_t connection = 0;  // Client::connection_count() when the event arrived
        std::string path;
        uint64_t zxid = 0;
    };

    void link(const std::string& path, uint64_t zxid, uint64_t previous_zxid) {
        std::lock_guard lock(mutex_);
        previous_[{path, zxid}] = previous_zxid;
    }
    void deliver(Delivery delivery) {
        std::lock_guard lock(mutex_);
        if (deliveries_.size() < HistoryRecorder::kEventsMax) {
            deliveries_.push_back(std::move(delivery));
        }
    }

    // Every delivery as a history event {"type":"event","f":"watch","value":[zxid, prev]}. A
    // chain (a process of its own) is one watcher's events on one path over one connection; a
    // new chain starts after a reconnect (persistent watches do not replay what was missed), at
    // an inferred event (zxid 0), and at a change whose predecessor no writer saw (an unknown
    // write that took effect), since those have no known prev to check.
    void emit(HistoryRecorder& history) const {
        std::lock_guard lock(mutex_);
        struct Chain {
            uint64_t process = 0;
            uint64_t connection = 0;
        };
        std::map<std::pair<uint32_t, std::string>, Chain> chains;
        std::map<uint32_t, uint64_t> chains_made;
        for (const Delivery& d : deliveries_) {
            const auto link = previous_.find({d.path, d.zxid});
            const bool known = d.zxid != 0 && link != previous_.end();
            auto [it, fresh] = chains.try_emplace({d.watcher, d.path});
            if (fresh || !known || it->second.connection != d.connection) {
                const uint64_t n = chains_made[d.watcher]++;
                it->second =
                    Chain{kChainProcessBase + d.watcher * kChainsPerWatcher + n, d.connection};
            }
            const uint64_t previous = known ? link->second : 0;
            history.record_at(d.time_ns, HistoryEvent{.process = it->second.process,
                                                      .type = "event",
                                                      .f = "watch",
                                                      .key = d.path,
                                                      .value = {d.zxid, previous}});
        }
    }
    size_t deliveries() const {
        std::lock_guard lock(mutex_);
        return deliveries_.size();
    }

private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, uint64_t>, uint64_t> previous_;  // (path, zxid) -> prev
    std::vector<Delivery> deliveries_;
};

}  // namespace

struct SharedRun::Parts {
    PathBoard paths;   // the sessions workload
    WatchLog watches;  // the watch workload
};

namespace {

// One worker: a process number, a client with an open session, pacing and totals.
class Worker {
public:
    Worker(const WorkloadOptions& options,
           uint32_t worker,
           SharedRun::Parts& shared,
           HistoryRecorder& history,
           WorkloadTotals& totals)
        : shared_(shared),
          options_(options),
          worker_(worker),
          history_(history),
          totals_(totals),
          rng_(options.seed * 1'000'003 + worker),
          process_(worker) {}

    bool running() const { return monotonic_ns() < options_.deadline_ns; }

    // Sleeps so that all workers together run about options.rate operations per second.
    void pace() {
        const double mean_s = options_.processes / std::max(options_.rate, 0.001);
        std::exponential_distribution<double> gap(1.0 / mean_s);
        const auto wait = std::chrono::duration<double>(std::min(gap(rng_), 5 * mean_s));
        std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::microseconds>(wait));
    }

    // A client with an open session, made anew when the old session is gone. False when the
    // run ended before one could be opened.
    bool ensure_session() {
        while (running()) {
            if (client_ && client_->session_id()) {
                return true;
            }
            client_ = std::make_unique<rc::Client>(client_options(options_, rng_(), worker_));
            auto opened =
                client_->open_session(std::chrono::milliseconds(options_.session_timeout_ms));
            if (opened.ok()) {
                lease_.opened(*client_);
                return true;
            }
            std::this_thread::sleep_for(100ms);
        }
        return false;
    }

    // Drops the client; the session, if any, ends when its timeout passes on the cluster.
    void abandon_session() {
        if (client_) {
            (void)client_->close_session();  // best effort: a lost session is gone anyway
        }
        client_.reset();
    }

    void invoke(const std::string& f, const std::string& key, const nlohmann::json& value) {
        history_.record(process_, "invoke", f, key, value);
    }
    void ok(const std::string& f, const std::string& key, const nlohmann::json& value) {
        history_.record(process_, "ok", f, key, value);
        ++totals_.ok;
    }
    void fail(const std::string& f,
              const std::string& key,
              const nlohmann::json& value,
              const std::string& error) {
        history_.record(process_, "fail", f, key, value, error);
        ++totals_.fail;
    }
    // The outcome is unknown: this process is done, the worker goes on as a new one.
    void info(const std::string& f,
              const std::string& key,
              const nlohmann::json& value,
              const std::string& error) {
        history_.record(process_, "info", f, key, value, error);
        ++totals_.info;
        process_ += options_.processes;
    }
    // Records that something held under a session (a lock, an ephemeral node) may have been
    // taken away by the session's end: `f` invoked at the earliest moment the session may have
    // ended, with an unknown outcome. It goes on a process of its own, since this worker may have
    // had another operation open at that moment.
    void record_loss(const SafeUntilTracker& lease,
                     const std::string& f,
                     const std::string& key,
                     const nlohmann::json& value) {
        const int64_t now = monotonic_ns();
        HistoryEvent loss{.process = kLossProcessBase + worker_ * kLossesPerWorker + losses_++,
                          .type = "invoke",
                          .f = f,
                          .key = key,
                          .value = value};
        history_.record_at(lease.lost_at(now), loss);
        loss.type = "info";
        loss.error = "lease_lost";
        history_.record_at(now, loss);
        ++totals_.info;
    }

    void complete_error(const std::string& f,
                        const std::string& key,
                        const nlohmann::json& value,
                        const rc::Error& error) {
        const std::string name(rc::to_string(error.code));
        if (rc::certainly_not_applied(error.code)) {
            fail(f, key, value, name);
        } else {
            info(f, key, value, name);
        }
        if (session_gone(error.code)) {
            abandon_session();
        }
    }

    SharedRun::Parts& shared_;
    const WorkloadOptions& options_;
    const uint32_t worker_;
    HistoryRecorder& history_;
    WorkloadTotals& totals_;
    std::mt19937_64 rng_;
    uint64_t process_;
    std::unique_ptr<rc::Client> client_;
    SafeUntilTracker lease_;  // of client_'s session
    uint64_t losses_ = 0;
};

// --- register ----------------------------------------------------------------------------------

nlohmann::json register_value(const std::string& data) {
    return data.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::stoll(data));
}

void register_read(Worker& w, const std::string& key) {
    w.invoke("read", key, nullptr);
    auto got = w.client_->get(node_path(key));
    if (got.ok()) {
        w.ok("read", key, register_value(got->data));
    } else {
        w.complete_error("read", key, nullptr, got.error());
    }
}

void register_write(Worker& w, const std::string& key, int64_t value) {
    w.invoke("write", key, value);
    auto set = w.client_->set(node_path(key), std::to_string(value));
    if (set.ok()) {
        w.ok("write", key, value);
    } else {
        w.complete_error("write", key, value, set.error());
    }
}

void register_cas(Worker& w, const std::string& key, int64_t from, int64_t to) {
    const nlohmann::json value = {from, to};
    const std::string path = node_path(key);
    w.invoke("cas", key, value);
    auto got = w.client_->get(path);
    if (!got.ok()) {
        w.fail("cas", key, value, std::string(rc::to_string(got.error().code)));  // nothing sent
        return;
    }
    if (register_value(got->data) != nlohmann::json(from)) {
        w.fail("cas", key, value, "mismatch");  // observed another value within the operation
        return;
    }
    auto set = w.client_->set(path, std::to_string(to), {.version = got->stat.version});
    if (set.ok()) {
        w.ok("cas", key, value);
    } else {
        w.complete_error("cas", key, value, set.error());
    }
}

void run_register(Worker& w) {
    std::uniform_int_distribution<uint32_t> pick_key(0, w.options_.keys - 1);
    std::uniform_int_distribution<int64_t> pick_value(0, kValuesMax - 1);
    std::uniform_int_distribution<int> pick_op(0, 3);
    while (w.running()) {
        w.pace();
        if (!w.running() || !w.ensure_session()) {
            break;
        }
        const std::string key = register_key(pick_key(w.rng_));
        switch (pick_op(w.rng_)) {
            case 0:
            case 1:
                register_read(w, key);
                break;
            case 2:
                register_write(w, key, pick_value(w.rng_));
                break;
            default:
                register_cas(w, key, pick_value(w.rng_), pick_value(w.rng_));
        }
    }
}

// --- lock --------------------------------------------------------------------------------------

// A worker's lease and how many fenced writes it still makes under it.
struct Holding {
    rc::Lease lease;
    int writes_left = 0;
};

// The safe-until deadline has passed (or the session ended): the cluster may already have handed
// the lock to someone else. The worker stops using it at once; in the history that is a release
// whose outcome is unknown, invoked at the deadline — the last moment the worker could be sure it
// held the lock — so the checker may place the cluster's expiry anywhere after it.
bool lease_lost(Worker& w, const Holding& holding) {
    if (w.options_.unfenced) {
        return false;  // the negative control trusts its lease forever
    }
    if (w.lease_.safe(w.client_.get())) {
        return false;
    }
    w.record_loss(w.lease_, "release", w.options_.lock_name, holding.lease.token);
    w.abandon_session();
    return true;
}

// How many fenced writes a worker makes under one grant. The unfenced negative control holds
// longer: its violation needs a holder that still has writes to make when the client process
// resumes from a pause, after another worker took the expired lock. With one to three writes a
// pause often caught a holder with at most one write left, which it made before any other worker
// had reopened a session, and the control then passed unnoticed (a CI run, seed 1).
int writes_per_hold(Worker& w) {
    const auto [lo, hi] = w.options_.unfenced ? std::pair{6, 10} : std::pair{1, 3};
    return std::uniform_int_distribution<int>(lo, hi)(w.rng_);
}

void lock_acquire(Worker& w, std::optional<Holding>& holding) {
    const std::string& lock = w.options_.lock_name;
    w.invoke("acquire", lock, nullptr);
    auto lease = w.client_->acquire(lock, {.wait = 1s});
    if (lease.ok()) {
        w.ok("acquire", lock, lease->token);
        holding = Holding{*lease, writes_per_hold(w)};
        return;
    }
    w.complete_error("acquire", lock, nullptr, lease.error());
    if (!rc::certainly_not_applied(lease.error().code)) {
        // A grant may have raced the failure; ending the session releases it.
        w.abandon_session();
    }
}

void lock_write(Worker& w, Holding& holding) {
    const std::string& lock = w.options_.lock_name;
    const nlohmann::json value = {holding.lease.token, holding.writes_left};
    rc::WriteOptions write;
    if (!w.options_.unfenced) {
        write.fence = rc::Fence{lock, holding.lease.token};
    }
    --holding.writes_left;
    w.invoke("fenced-write", lock, value);
    auto set = w.client_->set(kResource, std::to_string(holding.lease.token), write);
    if (set.ok()) {
        w.ok("fenced-write", lock, value);
    } else {
        w.complete_error("fenced-write", lock, value, set.error());
    }
}

void lock_release(Worker& w, std::optional<Holding>& holding) {
    const std::string& lock = w.options_.lock_name;
    const int64_t token = static_cast<int64_t>(holding->lease.token);
    w.invoke("release", lock, token);
    auto released = w.client_->release(holding->lease);
    holding.reset();
    if (released.ok()) {
        w.ok("release", lock, token);
        return;
    }
    // Not the holder any more: the session ended after the release was invoked (lease_lost ran
    // just before), so the release "happened" by expiry at an unknown moment.
    const rc::ErrorCode code = released.error().code;
    if (code == rc::ErrorCode::kNotLockHolder || session_gone(code)) {
        w.info("release", lock, token, std::string(rc::to_string(code)));
        w.abandon_session();
        return;
    }
    w.complete_error("release", lock, token, released.error());
    if (!rc::certainly_not_applied(code)) {
        // The lock may still be held by this session; ending it releases the lock for sure,
        // where a later acquire on the same session would be a reentrant one.
        w.abandon_session();
    }
}

// The unfenced negative control's holder, stopped mid-hold by pause-client, goes on with its
// critical section when it wakes: at least this many more writes. Without it the control depended
// on where the pause fell: a holder caught at its last write, or between its last write and its
// release (seed 1's two pauses, in a CI run), had nothing left to do, and the control passed
// unnoticed. With it, the old holder's writes outlast the three steps (a failed call, a new
// session, an acquire) another worker needs to take the expired lock.
constexpr int kUnfencedWritesAfterPause = 20;

void run_lock(Worker& w) {
    std::optional<Holding> holding;
    auto last_step = std::chrono::steady_clock::now();
    while (w.running()) {
        w.pace();
        // A step that took longer than a session timeout: the process was stopped.
        const auto now = std::chrono::steady_clock::now();
        const bool woke =
            now - last_step > std::chrono::milliseconds(w.options_.session_timeout_ms);
        last_step = now;
        if (woke && holding && w.options_.unfenced) {
            holding->writes_left = std::max(holding->writes_left, kUnfencedWritesAfterPause);
        }
        if (holding && lease_lost(w, *holding)) {
            holding.reset();
        }
        if (!w.running() || !w.ensure_session()) {
            break;
        }
        if (!holding) {
            lock_acquire(w, holding);
        } else if (holding->writes_left > 0) {
            lock_write(w, *holding);
        } else {
            lock_release(w, holding);
        }
    }
    // Other workers' acquires may still be waiting for this lock: the release that grants them
    // belongs in the history.
    if (holding && !lease_lost(w, *holding)) {
        lock_release(w, holding);
    }
}

// --- sequential --------------------------------------------------------------------------------

// The number ZooKeeper appends to a sequential node's name: its last 10 digits.
std::optional<int64_t> sequence_number(const std::string& path) {
    if (path.size() < 10) {
        return std::nullopt;
    }
    const std::string digits = path.substr(path.size() - 10);
    if (digits.find_first_not_of("0123456789") != std::string::npos) {
        return std::nullopt;
    }
    return std::stoll(digits);
}

void run_sequential(Worker& w) {
    const std::string key = kSequentialParent;
    const std::string prefix = key + "/n-";
    while (w.running()) {
        w.pace();
        if (!w.running() || !w.ensure_session()) {
            break;
        }
        w.invoke("create", key, nullptr);
        auto created = w.client_->create(prefix, "", {.kind = rc::NodeKind::kEphemeralSequential});
        if (!created.ok()) {
            w.complete_error("create", key, nullptr, created.error());
            continue;
        }
        const std::optional<int64_t> number = sequence_number(created->path);
        if (!number) {
            // Not a history event: the server broke the naming contract outright.
            w.info("create", key, nullptr, "bad sequential name " + created->path);
            continue;
        }
        w.ok("create", key, *number);
    }
}

// --- sessions ----------------------------------------------------------------------------------

// Reads another (or this) session's ephemeral node: its data, or null when it does not exist.
void sessions_read(Worker& w) {
    const std::optional<std::string> path = w.shared_.paths.pick(w.rng_);
    if (!path || !w.ensure_session()) {
        return;
    }
    w.invoke("read", *path, nullptr);
    auto got = w.client_->get(*path);
    if (got.ok()) {
        w.ok("read", *path, got->data);
    } else if (got.error().code == rc::ErrorCode::kNoNode) {
        w.ok("read", *path, nullptr);
    } else {
        w.complete_error("read", *path, nullptr, got.error());
    }
}

// One session's life: open, create its ephemeral node, maybe delete it, then close or abandon
// (expiry). In between, this worker reads other sessions' nodes. Before each of its own steps the
// worker checks the session's safe-until deadline: once it has passed, the cluster may have
// expired the session (and deleted the node) at any moment since, so the cycle records an
// `expire` from that moment on and ends.
void sessions_cycle(Worker& w, uint64_t generation) {
    const std::string key = std::string(kEphemeralParent) + "/w" + std::to_string(w.worker_) + "-" +
                            std::to_string(generation);
    auto owner = std::make_unique<rc::Client>(client_options(w.options_, w.rng_(), w.worker_));
    SafeUntilTracker lease;
    w.invoke("open", key, nullptr);
    auto opened = owner->open_session(std::chrono::milliseconds(w.options_.session_timeout_ms));
    if (!opened.ok()) {
        w.complete_error("open", key, nullptr, opened.error());
        return;  // an unknown open leaves its session to expire
    }
    lease.opened(*owner);
    w.ok("open", key, static_cast<int64_t>(*opened));
    auto lost = [&] {
        if (lease.safe(owner.get())) {
            return false;
        }
        w.record_loss(lease, "expire", key, nullptr);
        return true;
    };
    auto step = [&](const std::string& f, auto&& call) {
        w.invoke(f, key, nullptr);
        auto result = call();
        if (result.ok()) {
            w.ok(f, key, nullptr);
        } else {
            w.complete_error(f, key, nullptr, result.error());
        }
        return result.ok();
    };
    if (lost()) {
        return;
    }
    const bool created =
        step("create", [&] { return owner->create(key, "x", {.kind = rc::NodeKind::kEphemeral}); });
    if (created) {
        w.shared_.paths.add(key);
    }
    std::uniform_int_distribution<int> reads(1, 4);
    for (int i = reads(w.rng_); i > 0 && w.running(); --i) {
        w.pace();
        sessions_read(w);
    }
    if (lost()) {
        return;
    }
    if (created && std::uniform_int_distribution<int>(0, 3)(w.rng_) == 0) {
        step("delete", [&] { return owner->remove(key); });
        if (lost()) {
            return;
        }
    }
    if (std::uniform_int_distribution<int>(0, 2)(w.rng_) == 0) {
        // Abandoned: keepalives stop and the cluster expires the session some time later.
        w.invoke("expire", key, nullptr);
        owner.reset();
        w.info("expire", key, nullptr, "abandoned");
        return;
    }
    step("close", [&] { return owner->close_session(); });
}

void run_sessions(Worker& w) {
    for (uint64_t generation = 0; w.running(); ++generation) {
        w.pace();
        if (!w.running()) {
            break;
        }
        sessions_cycle(w, generation);
    }
}

// --- watch -------------------------------------------------------------------------------------

// A write that knows what it replaced: get, then set with the version read, so the change it
// makes follows exactly the change it read (its mzxid).
void watch_write(Worker& w, const std::string& key, int64_t value) {
    const std::string path = node_path(key);
    w.invoke("write", key, value);
    auto got = w.client_->get(path);
    if (!got.ok()) {
        w.fail("write", key, value, std::string(rc::to_string(got.error().code)));
        return;
    }
    auto set = w.client_->set(path, std::to_string(value), {.version = got->stat.version});
    if (!set.ok()) {
        w.complete_error("write", key, value, set.error());
        return;
    }
    w.shared_.watches.link(path, set->mzxid, got->stat.mzxid);
    w.ok("write", key, value);
}

void run_watch_writer(Worker& w) {
    std::uniform_int_distribution<uint32_t> pick_key(0, w.options_.keys - 1);
    for (int64_t n = 1; w.running(); ++n) {
        w.pace();
        if (!w.running() || !w.ensure_session()) {
            break;
        }
        watch_write(w, register_key(pick_key(w.rng_)), w.worker_ * 1'000'000'000LL + n);
    }
}

// Holds a persistent watch on every key until the run ends, plus a moment for the last events.
void run_watcher(Worker& w) {
    auto client = std::make_unique<rc::Client>(client_options(w.options_, w.rng_(), w.worker_));
    rc::Client* raw = client.get();
    const uint32_t watcher = w.worker_;
    for (uint32_t k = 0; k < w.options_.keys && w.running(); ++k) {
        const std::string path = node_path(register_key(k));
        // The run's log outlives every client (main owns the SharedRun).
        auto callback = [raw, watcher, path, log = &w.shared_.watches](const rc::WatchEvent& e) {
            if (e.type == rc::EventType::kNodeDataChanged) {
                log->deliver({monotonic_ns(), watcher, raw->connection_count(), path, e.zxid});
            }
        };
        while (w.running() && !raw->add_watch(path, false, callback).ok()) {
            std::this_thread::sleep_for(100ms);
        }
    }
    while (monotonic_ns() < w.options_.deadline_ns + 1'000'000'000) {
        std::this_thread::sleep_for(50ms);
    }
}

}  // namespace

bool prepare_workload(const WorkloadOptions& options, std::string& error) {
    rc::Client client(client_options(options, options.seed, std::nullopt));
    auto opened = client.open_session(10s);
    if (!opened.ok()) {
        error = rc::to_string(opened.error());
        return false;
    }
    std::vector<std::string> paths = {kRoot, kResource, kSequentialParent, kEphemeralParent};
    for (uint32_t k = 0; k < options.keys; ++k) {
        paths.push_back(node_path(register_key(k)));
    }
    for (const std::string& path : paths) {
        auto created = client.create(path, "");
        if (!created.ok() && created.error().code != rc::ErrorCode::kNodeExists) {
            error = "create " + path + ": " + rc::to_string(created.error());
            return false;
        }
    }
    (void)client.close_session();
    return true;
}

SharedRun::SharedRun() : parts_(std::make_unique<Parts>()) {}
SharedRun::~SharedRun() = default;

size_t finish_workload(SharedRun& shared, HistoryRecorder& history) {
    shared.parts().watches.emit(history);
    return shared.parts().watches.deliveries();
}

void run_worker(const WorkloadOptions& options,
                uint32_t worker,
                SharedRun& shared,
                HistoryRecorder& history,
                WorkloadTotals& totals) {
    Worker w(options, worker, shared.parts(), history, totals);
    if (options.workload == "register") {
        run_register(w);
    } else if (options.workload == "lock") {
        run_lock(w);
    } else if (options.workload == "watch") {
        if (worker % 2 == 1) {
            run_watcher(w);
        } else {
            run_watch_writer(w);
        }
    } else if (options.workload == "sequential") {
        run_sequential(w);
    } else {
        run_sessions(w);
    }
    w.abandon_session();
}

}  // namespace raftlock::jepsen
