#include "tests/hostile/pg_raw.h"

#include <chrono>
#include <cstring>
#include <utility>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/hostile/resp_raw.h"

namespace raftlock::hostile {
namespace {

void put_u32(std::string& out, uint32_t v) {
    const uint32_t be = htonl(v);
    out.append(reinterpret_cast<const char*>(&be), 4);
}

uint32_t get_u32(const std::string& s, size_t at) {
    uint32_t be = 0;
    std::memcpy(&be, s.data() + at, 4);
    return ntohl(be);
}

// The value of one field (code `code`) of an ErrorResponse body.
std::string error_field(const std::string& body, char code) {
    for (size_t at = 0; at < body.size() && body[at] != '\0';) {
        const size_t end = body.find('\0', at + 1);
        if (end == std::string::npos) {
            break;
        }
        if (body[at] == code) {
            return body.substr(at + 1, end - at - 1);
        }
        at = end + 1;
    }
    return "";
}

}  // namespace

RawPg::RawPg(uint16_t port, int timeout_ms) : fd_(connect_loopback(port)) {
    std::string body;
    put_u32(body, 196608);  // protocol 3.0
    for (const char* s : {"user", "hostile", "database", "hostile", ""}) {
        body.append(s, std::strlen(s) + 1);
    }
    std::string startup;
    put_u32(startup, static_cast<uint32_t>(body.size() + 4));
    startup += body;
    REQUIRE(::send(fd_, startup.data(), startup.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(startup.size()));
    const std::optional<std::string> ready = result(timeout_ms);
    REQUIRE(ready.has_value());
    REQUIRE(ready->rfind("ERROR", 0) != 0);
}

RawPg::~RawPg() {
    ::close(fd_);
}

void RawPg::send_query(const std::string& sql) {
    std::string message = "Q";
    put_u32(message, static_cast<uint32_t>(sql.size() + 5));
    message.append(sql.c_str(), sql.size() + 1);
    REQUIRE(::send(fd_, message.data(), message.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(message.size()));
}

std::optional<std::string> RawPg::result(int timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              end - std::chrono::steady_clock::now())
                              .count();
        char type = 0;
        std::string body;
        if (left <= 0 || !next_message(type, body, static_cast<int>(left))) {
            return std::nullopt;
        }
        if (type == 'C') {
            outcome_ = body.substr(0, body.find('\0'));
        } else if (type == 'E') {
            outcome_ = "ERROR " + error_field(body, 'C') + " " + error_field(body, 'M');
        } else if (type == 'Z') {
            return std::exchange(outcome_, {});
        }
    }
}

std::optional<std::string> RawPg::query(const std::string& sql, int timeout_ms) {
    send_query(sql);
    return result(timeout_ms);
}

bool RawPg::next_message(char& type, std::string& body, int timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (in_.size() < 5 || in_.size() < 1 + size_t{get_u32(in_, 1)}) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              end - std::chrono::steady_clock::now())
                              .count();
        pollfd p{fd_, POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) != 1) {
            return false;
        }
        char chunk[65536];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) {
            return false;
        }
        in_.append(chunk, static_cast<size_t>(n));
    }
    const size_t length = get_u32(in_, 1);
    type = in_[0];
    body = in_.substr(5, length - 4);
    in_.erase(0, 1 + length);
    return true;
}

}  // namespace raftlock::hostile
