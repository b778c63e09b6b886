#include "jepsen/checker/lab_accounting.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <catch2/catch.hpp>

#include "history_builder.h"
#include "jepsen/checker/lab_cli.h"
#include "jepsen/checker/lab_report.h"

namespace raftlock::jepsen {
namespace {

constexpr int64_t kNoToken = -1;
constexpr int64_t kMs = 1'000'000;

// A cell.json; times in ms of resource time. The default is a valid two-worker fenced cell with
// one fault at [2 s, 3 s], healed for good at 5 s, ending at 10 s.
struct CellSpec {
    int workers = 2;
    bool fenced = true;
    bool optimistic = false;
    bool tokens = true;
    bool fault_requested = true;
    std::vector<std::pair<int64_t, int64_t>> faults_ms = {{2000, 3000}};
    int64_t heal_ms = 5000;
    int64_t end_ms = 10000;
    std::optional<int64_t> db_final;  // the counter row's value at the end (optimistic cells)

    std::string text() const {
        std::string faults;
        for (auto [start, stop] : faults_ms) {
            faults += std::string(faults.empty() ? "" : ",") +
                      "{\"start_ns\":" + std::to_string(start * kMs) +
                      ",\"stop_ns\":" + std::to_string(stop * kMs) + ",\"detail\":{\"worker\":1}}";
        }
        auto flag = [](bool b) { return b ? "true" : "false"; };
        return std::string("{\"family\":\"native-fenced\",\"target\":\"raftlock\",") +
               "\"fault\":\"client-pause\",\"workers\":" + std::to_string(workers) +
               ",\"ttl_ms\":2000,\"work_ms\":50,\"time_s\":10,\"fenced\":" + flag(fenced) +
               ",\"optimistic\":" + flag(optimistic) + ",\"tokens\":" + flag(tokens) +
               ",\"origin_ns\":0,\"end_ns\":" + std::to_string(end_ms * kMs) + ",\"faults\":[" +
               faults + "],\"fault_requested\":" + flag(fault_requested) +
               ",\"final_heal_ns\":" + std::to_string(heal_ms * kMs) +
               (db_final
                    ? ",\"db_final\":{\"value\":" + std::to_string(*db_final) + ",\"version\":0}"
                    : std::string()) +
               "}";
    }
};

// A resource.jsonl written as the server would: it keeps the counter, so reads return it and
// accepted writes report it as `before`. Records must be added in time order (ms).
class LabLogBuilder {
public:
    LabLogBuilder& acquire_invoke(int64_t w, int64_t t_ms) {
        return event(w, "invoke", "acquire", "null", 0, t_ms);
    }
    LabLogBuilder& acquire_ok(int64_t w, int64_t grant, int64_t token, int64_t t_ms) {
        return event(w, "ok", "acquire", token_json(token), grant, t_ms);
    }
    LabLogBuilder& acquire_fail(int64_t w, int64_t t_ms) {
        return event(w, "fail", "acquire", "null", 0, t_ms);
    }
    LabLogBuilder& release(int64_t w, int64_t grant, int64_t token, int64_t t_ms) {
        event(w, "invoke", "release", token_json(token), grant, t_ms);
        return event(w, "ok", "release", token_json(token), grant, t_ms);
    }
    LabLogBuilder& read(int64_t w, int64_t grant, int64_t token, int64_t t_ms) {
        read_of_[{w, grant}] = counter_;
        return line("{\"op\":\"read\",\"worker\":" + num(w) + ",\"grant\":" + num(grant) +
                    ",\"token\":" + token_json(token) + ",\"t\":" + ns(t_ms) +
                    ",\"ok\":true,\"value\":" + num(counter_) + "}");
    }
    // Writes what the section read, plus one.
    LabLogBuilder& write(int64_t w, int64_t grant, int64_t token, int64_t t_ms) {
        return write_value(w, grant, token, read_of_[{w, grant}] + 1, t_ms);
    }
    LabLogBuilder& write_value(
        int64_t w, int64_t grant, int64_t token, int64_t value, int64_t t_ms) {
        line("{\"op\":\"write\",\"worker\":" + num(w) + ",\"grant\":" + num(grant) +
             ",\"token\":" + token_json(token) + ",\"value\":" + num(value) + ",\"t\":" + ns(t_ms) +
             ",\"ok\":true,\"before\":" + num(counter_) + "}");
        counter_ = value;
        return *this;
    }
    LabLogBuilder& refused(
        const std::string& op, int64_t w, int64_t grant, int64_t token, int64_t t_ms) {
        std::string value = op == "write" ? ",\"value\":" + num(read_of_[{w, grant}] + 1) : "";
        return line("{\"op\":\"" + op + "\",\"worker\":" + num(w) + ",\"grant\":" + num(grant) +
                    ",\"token\":" + token_json(token) + value + ",\"t\":" + ns(t_ms) +
                    ",\"ok\":false,\"refused\":\"stale token\"}");
    }
    LabLogBuilder& lost(int64_t w, int64_t grant, int64_t t_ms) {
        return line("{\"op\":\"lost\",\"worker\":" + num(w) + ",\"grant\":" + num(grant) +
                    ",\"why\":\"session expired\",\"t\":" + ns(t_ms) + "}");
    }
    LabLogBuilder& db(int64_t w,
                      int64_t attempt,
                      const std::string& kind,
                      int64_t value,
                      int64_t version,
                      bool ok,
                      int64_t t_ms) {
        return line("{\"op\":\"db\",\"worker\":" + num(w) + ",\"grant\":" + num(attempt) +
                    ",\"kind\":\"" + kind + "\",\"value\":" + num(value) +
                    ",\"version\":" + num(version) + ",\"ok\":" + (ok ? "true" : "false") +
                    ",\"t\":" + ns(t_ms) + "}");
    }
    // A conditional UPDATE whose connection dropped: reported not committed, outcome unknown.
    LabLogBuilder& db_unknown(
        int64_t w, int64_t attempt, int64_t value, int64_t version, int64_t t_ms) {
        return line("{\"op\":\"db\",\"worker\":" + num(w) + ",\"grant\":" + num(attempt) +
                    ",\"kind\":\"write\",\"value\":" + num(value) + ",\"version\":" + num(version) +
                    ",\"ok\":false,\"unknown\":true,\"t\":" + ns(t_ms) + "}");
    }
    // A whole clean turn: acquire, read, write, release over [t, t + 5] ms.
    LabLogBuilder& cycle(int64_t w, int64_t grant, int64_t token, int64_t t_ms) {
        acquire_invoke(w, t_ms).acquire_ok(w, grant, token, t_ms + 1);
        read(w, grant, token, t_ms + 2).write(w, grant, token, t_ms + 3);
        return release(w, grant, token, t_ms + 4);
    }
    LabLogBuilder& line(const std::string& text) {
        text_ += text + "\n";
        return *this;
    }

    const std::string& text() const { return text_; }

private:
    LabLogBuilder& event(int64_t w,
                         const std::string& type,
                         const std::string& f,
                         const std::string& value,
                         int64_t grant,
                         int64_t t_ms) {
        std::string g = grant > 0 ? ",\"grant\":" + num(grant) : "";
        return line("{\"op\":\"event\",\"worker\":" + num(w) + ",\"process\":" + num(w) +
                    ",\"type\":\"" + type + "\",\"f\":\"" + f +
                    "\",\"key\":\"L\",\"value\":" + value + g + ",\"t\":" + ns(t_ms) + "}");
    }
    static std::string num(int64_t n) { return std::to_string(n); }
    static std::string ns(int64_t ms) { return std::to_string(ms * kMs); }
    static std::string token_json(int64_t token) {
        return token == kNoToken ? "null" : std::to_string(token);
    }

    std::string text_;
    int64_t counter_ = 0;
    std::map<std::pair<int64_t, int64_t>, int64_t> read_of_;
};

LabReport account_text(const CellSpec& spec, const std::string& log) {
    auto cell = parse_lab_cell(spec.text());
    REQUIRE(cell.ok());
    auto records = parse_lab_log(log, *cell);
    if (!records.ok()) {
        FAIL_CHECK("line " << records.error().line << ": " << records.error().message);
    }
    REQUIRE(records.ok());
    return account_lab(*cell, *records);
}

LabMetrics metrics_of(const CellSpec& spec, const LabLogBuilder& log) {
    return account_text(spec, log.text()).metrics;
}

// Both workers progress before the first fault (2 s) and after the final heal (5 s).
LabLogBuilder valid_log() {
    LabLogBuilder log;
    log.cycle(1, 1, 1, 100).cycle(2, 1, 2, 200).cycle(1, 2, 3, 5100).cycle(2, 2, 4, 5200);
    return log;
}

// Worker 1 reads, is paused inside its section, and writes when it wakes; meanwhile the lock
// expires and worker 2 goes round twice. `lost_ms` adds worker 1's `lost` notice at that time.
LabLogBuilder paused_holder_log(bool fenced, int64_t lost_ms = 0) {
    LabLogBuilder log;
    log.acquire_invoke(1, 1000).acquire_ok(1, 1, 1, 1001).read(1, 1, 1, 1002);
    log.acquire_invoke(2, 1500);
    if (lost_ms > 0 && lost_ms < 3500) {
        log.lost(1, 1, lost_ms);
    }
    log.acquire_ok(2, 1, 2, 3500).read(2, 1, 2, 3501).write(2, 1, 2, 3502).release(2, 1, 2, 3503);
    if (lost_ms >= 3500) {
        log.lost(1, 1, lost_ms);
    }
    log.acquire_invoke(2, 3600).acquire_ok(2, 2, 3, 3601);
    log.read(2, 2, 3, 3602).write(2, 2, 3, 3603).release(2, 2, 3, 3604);
    if (fenced) {
        log.refused("write", 1, 1, 1, 4000);
    } else {
        log.write(1, 1, 1, 4000);
    }
    return log.release(1, 1, 1, 4001);
}

TEST_CASE("a section runs from a grant's first access to its last, refused accesses included",
          "[lab]") {
    LabLogBuilder log;
    log.acquire_invoke(1, 100).acquire_ok(1, 1, 5, 101);
    log.read(1, 1, 5, 110).write(1, 1, 5, 160).release(1, 1, 5, 170);
    log.acquire_invoke(1, 200).acquire_ok(1, 2, 6, 201).release(1, 2, 6, 202);  // no access
    log.refused("read", 2, 1, 4, 300);
    LabReport report = account_text(CellSpec{}, log.text());
    REQUIRE(report.sections.size() == 2);
    const LabSection& first = report.sections[0];
    CHECK(first.worker == 1);
    CHECK(first.grant == 1);
    CHECK(first.start_ns == 110 * kMs);
    CHECK(first.end_ns == 160 * kMs);
    CHECK(first.accepted_writes == 1);
    CHECK(first.refused == 0);
    const LabSection& refused = report.sections[1];
    CHECK(refused.worker == 2);
    CHECK(refused.start_ns == refused.end_ns);
    CHECK(refused.accepted_writes == 0);
    CHECK(refused.refused == 1);
    CHECK(report.metrics.sections == 2);
    CHECK(report.metrics.refused == 1);
    CHECK(report.metrics.overlaps == 0);
}

TEST_CASE("two overlapping sections of different workers are one pair and share their common time",
          "[lab]") {
    LabLogBuilder log;
    log.read(1, 1, 1, 1000).read(2, 1, 2, 1200).write(1, 1, 1, 1500).write(2, 1, 2, 1800);
    LabMetrics m = metrics_of(CellSpec{}, log);
    CHECK(m.sections == 2);
    CHECK(m.overlaps == 1);
    CHECK(m.overlap_ms == Approx(300));

    // Three at once: the time with two or more open is one span, not the sum of the pairs.
    LabLogBuilder three;
    three.read(1, 1, 1, 0).read(2, 1, 2, 2).read(3, 1, 3, 4);
    three.write(2, 1, 2, 8).write(1, 1, 1, 10).write(3, 1, 3, 12);
    CellSpec spec;
    spec.workers = 3;
    LabMetrics m3 = metrics_of(spec, three);
    CHECK(m3.overlaps == 3);
    CHECK(m3.overlap_ms == Approx(8));  // [2, 10]
}

TEST_CASE("sections that touch at one instant overlap only if the server interleaved them",
          "[lab]") {
    // Worker 1's last access and worker 2's first share t = 2000 ms, but the server handled
    // worker 1's first: worker 1 was out before worker 2 came in.
    LabLogBuilder touching;
    touching.read(1, 1, 1, 1000).write(1, 1, 1, 2000).read(2, 1, 2, 2000).write(2, 1, 2, 3000);
    LabMetrics m = metrics_of(CellSpec{}, touching);
    CHECK(m.overlaps == 0);
    CHECK(m.overlap_ms == 0);
    CHECK(m.corruptions == 0);

    // The same stamps, handled the other way round: worker 2 read before worker 1 wrote.
    LabLogBuilder interleaved;
    interleaved.read(1, 1, 1, 1000).read(2, 1, 2, 2000).write(1, 1, 1, 2000);
    interleaved.write(2, 1, 2, 3000);
    LabMetrics m2 = metrics_of(CellSpec{}, interleaved);
    CHECK(m2.overlaps == 1);
    CHECK(m2.overlap_ms == 0);   // they shared one instant
    CHECK(m2.corruptions == 1);  // and worker 2's write lost worker 1's increment
}

TEST_CASE("a single-access section overlaps another only when strictly inside it", "[lab]") {
    LabLogBuilder inside;
    inside.read(1, 1, 1, 1000).write_value(2, 1, 2, 1, 2000).write(1, 1, 1, 3000);
    LabMetrics m = metrics_of(CellSpec{}, inside);
    CHECK(m.sections == 2);
    CHECK(m.overlaps == 1);
    CHECK(m.overlap_ms == 0);
    CHECK(m.corruptions == 1);  // worker 1 wrote 1 over worker 2's 1

    // At the same instant as the other's first access, but handled before it: outside.
    LabLogBuilder before;
    before.write_value(2, 1, 2, 1, 1000).read(1, 1, 1, 1000).write(1, 1, 1, 3000);
    LabMetrics m2 = metrics_of(CellSpec{}, before);
    CHECK(m2.overlaps == 0);
    CHECK(m2.corruptions == 0);
}

TEST_CASE("sections of one worker are never counted as overlapping", "[lab]") {
    LabLogBuilder log;
    log.read(1, 1, 1, 1000).read(1, 2, 2, 1100).write(1, 1, 1, 1200).write(1, 2, 2, 1300);
    LabMetrics m = metrics_of(CellSpec{}, log);
    CHECK(m.sections == 2);
    CHECK(m.overlaps == 0);
    CHECK(m.overlap_ms == 0);
}

TEST_CASE("a paused holder's late write loses the increments written while it slept", "[lab]") {
    CellSpec spec;
    spec.fenced = false;
    LabReport report = account_text(spec, paused_holder_log(/*fenced=*/false).text());
    const LabMetrics& m = report.metrics;
    CHECK(m.sections == 3);
    CHECK(m.overlaps == 2);
    CHECK(m.overlap_ms == Approx(2));
    CHECK(m.corruptions == 2);  // it read 0 and wrote 1 over 2
    CHECK(m.refused == 0);
    CHECK(m.accepted_writes == 3);
    CHECK(m.final_counter == 1);
    CHECK(m.counter_shortfall == 2);
    CHECK(m.losses == 1);
    CHECK(m.told_in_time == 0);
    REQUIRE(report.sections.size() == 3);
    CHECK(report.sections[0].overlapped);
    CHECK(report.sections[0].start_ns == 1002 * kMs);
    CHECK(report.sections[0].end_ns == 4000 * kMs);
}

TEST_CASE("fenced refusals are counted and a refused write corrupts nothing", "[lab]") {
    LabReport report = account_text(CellSpec{}, paused_holder_log(/*fenced=*/true).text());
    const LabMetrics& m = report.metrics;
    CHECK(m.refused == 1);
    CHECK(m.corruptions == 0);
    CHECK(m.accepted_writes == 2);
    CHECK(m.final_counter == 2);
    CHECK(m.counter_shortfall == 0);
    // The lock still changed hands under the sleeping holder: the overlap is there, harmless.
    CHECK(m.overlaps == 2);
    CHECK(m.losses == 1);
    REQUIRE(report.sections.size() == 3);
    CHECK(report.sections[0].refused == 1);
    CHECK(report.sections[0].accepted_writes == 0);
}

TEST_CASE("a holder told it lost the lock before the next grant was told in time", "[lab]") {
    CellSpec spec;
    spec.fenced = false;
    CHECK(metrics_of(spec, paused_holder_log(false, /*lost_ms=*/3000)).told_in_time == 1);
    CHECK(metrics_of(spec, paused_holder_log(false, /*lost_ms=*/3550)).told_in_time == 0);
    LabMetrics late = metrics_of(spec, paused_holder_log(false, 3550));
    CHECK(late.losses == 1);
}

TEST_CASE("a lock that changes hands only after the holder's release invoke is no loss", "[lab]") {
    LabLogBuilder log;
    log.acquire_invoke(1, 100).acquire_ok(1, 1, 1, 101).read(1, 1, 1, 102).write(1, 1, 1, 103);
    log.acquire_invoke(2, 104);
    log.release(1, 1, 1, 105).acquire_ok(2, 1, 2, 105);  // same instant, after the release
    CHECK(metrics_of(CellSpec{}, log).losses == 0);

    // A holder that never releases believed it held the lock to the end.
    LabLogBuilder never;
    never.acquire_invoke(1, 100).acquire_ok(1, 1, 1, 101).acquire_invoke(2, 102);
    never.acquire_ok(2, 1, 2, 9000);
    CHECK(metrics_of(CellSpec{}, never).losses == 1);
}

TEST_CASE("an optimistic section is a committed attempt, from its read to its commit", "[lab]") {
    CellSpec spec;
    spec.optimistic = true;
    spec.fenced = false;
    spec.tokens = false;
    LabLogBuilder log;
    log.db(1, 1, "read", 0, 0, true, 100).db(2, 1, "read", 0, 0, true, 110);
    log.db(1, 1, "write", 1, 0, true, 150);
    log.db(2, 1, "write", 1, 0, false, 160);  // 0 rows: retried as attempt 2
    log.db(2, 2, "read", 1, 1, true, 170).db(2, 2, "write", 2, 1, true, 220);
    LabReport report = account_text(spec, log.text());
    const LabMetrics& m = report.metrics;
    CHECK(m.sections == 2);
    CHECK(m.corruptions == 0);
    CHECK(m.accepted_writes == 2);
    CHECK(m.final_counter == 2);
    CHECK(m.acquisitions == 2);
    CHECK_FALSE(m.acquire_ms_p50.has_value());
    CHECK(m.losses == 0);
    CHECK(m.overlaps == 0);  // worker 2's failed attempt is no section
    REQUIRE(report.sections.size() == 2);
    CHECK(report.sections[0].start_ns == 100 * kMs);
    CHECK(report.sections[0].end_ns == 150 * kMs);
    CHECK(report.sections[1].grant == 2);
    CHECK(report.sections[1].start_ns == 170 * kMs);
}

TEST_CASE("an optimistic commit on a version already committed is a lost update", "[lab]") {
    CellSpec spec;
    spec.optimistic = true;
    spec.tokens = false;
    LabLogBuilder log;
    log.db(1, 1, "read", 0, 0, true, 100).db(2, 1, "read", 0, 0, true, 101);
    log.db(2, 1, "write", 1, 0, true, 102).db(2, 2, "read", 1, 1, true, 103);
    log.db(2, 2, "write", 2, 1, true, 104);
    log.db(1, 1, "write", 1, 0, true, 105);  // the database let version 0 commit at version 2
    // The database bumped the version to 3, and its value back to 1.
    log.db(2, 3, "read", 1, 3, true, 106).db(2, 3, "write", 2, 3, true, 107);
    LabMetrics m = metrics_of(spec, log);
    CHECK(m.sections == 4);
    // Version 0 twice; version 2 never acknowledged; version 3's value not 2 above version 1's.
    CHECK(m.corruptions == 3);
    CHECK(m.overlaps == 2);  // worker 1's attempt spans both of worker 2's first commits
    CHECK(m.accepted_writes == 4);
    CHECK(m.final_counter == 2);
    CHECK(m.counter_shortfall == 2);  // the two increments the stale commit wrote over

    // Versions skipped with no write of unknown outcome to explain them count one each; a right
    // version whose value does not follow counts one.
    LabLogBuilder skipped;
    skipped.db(1, 1, "write", 1, 0, true, 100).db(1, 2, "write", 6, 5, true, 101);
    CHECK(metrics_of(spec, skipped).corruptions == 4);
    LabLogBuilder wrong_value;
    wrong_value.db(1, 1, "write", 1, 0, true, 100).db(1, 2, "write", 3, 1, true, 101);
    CHECK(metrics_of(spec, wrong_value).corruptions == 1);
}

TEST_CASE("an optimistic write of unknown outcome may have committed", "[lab]") {
    // The CI run that found this: a server was killed after worker 1's UPDATE committed but
    // before it answered. Every later commit is one version further along than the acknowledged
    // ones count; that is one commit the log does not show, not a corruption per later commit.
    CellSpec spec;
    spec.optimistic = true;
    spec.tokens = false;
    // Worker 1 commits version 0; with `unknown`, its next attempt's UPDATE of version 1 is
    // unanswered. Worker 2 then commits versions 2 to 11.
    auto chain = [](bool unknown) {
        LabLogBuilder log;
        log.db(1, 1, "read", 0, 0, true, 100).db(1, 1, "write", 1, 0, true, 101);
        if (unknown) {
            log.db(1, 2, "read", 1, 1, true, 102).db_unknown(1, 2, 2, 1, 103);
        }
        for (int64_t v = 2; v < 12; ++v) {
            log.db(2, v, "read", v, v, true, 100 + 2 * v)
                .db(2, v, "write", v + 1, v, true, 101 + 2 * v);
        }
        return log;
    };
    LabMetrics m = metrics_of(spec, chain(true));
    CHECK(m.corruptions == 0);
    CHECK(m.accepted_writes == 11);
    CHECK(m.unknown_writes == 1);
    CHECK(m.unacknowledged_commits == 1);
    CHECK(m.final_counter == 12);
    CHECK(m.counter_shortfall == 0);

    // Without the unknown write the same chain misses one commit: one corruption.
    LabMetrics without = metrics_of(spec, chain(false));
    CHECK(without.corruptions == 1);
    CHECK(without.unacknowledged_commits == 0);

    // One unknown write explains one skipped version, not two.
    LabLogBuilder two;
    two.db(1, 1, "write", 1, 0, true, 100).db_unknown(1, 2, 2, 1, 101);
    two.db(2, 1, "write", 4, 3, true, 102);
    CHECK(metrics_of(spec, two).corruptions == 1);
}

TEST_CASE("the optimistic row read at the end holds every commit, and no more", "[lab]") {
    CellSpec spec;
    spec.optimistic = true;
    spec.tokens = false;
    LabLogBuilder log;  // versions 0..2 acknowledged, 3 unknown, 4 acknowledged, 5 unknown
    log.db(1, 1, "write", 1, 0, true, 100).db(1, 2, "write", 2, 1, true, 101);
    log.db(1, 3, "write", 3, 2, true, 102).db_unknown(1, 4, 4, 3, 103);
    log.db(2, 1, "write", 5, 4, true, 104).db_unknown(2, 2, 6, 5, 105);
    for (auto [value, lost] :
         std::vector<std::pair<int64_t, int64_t>>{{5, 0}, {6, 0}, {4, 1}, {7, -1}, {0, 5}}) {
        INFO("db_final " << value);
        spec.db_final = value;
        LabMetrics m = metrics_of(spec, log);
        CHECK(m.unacknowledged_commits == 1);
        CHECK(m.db_lost_increments == lost);
        CHECK(m.corruptions == (lost < 0 ? -lost : lost));
    }
    spec.db_final = std::nullopt;
    CHECK(metrics_of(spec, log).db_lost_increments == 0);

    CellSpec lock_cell;
    lock_cell.db_final = 3;
    auto cell = parse_lab_cell(lock_cell.text());
    REQUIRE_FALSE(cell.ok());
    CHECK(cell.error().message == "\"db_final\" in a cell that is not optimistic");
    spec.db_final = 1;
    std::string text = spec.text();
    text.replace(text.find("{\"value\":1"), 10, "{\"value\":\"1\"");
    CHECK_FALSE(parse_lab_cell(text).ok());
}

TEST_CASE("optimistic commits are chained by version, not by when they were reported", "[lab]") {
    // Worker 1 is paused between its commit (version 0) and its report; worker 2 reads the row
    // it left and commits versions 1 and 2 before worker 1's report arrives.
    CellSpec spec;
    spec.optimistic = true;
    spec.tokens = false;
    LabLogBuilder log;
    log.db(1, 1, "read", 0, 0, true, 100);
    log.db(2, 1, "read", 1, 1, true, 110).db(2, 1, "write", 2, 1, true, 160);
    log.db(2, 2, "read", 2, 2, true, 170).db(2, 2, "write", 3, 2, true, 220);
    log.db(1, 1, "write", 1, 0, true, 2100);
    LabMetrics m = metrics_of(spec, log);
    CHECK(m.corruptions == 0);
    CHECK(m.accepted_writes == 3);
    CHECK(m.final_counter == 3);
    CHECK(m.counter_shortfall == 0);
}

TEST_CASE("\"unknown\" belongs to a db write reported not committed", "[lab]") {
    CellSpec spec;
    spec.optimistic = true;
    spec.tokens = false;
    auto cell = parse_lab_cell(spec.text());
    REQUIRE(cell.ok());
    const std::string write = R"({"op":"db","worker":1,"grant":1,"kind":"write","value":1,)"
                              R"("version":0,"t":1,)";
    CHECK(parse_lab_log(write + R"("ok":false,"unknown":true})", *cell).ok());
    auto committed = parse_lab_log(write + R"("ok":true,"unknown":true})", *cell);
    REQUIRE_FALSE(committed.ok());
    CHECK(committed.error().message.find("reported not committed") != std::string::npos);
    CHECK_FALSE(parse_lab_log(write + R"("ok":false,"unknown":1})", *cell).ok());
    const std::string read = R"({"op":"db","worker":1,"grant":1,"kind":"read","value":1,)"
                             R"("version":0,"t":1,"unknown":true})";
    CHECK_FALSE(parse_lab_log(read, *cell).ok());
}

TEST_CASE("a lock family's write that does not add one to its read is a corruption", "[lab]") {
    LabLogBuilder log;
    log.read(1, 1, 1, 100).write_value(1, 1, 1, 5, 101);
    LabMetrics m = metrics_of(CellSpec{}, log);
    CHECK(m.corruptions == 1);
    CHECK(m.counter_shortfall == -4);
}

TEST_CASE("acquire latency percentiles are nearest-rank over ok acquires only", "[lab]") {
    CHECK_FALSE(percentile_ms({}, 50).has_value());
    CHECK(*percentile_ms({3 * kMs}, 99) == Approx(3));
    std::vector<int64_t> hundred;
    for (int64_t i = 1; i <= 100; ++i) {
        hundred.push_back(i * kMs);
    }
    CHECK(*percentile_ms(hundred, 50) == Approx(50));
    CHECK(*percentile_ms(hundred, 99) == Approx(99));
    CHECK(*percentile_ms({4, 1, 3, 2}, 50) == Approx(2e-6));

    CellSpec spec;
    spec.fenced = false;
    LabMetrics m = metrics_of(spec, paused_holder_log(false));  // 1 ms, 2000 ms, 1 ms
    CHECK(*m.acquire_ms_p50 == Approx(1));
    CHECK(*m.acquire_ms_p99 == Approx(2000));

    LabLogBuilder failed;  // a failed acquire has no latency
    failed.acquire_invoke(1, 100).acquire_fail(1, 5000).acquire_invoke(1, 5001);
    failed.acquire_ok(1, 1, 1, 5004);
    LabMetrics f = metrics_of(CellSpec{}, failed);
    CHECK(*f.acquire_ms_p50 == Approx(3));
    CHECK(*f.acquire_ms_p99 == Approx(3));
}

TEST_CASE("the longest unavailability counts from the origin and to the end of the window",
          "[lab]") {
    CellSpec spec;
    spec.fenced = false;
    // Acquisitions at 1001, 3500 and 3601 ms; the window ends at 10000 ms.
    LabMetrics m = metrics_of(spec, paused_holder_log(false));
    CHECK(m.acquisitions == 3);
    CHECK(m.acquisitions_per_s == Approx(0.3));
    CHECK(m.unavailable_ms_max == Approx(6399));

    LabLogBuilder early;  // the longest gap is the one from the origin
    early.acquire_invoke(1, 0).acquire_ok(1, 1, 1, 7000).release(1, 1, 1, 7001);
    early.acquire_invoke(2, 7002).acquire_ok(2, 1, 2, 7003);
    CHECK(metrics_of(spec, early).unavailable_ms_max == Approx(7000));

    LabMetrics none = metrics_of(spec, LabLogBuilder{});
    CHECK(none.acquisitions == 0);
    CHECK(none.unavailable_ms_max == Approx(10000));

    LabLogBuilder late;  // an acquisition after end_ns is outside the window
    late.acquire_invoke(1, 0).acquire_ok(1, 1, 1, 10001);
    CHECK(metrics_of(spec, late).acquisitions == 0);
}

TEST_CASE("a cell whose workers progress before the first fault and after the heal is valid",
          "[lab]") {
    LabMetrics m = metrics_of(CellSpec{}, valid_log());
    CHECK(m.invalid.empty());
    CHECK(m.progress_before_first_fault == std::map<int64_t, int64_t>{{1, 1}, {2, 1}});
    CHECK(m.progress_after_final_heal == std::map<int64_t, int64_t>{{1, 1}, {2, 1}});
    CHECK(m.corruptions == 0);
    CHECK(m.overlaps == 0);
    CHECK(m.acquisitions == 4);
}

TEST_CASE("a worker with no progress after the final heal makes the cell invalid", "[lab]") {
    LabLogBuilder log;
    log.cycle(1, 1, 1, 100).cycle(2, 1, 2, 200).cycle(1, 2, 3, 5100);
    LabMetrics m = metrics_of(CellSpec{}, log);
    CHECK(m.invalid == std::vector<std::string>{"worker 2 made no progress after the final heal"});
    CHECK(m.progress_after_final_heal.at(2) == 0);

    // A section whose every access was refused is no progress either.
    log.acquire_invoke(2, 5200).acquire_ok(2, 2, 2, 5201).refused("read", 2, 2, 2, 5202);
    LabMetrics refused = metrics_of(CellSpec{}, log);
    CHECK(refused.invalid ==
          std::vector<std::string>{"worker 2 made no progress after the final heal"});

    LabLogBuilder late_start;  // worker 2 only starts after the first fault
    late_start.cycle(1, 1, 1, 100).cycle(2, 1, 2, 2500).cycle(1, 2, 3, 5100).cycle(2, 2, 4, 5200);
    CHECK(metrics_of(CellSpec{}, late_start).invalid ==
          std::vector<std::string>{"worker 2 made no progress before the first fault"});
}

TEST_CASE("a cell whose fault was never injected is invalid", "[lab]") {
    CellSpec spec;
    spec.faults_ms.clear();
    LabMetrics m = metrics_of(spec, valid_log());
    CHECK(m.invalid == std::vector<std::string>{"the fault was never injected"});

    spec.fault_requested = false;  // fault "none": the baseline is valid
    CHECK(metrics_of(spec, valid_log()).invalid.empty());

    LabLogBuilder only_one;
    only_one.cycle(1, 1, 1, 100).cycle(1, 2, 2, 5100);
    CHECK(metrics_of(spec, only_one).invalid ==
          std::vector<std::string>{"worker 2 made no progress in the whole run",
                                   "worker 2 made no progress after the final heal"});

    LabMetrics empty = metrics_of(spec, LabLogBuilder{});
    REQUIRE_FALSE(empty.invalid.empty());
    CHECK(empty.invalid[0] == "no critical section at all");
    CHECK(empty.invalid.size() == 5);
}

TEST_CASE("cell.json is refused when a field is missing or the times do not nest", "[lab]") {
    CHECK(parse_lab_cell(CellSpec{}.text()).ok());
    CHECK_FALSE(parse_lab_cell("{").ok());
    CHECK_FALSE(parse_lab_cell("{\"family\":\"x\"}").ok());
    CellSpec zero;
    zero.workers = 0;
    CHECK(parse_lab_cell(zero.text()).error().message.find("workers") != std::string::npos);
    CellSpec after_heal;
    after_heal.faults_ms = {{2000, 6000}};
    CHECK(parse_lab_cell(after_heal.text()).error().message.find("final_heal_ns") !=
          std::string::npos);
    CellSpec none_with_faults;
    none_with_faults.fault_requested = false;
    CHECK_FALSE(parse_lab_cell(none_with_faults.text()).ok());
    CellSpec heal_after_end;
    heal_after_end.heal_ms = 11000;
    CHECK_FALSE(parse_lab_cell(heal_after_end.text()).ok());
}

TEST_CASE("a malformed resource log is refused at its line, never skipped", "[lab]") {
    const std::string good =
        "{\"op\":\"read\",\"worker\":1,\"grant\":1,\"token\":1,\"t\":5,\"ok\":true,\"value\":0}\n"
        "\n";  // a blank line 2 still counts
    struct Case {
        std::string line;
        std::string message;
    };
    const std::vector<Case> cases = {
        {"not json", "not valid JSON"},
        {"[1,2]", "must be a JSON object"},
        {R"({"op":"lost","worker":1,"grant":1})", "\"t\" must be an integer >= 0"},
        {R"({"op":"lost","worker":1,"grant":1,"t":1.5})", "\"t\" must be an integer"},
        {R"({"op":"lost","worker":1,"grant":1,"t":4})", "goes backwards"},
        {R"({"op":"sleep","worker":1,"t":9})", "\"op\" must be one of"},
        {R"({"op":"lost","worker":0,"grant":1,"t":9})", "\"worker\" must be an integer >= 1"},
        {R"({"op":"lost","worker":3,"grant":1,"t":9})", "outside 1..2"},
        {R"({"op":"read","worker":1,"grant":1,"token":1,"t":9,"ok":true})", "\"value\""},
        {R"({"op":"write","worker":1,"grant":1,"token":1,"value":1,"t":9,"ok":true})",
         "\"before\""},
        {R"({"op":"read","worker":1,"grant":1,"t":9,"ok":"true","value":0})", "\"ok\""},
        {R"({"op":"read","worker":1,"grant":1,"token":"x","t":9,"ok":true,"value":0})",
         "\"token\""},
        {R"({"op":"read","worker":1,"grant":1,"t":9,"ok":true,"value":5})",
         "the read returned 5 but"},
        {R"({"op":"write","worker":1,"grant":1,"value":1,"t":9,"ok":true,"before":3})",
         "\"before\" is 3 but"},
        {R"({"op":"event","worker":1,"process":1,"type":"done","f":"acquire","key":"L","t":9})",
         "\"type\" must be"},
        {R"({"op":"event","worker":1,"process":1,"type":"invoke","f":"lock","key":"L","t":9})",
         "\"f\" must be"},
        {R"({"op":"event","worker":1,"process":1,"type":"invoke","f":"acquire","key":"L","t":9,)"
         R"("value":1.5})",
         "an event's \"value\""},
        {R"({"op":"event","worker":1,"process":1,"type":"ok","f":"acquire","key":"L","t":9})",
         "\"grant\" must be an integer >= 1"},
        {R"({"op":"event","worker":1,"process":1,"type":"ok","f":"acquire","key":"L","t":9,)"
         R"("grant":1,"value":1})",
         "did not invoke"},
        {R"({"op":"db","worker":1,"grant":1,"kind":"read","value":0,"version":0,"t":9})",
         "not optimistic"},
        {std::string(kLineBytesMax + 1, ' '), "longer than 1 MiB"},
    };
    auto cell = parse_lab_cell(CellSpec{}.text());
    REQUIRE(cell.ok());
    for (const Case& c : cases) {
        INFO(c.line.substr(0, 200));
        auto records = parse_lab_log(good + c.line + "\n" + good, *cell);
        REQUIRE_FALSE(records.ok());
        CHECK(records.error().line == 3);
        CHECK(records.error().message.find(c.message) != std::string::npos);
    }
}

TEST_CASE("a malformed log breaks the process discipline or the grant order", "[lab]") {
    auto cell = parse_lab_cell(CellSpec{}.text());
    REQUIRE(cell.ok());
    LabLogBuilder twice;
    twice.acquire_invoke(1, 1).acquire_invoke(1, 2);
    CHECK(parse_lab_log(twice.text(), *cell).error().message.find("still open") !=
          std::string::npos);
    LabLogBuilder regrant;
    regrant.cycle(1, 2, 1, 10).cycle(1, 2, 2, 20);
    auto bad = parse_lab_log(regrant.text(), *cell);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().line == 8);
    CHECK(bad.error().message == "grant 2 of worker 1 is not above its previous grant 2");

    CellSpec spec;
    spec.optimistic = true;
    auto optimistic = parse_lab_cell(spec.text());
    REQUIRE(optimistic.ok());
    LabLogBuilder access;
    access.read(1, 1, 1, 10);
    CHECK_FALSE(parse_lab_log(access.text(), *optimistic).ok());
    LabLogBuilder rewrite;
    rewrite.db(1, 1, "write", 1, 0, true, 1).db(1, 1, "write", 2, 1, true, 2);
    CHECK(parse_lab_log(rewrite.text(), *optimistic).error().message.find("second db write") !=
          std::string::npos);
}

// A scratch directory for the command's files, removed at the end of the test.
class ScratchDir {
public:
    ScratchDir() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "raftlock-lab-XXXXXX").string();
        REQUIRE(mkdtemp(pattern.data()) != nullptr);
        path_ = pattern;
    }
    ~ScratchDir() { std::filesystem::remove_all(path_); }

    std::string write(const std::string& name, const std::string& text) const {
        std::string file = (path_ / name).string();
        std::ofstream(file) << text;
        return file;
    }
    std::string path(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

std::string read_whole_file(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

TEST_CASE("raftlock-lab-check exits 0 for a valid cell and writes its sections and history",
          "[lab]") {
    ScratchDir dir;
    LabOptions options{dir.write("cell.json", CellSpec{}.text()),
                       dir.write("resource.jsonl", valid_log().text()), dir.path("sections.tsv"),
                       dir.path("history.jsonl")};
    std::string out;
    std::string err;
    CHECK(run_lab_check(options, &out, &err) == kLabExitValid);
    CHECK(err.empty());
    CHECK(out.rfind("{\"sections\":4,\"overlaps\":0,\"overlap_ms\":0.0,\"corruptions\":0,", 0) ==
          0);
    CHECK(out.find("\"progress\":{\"before_first_fault\":{\"1\":1,\"2\":1},"
                   "\"after_final_heal\":{\"1\":1,\"2\":1}},\"invalid\":[],"
                   "\"history_ops\":16}") != std::string::npos);
    std::string tsv = read_whole_file(options.sections_path);
    CHECK(tsv.rfind("worker\tgrant\tstart_s\tend_s\toverlapped\taccepted_writes\trefused\n"
                    "1\t1\t0.102000\t0.103000\t0\t1\t0\n",
                    0) == 0);
    CHECK(std::count(tsv.begin(), tsv.end(), '\n') == 5);

    // The history is the event records, and the mutex model accepts this clean run.
    std::string history = read_whole_file(options.history_path);
    CHECK(history.rfind("{\"index\":0,\"time_ns\":100000000,\"process\":1,\"type\":\"invoke\","
                        "\"f\":\"acquire\",\"key\":\"L\",\"value\":null}\n",
                        0) == 0);
    CHECK(test::check_text("mutex", history).verdict == Verdict::kLinearizable);
}

TEST_CASE("the history of a paused holder's cell is not a mutex's", "[lab]") {
    auto cell = parse_lab_cell(CellSpec{}.text());
    REQUIRE(cell.ok());
    auto records = parse_lab_log(paused_holder_log(true).text(), *cell);
    REQUIRE(records.ok());
    LabHistory history = lab_history_jsonl(*cell, *records);
    CHECK(history.records == 12);
    CHECK(test::check_text("mutex", history.text).verdict == Verdict::kNotLinearizable);

    CellSpec no_tokens;
    no_tokens.tokens = false;
    auto plain = parse_lab_cell(no_tokens.text());
    REQUIRE(plain.ok());
    LabHistory none = lab_history_jsonl(*plain, *records);
    CHECK(none.text.empty());
    CHECK(none.records == 0);
}

TEST_CASE("raftlock-lab-check exits 1 for an invalid cell and still prints the metrics", "[lab]") {
    ScratchDir dir;
    CellSpec spec;
    spec.tokens = false;
    spec.faults_ms.clear();
    LabOptions options{dir.write("cell.json", spec.text()),
                       dir.write("resource.jsonl", valid_log().text()), "",
                       dir.path("history.jsonl")};
    std::string out;
    std::string err;
    CHECK(run_lab_check(options, &out, &err) == kLabExitInvalid);
    CHECK(out.find("\"invalid\":[\"the fault was never injected\"],\"history_ops\":0}") !=
          std::string::npos);
    CHECK_FALSE(std::filesystem::exists(options.history_path));  // no tokens, no history
}

TEST_CASE("raftlock-lab-check exits 3 on a malformed log or bad usage, printing no metrics",
          "[lab]") {
    ScratchDir dir;
    std::string log = valid_log().text();
    log.insert(log.find('\n') + 1, "{\"op\":\"read\",\n");
    LabOptions options{dir.write("cell.json", CellSpec{}.text()), dir.write("resource.jsonl", log),
                       "", ""};
    std::string out;
    std::string err;
    CHECK(run_lab_check(options, &out, &err) == kLabExitBadInput);
    CHECK(out.empty());
    CHECK(err == options.log_path + ":2: not valid JSON\n");

    LabOptions missing{dir.path("nothing.json"), options.log_path, "", ""};
    err.clear();
    CHECK(run_lab_check(missing, &out, &err) == kLabExitBadInput);
    CHECK(err.find("nothing.json: cannot read the file") != std::string::npos);

    LabOptions bad_cell{dir.write("bad.json", "{\"family\":1}"), options.log_path, "", ""};
    err.clear();
    CHECK(run_lab_check(bad_cell, &out, &err) == kLabExitBadInput);
    CHECK(err == bad_cell.cell_path + ":0: \"family\" must be a string\n");
    CHECK(out.empty());

    using Args = std::vector<std::string>;
    CHECK(parse_lab_cli(Args{"--cell", "c", "--log", "l"}).ok());
    CHECK(
        parse_lab_cli(Args{"--cell", "c", "--log", "l", "--sections", "s", "--history", "h"}).ok());
    CHECK_FALSE(parse_lab_cli(Args{"--log", "l"}).ok());
    CHECK_FALSE(parse_lab_cli(Args{"--cell", "c"}).ok());
    CHECK_FALSE(parse_lab_cli(Args{"--cell", "c", "--log"}).ok());
    CHECK_FALSE(parse_lab_cli(Args{"--cell", "c", "--log", "l", "extra"}).ok());
}

}  // namespace
}  // namespace raftlock::jepsen
