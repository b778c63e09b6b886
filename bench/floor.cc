// The physical floor under every system, measured in the same run as the systems:
//   floor.fsync     one thread appends 4 KiB and calls fdatasync, in a loop, on a new file in
//                   `dir`: each sync also commits the file's new size (a journal write on ext4)
//   floor.fsync.overwrite  the same, overwriting one 4 KiB block: the sync flushes data only,
//                   the cheapest durable write this disk offers (a log that preallocates and
//                   reuses its blocks comes close to it)
//   floor.loopback  one TCP connection over 127.0.0.1 (TCP_NODELAY), a 64-byte ping-pong with a
//                   thread that echoes (what one round trip between two processes costs, at best)

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/run_clock.h"
#include "bench/scenario.h"

namespace raftlock::bench {

namespace {

constexpr size_t kWriteBytes = 4096;
constexpr size_t kPingBytes = 64;

RunResult floor_result(const RunOptions& o) {
    RunResult r;
    r.system = "floor";
    r.scenario = o.scenario;
    r.mode = "closed";
    r.clients = 1;
    r.seconds = o.duration_s;
    return r;
}

bool read_full(int fd, char* data, size_t n) {
    while (n > 0) {
        const ssize_t got = ::recv(fd, data, n, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return false;
        }
        data += got;
        n -= static_cast<size_t>(got);
    }
    return true;
}

bool write_full(int fd, const char* data, size_t n) {
    while (n > 0) {
        const ssize_t put = ::send(fd, data, n, MSG_NOSIGNAL);
        if (put < 0 && errno == EINTR) {
            continue;
        }
        if (put <= 0) {
            return false;
        }
        data += put;
        n -= static_cast<size_t>(put);
    }
    return true;
}

void set_nodelay(int fd) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

RunResult run_floor_fsync(const RunOptions& o) {
    RunResult r = floor_result(o);
    const bool overwrite = o.scenario == "floor.fsync.overwrite";
    const std::string path =
        (std::filesystem::path(o.dir) / fmt::format("raftlock-bench-fsync.{}", ::getpid()))
            .string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        r.errors = 1;
        r.first_error = fmt::format("open {}: {}", path, std::strerror(errno));
        return r;
    }
    const std::string block(kWriteBytes, 'f');
    const Timeline timeline = Timeline::from_now(o.warmup_s, o.duration_s);
    for (auto start = Clock::now(); start < timeline.end; start = Clock::now()) {
        const ssize_t written = overwrite ? ::pwrite(fd, block.data(), block.size(), 0)
                                          : ::write(fd, block.data(), block.size());
        if (written != static_cast<ssize_t>(block.size()) || ::fdatasync(fd) != 0) {
            r.errors++;
            r.first_error = fmt::format("write+fdatasync {}: {}", path, std::strerror(errno));
            break;
        }
        if (timeline.measured(start)) {
            r.latency.record(ns_between(start, Clock::now()));
            r.ops++;
        }
    }
    ::close(fd);
    ::unlink(path.c_str());
    r.figures.emplace_back("write_bytes", static_cast<double>(kWriteBytes));
    return r;
}

RunResult run_floor_loopback(const RunOptions& o) {
    RunResult r = floor_result(o);
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener, 1) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        r.errors = 1;
        r.first_error = fmt::format("listen on 127.0.0.1: {}", std::strerror(errno));
        if (listener >= 0) {
            ::close(listener);
        }
        return r;
    }
    std::thread echo([listener] {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            return;
        }
        set_nodelay(fd);
        char buffer[kPingBytes];
        while (read_full(fd, buffer, sizeof buffer) && write_full(fd, buffer, sizeof buffer)) {
        }
        ::close(fd);
    });
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        set_nodelay(fd);
        char buffer[kPingBytes] = {};
        const Timeline timeline = Timeline::from_now(o.warmup_s, o.duration_s);
        for (auto start = Clock::now(); start < timeline.end; start = Clock::now()) {
            if (!write_full(fd, buffer, sizeof buffer) || !read_full(fd, buffer, sizeof buffer)) {
                r.errors++;
                r.first_error = "loopback ping-pong broke";
                break;
            }
            if (timeline.measured(start)) {
                r.latency.record(ns_between(start, Clock::now()));
                r.ops++;
            }
        }
    } else {
        r.errors++;
        r.first_error = fmt::format("connect to 127.0.0.1: {}", std::strerror(errno));
    }
    if (fd >= 0) {
        ::shutdown(fd, SHUT_RDWR);
        ::close(fd);
    }
    ::shutdown(listener, SHUT_RDWR);  // wakes accept() if the client never connected
    echo.join();
    ::close(listener);
    r.figures.emplace_back("message_bytes", static_cast<double>(kPingBytes));
    return r;
}

}  // namespace raftlock::bench
