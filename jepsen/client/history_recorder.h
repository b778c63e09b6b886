#pragma once

// The history of one harness run (DESIGN.md §6, `history.jsonl`), recorded by many worker threads.
// Each event is stamped with CLOCK_MONOTONIC, a clock every process on the machine shares, so the
// harness can line the clients' operations up with its own nemesis events. Events may be recorded
// with a time in the past (a lost lock's release, see lock_workload.cc); write() sorts by time and
// numbers the events, so the file is in real-time order whatever the recording order was.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace raftlock::jepsen {

// Nanoseconds of CLOCK_MONOTONIC.
int64_t monotonic_ns();

struct HistoryEvent {
    int64_t time_ns = 0;  // CLOCK_MONOTONIC; written relative to the run's origin
    uint64_t process = 0;
    std::string type;  // invoke, ok, fail, info
    std::string f;
    std::string key;        // empty: none
    nlohmann::json value;   // null when none
    std::string error;      // empty: none
    uint64_t sequence = 0;  // recording order, to keep ties in the order they happened
};

class HistoryRecorder {
public:
    // Events are limited so a runaway workload cannot exhaust memory.
    static constexpr size_t kEventsMax = 20'000'000;

    explicit HistoryRecorder(int64_t origin_ns) : origin_ns_(origin_ns) {}

    // Records an event stamped now.
    void record(uint64_t process,
                const std::string& type,
                const std::string& f,
                const std::string& key,
                const nlohmann::json& value,
                const std::string& error = {});
    // Records an event at `time_ns` (CLOCK_MONOTONIC), which may be in the past.
    void record_at(int64_t time_ns, HistoryEvent event);

    // Writes the events sorted by time as JSON lines; false when the file cannot be written.
    bool write(const std::string& path) const;
    size_t size() const;

private:
    int64_t origin_ns_;
    mutable std::mutex mutex_;
    std::vector<HistoryEvent> events_;
    uint64_t next_sequence_ = 0;
};

}  // namespace raftlock::jepsen
