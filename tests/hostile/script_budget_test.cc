// Issue 16, row 4, against a real three-node cluster: a Redis client pipelines EVALs of an
// allocating loop, ten at a time, for seconds. Each script used to run to the old budget of 50M
// instructions, about 3 s on every replica inside apply: all three nodes stopped answering for
// half a minute, with elections. The budget is now stamped into each entry (100,000 instructions
// by default, about 5 ms for this loop): every EVAL fails with the instruction-limit error, a
// normal client's write answers within a second throughout, and the term does not move.
// RAFTLOCK_HOSTILE_SCRIPT_INSTRUCTIONS sets --script-instructions-max for a run by hand (50000000
// shows the failure this test guards against).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/hostile/probes.h"
#include "tests/hostile/resp_raw.h"
#include "tests/integration/process_cluster.h"

namespace raftlock::hostile {
// Named, not anonymous: in a unity build its helpers stay apart from other test files'.
namespace script_budget_test {

using integration::ProcessCluster;
using Clock = std::chrono::steady_clock;

constexpr auto kAttack = std::chrono::seconds(6);
constexpr size_t kPipelined = 10;
// The attack lasts kAttack and at least kBatchesMin batches (a slow machine, a sanitizer build:
// 90 scripts in 6 s once under ASan), up to kAttackMax: the count is the expectation, not the time.
constexpr size_t kBatchesMin = 10;
constexpr auto kAttackMax = std::chrono::seconds(30);
constexpr const char* kLoop =
    "local t = {} for i = 1, 1e9 do t[#t % 1000 + 1] = string.rep('x', 100) .. i end return 1";
constexpr std::string_view kLimitReply = "-ERR script exceeded the instruction limit\r\n";

// Reads what has arrived on fd (waiting up to timeout_ms for the first byte) into `buffer`.
void read_available(int fd, std::string& buffer, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) {
        return;
    }
    char chunk[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT)) > 0) {
        buffer.append(chunk, static_cast<size_t>(n));
    }
}

// Takes every whole reply off the front of `buffer`; counts the instruction-limit errors.
size_t take_replies(std::string& buffer, size_t& limit_errors) {
    size_t replies = 0;
    for (size_t end = buffer.find("\r\n"); end != std::string::npos; end = buffer.find("\r\n")) {
        limit_errors += buffer.compare(0, end + 2, kLimitReply) == 0 ? 1 : 0;
        buffer.erase(0, end + 2);
        ++replies;
    }
    return replies;
}

TEST_CASE("pipelined EVALs of an allocating loop stop at their budget on every replica",
          "[hostile][script_budget]") {
    std::vector<std::string> flags = {"--redis-listen", "{redis}"};
    if (const char* env = std::getenv("RAFTLOCK_HOSTILE_SCRIPT_INSTRUCTIONS")) {
        flags.insert(flags.end(), {"--script-instructions-max", env});
    }
    ProcessCluster c(3, flags);
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t term = settled_term(c, leader);
    REQUIRE(term > 0);

    const int attacker = connect_loopback(c.ports(leader).redis);
    std::string eval_batch;
    for (size_t i = 0; i < kPipelined; ++i) {
        eval_batch += resp_command({"EVAL", kLoop, "0"});
    }
    std::string unread;
    size_t sent = 0;
    size_t answered = 0;
    size_t limit_errors = 0;
    // Through each node in turn: a follower forwards to the leader, which is the busiest.
    WriteProbe probe(c, c.ids(), 200);
    const auto start = Clock::now();
    while (Clock::now() < start + kAttackMax &&
           (Clock::now() < start + kAttack || sent < kBatchesMin * kPipelined)) {
        if (answered == sent) {
            REQUIRE(::send(attacker, eval_batch.data(), eval_batch.size(), MSG_NOSIGNAL) ==
                    static_cast<ssize_t>(eval_batch.size()));
            sent += kPipelined;
        }
        read_available(attacker, unread, 10);
        answered += take_replies(unread, limit_errors);
        probe.poll();
    }
    for (const auto end = Clock::now() + std::chrono::milliseconds(kAnswerDeadlineMs);
         answered < sent && Clock::now() < end;) {
        read_available(attacker, unread, 50);
        answered += take_replies(unread, limit_errors);
    }
    ::close(attacker);

    INFO("EVALs sent " << sent << ", answered " << answered << ", over budget " << limit_errors
                       << "; writes late " << probe.late() << " of " << probe.writes()
                       << " (slowest " << probe.slowest_ms() << " ms)");
    CHECK(sent >= kBatchesMin * kPipelined);  // the attack ran: a hundred scripts or more
    CHECK(answered == sent);
    CHECK(limit_errors == sent);
    CHECK(probe.late() == 0);
    for (uint64_t id : c.ids()) {
        INFO("node " << id << " log:\n" << c.log_of(id));
        CHECK(c.wait_exit(id, 1) == -1);
        INFO("node " << id << ": term " << term_of(c, id) << " (was " << term << ")");
        CHECK(term_of(c, id) == term);  // no election
    }
    CHECK(metric(c, leader, "raftlock_redis_scripts_over_budget_total") ==
          static_cast<int64_t>(sent));
    WARN(sent << " EVALs over budget; slowest write " << probe.slowest_ms() << " ms");
}

}  // namespace script_budget_test
}  // namespace raftlock::hostile
