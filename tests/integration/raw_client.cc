#include "raw_client.h"

#include <chrono>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/frame.h"

namespace raftlock::integration {

RawConnection::RawConnection(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawConnection::~RawConnection() {
    ::close(fd_);
}

void RawConnection::send_bytes(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n <= 0) {
            return;  // the server closed: the caller checks that separately
        }
        done += static_cast<size_t>(n);
    }
}

void RawConnection::send(const proto::Request& request) {
    std::string frame;
    net::append_frame(frame, request.SerializeAsString());
    send_bytes(frame);
}

std::optional<proto::ServerMessage> RawConnection::receive(int timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (buffer_.size() >= net::kFrameHeaderBytes) {
            const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data());
            const uint32_t length = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                                    (uint32_t{p[2]} << 8) | uint32_t{p[3]};
            if (buffer_.size() >= net::kFrameHeaderBytes + length) {
                proto::ServerMessage message;
                REQUIRE(message.ParseFromArray(buffer_.data() + net::kFrameHeaderBytes,
                                               static_cast<int>(length)));
                buffer_.erase(0, net::kFrameHeaderBytes + length);
                return message;
            }
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return std::nullopt;
        }
        pollfd pfd{fd_, POLLIN, 0};
        if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
            return std::nullopt;
        }
        char chunk[65536];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) {
            return std::nullopt;
        }
        buffer_.append(chunk, static_cast<size_t>(n));
    }
}

std::optional<proto::Response> RawConnection::response(uint64_t request_id, int timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        std::optional<proto::ServerMessage> m =
            receive(static_cast<int>(std::max<int64_t>(left.count(), 0)));
        if (!m) {
            return std::nullopt;
        }
        if (m->has_response() && m->response().request_id() == request_id) {
            return m->response();
        }
    }
}

proto::Response RawConnection::call(const proto::Request& request, int timeout_ms) {
    send(request);
    std::optional<proto::Response> r = response(request.request_id(), timeout_ms);
    REQUIRE(r.has_value());
    return *r;
}

bool RawConnection::closed_by_server(int timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return false;
        }
        pollfd pfd{fd_, POLLIN, 0};
        if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
            return false;
        }
        char chunk[4096];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) {
            return true;
        }
    }
}

}  // namespace raftlock::integration
