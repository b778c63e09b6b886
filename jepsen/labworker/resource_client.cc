#include "jepsen/labworker/resource_client.h"

#include <cerrno>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/assert.h"

namespace raftlock::labworker {

namespace {

using namespace std::chrono_literals;

// A connect that gives up after `wait` (a blocking connect to an address that drops SYNs, such as
// a namespace the lab has cut off, would hang for minutes).
bool connect_with_timeout(int fd,
                          const sockaddr* address,
                          socklen_t length,
                          std::chrono::milliseconds wait) {
    const int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        return false;
    }
    int rc = ::connect(fd, address, length);
    if (rc < 0 && errno == EINPROGRESS) {
        pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
        rc = ::poll(&p, 1, static_cast<int>(wait.count())) == 1 ? 0 : -1;
        int so_error = 0;
        socklen_t so_length = sizeof so_error;
        if (rc == 0 &&
            (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &so_length) < 0 || so_error != 0)) {
            errno = so_error;
            rc = -1;
        }
    }
    return rc == 0 && fcntl(fd, F_SETFL, flags) == 0;
}

void set_timeouts(int fd) {
    const timeval reply{.tv_sec = ResourceClient::kReplyWait.count() / 1000, .tv_usec = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &reply, sizeof reply);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &reply, sizeof reply);
    // One short line each way per request: do not let Nagle hold it back.
    const int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

ResourceClient::~ResourceClient() {
    disconnect();
}

void ResourceClient::disconnect() {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    received_.clear();
}

bool ResourceClient::connect_once(std::string& error) {
    RL_ASSERT(fd_ < 0);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(address_.port);
    if (int rc = getaddrinfo(address_.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        error = std::string("resolve ") + to_string(address_) + ": " + gai_strerror(rc);
        return false;
    }
    for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            continue;
        }
        if (connect_with_timeout(fd, a->ai_addr, a->ai_addrlen, 1000ms)) {
            set_timeouts(fd);
            fd_ = fd;
        } else {
            error = "connect " + to_string(address_) + ": " + std::strerror(errno);
            ::close(fd);
        }
    }
    freeaddrinfo(found);
    return fd_ >= 0;
}

bool ResourceClient::connect(std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::string error;
    while (fd_ < 0) {
        if (connect_once(error)) {
            break;
        }
        if (std::chrono::steady_clock::now() + 100ms > deadline) {
            return false;
        }
        std::this_thread::sleep_for(100ms);
    }
    return true;
}

bool ResourceClient::send_line(const std::string& line, std::string& error) {
    size_t sent = 0;
    while (sent < line.size()) {
        // MSG_NOSIGNAL: a server that went away is an error to report, not a SIGPIPE.
        ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            error = std::string("send: ") + std::strerror(errno);
            return false;
        }
        sent += static_cast<size_t>(n);
    }
    return true;
}

std::optional<std::string> ResourceClient::receive_line(std::string& error) {
    for (;;) {
        if (size_t end = received_.find('\n'); end != std::string::npos) {
            std::string line = received_.substr(0, end);
            received_.erase(0, end + 1);
            return line;
        }
        if (received_.size() > kReplyBytesMax) {
            error = "a reply longer than " + std::to_string(kReplyBytesMax) + " bytes";
            return std::nullopt;
        }
        char buffer[4096];
        ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            error = n == 0 ? "the server closed the connection" : std::strerror(errno);
            return std::nullopt;
        }
        received_.append(buffer, static_cast<size_t>(n));
    }
}

std::optional<nlohmann::json> ResourceClient::call(const nlohmann::json& request,
                                                   std::string* error) {
    std::string why;
    std::optional<nlohmann::json> reply;
    if (!connect(kConnectWait)) {
        why = "no connection to the resource at " + to_string(address_);
    } else if (send_line(request.dump() + "\n", why)) {
        if (auto line = receive_line(why)) {
            reply = nlohmann::json::parse(*line, nullptr, /*allow_exceptions=*/false);
            if (reply->is_discarded() || !reply->is_object()) {
                why = "a reply that is not a JSON object: " + line->substr(0, 200);
                reply.reset();
            }
        }
    }
    if (!reply) {
        disconnect();  // the stream may be out of step: start over on a fresh connection
        if (error != nullptr) {
            *error = why;
        }
    }
    return reply;
}

}  // namespace raftlock::labworker
