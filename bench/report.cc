#include "bench/report.h"

#include <fmt/format.h>

namespace raftlock::bench {

namespace {

double us(uint64_t ns) {
    return static_cast<double>(ns) / 1000.0;
}
double ms(uint64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out += fmt::format("\\u{:04x}", static_cast<int>(c));
                } else {
                    out += c;
                }
        }
    }
    return out;
}

std::string latency_json(const Histogram& h) {
    return fmt::format(
        R"({{"count":{},"p50":{:.1f},"p90":{:.1f},"p99":{:.1f},"p999":{:.1f},"max":{:.1f},)"
        R"("mean":{:.1f}}})",
        h.count(), us(h.percentile_ns(0.5)), us(h.percentile_ns(0.9)), us(h.percentile_ns(0.99)),
        us(h.percentile_ns(0.999)), us(h.max_ns()), h.mean_ns() / 1000.0);
}

std::string latency_text(const Histogram& h) {
    return fmt::format("p50 {:.3f}  p99 {:.3f}  p99.9 {:.3f}  max {:.3f} ms",
                       ms(h.percentile_ns(0.5)), ms(h.percentile_ns(0.99)),
                       ms(h.percentile_ns(0.999)), ms(h.max_ns()));
}

}  // namespace

std::string to_text(const RunResult& r, const std::string& label) {
    std::string out =
        fmt::format("{} {} {} clients={}{}: {:.0f} ops/s  {}  errors {}",
                    label.empty() ? r.system : label, r.scenario, r.mode, r.clients,
                    r.rate_per_s > 0 ? fmt::format(" rate={:.0f}/s", r.rate_per_s) : std::string(),
                    r.ops_per_s(), latency_text(r.latency), r.errors);
    for (const auto& [name, h] : r.more_latency) {
        out += fmt::format("\n    {}: {}", name, latency_text(h));
    }
    for (const auto& [name, value] : r.figures) {
        out += fmt::format("\n    {}: {}", name, value);
    }
    if (!r.note.empty()) {
        out += fmt::format("\n    note: {}", r.note);
    }
    if (!r.first_error.empty()) {
        out += fmt::format("\n    first error: {}", r.first_error);
    }
    return out;
}

std::string to_json(const RunResult& r, const std::string& label) {
    std::string more;
    for (const auto& [name, h] : r.more_latency) {
        more += fmt::format("{}\"{}\":{}", more.empty() ? "" : ",", name, latency_json(h));
    }
    std::string figures;
    for (const auto& [name, value] : r.figures) {
        figures += fmt::format("{}\"{}\":{}", figures.empty() ? "" : ",", name, value);
    }
    return fmt::format(
        R"({{"system":"{}","scenario":"{}","mode":"{}","clients":{},"rate_per_s":{},)"
        R"("seconds":{},"ops":{},"ops_per_s":{:.1f},"errors":{},"first_error":"{}",)"
        R"("latency_us":{},"more_latency_us":{{{}}},"figures":{{{}}},"note":"{}"}})",
        json_escape(label.empty() ? r.system : label), r.scenario, r.mode, r.clients, r.rate_per_s,
        r.seconds, r.ops, r.ops_per_s(), r.errors, json_escape(r.first_error),
        latency_json(r.latency), more, figures, json_escape(r.note));
}

}  // namespace raftlock::bench
