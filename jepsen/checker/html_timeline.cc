#include "jepsen/checker/html_timeline.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace raftlock::jepsen {

namespace {

constexpr int kLaneHeightPx = 26;
constexpr int kLabelWidthPx = 90;
constexpr int kPlotWidthPx = 1100;

std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '&':
                out += "&amp;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

const char* outcome_name(Outcome o) {
    return o == Outcome::kOk ? "ok" : o == Outcome::kFail ? "fail" : "info";
}

std::string label(const Operation& op) {
    std::string s = op.f + " " + to_string(op.input);
    // The result is worth showing when it says something the input did not (a read's value,
    // a token); a write's echo of its input is noise.
    if (op.outcome == Outcome::kOk && !op.output.is_null() && !(op.output == op.input)) {
        s += " → " + to_string(op.output);
    } else if (op.outcome != Outcome::kOk) {
        s += " (" + std::string(outcome_name(op.outcome)) + ")";
    }
    return s;
}

struct Scale {
    int64_t lo;
    int64_t hi;
    double px_per_pos;
    int x(int64_t pos) const {
        int64_t clamped = std::clamp(pos, lo, hi + 1);
        return static_cast<int>(static_cast<double>(clamped - lo) * px_per_pos);
    }
};

std::string bar(
    const Operation& op, const Scale& scale, int lane, const std::string& cls, int order) {
    int left = scale.x(op.call_pos);
    int right = std::max(
        left + 4, scale.x(op.return_pos == kNeverReturned ? scale.hi + 1 : op.return_pos + 1) - 2);
    std::string title = "process " + std::to_string(op.process) + ": " + label(op) + "\nline " +
                        std::to_string(op.call_line) +
                        (op.return_line != 0 ? "–" + std::to_string(op.return_line) : "") +
                        " key '" + op.key + "'";
    std::string text = (order > 0 ? "#" + std::to_string(order) + " " : "") + label(op);
    return "<div class=\"op " + cls + "\" style=\"left:" + std::to_string(kLabelWidthPx + left) +
           "px;top:" + std::to_string(lane * kLaneHeightPx + 3) +
           "px;width:" + std::to_string(right - left) + "px\" title=\"" + escape(title) + "\">" +
           escape(text) + "</div>\n";
}

std::string summary(const History& history, const CheckResult& result, const FailureWindow& w) {
    std::string s = "<h2>" + escape(history.source) + ": " + to_string(result.verdict) + "</h2>\n";
    s += "<p>Partition key '" + escape(w.key) + "', records on lines " +
         std::to_string(history.events[w.start_pos].line) + "–" +
         std::to_string(history.events[w.end_pos].line) +
         (w.minimal ? " (shortest failing prefix)" : " (not shrunk: budget ran out)") +
         ". Model state after the deepest partial linearization: <code>" + escape(w.state) +
         "</code>.</p>\n";
    return s;
}

std::string findings_list(const CheckResult& result) {
    if (result.findings.empty()) {
        return {};
    }
    std::string out = "<ul>\n";
    for (const Finding& f : result.findings) {
        out += "<li><b>" + escape(f.check) + "</b>: " + escape(f.message) + "</li>\n";
    }
    return out + "</ul>\n";
}

}  // namespace

std::string render_timeline(const History& history,
                            const std::vector<Operation>& ops,
                            const CheckResult& result) {
    if (!result.window) {
        return "<h2>" + escape(history.source) + ": " + to_string(result.verdict) + "</h2>\n" +
               findings_list(result);
    }
    const FailureWindow& w = *result.window;
    std::vector<const Operation*> shown;
    for (const Operation& op : ops) {
        bool same_key = !w.keyed || op.key == w.key;
        if (same_key && op.call_pos <= w.end_pos && op.return_pos >= w.start_pos &&
            shown.size() < kTimelineOpsMax) {
            shown.push_back(&op);
        }
    }
    std::map<int64_t, int> lanes;  // process -> lane, ordered by process number
    for (const Operation* op : shown) {
        lanes.emplace(op->process, 0);
    }
    int lane_count = 0;
    for (auto& [process, lane] : lanes) {
        lane = lane_count++;
    }
    std::unordered_map<int32_t, int> order;
    for (size_t i = 0; i < w.linearized_ids.size(); ++i) {
        order[w.linearized_ids[i]] = static_cast<int>(i) + 1;
    }
    Scale scale{w.start_pos, w.end_pos, 0};
    scale.px_per_pos =
        static_cast<double>(kPlotWidthPx) / static_cast<double>(w.end_pos - w.start_pos + 2);
    std::string out = summary(history, result, w) + findings_list(result);
    out += "<div class=\"plot\" style=\"height:" + std::to_string(lane_count * kLaneHeightPx + 6) +
           "px\">\n";
    for (const auto& [process, lane] : lanes) {
        out += "<div class=\"lane\" style=\"top:" + std::to_string(lane * kLaneHeightPx) +
               "px\">process " + std::to_string(process) + "</div>\n";
    }
    std::vector<int32_t> involved(w.involved_ids);
    std::sort(involved.begin(), involved.end());
    for (const Operation* op : shown) {
        auto it = order.find(op->id);
        std::string cls = op->id == w.stuck_id ? "stuck"
                          : std::binary_search(involved.begin(), involved.end(), op->id)
                              ? "involved"
                          : it != order.end() ? "placed"
                                              : "other";
        if (op->outcome == Outcome::kInfo) {
            cls += " unknown";
        }
        out += bar(*op, scale, lanes[op->process], cls, it != order.end() ? it->second : 0);
    }
    out += "</div>\n";
    return out;
}

std::string html_page(const std::vector<std::string>& fragments) {
    std::string out =
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>raftlock-check</title>\n"
        "<style>\n"
        "body{font:13px sans-serif;margin:20px}\n"
        ".plot{position:relative;border-top:1px solid #ccc;margin-bottom:30px}\n"
        ".lane{position:absolute;left:0;width:100%;height:26px;border-bottom:1px solid #eee;"
        "color:#555;line-height:26px}\n"
        ".op{position:absolute;height:19px;line-height:19px;font-size:11px;overflow:hidden;"
        "white-space:nowrap;border-radius:3px;padding:0 3px;box-sizing:border-box}\n"
        ".placed{background:#cfe8cf;border:1px solid #6a6}\n"
        ".other{background:#eee;border:1px solid #aaa;color:#666}\n"
        ".involved{background:#fde2b8;border:1px solid #e90}\n"
        ".stuck{background:#f6b3b3;border:2px solid #c00;font-weight:bold}\n"
        ".unknown{border-right-style:dashed;opacity:.75}\n"
        "</style></head><body>\n<h1>raftlock-check</h1>\n"
        "<p>Red: the operation no linearization can place. Orange: other operations left "
        "unplaced. Green: placed, numbered in linearization order. Dashed: outcome unknown.</p>\n";
    for (const std::string& f : fragments) {
        out += f;
    }
    out += "</body></html>\n";
    return out;
}

}  // namespace raftlock::jepsen
