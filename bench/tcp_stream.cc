#include "bench/tcp_stream.h"

#include <cerrno>
#include <cstring>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace raftlock::bench {

namespace {

constexpr size_t kReadChunkBytes = 64 * 1024;

std::string errno_text(const char* what) {
    return fmt::format("{}: {}", what, std::strerror(errno));
}

timeval to_timeval(std::chrono::milliseconds ms) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
    return tv;
}

}  // namespace

TcpStream::~TcpStream() {
    close();
}

void TcpStream::close() {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    buffer_.clear();
    read_pos_ = 0;
}

void TcpStream::shutdown() {
    if (fd_ >= 0) {
        ::shutdown(fd_, SHUT_RDWR);
    }
}

Status TcpStream::connect(const HostPort& to, std::chrono::milliseconds io_timeout) {
    close();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(to.port);
    if (const int rc = ::getaddrinfo(to.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        return fmt::format("resolve {}: {}", to.host, ::gai_strerror(rc));
    }
    std::string error = "no address";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            error = errno_text("socket");
            continue;
        }
        if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            error = errno_text("connect");
            ::close(fd);
            continue;
        }
        fd_ = fd;
        break;
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) {
        return fmt::format("{}:{}: {}", to.host, to.port, error);
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (io_timeout.count() > 0) {
        const timeval tv = to_timeval(io_timeout);
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    return Done{};
}

Status TcpStream::write_all(std::string_view bytes) {
    if (fd_ < 0) {
        return std::string("not connected");
    }
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            std::string error = errno_text("send");
            close();
            return error;
        }
        bytes.remove_prefix(static_cast<size_t>(n));
    }
    return Done{};
}

Status TcpStream::fill() {
    if (fd_ < 0) {
        return std::string("not connected");
    }
    if (read_pos_ > 0) {
        buffer_.erase(0, read_pos_);
        read_pos_ = 0;
    }
    const size_t old_size = buffer_.size();
    buffer_.resize(old_size + kReadChunkBytes);
    ssize_t n;
    do {
        n = ::recv(fd_, buffer_.data() + old_size, kReadChunkBytes, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        std::string error =
            n == 0 ? std::string("connection closed by the server") : errno_text("recv");
        close();
        return error;
    }
    buffer_.resize(old_size + static_cast<size_t>(n));
    return Done{};
}

Result<Text, std::string> TcpStream::read_line() {
    for (;;) {
        const size_t end = buffer_.find("\r\n", read_pos_);
        if (end != std::string::npos) {
            Text line{buffer_.substr(read_pos_, end - read_pos_)};
            read_pos_ = end + 2;
            return line;
        }
        if (buffer_.size() - read_pos_ > kLineBytesMax) {
            close();
            return std::string("line too long");
        }
        if (Status s = fill(); !s.ok()) {
            return s.error();
        }
    }
}

Status TcpStream::read_exact(size_t n, std::string& out) {
    while (buffer_.size() - read_pos_ < n) {
        if (Status s = fill(); !s.ok()) {
            return s;
        }
    }
    out.append(buffer_, read_pos_, n);
    read_pos_ += n;
    return Done{};
}

}  // namespace raftlock::bench
