// Issue 16, row 6, against a real three-node cluster: a node restarted over a log that takes
// seconds to replay used to apply all of it in one turn of its loop, dark on every port (46 s
// after rows 4 and 5), and `cluster.sh start` reported success meanwhile. It now applies one
// Ready's committed entries (at most 16) per turn: its admin port answers throughout, /healthz
// says "catching up: applied A of C" (503) until the replay is done, then "ok", and it serves.
// Measured: 1,000 scripts (about 5 ms each) replay in 5.8-7.9 s with the admin port silent at most
// 0.47-0.57 s; with the whole replay in one turn (as before) it was silent 8.7 s.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/hostile/probes.h"
#include "tests/hostile/resp_raw.h"
#include "tests/integration/process_cluster.h"

namespace raftlock::hostile {
namespace {

using integration::ProcessCluster;
using Clock = std::chrono::steady_clock;

// About 5 ms each at the default script budget (25 ms in the sanitizer build): some 5 s of replay.
constexpr size_t kEvals = 1000 / RAFTLOCK_HOSTILE_SLOWDOWN;
constexpr const char* kLoop =
    "local t = {} for i = 1, 1e9 do t[#t % 1000 + 1] = string.rep('x', 100) .. i end return 1";

int64_t ms_since(Clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Pipelines kEvals EVALs through `port` and waits for every reply (each an instruction-limit
// error).
void fill_log(uint16_t port) {
    const int fd = connect_loopback(port);
    std::string evals;
    for (size_t i = 0; i < kEvals; ++i) {
        evals += resp_command({"EVAL", kLoop, "0"});
    }
    REQUIRE(::send(fd, evals.data(), evals.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(evals.size()));
    size_t replies = 0;
    std::string in;
    const auto end = Clock::now() + std::chrono::seconds(120);
    while (replies < kEvals && Clock::now() < end) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) != 1) {
            continue;
        }
        char chunk[65536];
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        REQUIRE(n > 0);
        replies += static_cast<size_t>(std::count(chunk, chunk + n, '\n'));
    }
    ::close(fd);
    REQUIRE(replies == kEvals);
}

TEST_CASE("a node replaying a long log answers its admin port and says it is catching up",
          "[hostile][replay]") {
    ProcessCluster c(3, {"--redis-listen", "{redis}"});
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t node = leader % 3 + 1;
    fill_log(c.ports(leader).redis);
    // The follower has applied (and persisted the commit of) what the leader answered.
    const auto applied_all = Clock::now() + std::chrono::seconds(30);
    while (metric(c, node, "raftlock_redis_scripts_over_budget_total") <
               static_cast<int64_t>(kEvals) &&
           Clock::now() < applied_all) {
        ::usleep(100 * 1000);
    }
    c.stop(node);

    const auto restarted = Clock::now();
    c.start(node);
    // From the start on, the longest wait for an answer on the admin port (the first counts from
    // the start: a node busy replaying before it first answers is just as dark).
    int64_t longest_silence_ms = 0;
    auto last_answer = restarted;
    size_t catching_up = 0;
    std::string first_catching_up;
    std::string health;
    while (health != "ok\n" && ms_since(restarted) < 120'000) {
        const std::optional<std::string> body =
            integration::http_get(c.ports(node).admin, "/healthz");
        if (body) {
            longest_silence_ms = std::max(longest_silence_ms, ms_since(last_answer));
            last_answer = Clock::now();
            health = *body;
            if (health.rfind("catching up", 0) == 0 && catching_up++ == 0) {
                first_catching_up = health;
            }
        }
        ::usleep(50 * 1000);
    }
    const int64_t serving_after_ms = ms_since(restarted);
    INFO("node " << node << ": serving after " << serving_after_ms << " ms; longest silence "
                 << longest_silence_ms << " ms; " << catching_up
                 << " answers catching up (first: " << first_catching_up << ")");
    INFO("node log:\n" << c.log_of(node));
    CHECK(health == "ok\n");
    CHECK(catching_up >= 3);  // the replay lasted long enough to be seen, and said so
    // Startup (the store opens) before the first answer, then a turn of the loop at most.
    CHECK(longest_silence_ms < 1000 + kAnswerDeadlineMs);
    CHECK(write_answers(c, node, 1));
    CHECK(c.wait_exit(node, 1) == -1);
    WARN("replay of " << kEvals << " scripts: serving after " << serving_after_ms
                      << " ms, longest silence " << longest_silence_ms << " ms, " << catching_up
                      << " answers catching up");
}

}  // namespace
}  // namespace raftlock::hostile
