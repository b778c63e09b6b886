// Issue 16, row 10, against a real three-node cluster: on a host whose address space is limited
// (`ulimit -v`) below about 4.2 GiB, the Lua arena's reservation (4 GiB of alignment slack plus
// its capacity) failed on every replica, so the first EVAL in the log stopped all three nodes, and
// each stopped again on it at every restart. The arena now reserves only its capacity: the nodes
// run under a 3 GiB limit, answer the EVAL, and replay it after a restart.

#include <cstdint>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include "tests/hostile/resp_raw.h"
#include "tests/integration/process_cluster.h"

namespace raftlock::hostile {
namespace {

using integration::ProcessCluster;

#if defined(__SANITIZE_ADDRESS__)

TEST_CASE("EVAL runs on every replica under a 3 GiB address-space limit", "[hostile][lua_arena]") {
    WARN("skipped: AddressSanitizer cannot run under an address-space limit");
}

#else

constexpr uint64_t kAddressSpaceBytes = uint64_t{3} << 30;
constexpr int kReplyDeadlineMs = 5000 * RAFTLOCK_HOSTILE_SLOWDOWN;

// Tables keyed by tables: the reply depends on pairs() order only through the sum, but the keys
// exercise the arena's deterministic addresses on every replica.
constexpr const char* kScript =
    "local t = {} for i = 1, 100 do t[{}] = i end "
    "local s = 0 for _, v in pairs(t) do s = s + v end return s";

// This process's soft RLIMIT_AS, lowered for the scope (the nodes it spawns inherit it).
class AddressSpaceLimit {
public:
    explicit AddressSpaceLimit(uint64_t bytes) {
        REQUIRE(::getrlimit(RLIMIT_AS, &saved_) == 0);
        rlimit lowered = saved_;
        lowered.rlim_cur = bytes;
        REQUIRE(::setrlimit(RLIMIT_AS, &lowered) == 0);
    }
    ~AddressSpaceLimit() { ::setrlimit(RLIMIT_AS, &saved_); }
    AddressSpaceLimit(const AddressSpaceLimit&) = delete;
    AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

private:
    rlimit saved_{};
};

std::optional<std::string> eval_on(ProcessCluster& c, uint64_t node) {
    const int fd = connect_loopback(c.ports(node).redis);
    std::optional<std::string> reply = resp_call(fd, {"EVAL", kScript, "0"}, kReplyDeadlineMs);
    ::close(fd);
    return reply;
}

void check_all_running(ProcessCluster& c) {
    for (uint64_t id : c.ids()) {
        INFO("node " << id << " log:\n" << c.log_of(id));
        CHECK(c.wait_exit(id, 1) == -1);
    }
}

TEST_CASE("EVAL runs on every replica under a 3 GiB address-space limit", "[hostile][lua_arena]") {
    AddressSpaceLimit limit(kAddressSpaceBytes);
    ProcessCluster c(3, {"--redis-listen", "{redis}"});
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    for (uint64_t id : c.ids()) {
        INFO("through node " << id);
        CHECK(eval_on(c, id) == std::optional<std::string>(":5050"));
    }
    ::usleep(500 * 1000);  // the followers apply the last EVAL too
    check_all_running(c);

    // The EVALs are in the log: every node replays them at its restart.
    for (uint64_t id : c.ids()) {
        c.stop(id);
    }
    for (uint64_t id : c.ids()) {
        c.start(id);
    }
    REQUIRE(c.wait_for_leader() != 0);
    CHECK(eval_on(c, leader) == std::optional<std::string>(":5050"));
    check_all_running(c);
}

#endif  // __SANITIZE_ADDRESS__

}  // namespace
}  // namespace raftlock::hostile
