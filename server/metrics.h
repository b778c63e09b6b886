#pragma once

// Prometheus metrics of one raftlockd (the /metrics route): counters, gauges and latency
// histograms, rendered in the Prometheus text exposition format 0.0.4. Single-threaded except where
// noted: the loop thread owns the registry; the storage thread reports fsync latency through an
// atomic histogram (record() is lock-free).
//
// Names follow Prometheus conventions: raftlock_ prefix, base units (seconds, bytes), _total for
// counters, e.g. raftlock_commit_latency_seconds (histogram), raftlock_proposals_total.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "raft/peer_input.h"

namespace raftlock::server {

// Latency histogram with fixed bucket bounds from 50 µs to 10 s (roughly x2.5 per step), plus
// +Inf. record() may be called from any thread.
class LatencyHistogram {
public:
    static constexpr std::array<double, 17> kBoundsSeconds = {
        0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
        0.05,    0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0};

    void record_us(uint64_t latency_us);
    uint64_t count() const;
    // The sum of every recorded latency (the _sum line, in µs): with count(), a mean over a span.
    uint64_t sum_us() const { return sum_us_.load(std::memory_order_relaxed); }
    // Approximate quantile (upper bound of the bucket holding it), in seconds; 0 when empty.
    double quantile_seconds(double q) const;
    // Appends "# HELP", "# TYPE name histogram", cumulative _bucket{le=...}, _sum and _count lines.
    void render(std::string& out, const std::string& name, const std::string& help) const;

private:
    std::array<std::atomic<uint64_t>, kBoundsSeconds.size() + 1> buckets_{};
    std::atomic<uint64_t> count_{0};
    std::atomic<uint64_t> sum_us_{0};
};

class Metrics {
public:
    // Counters the server increments (loop thread).
    uint64_t proposals_total = 0;          // entries proposed by this node as leader
    uint64_t proposals_dropped_total = 0;  // proposals the core refused (no leader, transfer, ...)
    uint64_t forwarded_writes_total = 0;   // writes this follower forwarded to the leader
    uint64_t forwards_resent_total = 0;    // forwarded again after the link to the leader failed
    uint64_t elections_total = 0;          // elections this node started (became candidate)
    uint64_t leader_changes_total = 0;     // changes of the known leader
    uint64_t applied_entries_total = 0;
    uint64_t snapshots_created_total = 0;
    uint64_t snapshots_installed_total = 0;
    uint64_t client_requests_total = 0;
    uint64_t client_errors_total = 0;  // responses with a code other than OK
    uint64_t read_index_requests_total = 0;
    uint64_t read_index_retries_total = 0;
    uint64_t local_reads_total = 0;  // served from this node's state (--zk-reads local)
    uint64_t redis_scripts_over_budget_total = 0;   // stopped by --script-instructions-max
    uint64_t sql_statements_over_budget_total = 0;  // stopped by --sql-rows-max
    uint64_t redis_reads_deferred_total = 0;        // loop turns that left Redis reads for later
    uint64_t redis_publications_total = 0;          // PUBLISHes applied (commands and scripts)
    uint64_t redis_messages_delivered_total = 0;    // to this node's subscribers
    uint64_t watch_events_total = 0;
    uint64_t lock_grants_pushed_total = 0;
    uint64_t sessions_expired_total = 0;  // expiries this node proposed as leader
    uint64_t auth_logins_total = 0;
    uint64_t auth_failures_total = 0;
    uint64_t permission_denied_total = 0;
    uint64_t rate_limited_total = 0;
    uint64_t login_deadline_closed_total = 0;
    uint64_t forwarded_internal_refused_total = 0;  // ForwardWrites of ExpireSession or Noop
    // Raft messages from peers dropped by the range checks, by reason (raft/peer_input.h); the
    // family raftlock_peer_messages_dropped_total{reason="term_jump"}, ... ([kNone] stays 0).
    std::array<uint64_t, raft::kMessageFaultCount> peer_messages_dropped{};

    LatencyHistogram commit_latency;  // propose -> applied on the proposing node
    LatencyHistogram fsync_latency;   // one synced storage batch (storage thread)
    LatencyHistogram apply_batch_latency;

    // Gauges are read when rendering, from callbacks the server registers (loop thread).
    void add_gauge(std::string name, std::string help, std::function<double()> read);
    // A counter kept elsewhere (the listeners' statistics), read the same way; `read` must never
    // decrease.
    void add_counter(std::string name, std::string help, std::function<double()> read);

    // The whole exposition text: counters, gauges, histograms, sorted by name.
    std::string render() const;

private:
    // (name, exposition text) of raftlock_peer_messages_dropped_total.
    std::pair<std::string, std::string> peer_messages_dropped_family() const;

    void add_read(std::string name, std::string help, std::function<double()> read, bool counter);

    struct Gauge {
        std::string name;
        std::string help;
        std::function<double()> read;
        bool counter = false;  // rendered with TYPE counter
    };
    std::vector<Gauge> gauges_;
};

}  // namespace raftlock::server
