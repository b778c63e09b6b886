// Disk full: a writer on a small tmpfs runs out of space; it must stop with a clear error (a
// panic, never carrying on), and after a remount with more room everything it acknowledged is
// there. Both engines: RocksDB runs out in a write; the journal (1 MiB segments) when it prepares
// a segment, since appending only overwrites blocks a segment owns. Needs root to mount; skipped
// with a message otherwise.

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storage/journal_storage.h"
#include "storage/rocks_storage.h"
#include "tests/storage/crash_protocol.h"
#include "tests/storage/test_util.h"

extern char** environ;

namespace raftlock::storage {
namespace {

// Unmounts on destruction.
class TmpfsMount {
public:
    explicit TmpfsMount(std::string path) : path_(std::move(path)) {
        std::filesystem::create_directories(path_);
        mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, "size=8m") == 0;
        if (!mounted_) {
            error_ = std::strerror(errno);
        }
    }
    ~TmpfsMount() {
        if (mounted_) {
            ::umount2(path_.c_str(), MNT_DETACH);
        }
    }
    bool mounted() const { return mounted_; }
    const std::string& error() const { return error_; }
    bool grow() { return ::mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT, "size=64m") == 0; }

private:
    std::string path_;
    bool mounted_ = false;
    std::string error_;
};

// Runs the crash child in fill mode until it dies; returns its wait status. Acks land in `latest`,
// its stderr in `stderr_path`.
int fill_disk(const std::string& store_dir,
              const std::string& stderr_path,
              bool journal,
              crash::Ack& latest) {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    REQUIRE(posix_spawn_file_actions_init(&actions) == 0);
    REQUIRE(posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO) == 0);
    REQUIRE(posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                             O_WRONLY | O_CREAT | O_TRUNC, 0644) == 0);
    char* argv[] = {const_cast<char*>(RAFTLOCK_CRASH_CHILD),
                    const_cast<char*>(store_dir.c_str()),
                    const_cast<char*>("1"),
                    const_cast<char*>("fill"),
                    journal ? const_cast<char*>("journal") : nullptr,
                    nullptr};
    pid_t pid = -1;
    REQUIRE(::posix_spawn(&pid, RAFTLOCK_CRASH_CHILD, &actions, nullptr, argv, environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    crash::Ack acks[256];
    // Ends when the child dies and the pipe closes; the child's loop is bounded.
    while (true) {
        const ssize_t n = ::read(fds[0], acks, sizeof(acks));
        REQUIRE(n >= 0);
        if (n == 0) {
            break;
        }
        latest = acks[n / static_cast<ssize_t>(sizeof(crash::Ack)) - 1];
    }
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return status;
}

// Every acknowledged entry is intact, and the store works again once there is room.
template <typename Store>
void check_after_refill(Store& store, const crash::Ack& latest) {
    CHECK(store.last_index() >= latest.index);
    CHECK(store.term(latest.index).value() == latest.term);
    auto entries = store.entries(store.first_index(), store.last_index() + 1, UINT64_MAX);
    REQUIRE(entries.ok());
    for (const raft::Entry& entry : *entries) {
        REQUIRE(entry.data == crash::entry_data(entry.index, entry.term));
    }
    store.append({raft::Entry{latest.term, store.last_index() + 1, raft::EntryType::kNormal,
                              crash::entry_data(store.last_index() + 1, latest.term)}});
}

TEST_CASE("a full disk stops the writer with a clear error and loses nothing acknowledged",
          "[storage][diskfull]") {
    const bool journal = GENERATE(false, true);
    INFO((journal ? "JournalStorage" : "RocksStorage"));
    test::TempDir dir;
    if (::geteuid() != 0) {
        WARN("disk-full test skipped: mounting a tmpfs needs root");
        return;
    }
    TmpfsMount mount(dir.sub("mnt"));
    if (!mount.mounted()) {
        WARN("disk-full test skipped: cannot mount a tmpfs: " << mount.error());
        return;
    }
    const std::string store_dir = dir.sub("mnt/store");
    crash::Ack latest;
    const int status = fill_disk(store_dir, dir.sub("stderr"), journal, latest);
    std::stringstream err;
    err << std::ifstream(dir.sub("stderr")).rdbuf();
    INFO("child stderr: " << err.str());
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
    CHECK_THAT(err.str(), Catch::Contains("fatal disk error"));
    CHECK_THAT(err.str(), Catch::Contains("No space left on device"));
    REQUIRE(latest.index > 1000);

    REQUIRE(mount.grow());
    if (journal) {
        JournalStorageOptions options;
        options.segment_bytes = 1 << 20;  // as the child's: the remounted disk holds a few more
        auto store = JournalStorage::open(store_dir, options);
        REQUIRE(store.ok());
        check_after_refill(**store, latest);
    } else {
        check_after_refill(*test::open_store(store_dir), latest);
    }
}

}  // namespace
}  // namespace raftlock::storage
