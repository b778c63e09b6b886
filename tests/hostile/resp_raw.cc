#include "tests/hostile/resp_raw.h"

#include <chrono>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace raftlock::hostile {

int connect_loopback(uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    return fd;
}

std::string resp_command(const std::vector<std::string>& argv) {
    std::string out = "*" + std::to_string(argv.size()) + "\r\n";
    for (const std::string& a : argv) {
        out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    }
    return out;
}

std::optional<std::string> resp_call(int fd, const std::vector<std::string>& argv, int timeout_ms) {
    const std::string request = resp_command(argv);
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
        return std::nullopt;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string reply;
    while (reply.size() < 2 || reply.compare(reply.size() - 2, 2, "\r\n") != 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        pollfd p{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) {
            return std::nullopt;
        }
        char c = 0;
        if (::recv(fd, &c, 1, 0) != 1) {
            return std::nullopt;
        }
        reply += c;
    }
    reply.resize(reply.size() - 2);
    return reply;
}

}  // namespace raftlock::hostile
