// Prometheus metrics: the exposition text line by line, histogram buckets, quantiles, and
// recording from two threads at once.

#include "server/metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::server {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
    REQUIRE((text.empty() || text.back() == '\n'));
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

bool is_metric_name(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
    });
}

// One sample line: `name{le="x"} value`, `name{reason="x"} value` or `name value`. (No <regex>:
// GCC 12 warns inside it in the sanitizer build, which treats warnings as errors.)
struct Sample {
    std::string name;
    std::string label_key;  // "le" or "reason"; empty without a label
    std::string le;         // the label's value; empty without the label
    std::string value;
};

Sample parse_sample(const std::string& line) {
    Sample s;
    const size_t space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    s.value = line.substr(space + 1);
    std::string series = line.substr(0, space);
    const size_t brace = series.find('{');
    if (brace != std::string::npos) {
        const std::string labels = series.substr(brace);
        const size_t equals = labels.find("=\"");
        REQUIRE(equals != std::string::npos);
        s.label_key = labels.substr(1, equals - 1);
        REQUIRE((s.label_key == "le" || s.label_key == "reason"));
        REQUIRE(labels.ends_with("\"}"));
        s.le = labels.substr(equals + 2, labels.size() - equals - 4);
        REQUIRE_FALSE(s.le.empty());
        series.resize(brace);
    }
    s.name = series;
    REQUIRE(is_metric_name(s.name));
    REQUIRE_FALSE(s.value.empty());
    return s;
}

// The exposition read back family by family: HELP, TYPE, then samples of that family only.
struct Exposition {
    std::vector<std::string> names;             // families, in order
    std::map<std::string, std::string> types;   // family -> type
    std::map<std::string, std::string> values;  // sample name with its label -> value
};

Exposition parse_exposition(const std::string& text) {
    const std::vector<std::string> lines = lines_of(text);
    Exposition out;
    for (size_t i = 0; i < lines.size(); ++i) {
        INFO("line " << i << ": " << lines[i]);
        REQUIRE(lines[i].starts_with("# HELP "));
        const std::string help = lines[i].substr(7);
        const std::string name = help.substr(0, help.find(' '));
        REQUIRE(is_metric_name(name));
        REQUIRE(help.size() > name.size() + 1);
        REQUIRE(i + 1 < lines.size());
        const std::string type_prefix = "# TYPE " + name + " ";
        REQUIRE(lines[i + 1].starts_with(type_prefix));
        const std::string type = lines[i + 1].substr(type_prefix.size());
        CHECK((type == "counter" || type == "gauge" || type == "histogram"));
        out.names.push_back(name);
        out.types[name] = type;
        for (i += 2; i < lines.size() && !lines[i].starts_with("#"); ++i) {
            const Sample s = parse_sample(lines[i]);
            if (type == "histogram") {
                CHECK((s.name == name + "_bucket" || s.name == name + "_sum" ||
                       s.name == name + "_count"));
                CHECK(s.le.empty() == (s.name != name + "_bucket"));
                CHECK((s.le.empty() || s.label_key == "le"));
            } else {
                CHECK(s.name == name);
                // The one labelled counter family: dropped peer messages by reason.
                CHECK(s.le.empty() == (name != "raftlock_peer_messages_dropped_total"));
                CHECK((s.le.empty() || s.label_key == "reason"));
            }
            out.values[s.le.empty() ? s.name : s.name + "{" + s.label_key + "=\"" + s.le + "\"}"] =
                s.value;
        }
        --i;
    }
    return out;
}

// The histogram's bucket counts by their le label, parsed back from the exposition text.
std::map<std::string, uint64_t> buckets_of(const LatencyHistogram& h) {
    std::string text;
    h.render(text, "h", "help");
    std::map<std::string, uint64_t> out;
    for (const std::string& line : lines_of(text)) {
        if (line.starts_with("h_bucket")) {
            const Sample s = parse_sample(line);
            out[s.le] = std::stoull(s.value);
        }
    }
    return out;
}

const char* const kLe[] = {"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
                           "0.005", "0.01",   "0.025",   "0.05",   "0.1",   "0.25",
                           "0.5",   "1",      "2.5",     "5",      "10",    "+Inf"};

TEST_CASE("a histogram renders HELP, TYPE, cumulative buckets, sum in seconds and count",
          "[server][metrics]") {
    LatencyHistogram h;
    h.record_us(40);          // le 5e-05
    h.record_us(50);          // le 5e-05: a bound itself belongs to its bucket
    h.record_us(51);          // le 0.0001
    h.record_us(3000);        // le 0.005
    h.record_us(20'000'000);  // only +Inf
    std::string text;
    h.render(text, "raftlock_test_seconds", "A test.\nSecond line with \\.");
    const std::vector<std::string> want = {
        "# HELP raftlock_test_seconds A test.\\nSecond line with \\\\.",
        "# TYPE raftlock_test_seconds histogram",
        "raftlock_test_seconds_bucket{le=\"5e-05\"} 2",
        "raftlock_test_seconds_bucket{le=\"0.0001\"} 3",
        "raftlock_test_seconds_bucket{le=\"0.00025\"} 3",
        "raftlock_test_seconds_bucket{le=\"0.0005\"} 3",
        "raftlock_test_seconds_bucket{le=\"0.001\"} 3",
        "raftlock_test_seconds_bucket{le=\"0.0025\"} 3",
        "raftlock_test_seconds_bucket{le=\"0.005\"} 4",
        "raftlock_test_seconds_bucket{le=\"0.01\"} 4",
        "raftlock_test_seconds_bucket{le=\"0.025\"} 4",
        "raftlock_test_seconds_bucket{le=\"0.05\"} 4",
        "raftlock_test_seconds_bucket{le=\"0.1\"} 4",
        "raftlock_test_seconds_bucket{le=\"0.25\"} 4",
        "raftlock_test_seconds_bucket{le=\"0.5\"} 4",
        "raftlock_test_seconds_bucket{le=\"1\"} 4",
        "raftlock_test_seconds_bucket{le=\"2.5\"} 4",
        "raftlock_test_seconds_bucket{le=\"5\"} 4",
        "raftlock_test_seconds_bucket{le=\"10\"} 4",
        "raftlock_test_seconds_bucket{le=\"+Inf\"} 5",
        "raftlock_test_seconds_sum 20.003141",
        "raftlock_test_seconds_count 5",
    };
    const std::vector<std::string> got = lines_of(text);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        INFO("line " << i);
        CHECK(got[i] == want[i]);
    }
    CHECK(h.count() == 5);
}

TEST_CASE("every bucket counts the observations at or below its bound", "[server][metrics]") {
    LatencyHistogram h;
    // One observation exactly on each bound, one just above it, and one far beyond the last.
    std::vector<uint64_t> observed_us;
    for (double bound : LatencyHistogram::kBoundsSeconds) {
        const auto bound_us = static_cast<uint64_t>(std::llround(bound * 1e6));
        observed_us.push_back(bound_us);
        observed_us.push_back(bound_us + 1);
    }
    observed_us.push_back(0);
    observed_us.push_back(std::numeric_limits<uint32_t>::max());
    for (uint64_t us : observed_us) {
        h.record_us(us);
    }
    const std::map<std::string, uint64_t> buckets = buckets_of(h);
    REQUIRE(buckets.size() == std::size(kLe));
    uint64_t previous = 0;
    for (size_t i = 0; i < std::size(kLe); ++i) {
        INFO("le=" << kLe[i]);
        const double le = i < LatencyHistogram::kBoundsSeconds.size()
                              ? LatencyHistogram::kBoundsSeconds[i]
                              : std::numeric_limits<double>::infinity();
        uint64_t want = 0;
        for (uint64_t us : observed_us) {
            want += static_cast<double>(us) <= le * 1e6 + 1e-6 ? 1 : 0;
        }
        CHECK(buckets.at(kLe[i]) == want);
        CHECK(buckets.at(kLe[i]) >= previous);
        previous = buckets.at(kLe[i]);
    }
    CHECK(buckets.at("+Inf") == observed_us.size());
}

TEST_CASE("quantiles are the upper bound of the bucket holding the rank", "[server][metrics]") {
    LatencyHistogram h;
    CHECK(h.quantile_seconds(0.5) == 0.0);
    for (int i = 0; i < 90; ++i) {
        h.record_us(80);  // le 0.0001
    }
    for (int i = 0; i < 10; ++i) {
        h.record_us(2000);  // le 0.0025
    }
    CHECK(h.quantile_seconds(0.0) == 0.0001);
    CHECK(h.quantile_seconds(0.5) == 0.0001);
    CHECK(h.quantile_seconds(0.9) == 0.0001);
    CHECK(h.quantile_seconds(0.91) == 0.0025);
    CHECK(h.quantile_seconds(0.99) == 0.0025);
    CHECK(h.quantile_seconds(1.0) == 0.0025);
    // Beyond the last bound only "at least 10 s" is known.
    h.record_us(60'000'000);
    CHECK(h.quantile_seconds(1.0) == 10.0);
}

TEST_CASE("two threads recording at once lose no observation", "[server][metrics]") {
    LatencyHistogram h;
    constexpr uint64_t kPerThread = 200'000;
    // Thread a records 1..kPerThread µs, thread b the same values times 7, so the sum is known.
    auto record = [&h](uint64_t factor) {
        for (uint64_t i = 1; i <= kPerThread; ++i) {
            h.record_us(i * factor);
        }
    };
    std::thread a(record, 1);
    std::thread b(record, 7);
    a.join();
    b.join();
    CHECK(h.count() == 2 * kPerThread);
    const std::map<std::string, uint64_t> buckets = buckets_of(h);
    CHECK(buckets.at("+Inf") == 2 * kPerThread);
    // 50 µs: 50 values of thread a and 7 of thread b (7, 14, ..., 49).
    CHECK(buckets.at("5e-05") == 50 + 7);
    std::string text;
    h.render(text, "h", "help");
    // 8 * (1 + ... + 200000) µs = 160000800000 µs.
    CHECK(text.find("h_sum 160000.8\n") != std::string::npos);
    CHECK(text.find("h_count 400000\n") != std::string::npos);
}

TEST_CASE("the exposition has every metric with HELP and TYPE, sorted by name",
          "[server][metrics]") {
    Metrics m;
    m.proposals_total = 5;
    m.sessions_expired_total = 2;
    m.commit_latency.record_us(700);
    m.add_gauge("raftlock_term", "Current Raft term.", [] { return 3.0; });
    m.add_gauge("raftlock_commit_index", "Commit index.", [] { return 1e6; });
    m.add_gauge("raftlock_lag_ratio", "A fraction.", [] { return 0.25; });
    m.add_gauge("raftlock_unknown", "Not known yet.",
                [] { return std::numeric_limits<double>::quiet_NaN(); });

    const Exposition e = parse_exposition(m.render());
    const std::vector<std::string>& names = e.names;
    std::map<std::string, std::string> types = e.types;
    std::map<std::string, std::string> values = e.values;
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(names.size() == 27 + 1 + 4 + 4);
    for (const char* counter : {"raftlock_proposals_total",
                                "raftlock_proposals_dropped_total",
                                "raftlock_forwarded_writes_total",
                                "raftlock_forwards_resent_total",
                                "raftlock_elections_total",
                                "raftlock_leader_changes_total",
                                "raftlock_applied_entries_total",
                                "raftlock_snapshots_created_total",
                                "raftlock_snapshots_installed_total",
                                "raftlock_client_requests_total",
                                "raftlock_client_errors_total",
                                "raftlock_read_index_requests_total",
                                "raftlock_read_index_retries_total",
                                "raftlock_local_reads_total",
                                "raftlock_watch_events_total",
                                "raftlock_lock_grants_pushed_total",
                                "raftlock_sessions_expired_total",
                                "raftlock_redis_reads_deferred_total",
                                "raftlock_redis_scripts_over_budget_total",
                                "raftlock_redis_publications_total",
                                "raftlock_redis_messages_delivered_total",
                                "raftlock_forwarded_internal_refused_total",
                                "raftlock_auth_logins_total",
                                "raftlock_auth_failures_total",
                                "raftlock_permission_denied_total",
                                "raftlock_rate_limited_total",
                                "raftlock_login_deadline_closed_total"}) {
        INFO(counter);
        CHECK(types[counter] == "counter");
    }
    for (const char* histogram :
         {"raftlock_commit_latency_seconds", "raftlock_fsync_latency_seconds",
          "raftlock_apply_batch_latency_seconds"}) {
        INFO(histogram);
        CHECK(types[histogram] == "histogram");
    }
    CHECK(values["raftlock_proposals_total"] == "5");
    CHECK(values["raftlock_sessions_expired_total"] == "2");
    CHECK(values["raftlock_elections_total"] == "0");
    CHECK(types["raftlock_term"] == "gauge");
    CHECK(values["raftlock_term"] == "3");
    CHECK(values["raftlock_commit_index"] == "1000000");
    CHECK(values["raftlock_lag_ratio"] == "0.25");
    CHECK(values["raftlock_unknown"] == "NaN");
    CHECK(values["raftlock_commit_latency_seconds_bucket{le=\"0.0005\"}"] == "0");
    CHECK(values["raftlock_commit_latency_seconds_bucket{le=\"0.001\"}"] == "1");
    CHECK(values["raftlock_commit_latency_seconds_bucket{le=\"+Inf\"}"] == "1");
    CHECK(values["raftlock_commit_latency_seconds_sum"] == "0.0007");
    CHECK(values["raftlock_commit_latency_seconds_count"] == "1");
    CHECK(values["raftlock_fsync_latency_seconds_count"] == "0");
}

TEST_CASE("dropped peer messages are one counter family with a series per reason",
          "[server][metrics][peer_input]") {
    Metrics m;
    m.peer_messages_dropped[static_cast<size_t>(raft::MessageFault::kTermBeyondMax)] = 3;
    const Exposition e = parse_exposition(m.render());
    const std::string family = "raftlock_peer_messages_dropped_total";
    CHECK(e.types.at(family) == "counter");
    for (size_t i = 1; i < raft::kMessageFaultCount; ++i) {
        const auto fault = static_cast<raft::MessageFault>(i);
        const std::string series =
            family + "{reason=\"" + std::string(raft::to_string(fault)) + "\"}";
        INFO(series);
        REQUIRE(e.values.count(series) == 1);
        CHECK(e.values.at(series) == (fault == raft::MessageFault::kTermBeyondMax ? "3" : "0"));
    }
    CHECK(e.values.count(family + "{reason=\"ok\"}") == 0);
}

TEST_CASE("a counter's three lines are exactly HELP, TYPE and the value", "[server][metrics]") {
    Metrics m;
    m.leader_changes_total = 12;
    const std::string text = m.render();
    const std::string want =
        "# HELP raftlock_leader_changes_total Changes of the leader this node knows.\n"
        "# TYPE raftlock_leader_changes_total counter\n"
        "raftlock_leader_changes_total 12\n";
    CHECK(text.find(want) != std::string::npos);
    // Gauges are read at render time, not at registration.
    double value = 1;
    m.add_gauge("raftlock_g", "g", [&value] { return value; });
    value = 2;
    CHECK(m.render().find("\nraftlock_g 2\n") != std::string::npos);
}

}  // namespace
}  // namespace raftlock::server
