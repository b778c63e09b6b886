#include "tests/test_ports.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace raftlock::test_ports {
namespace {

constexpr int kBlocks = (kEnd - kFirst) / kBlockSize;
static_assert(kBlocks >= 32, "enough blocks for every test process of a parallel ctest run");

// Shared by every user on the machine (mode 1777, like /tmp): a block's lock file is claimed by
// whoever opens it first.
const char* const kLockDir = "/tmp/raftlock-test-ports";

struct Claim {
    pid_t owner = 0;  // a forked child must not go on handing out its parent's ports
    int block = -1;
    int next = 0;  // index in the block of the next port to try
};

// True when nothing is bound to 127.0.0.1:port. Without SO_REUSEADDR, so a port with
// connections still in TIME_WAIT counts as taken too.
bool bindable(uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw std::runtime_error(std::string("test ports: socket: ") + std::strerror(errno));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return ok;
}

// Claims the first free block from a starting point spread by pid. The lock file stays open (and
// locked) until the process exits; O_CLOEXEC keeps the servers a test spawns from inheriting it
// and holding the block past the test.
int claim_block() {
    std::error_code ec;
    std::filesystem::create_directories(kLockDir, ec);
    ::chmod(kLockDir, 01777);
    const int start = static_cast<int>(static_cast<unsigned>(::getpid()) * 7919u % kBlocks);
    for (int i = 0; i < kBlocks; ++i) {
        const int block = (start + i) % kBlocks;
        const std::string path = std::string(kLockDir) + "/block-" + std::to_string(block);
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) {
            continue;  // another user's file we may not open: someone else's block
        }
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
            return block;
        }
        ::close(fd);
    }
    throw std::runtime_error(std::string("test ports: all ") + std::to_string(kBlocks) +
                             " blocks under " + kLockDir + " are held by other processes");
}

}  // namespace

uint16_t unused_port() {
    static std::mutex mutex;
    static Claim claim;
    const std::lock_guard lock(mutex);
    if (claim.owner != ::getpid()) {
        claim = Claim{::getpid(), claim_block(), 0};
    }
    for (;;) {
        if (claim.next == kBlockSize) {
            claim = Claim{::getpid(), claim_block(), 0};
        }
        const auto port = static_cast<uint16_t>(kFirst + claim.block * kBlockSize + claim.next++);
        if (bindable(port)) {
            return port;
        }
    }
}

}  // namespace raftlock::test_ports
