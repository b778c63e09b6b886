// Crash test with real processes: a child appends and syncs, reporting every acknowledged batch
// through a pipe; the parent kills it with SIGKILL at a random moment, reopens the store and checks
// that everything acknowledged is there and intact and that nothing beyond it is damaged.
//
// CI runs a few dozen kills; RAFTLOCK_CRASH_ITERATIONS=1000 (or more) selects the long mode.

#include <chrono>
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rng.h"
#include "storage/journal_storage.h"
#include "storage/rocks_storage.h"
#include "tests/storage/crash_protocol.h"
#include "tests/storage/test_util.h"

extern char** environ;

namespace raftlock::storage {
namespace {

constexpr int kDefaultIterations = 30;

int iterations() {
    const char* env = std::getenv("RAFTLOCK_CRASH_ITERATIONS");
    return env != nullptr ? std::atoi(env) : kDefaultIterations;
}

struct Child {
    pid_t pid = -1;
    int ack_fd = -1;  // read end of the child's stdout
};

Child spawn_child(const std::string& dir, uint64_t seed, bool journal) {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    REQUIRE(posix_spawn_file_actions_init(&actions) == 0);
    REQUIRE(posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO) == 0);
    const std::string seed_text = std::to_string(seed);
    char* argv[] = {const_cast<char*>(RAFTLOCK_CRASH_CHILD), const_cast<char*>(dir.c_str()),
                    const_cast<char*>(seed_text.c_str()),
                    journal ? const_cast<char*>("journal") : nullptr, nullptr};
    Child child;
    REQUIRE(::posix_spawn(&child.pid, RAFTLOCK_CRASH_CHILD, &actions, nullptr, argv, environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    child.ack_fd = fds[0];
    return child;
}

// Waits up to `timeout_ms` (-1: no limit) for acks and reads those that are there. Returns how
// many it read, or -1 at end of file (the child is gone). Acks are 16 bytes, written atomically.
int read_acks(int fd, int timeout_ms, crash::Ack& latest) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeout_ms);
    REQUIRE(ready >= 0);
    if (ready == 0) {
        return 0;
    }
    crash::Ack acks[256];
    const ssize_t n = ::read(fd, acks, sizeof(acks));
    REQUIRE(n >= 0);
    REQUIRE(n % static_cast<ssize_t>(sizeof(crash::Ack)) == 0);
    const int count = static_cast<int>(n / static_cast<ssize_t>(sizeof(crash::Ack)));
    for (int i = 0; i < count; i++) {
        REQUIRE(acks[i].index >= latest.index);
        latest = acks[i];
    }
    return n == 0 ? -1 : count;
}

// Waits for the child's first ack, which it sends once its store is open, so that the kill lands
// while it appends however slow its start is (sanitizers, a busy machine).
void wait_until_open(const Child& child, crash::Ack& latest) {
    constexpr int kOpenTimeoutMs = 30'000;
    const int got = read_acks(child.ack_fd, kOpenTimeoutMs, latest);
    INFO("the child did not open its store within " << kOpenTimeoutMs << " ms");
    REQUIRE(got > 0);
}

// Lets the child run for `run_ms`, kills it, and collects every ack it sent before dying.
void run_and_kill(const Child& child, int run_ms, crash::Ack& latest) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::milliseconds(run_ms);
    // Each pass waits for output or the deadline; bounded by run_ms plus one pass per read.
    for (auto now = Clock::now(); now < deadline; now = Clock::now()) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
        if (read_acks(child.ack_fd, static_cast<int>(left), latest) < 0) {
            break;  // the child exited on its own: reported below
        }
    }
    ::kill(child.pid, SIGKILL);
    // Drains what the child wrote before it died; ends at end of file.
    while (read_acks(child.ack_fd, -1, latest) >= 0) {
    }
    ::close(child.ack_fd);
    int status = 0;
    REQUIRE(::waitpid(child.pid, &status, 0) == child.pid);
    INFO("the child must die by our SIGKILL, not exit or abort (a storage panic)");
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
}

template <typename Store>
void verify_store(std::unique_ptr<Store> store, const crash::Ack& latest) {
    INFO("acknowledged up to " << latest.index << " in term " << latest.term);
    REQUIRE(store->last_index() >= latest.index);
    REQUIRE(store->hard_state().term >= latest.term);
    if (latest.index >= store->first_index()) {
        REQUIRE(store->term(latest.index).value() == latest.term);
    }
    auto entries = store->entries(store->first_index(), store->last_index() + 1, UINT64_MAX);
    REQUIRE(entries.ok());
    for (const raft::Entry& entry : *entries) {
        REQUIRE(entry.data == crash::entry_data(entry.index, entry.term));
    }
    if (auto snap = store->snapshot(); snap.ok()) {
        REQUIRE(snap->data == crash::snapshot_data(snap->metadata.index));
        REQUIRE(snap->metadata.index <= store->last_index());
    }
}

TEST_CASE("acknowledged entries survive SIGKILL at random moments", "[storage][crash]") {
    const bool journal = GENERATE(false, true);
    INFO((journal ? "JournalStorage" : "RocksStorage"));
    test::TempDir dir;
    Rng rng(20261122);
    crash::Ack latest;
    const int n = iterations();
    for (int i = 0; i < n; i++) {
        const Child child = spawn_child(dir.path(), rng.next(), journal);
        // One kill in four lands during the child's open and recovery, the rest while it appends.
        if (rng.next() % 4 != 0) {
            wait_until_open(child, latest);
        }
        const int run_ms = static_cast<int>(rng.next() % 50);
        run_and_kill(child, run_ms, latest);
        if (journal) {
            JournalStorageOptions options;
            options.segment_bytes = 1 << 20;  // as the child's
            auto store = JournalStorage::open(dir.path(), options);
            if (!store.ok()) {
                FAIL("open " << dir.path() << ": " << store.error().message);
            }
            verify_store(std::move(*store), latest);
        } else {
            verify_store(test::open_store(dir.path()), latest);
        }
    }
    INFO("last acknowledged index " << latest.index);
    CHECK(latest.index > 0);
}

}  // namespace
}  // namespace raftlock::storage
