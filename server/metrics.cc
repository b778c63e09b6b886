// Prometheus text exposition (format 0.0.4) of one node's metrics (metrics.h).

#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::server {
namespace {

// The bucket bounds in whole microseconds, so record_us() compares integers: no rounding makes an
// observation that lies exactly on a bound fall into the next bucket.
constexpr std::array<uint64_t, LatencyHistogram::kBoundsSeconds.size()> bounds_us() {
    std::array<uint64_t, LatencyHistogram::kBoundsSeconds.size()> out{};
    for (size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<uint64_t>(LatencyHistogram::kBoundsSeconds[i] * 1e6 + 0.5);
    }
    return out;
}
constexpr std::array<uint64_t, LatencyHistogram::kBoundsSeconds.size()> kBoundsUs = bounds_us();
static_assert(kBoundsUs.front() == 50);
static_assert(kBoundsUs.back() == 10'000'000);

// Prometheus float syntax: shortest round-trip form, and NaN / +Inf / -Inf spelled its way.
std::string prometheus_number(double value) {
    if (std::isnan(value)) {
        return "NaN";
    }
    if (std::isinf(value)) {
        return value > 0 ? "+Inf" : "-Inf";
    }
    return fmt::format("{}", value);
}

// HELP text escapes backslash and newline (the 0.0.4 format's only escapes there).
std::string escape_help(const std::string& help) {
    std::string out;
    out.reserve(help.size());
    for (char c : help) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

void render_header(std::string& out,
                   const std::string& name,
                   const std::string& help,
                   std::string_view type) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(help), name, type);
}

bool valid_metric_name(const std::string& name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == ':';
    });
}

struct CounterInfo {
    const char* name;  // without the raftlock_ prefix
    const char* help;
    uint64_t Metrics::*value;
};

constexpr CounterInfo kCounters[] = {
    {"proposals_total", "Entries proposed by this node as leader.", &Metrics::proposals_total},
    {"proposals_dropped_total", "Proposals the Raft core refused (no leader, transfer, ...).",
     &Metrics::proposals_dropped_total},
    {"forwarded_writes_total", "Writes this node forwarded to the leader as a follower.",
     &Metrics::forwarded_writes_total},
    {"forwards_resent_total",
     "Forwarded writes sent to the leader again because the link they went out on failed.",
     &Metrics::forwards_resent_total},
    {"elections_total", "Elections this node started (times it became candidate).",
     &Metrics::elections_total},
    {"leader_changes_total", "Changes of the leader this node knows.",
     &Metrics::leader_changes_total},
    {"applied_entries_total", "Log entries applied to the state machine.",
     &Metrics::applied_entries_total},
    {"snapshots_created_total", "Snapshots this node took of its state machine.",
     &Metrics::snapshots_created_total},
    {"snapshots_installed_total", "Snapshots this node received from a leader and installed.",
     &Metrics::snapshots_installed_total},
    {"client_requests_total", "Client requests received.", &Metrics::client_requests_total},
    {"client_errors_total", "Client responses with a code other than OK.",
     &Metrics::client_errors_total},
    {"read_index_requests_total", "Linearizable reads served through ReadIndex.",
     &Metrics::read_index_requests_total},
    {"read_index_retries_total",
     "ReadIndex rounds asked again after an election timeout without an answer.",
     &Metrics::read_index_retries_total},
    {"local_reads_total",
     "Reads served from this node's applied state without a ReadIndex round (the ZooKeeper "
     "port's --zk-reads local).",
     &Metrics::local_reads_total},
    {"redis_scripts_over_budget_total",
     "Redis scripts this replica applied that stopped at their instruction budget.",
     &Metrics::redis_scripts_over_budget_total},
    {"redis_publications_total",
     "Redis PUBLISHes this replica applied, by a command or from a script (each one delivered "
     "to this node's subscribers).",
     &Metrics::redis_publications_total},
    {"redis_messages_delivered_total",
     "Published messages this node sent to its Redis subscribers (one per receiving connection).",
     &Metrics::redis_messages_delivered_total},
    {"sql_statements_over_budget_total",
     "SQL statements this replica ran that stopped at their row budget (--sql-rows-max).",
     &Metrics::sql_statements_over_budget_total},
    {"redis_reads_deferred_total",
     "Turns of the event loop that left confirmed Redis reads for a later turn (16 MiB of "
     "replies a turn).",
     &Metrics::redis_reads_deferred_total},
    {"watch_events_total", "Watch events pushed to clients.", &Metrics::watch_events_total},
    {"lock_grants_pushed_total", "Lock grants pushed to waiting clients.",
     &Metrics::lock_grants_pushed_total},
    {"sessions_expired_total", "Session expiries this node proposed as leader.",
     &Metrics::sessions_expired_total},
    {"forwarded_internal_refused_total",
     "Forwarded writes refused because they carried a command only a leader proposes "
     "(ExpireSession, Noop): a broken or hostile peer.",
     &Metrics::forwarded_internal_refused_total},
    {"auth_logins_total",
     "Logins that succeeded on this node: native (SCRAM-SHA-256 or a client certificate), Redis "
     "AUTH, PostgreSQL (SCRAM-SHA-256 or a client certificate); not a Redis connection logged "
     "in by its certificate.",
     &Metrics::auth_logins_total},
    {"auth_failures_total",
     "Logins that failed on this node, on any port (a wrong password, an unknown user, a "
     "malformed exchange); the third failure on one connection closes it.",
     &Metrics::auth_failures_total},
    {"permission_denied_total",
     "Requests this node refused before the log because their user lacks a permission (or "
     "none is logged in) while authentication is enabled.",
     &Metrics::permission_denied_total},
    {"rate_limited_total",
     "Client requests refused for coming faster than --max-requests-per-second on their "
     "connection.",
     &Metrics::rate_limited_total},
    {"login_deadline_closed_total",
     "Client connections closed for not logging in within --login-deadline-ms while "
     "authentication is enabled.",
     &Metrics::login_deadline_closed_total},
};

}  // namespace

void LatencyHistogram::record_us(uint64_t latency_us) {
    // The first bound >= the latency: Prometheus buckets count observations <= le.
    const size_t bucket = static_cast<size_t>(
        std::lower_bound(kBoundsUs.begin(), kBoundsUs.end(), latency_us) - kBoundsUs.begin());
    RL_ASSERT(bucket < buckets_.size());
    // Relaxed: each counter is exact on its own; render() derives the count from the buckets so
    // the exposition stays self-consistent while other threads record.
    buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    sum_us_.fetch_add(latency_us, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t LatencyHistogram::count() const {
    return count_.load(std::memory_order_relaxed);
}

double LatencyHistogram::quantile_seconds(double q) const {
    RL_ASSERT(q >= 0.0);
    RL_ASSERT(q <= 1.0);
    std::array<uint64_t, kBoundsSeconds.size() + 1> counts{};
    uint64_t total = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
        counts[i] = buckets_[i].load(std::memory_order_relaxed);
        total += counts[i];
    }
    if (total == 0) {
        return 0.0;
    }
    // The rank of the observation asked for, 1-based: q = 0 is the smallest, q = 1 the largest.
    const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * total)));
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kBoundsSeconds.size(); ++i) {
        cumulative += counts[i];
        if (cumulative >= rank) {
            return kBoundsSeconds[i];
        }
    }
    // In the +Inf bucket: the largest finite bound is all we can say (at least that long).
    return kBoundsSeconds.back();
}

void LatencyHistogram::render(std::string& out,
                              const std::string& name,
                              const std::string& help) const {
    RL_ASSERT(valid_metric_name(name));
    render_header(out, name, help, "histogram");
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kBoundsSeconds.size(); ++i) {
        cumulative += buckets_[i].load(std::memory_order_relaxed);
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name,
                           prometheus_number(kBoundsSeconds[i]), cumulative);
    }
    cumulative += buckets_.back().load(std::memory_order_relaxed);
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
    const double sum_seconds = static_cast<double>(sum_us_.load(std::memory_order_relaxed)) / 1e6;
    out += fmt::format("{}_sum {}\n", name, prometheus_number(sum_seconds));
    out += fmt::format("{}_count {}\n", name, cumulative);
}

void Metrics::add_gauge(std::string name, std::string help, std::function<double()> read) {
    add_read(std::move(name), std::move(help), std::move(read), false);
}

void Metrics::add_counter(std::string name, std::string help, std::function<double()> read) {
    RL_ASSERT_MSG(name.ends_with("_total"), "a counter's name ends in _total");
    add_read(std::move(name), std::move(help), std::move(read), true);
}

void Metrics::add_read(std::string name,
                       std::string help,
                       std::function<double()> read,
                       bool counter) {
    RL_ASSERT_MSG(valid_metric_name(name), "gauge name is not a Prometheus metric name");
    RL_ASSERT(read != nullptr);
    for (const Gauge& g : gauges_) {
        RL_ASSERT_MSG(g.name != name, "gauge registered twice");
    }
    gauges_.push_back(Gauge{std::move(name), std::move(help), std::move(read), counter});
}

std::pair<std::string, std::string> Metrics::peer_messages_dropped_family() const {
    std::string name = "raftlock_peer_messages_dropped_total";
    std::string text;
    render_header(text, name,
                  "Raft messages from peers dropped by the range checks (docs/operations.md, "
                  "Limits), by reason.",
                  "counter");
    RL_ASSERT(peer_messages_dropped[static_cast<size_t>(raft::MessageFault::kNone)] == 0);
    // Every reason, including those never hit, so a dashboard sees each series from the start.
    for (size_t i = 1; i < raft::kMessageFaultCount; ++i) {
        text += fmt::format("{}{{reason=\"{}\"}} {}\n", name,
                            raft::to_string(static_cast<raft::MessageFault>(i)),
                            peer_messages_dropped[i]);
    }
    return {std::move(name), std::move(text)};
}

std::string Metrics::render() const {
    // (name, text) per metric family, sorted by name at the end.
    std::vector<std::pair<std::string, std::string>> families;
    for (const CounterInfo& c : kCounters) {
        std::string name = fmt::format("raftlock_{}", c.name);
        std::string text;
        render_header(text, name, c.help, "counter");
        text += fmt::format("{} {}\n", name, this->*c.value);
        families.emplace_back(std::move(name), std::move(text));
    }
    families.emplace_back(peer_messages_dropped_family());
    for (const Gauge& g : gauges_) {
        std::string text;
        render_header(text, g.name, g.help, g.counter ? "counter" : "gauge");
        text += fmt::format("{} {}\n", g.name, prometheus_number(g.read()));
        families.emplace_back(g.name, std::move(text));
    }
    const struct {
        const LatencyHistogram* histogram;
        const char* name;
        const char* help;
    } histograms[] = {
        {&commit_latency, "raftlock_commit_latency_seconds",
         "Time from a proposal to its application on the proposing node."},
        {&fsync_latency, "raftlock_fsync_latency_seconds",
         "Time of one synced storage batch (fdatasync included)."},
        {&apply_batch_latency, "raftlock_apply_batch_latency_seconds",
         "Time to apply one batch of committed entries to the state machine."},
    };
    for (const auto& h : histograms) {
        std::string text;
        h.histogram->render(text, h.name, h.help);
        families.emplace_back(h.name, std::move(text));
    }
    std::sort(families.begin(), families.end());
    for (size_t i = 1; i < families.size(); ++i) {
        RL_ASSERT_MSG(families[i - 1].first != families[i].first, "two metrics share a name");
    }
    std::string out;
    for (const auto& family : families) {
        out += family.second;
    }
    return out;
}

}  // namespace raftlock::server
