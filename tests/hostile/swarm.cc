#include "tests/hostile/swarm.h"

#include <cerrno>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace raftlock::hostile {

Swarm::Swarm(uint16_t port, size_t count, std::string source_ip)
    : port_(port), source_ip_(std::move(source_ip)) {
    fds_.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        fds_.push_back(open_one());
    }
}

Swarm::~Swarm() {
    for (int fd : fds_) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

int Swarm::open_one() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    REQUIRE(fd >= 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    REQUIRE(::inet_pton(AF_INET, source_ip_.c_str(), &local.sin_addr) == 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0);
    sockaddr_in server{};
    server.sin_family = AF_INET;
    server.sin_port = htons(port_);
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof server);
    if (rc != 0 && errno != EINPROGRESS) {
        ::close(fd);
        return -1;  // refused now; tend() tries again
    }
    return fd;
}

size_t Swarm::tend() {
    size_t closed = 0;
    for (int& fd : fds_) {
        bool gone = fd < 0;
        if (!gone) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
                char buffer[4096];
                const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
                // A refusal message, EOF or an error: either way the server is done with it.
                gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
                       (p.revents & (POLLHUP | POLLERR)) != 0 || n > 0;
            }
        }
        if (gone) {
            ++closed;
            if (fd >= 0) {
                ::close(fd);
            }
            fd = open_one();
            ++reopened_;
        }
    }
    return closed;
}

void Swarm::drip(const std::string& bytes) {
    for (int fd : fds_) {
        if (fd >= 0) {
            (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
    }
}

void raise_fd_limit() {
    rlimit limit{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
    limit.rlim_cur = limit.rlim_max;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &limit) == 0);
}

}  // namespace raftlock::hostile
