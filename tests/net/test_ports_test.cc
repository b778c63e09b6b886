// The ports tests start their servers on: distinct within a process, across blocks, and between a
// process and a child it forks.

#include "tests/test_ports.h"

#include <set>
#include <vector>

#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

namespace raftlock::test_ports {
namespace {

TEST_CASE("test ports are never handed out twice", "[test_ports]") {
    std::set<uint16_t> seen;
    // Several blocks' worth, so claiming the next block is covered too.
    for (int i = 0; i < 5 * kBlockSize; ++i) {
        const uint16_t port = unused_port();
        REQUIRE(port >= kFirst);
        REQUIRE(port < kEnd);
        REQUIRE(seen.insert(port).second);
    }
}

TEST_CASE("a forked child does not take its parent's next ports", "[test_ports]") {
    std::vector<uint16_t> ports = {unused_port(), unused_port()};
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        uint16_t mine[3] = {unused_port(), unused_port(), unused_port()};
        const bool ok = ::write(pipe_fds[1], mine, sizeof mine) == sizeof mine;
        ::_exit(ok ? 0 : 1);
    }
    uint16_t theirs[3] = {};
    REQUIRE(::read(pipe_fds[0], theirs, sizeof theirs) == sizeof theirs);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ports.insert(ports.end(), {unused_port(), unused_port(), unused_port()});
    ports.insert(ports.end(), std::begin(theirs), std::end(theirs));
    const std::set<uint16_t> distinct(ports.begin(), ports.end());
    CHECK(distinct.size() == ports.size());
}

}  // namespace
}  // namespace raftlock::test_ports
