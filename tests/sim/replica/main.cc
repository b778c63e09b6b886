// raftlock-replica-sim: the server simulator (issue 19). Each seed runs three real
// server::Replica objects (world.h) with simulated clients of every port (lock_clients.h,
// watch_clients.h, redis_clients.h, sql_clients.h) under a seeded nemesis, then lets the cluster
// settle and checks the end state.
//
//   raftlock-replica-sim --seeds 1..200     a sweep; prints each failing seed and a summary
//   raftlock-replica-sim --seed 17 -v       one seed, with the replicas' logs and the faults
//   raftlock-replica-sim --regressions tests/sim/replica/regressions.txt   every seed listed
//   raftlock-replica-sim-unsafe --break proposal-forwarding --seeds 1..200 --expect-violation
//                                           a negative control: passes when some seed fails

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
#include "server/negative_controls.h"
#endif
#include "tests/sim/replica/lock_clients.h"
#include "tests/sim/replica/redis_clients.h"
#include "tests/sim/replica/redis_counter_clients.h"
#include "tests/sim/replica/sql_clients.h"
#include "tests/sim/replica/watch_clients.h"
#include "tests/sim/replica/world.h"

namespace raftlock::sim::replica {
namespace {

constexpr uint64_t kSecond = 1'000'000;
constexpr uint64_t kFaultyUs = 12 * kSecond;   // the nemesis acts during this much
constexpr uint64_t kSettleUs = 8 * kSecond;    // then everything heals and clients wind down
constexpr uint64_t kCatchUpUs = 10 * kSecond;  // at most this much more for replicas to agree

WorldParams world_params(uint64_t seed) {
    WorldParams p;
    server::ServerConfig& c = p.config;
    // Followers write on their loops (--follower-writes-on-loop) in three seeds of four.
    c.follower_writes_on_loop = seed % 4 != 0;
    c.cluster_id = 1;
    c.tick_ms = 10;
    c.election_timeout_ms = 300;
    c.heartbeat_interval_ms = 50;
    c.request_timeout_ms = 2000;
    c.session_timeout_ms_min = 500;
    c.session_timeout_ms_max = 60000;
    c.pg_session_timeout_ms = 1500;
    c.snapshot_every_entries = 300;
    c.compaction_lag_entries = 50;
    return p;
}

struct RunResult {
    std::vector<std::string> failures;        // safety: what a negative control must cause
    std::vector<std::string> other_failures;  // liveness, and runs that proved nothing
    ClientStats stats;
    RedisClientStats redis;
    RedisCounterStats counter;
    SqlClientStats sql;
    WatchClientStats watch;
    uint64_t faults = 0;
    uint64_t transfers = 0;  // leadership transfers the nemesis asked for that were answered OK
    uint64_t force_releases = 0;  // its ForceReleases answered OK (a hold taken away)
    uint64_t writes_on_loop = 0;  // followers' writes on their loop threads
    std::string fingerprint;      // what two runs of one seed must agree on
};

// One fault at a time: which, on which node, for how long. Besides crashes, pauses, partitions
// and lossy links, an operator's requests in the middle of the clients' work, sent to any node as
// client requests: a leadership transfer (`raftlock member transfer`), and a forced release of a
// lock client's hold (`raftlock release --force`).
class Nemesis final : public ClientObserver {
public:
    Nemesis(World& world, LockClients& locks, bool verbose)
        : world_(world), locks_(locks), verbose_(verbose) {}

    void start() { schedule(world_.now_us() + 200'000 + world_.rng().uniform(kSecond)); }
    void stop() {
        stopped_ = true;
        end_fault();
    }
    uint64_t faults() const { return faults_; }
    uint64_t transfers() const { return transfers_; }
    uint64_t force_releases() const { return force_releases_; }

    void on_message(ConnId conn, const proto::ServerMessage& message) override {
        if (conn == admin_conn_ && message.has_response()) {
            const proto::Response& r = message.response();
            log(fmt::format("{} answered {} (leader {})", admin_transfer_ ? "transfer" : "release",
                            proto::Code_Name(r.code()), r.leader_hint()));
            (admin_transfer_ ? transfers_ : force_releases_) += r.code() == proto::OK ? 1 : 0;
        }
    }
    void on_closed(ConnId conn) override {
        if (conn == admin_conn_) {
            admin_conn_ = 0;
        }
    }

private:
    void schedule(uint64_t at_us) {
        world_.agenda().at(at_us, [this] { act(); });
    }
    void log(const std::string& what) {
        if (verbose_) {
            fmt::print("t={:.3f}s nemesis: {}\n", world_.now_us() / 1e6, what);
        }
    }
    void act() {
        if (stopped_) {
            return;
        }
        const std::vector<NodeId> ids = world_.ids();
        const NodeId node = ids[world_.rng().uniform(ids.size())];
        const uint64_t lasts = 100'000 + world_.rng().uniform(2'500'000);
        ++faults_;
        switch (world_.rng().uniform(6)) {
            case 0:
                log(fmt::format("crash n{} for {} ms", node, lasts / 1000));
                world_.crash(node);
                end_ = [this, node] {
                    log(fmt::format("restart n{}", node));
                    world_.restart(node);
                };
                break;
            case 1:
                log(fmt::format("pause n{} for {} ms", node, lasts / 1000));
                world_.pause(node);
                end_ = [this, node] {
                    log(fmt::format("resume n{}", node));
                    world_.resume(node);
                };
                break;
            case 2:
                log(fmt::format("isolate n{} for {} ms", node, lasts / 1000));
                world_.isolate(node);
                end_ = [this] {
                    log("heal");
                    world_.heal();
                };
                break;
            case 3: {
                const NodeId to = ids[world_.rng().uniform(ids.size())];
                log(fmt::format("ask n{} to hand leadership to n{}", node, to));
                proto::Request request;
                request.mutable_transfer_leadership()->set_node_id(to);
                (void)send_admin(node, std::move(request), true);
                break;
            }
            case 4: {
                const std::optional<std::pair<uint64_t, uint64_t>> held =
                    locks_.force_release_target();
                if (!held) {
                    log("nothing held to take away");
                    break;
                }
                log(fmt::format("ask n{} to take session {}'s hold (token {}) away", node,
                                held->first, held->second));
                proto::Request request;
                proto::ForceRelease* release = request.mutable_force_release();
                release->set_name(LockClients::lock_name());
                release->set_session(held->first);
                release->set_token(held->second);
                if (send_admin(node, std::move(request), false)) {
                    locks_.note_revoking(held->second);  // exempt only what was asked
                }
                break;
            }
            default: {
                const uint32_t loss = 50 + static_cast<uint32_t>(world_.rng().uniform(400));
                log(fmt::format("lose {} per mille of peer frames for {} ms", loss, lasts / 1000));
                world_.set_loss_per_mille(loss);
                end_ = [this] {
                    log("no loss");
                    world_.set_loss_per_mille(0);
                };
            }
        }
        world_.agenda().at(world_.now_us() + lasts, [this] {
            end_fault();
            if (!stopped_) {
                schedule(world_.now_us() + world_.rng().uniform(kSecond));
            }
        });
    }
    // An operator's request, on a connection of its own for as long as the fault lasts; false
    // when the node is down (nothing sent).
    bool send_admin(NodeId node, proto::Request request, bool transfer) {
        std::optional<ConnId> conn = world_.open(node, *this);
        if (!conn) {
            return false;
        }
        admin_conn_ = *conn;
        admin_transfer_ = transfer;
        request.set_request_id(faults_);
        world_.send(*conn, std::move(request));
        end_ = [this] {
            if (admin_conn_ != 0) {
                world_.close(admin_conn_);
                admin_conn_ = 0;
            }
        };
        return true;
    }
    void end_fault() {
        if (end_) {
            std::function<void()> end = std::move(end_);
            end_ = nullptr;
            end();
        }
    }

    World& world_;
    LockClients& locks_;
    bool verbose_;
    bool stopped_ = false;
    uint64_t faults_ = 0;
    uint64_t transfers_ = 0;
    uint64_t force_releases_ = 0;
    ConnId admin_conn_ = 0;        // an operator's request's connection while it lasts
    bool admin_transfer_ = false;  // which request it carries
    std::function<void()> end_;
};

// The state machine's own invariants (StateMachine::check_invariants: one exclusive holder, FIFO
// queues with no grantable head left waiting, multi-lock sets whole, timers in step, ...) on every
// running replica every few simulated milliseconds; the first break is a failure.
class StateChecks {
public:
    explicit StateChecks(World& world) : world_(world) {}
    void start() { schedule(); }
    void stop() { stopped_ = true; }
    const std::vector<std::string>& failures() const { return failures_; }
    void check() {
        for (NodeId id : world_.ids()) {
            if (!failures_.empty() || !world_.up(id)) {
                continue;
            }
            const server::Replica& replica = world_.replica(id);
            if (std::string broken = replica.state().check_invariants(); !broken.empty()) {
                failures_.push_back(
                    fmt::format("t={:.3f}s n{} at applied index {}: state machine "
                                "invariant broken: {}",
                                world_.now_us() / 1e6, id, replica.applied_index(), broken));
            }
        }
    }

private:
    static constexpr uint64_t kEveryUs = 25'000;
    void schedule() {
        world_.agenda().at(world_.now_us() + kEveryUs, [this] {
            check();
            if (!stopped_) {
                schedule();
            }
        });
    }

    World& world_;
    bool stopped_ = false;
    std::vector<std::string> failures_;
};

// Every node up, and all of them at the same applied index.
bool settled(const World& world) {
    std::optional<uint64_t> applied;
    for (NodeId id : world.ids()) {
        if (!world.up(id) || world.paused(id)) {
            return false;
        }
        const uint64_t a = world.replica(id).applied_index();
        if (applied && *applied != a) {
            return false;
        }
        applied = a;
    }
    return true;
}

RunResult run(uint64_t seed, bool verbose) {
    World world(seed, world_params(seed));
    ClientParams client_params;
    client_params.trace = verbose;
    LockClients clients(world, client_params);
    RedisClientParams redis_params;
    redis_params.trace = verbose;
    RedisLockClients redis(world, redis_params);
    RedisCounterParams counter_params;
    counter_params.trace = verbose;
    RedisCounterClients counter(world, counter_params);
    SqlClientParams sql_params;
    sql_params.trace = verbose;
    SqlClients sql(world, sql_params);
    WatchClientParams watch_params;
    watch_params.watched_nodes = client_params.clients;
    watch_params.trace = verbose;
    WatchClients watchers(world, watch_params);
    Nemesis nemesis(world, clients, verbose);
    StateChecks state_checks(world);
    state_checks.start();
    clients.start();
    redis.start();
    counter.start();
    sql.start();
    watchers.start();
    nemesis.start();
    world.run_until(kFaultyUs);
    nemesis.stop();
    clients.stop();
    redis.stop();
    counter.stop();
    sql.stop();
    watchers.stop();
    world.run_until(kFaultyUs + kSettleUs);
    const uint64_t deadline = world.now_us() + kCatchUpUs;
    while (!settled(world) && world.now_us() < deadline) {
        world.run_until(world.now_us() + 100'000);
    }
    RunResult result;
    if (settled(world)) {
        clients.final_check();
    } else {
        result.other_failures.push_back("the replicas did not settle at one applied index:\n" +
                                        world.describe());
    }
    state_checks.stop();
    state_checks.check();  // the settled state too
    result.failures = clients.failures();
    result.failures.insert(result.failures.end(), state_checks.failures().begin(),
                           state_checks.failures().end());
    result.failures.insert(result.failures.end(), redis.failures().begin(), redis.failures().end());
    result.failures.insert(result.failures.end(), counter.failures().begin(),
                           counter.failures().end());
    result.failures.insert(result.failures.end(), sql.failures().begin(), sql.failures().end());
    result.failures.insert(result.failures.end(), watchers.failures().begin(),
                           watchers.failures().end());
    for (const auto* list :
         {&clients.liveness_failures(), &redis.liveness_failures(), &counter.liveness_failures(),
          &sql.liveness_failures(), &watchers.liveness_failures()}) {
        result.other_failures.insert(result.other_failures.end(), list->begin(), list->end());
    }
    result.stats = clients.stats();
    result.redis = redis.stats();
    result.counter = counter.stats();
    result.sql = sql.stats();
    result.watch = watchers.stats();
    result.faults = nemesis.faults();
    result.transfers = nemesis.transfers();
    result.force_releases = nemesis.force_releases();
    result.writes_on_loop = world.writes_on_loop();
    // A run that did nothing or injected nothing proves nothing.
    if (result.stats.grants == 0 || result.stats.fenced_writes == 0) {
        result.other_failures.push_back(
            fmt::format("no lock was granted and used (grants {}, fenced "
                        "writes {})",
                        result.stats.grants, result.stats.fenced_writes));
    }
    if (result.redis.acquired == 0 || result.redis.reads_checked == 0) {
        result.other_failures.push_back(
            fmt::format("no Redis lock was taken and read (taken {}, reads {})",
                        result.redis.acquired, result.redis.reads_checked));
    }
    if (result.counter.committed == 0) {
        result.other_failures.push_back(
            fmt::format("no Redis transaction committed ({} aborted, {} unknown)",
                        result.counter.aborted, result.counter.unknown));
    }
    if (result.sql.locks_taken == 0 || result.sql.reads_checked == 0) {
        result.other_failures.push_back(
            fmt::format("no SQL lock was taken and no row read back (locks {}, reads {})",
                        result.sql.locks_taken, result.sql.reads_checked));
    }
    if (result.watch.events == 0) {
        result.other_failures.push_back(
            fmt::format("no watch event arrived ({} watches set)", result.watch.watches_set));
    }
    if (result.faults == 0) {
        result.other_failures.push_back("no fault was injected");
    }
    result.fingerprint =
        fmt::format("{}|{} {} {} {} {} {} {}|{} {} {}|{} {} {} {}|{} {} {}|{}|{}", world.describe(),
                    result.stats.sessions, result.stats.grants, result.stats.releases,
                    result.stats.fenced_writes, result.stats.lapses, result.stats.sessions_lost,
                    result.stats.retries, result.redis.acquired, result.redis.reads_checked,
                    result.redis.retries, result.sql.locks_taken, result.sql.rows_acknowledged,
                    result.sql.reads_checked, result.sql.sessions_lost, result.watch.watches_set,
                    result.watch.events, result.watch.changes_seen, world.now_us(),
                    fmt::join(result.failures, ";"));
    result.fingerprint +=
        fmt::format("|{} {} {}|{} {}", result.counter.committed, result.counter.aborted,
                    result.counter.unknown, result.stats.multi_grants, result.transfers);
    result.fingerprint += fmt::format("|{} {}", result.force_releases, result.stats.revoked);
    if (verbose) {
        fmt::print("{}", world.describe());
    }
    return result;
}

// One seed per line, then "# why" (blank lines and comment lines allowed).
bool read_seed_list(const std::string& path, std::vector<uint64_t>& seeds) {
    std::ifstream in(path);
    if (!in) {
        fmt::print(stderr, "cannot read {}\n", path);
        return false;
    }
    std::string line;
    for (int line_no = 1; std::getline(in, line); ++line_no) {
        std::istringstream words(line.substr(0, line.find('#')));
        std::string word;
        if (!(words >> word)) {
            continue;
        }
        const uint64_t seed = std::strtoull(word.c_str(), nullptr, 10);
        if (seed == 0 || word.find_first_not_of("0123456789") != std::string::npos ||
            words >> word) {
            fmt::print(stderr, "{}:{}: want one seed (a number from 1) and a # comment\n", path,
                       line_no);
            return false;
        }
        seeds.push_back(seed);
    }
    if (seeds.empty()) {
        fmt::print(stderr, "{}: lists no seed\n", path);
        return false;
    }
    return true;
}

bool parse_range(const char* text, uint64_t& first, uint64_t& last) {
    const char* dots = std::strstr(text, "..");
    if (dots == nullptr) {
        first = last = std::strtoull(text, nullptr, 10);
    } else {
        first = std::strtoull(text, nullptr, 10);
        last = std::strtoull(dots + 2, nullptr, 10);
    }
    return first >= 1 && first <= last;
}

int main_impl(int argc, char** argv) {
    uint64_t first = 1;
    uint64_t last = 100;
    bool verbose = false;
    bool expect_violation = false;
    bool check_determinism = false;
    std::string regressions;   // a file of seeds, instead of a range
    std::string replay_flags;  // the switches a replay needs besides the seed
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
        if (arg == "--break" && i + 1 < argc) {
            const auto control = server::negative_controls::parse(argv[++i]);
            if (!control) {
                fmt::print(stderr, "unknown negative control {}\n", argv[i]);
                return 2;
            }
            server::negative_controls::turn_on(*control);
            replay_flags += fmt::format(" --break {}", argv[i]);
            continue;
        }
#endif
        if (arg == "--expect-violation") {
            expect_violation = true;
            continue;
        }
        if (arg == "--check-determinism") {
            check_determinism = true;
            continue;
        }
        if ((arg == "--seeds" || arg == "--seed") && i + 1 < argc) {
            if (!parse_range(argv[++i], first, last)) {
                fmt::print(stderr, "bad seed range {}: want N or A..B with 1 <= A <= B\n", argv[i]);
                return 2;
            }
        } else if (arg == "--regressions" && i + 1 < argc) {
            regressions = argv[++i];
        } else if (arg == "-v" || arg == "--verbose") {
            verbose = true;
        } else {
            fmt::print(
                stderr,
                "usage: raftlock-replica-sim [--seeds A..B | --seed N | --regressions FILE] "
                "[-v] [--expect-violation] [--check-determinism]\n"
                "  runs real replicas under a seeded nemesis; a failing seed replays with\n"
                "  raftlock-replica-sim --seed N -v. raftlock-replica-sim-unsafe also takes\n"
                "  --break local-reads|proposal-forwarding|keepalive-without-read-index|\n"
                "  forward-answered-early|reads-out-of-order\n");
            return 2;
        }
    }
    std::vector<uint64_t> seed_list;
    std::string seeds_named = fmt::format("{}..{}", first, last);
    if (!regressions.empty()) {
        if (!read_seed_list(regressions, seed_list)) {
            return 2;
        }
        seeds_named = "listed in " + regressions;
    } else {
        for (uint64_t seed = first; seed <= last; ++seed) {
            seed_list.push_back(seed);
        }
    }
    spdlog::set_level(verbose ? spdlog::level::info : spdlog::level::off);
    const auto started = std::chrono::steady_clock::now();
    uint64_t failed = 0;
    ClientStats total;
    uint64_t faults = 0;
    uint64_t redis_acquired = 0;
    uint64_t redis_reads = 0;
    uint64_t redis_committed = 0;
    uint64_t redis_aborted = 0;
    uint64_t sql_locks = 0;
    uint64_t sql_rows = 0;
    uint64_t sql_reads = 0;
    uint64_t watch_events = 0;
    uint64_t cancels = 0;
    uint64_t cancels_granted = 0;
    uint64_t multi_grants = 0;
    uint64_t transfers = 0;
    uint64_t writes_on_loop = 0;
    uint64_t force_releases = 0;
    uint64_t revoked = 0;
    uint64_t watch_changes = 0;
    for (const uint64_t seed : seed_list) {
        RunResult r = run(seed, verbose);
        if (check_determinism && run(seed, false).fingerprint != r.fingerprint) {
            r.other_failures.push_back("a second run of the seed ended differently");
        }
        total.grants += r.stats.grants;
        total.fenced_writes += r.stats.fenced_writes;
        total.lapses += r.stats.lapses;
        total.sessions_lost += r.stats.sessions_lost;
        redis_acquired += r.redis.acquired;
        redis_reads += r.redis.reads_checked;
        redis_committed += r.counter.committed;
        redis_aborted += r.counter.aborted;
        sql_locks += r.sql.locks_taken;
        sql_rows += r.sql.rows_acknowledged;
        sql_reads += r.sql.reads_checked;
        watch_events += r.watch.events;
        cancels += r.stats.cancels;
        cancels_granted += r.stats.cancels_granted;
        multi_grants += r.stats.multi_grants;
        transfers += r.transfers;
        writes_on_loop += r.writes_on_loop;
        force_releases += r.force_releases;
        revoked += r.stats.revoked;
        watch_changes += r.watch.changes_seen;
        faults += r.faults;
        if (verbose) {
            fmt::print(
                "seed {}: {} grants, {} fenced writes, {} releases, {} lapses, {} sessions "
                "lost, {} retries; Redis: {} taken, {} reads checked, {} lapses; SQL: {} locks, "
                "{} rows acknowledged, {} reads checked, {} sessions lost; watches: {} set, {} "
                "events, {} changes read after their event; {} faults\n",
                seed, r.stats.grants, r.stats.fenced_writes, r.stats.releases, r.stats.lapses,
                r.stats.sessions_lost, r.stats.retries, r.redis.acquired, r.redis.reads_checked,
                r.redis.lapses, r.sql.locks_taken, r.sql.rows_acknowledged, r.sql.reads_checked,
                r.sql.sessions_lost, r.watch.watches_set, r.watch.events, r.watch.changes_seen,
                r.faults);
        }
        if (!r.failures.empty() || !r.other_failures.empty()) {
            ++failed;
            fmt::print("FAIL seed {} (replay: {}{} --seed {} -v)\n", seed, argv[0], replay_flags,
                       seed);
            for (const std::string& f : r.failures) {
                fmt::print("  {}\n", f);
            }
            for (const std::string& f : r.other_failures) {
                fmt::print("  {}\n", f);
            }
            // A control is caught by a broken promise, not by a run that stalled.
            if (expect_violation && !r.failures.empty()) {
                fmt::print("the negative control was caught at seed {}\n", seed);
                return 0;
            }
        }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const uint64_t seeds = seed_list.size();
    fmt::print(
        "{} seeds {}: {} failed; {} grants ({} of two locks at once), {} fenced writes, {} "
        "lapses, {} sessions lost, {} cancels ({} granted); Redis: {} taken, {} reads checked, {} "
        "transactions "
        "committed, {} aborted by WATCH; SQL: {} locks, {} rows acknowledged, {} reads "
        "checked; watches: {} events, {} changes read after their event; {} faults ({} "
        "leadership transfers done, {} holds forced away, {} seen revoked); {} follower writes "
        "on the loop; {:.1f} s ({:.1f} seeds/s)\n",
        seeds, seeds_named, failed, total.grants, multi_grants, total.fenced_writes, total.lapses,
        total.sessions_lost, cancels, cancels_granted, redis_acquired, redis_reads, redis_committed,
        redis_aborted, sql_locks, sql_rows, sql_reads, watch_events, watch_changes, faults,
        transfers, force_releases, revoked, writes_on_loop, seconds, seeds / seconds);
    if (expect_violation) {
        fmt::print("NOT CAUGHT: no seed failed\n");
        return 1;
    }
    // Over a batch (one seed may draw none): multi-locks that were never granted tested nothing.
    // So are followers' writes on their loops (server::Replica::write_on_loop) never taken.
    if (seeds >= 10 &&
        (multi_grants == 0 || transfers == 0 || force_releases == 0 || writes_on_loop == 0)) {
        fmt::print(
            "FAIL: in {} seeds, {} multi-locks granted, {} leadership transfers, {} forced "
            "releases done and {} follower writes on the loop\n",
            seeds, multi_grants, transfers, force_releases, writes_on_loop);
        return 1;
    }
    return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace raftlock::sim::replica

int main(int argc, char** argv) {
    return raftlock::sim::replica::main_impl(argc, argv);
}
