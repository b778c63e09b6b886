#include "net/client_listener.h"

#include <map>
#include <set>

#include <fmt/format.h>

#include "base/assert.h"
#include "net/client_codec.h"
#include "net/frame.h"
#include "net/message_frame.h"
#include "proto/client.pb.h"

namespace raftlock::net {

namespace {

// The request id of a payload that failed decode_request, when it parses that far: the client can
// match the BAD_REQUEST to the request it sent.
uint64_t peek_request_id(std::string_view payload) {
    proto::Request request;
    if (payload.size() < (1u << 30) &&
        request.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
        return request.request_id();
    }
    return 0;
}

std::string error_frame(uint64_t request_id, proto::Code code, std::string message) {
    proto::ServerMessage m;
    proto::Response* r = m.mutable_response();
    r->set_request_id(request_id);
    r->set_code(code);
    r->set_message(std::move(message));
    std::string bytes;
    encode_message_frame(m, bytes);
    return bytes;
}

StreamListenerOptions stream_options(const ClientListenerOptions& o) {
    StreamListenerOptions s;
    s.name = "client port";
    s.listen_host = o.listen_host;
    s.listen_port = o.listen_port;
    s.send_queue_bytes_max = o.send_queue_bytes_max;
    s.connections_max = o.connections_max;
    s.message_deadline_ms = o.message_deadline_ms;
    s.budget = o.budget;
    s.tls = o.tls;
    return s;
}

}  // namespace

// Length-prefixed proto::Request frames in, proto::ServerMessage frames out.
class ClientListener::Impl final : public StreamProtocol {
public:
    Impl(boost::asio::io_context& io, ClientListenerOptions options, ClientHandler& handler)
        : frame_bytes_max_(options.frame_bytes_max),
          handler_(handler),
          stream_(io, stream_options(options), *this) {
        RL_ASSERT(frame_bytes_max_ > 0);
    }

    void on_open(ConnectionId id, const std::string& remote) override {
        decoders_.emplace(id, FrameDecoder(frame_bytes_max_));
        handler_.on_client_open(id, remote);
    }

    void on_peer_certificate(ConnectionId id, const std::string& common_name) override {
        handler_.on_client_certificate(id, common_name);
    }

    // Hands every whole request to the handler. Bounded by the bytes of one read.
    void on_bytes(ConnectionId id, std::string_view bytes) override {
        auto it = decoders_.find(id);
        RL_ASSERT(it != decoders_.end());
        FrameDecoder& decoder = it->second;
        decoder.feed(bytes);
        for (;;) {
            std::string_view payload;
            const FrameDecoder::State state = decoder.next(payload);
            if (state == FrameDecoder::State::kNeedMore) {
                return;
            }
            if (state == FrameDecoder::State::kTooLarge) {
                protocol_error(id, 0,
                               fmt::format("a frame of {} bytes is above this server's limit of {} "
                                           "bytes",
                                           decoder.rejected_length(), decoder.frame_bytes_max()));
                return;
            }
            Result<proto::Request, std::string> request = decode_request(payload);
            if (!request.ok()) {
                protocol_error(id, peek_request_id(payload), request.error());
                return;
            }
            handler_.on_client_request(id, std::move(request).value());
            // The handler may have closed this connection (erasing its decoder) or stopped us.
            if (closing_.contains(id) || !decoders_.contains(id)) {
                return;
            }
        }
    }

    void on_close(ConnectionId id) override {
        decoders_.erase(id);
        closing_.erase(id);
        handler_.on_client_close(id);
    }

    size_t partial_bytes(ConnectionId id) const override {
        auto it = decoders_.find(id);
        return it == decoders_.end() ? 0 : it->second.buffered_bytes();
    }

    std::string refusal(size_t connections) const override {
        return error_frame(0, proto::UNAVAILABLE,
                           fmt::format("this server has {} client connections, its limit; try "
                                       "another node or later",
                                       connections));
    }

    void protocol_error(ConnectionId id, uint64_t request_id, std::string message) {
        stream_.count_protocol_error();
        stream_.send(id, error_frame(request_id, proto::BAD_REQUEST, std::move(message)));
        close(id, true);
    }

    void close(ConnectionId id, bool flush) {
        if (decoders_.contains(id)) {
            closing_.insert(id);
        }
        stream_.close(id, flush);
    }

    size_t frame_bytes_max_;
    ClientHandler& handler_;
    std::map<ConnectionId, FrameDecoder> decoders_;
    std::set<ConnectionId> closing_;  // input after a close is not handed on
    StreamListener stream_;
};

ClientListener::ClientListener(boost::asio::io_context& io,
                               ClientListenerOptions options,
                               ClientHandler& handler)
    : impl_(std::make_unique<Impl>(io, std::move(options), handler)) {}

ClientListener::~ClientListener() = default;

Result<bool, std::string> ClientListener::start() {
    return impl_->stream_.start();
}

uint16_t ClientListener::port() const {
    return impl_->stream_.port();
}

void ClientListener::send(ConnectionId id, const proto::ServerMessage& message) {
    std::string bytes;
    encode_message_frame(message, bytes);
    impl_->stream_.send(id, std::move(bytes));
}

void ClientListener::close(ConnectionId id, bool flush) {
    impl_->close(id, flush);
}

bool ClientListener::is_open(ConnectionId id) const {
    return impl_->stream_.is_open(id);
}

void ClientListener::set_tls(std::shared_ptr<const TlsContext> tls) {
    impl_->stream_.set_tls(std::move(tls));
}

void ClientListener::stop() {
    impl_->stream_.stop();
}

ClientListenerStats ClientListener::stats() const {
    return impl_->stream_.stats();
}

}  // namespace raftlock::net
