#include "tests/hostile/raw_peer.h"

#include <optional>
#include <string>
#include <string_view>

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/frame.h"
#include "net/peer_transport.h"
#include "net/raft_codec.h"
#include "proto/peer.pb.h"

namespace raftlock::hostile {

namespace {

bool send_all(int fd, const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n <= 0) {
            return false;
        }
        done += static_cast<size_t>(n);
    }
    return true;
}

bool send_frame(int fd, const proto::PeerFrame& frame) {
    std::string bytes;
    net::append_frame(bytes, frame.SerializeAsString());
    return send_all(fd, bytes);
}

// One frame from `fd` within timeout_ms (the HelloReply); empty on timeout or close.
std::optional<proto::PeerFrame> receive_frame(int fd, int timeout_ms) {
    net::FrameDecoder decoder(1 << 20);
    for (;;) {
        std::string_view payload;
        if (decoder.next(payload) == net::FrameDecoder::State::kFrame) {
            proto::PeerFrame frame;
            if (!frame.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
                return std::nullopt;
            }
            return frame;
        }
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, timeout_ms) <= 0) {
            return std::nullopt;
        }
        char chunk[4096];
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) {
            return std::nullopt;
        }
        decoder.feed(std::string_view(chunk, static_cast<size_t>(n)));
    }
}

}  // namespace

RawPeer::RawPeer(uint16_t port, uint64_t cluster_id, uint64_t from, uint64_t to) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    proto::PeerFrame hello;
    hello.mutable_hello()->set_protocol_version(net::kPeerProtocolVersion);
    hello.mutable_hello()->set_cluster_id(cluster_id);
    hello.mutable_hello()->set_from(from);
    hello.mutable_hello()->set_to(to);
    REQUIRE(send_frame(fd_, hello));
    const std::optional<proto::PeerFrame> reply = receive_frame(fd_, 5000);
    REQUIRE(reply.has_value());
    INFO("refused: " << reply->hello_reply().reason());
    REQUIRE(reply->hello_reply().accepted());
}

RawPeer::~RawPeer() {
    ::close(fd_);
}

std::string RawPeer::encode(const std::vector<raft::Message>& messages) {
    std::string bytes;
    for (const raft::Message& message : messages) {
        proto::PeerFrame frame;
        net::to_proto(message, *frame.mutable_raft());
        net::append_frame(bytes, frame.SerializeAsString());
    }
    return bytes;
}

bool RawPeer::send_encoded(const std::string& bytes) {
    return send_all(fd_, bytes);
}

}  // namespace raftlock::hostile
