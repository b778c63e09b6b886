#include "jepsen/client/history_recorder.h"

#include <algorithm>
#include <fstream>

#include <time.h>

#include "base/assert.h"

namespace raftlock::jepsen {

int64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void HistoryRecorder::record(uint64_t process,
                             const std::string& type,
                             const std::string& f,
                             const std::string& key,
                             const nlohmann::json& value,
                             const std::string& error) {
    std::lock_guard lock(mutex_);
    // The time is read under the lock, so the recording order is the real-time order.
    const int64_t now = monotonic_ns();
    RL_ASSERT(events_.size() < kEventsMax);
    events_.push_back(HistoryEvent{now, process, type, f, key, value, error, next_sequence_++});
}

void HistoryRecorder::record_at(int64_t time_ns, HistoryEvent event) {
    std::lock_guard lock(mutex_);
    RL_ASSERT(events_.size() < kEventsMax);
    event.time_ns = time_ns;
    event.sequence = next_sequence_++;
    events_.push_back(std::move(event));
}

size_t HistoryRecorder::size() const {
    std::lock_guard lock(mutex_);
    return events_.size();
}

bool HistoryRecorder::write(const std::string& path) const {
    std::vector<HistoryEvent> events;
    {
        std::lock_guard lock(mutex_);
        events = events_;
    }
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
        return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.sequence < b.sequence;
    });
    std::ofstream out(path, std::ios::trunc);
    if (!out) {
        return false;
    }
    uint64_t index = 0;
    for (const HistoryEvent& e : events) {
        nlohmann::json line = {{"index", index++},
                               {"time_ns", std::max<int64_t>(0, e.time_ns - origin_ns_)},
                               {"process", e.process},
                               {"type", e.type},
                               {"f", e.f}};
        if (!e.key.empty()) {
            line["key"] = e.key;
        }
        line["value"] = e.value;
        if (!e.error.empty()) {
            line["error"] = e.error;
        }
        out << line.dump() << '\n';
    }
    out.flush();
    return static_cast<bool>(out);
}

}  // namespace raftlock::jepsen
