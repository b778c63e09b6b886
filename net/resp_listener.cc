#include "net/resp_listener.h"

#include <map>
#include <set>

#include "base/assert.h"

namespace raftlock::net {

namespace {

StreamListenerOptions stream_options(const RespListenerOptions& o) {
    StreamListenerOptions s;
    s.name = "redis port";
    s.listen_host = o.listen_host;
    s.listen_port = o.listen_port;
    s.send_queue_bytes_max = o.send_queue_bytes_max;
    s.connections_max = o.connections_max;
    s.message_deadline_ms = o.message_deadline_ms;
    s.budget = o.budget;
    s.tls = o.tls;
    s.first_id = kRespConnectionBit | 1;
    return s;
}

}  // namespace

class RespListener::Impl final : public StreamProtocol {
public:
    Impl(boost::asio::io_context& io, RespListenerOptions options, RespHandler& handler)
        : limits_(options.limits), handler_(handler), stream_(io, stream_options(options), *this) {}

    void on_open(ConnectionId id, const std::string& remote) override {
        inputs_.emplace(id, Input{});
        handler_.on_resp_open(id, remote);
    }

    void on_peer_certificate(ConnectionId id, const std::string& common_name) override {
        handler_.on_resp_certificate(id, common_name);
    }

    // Parses every complete command out of what arrived; the rest waits for more bytes.
    void on_bytes(ConnectionId id, std::string_view bytes) override {
        auto it = inputs_.find(id);
        RL_ASSERT(it != inputs_.end());
        it->second.buffer.append(bytes);
        size_t offset = 0;
        for (;;) {
            Input& in = inputs_.at(id);
            RespCommand command =
                parse_resp_command(std::string_view(in.buffer).substr(offset), limits_);
            if (command.status == RespParse::kNeedMore) {
                break;
            }
            if (command.status == RespParse::kError) {
                stream_.count_protocol_error();
                // Through the encoder: the error may quote a raw byte, even '\r'.
                std::string reply;
                encode_resp(statemachine::redis::Value::error("ERR " + command.error), 2, reply);
                stream_.send(id, std::move(reply));
                close(id, true);
                return;
            }
            offset += command.consumed;
            if (!command.argv.empty()) {
                handler_.on_resp_command(id, std::move(command.argv));
                // The handler may have closed this connection.
                if (closing_.contains(id) || !inputs_.contains(id)) {
                    return;
                }
            }
        }
        inputs_.at(id).buffer.erase(0, offset);
    }

    void on_close(ConnectionId id) override {
        inputs_.erase(id);
        closing_.erase(id);
        handler_.on_resp_close(id);
    }

    size_t partial_bytes(ConnectionId id) const override {
        auto it = inputs_.find(id);
        return it == inputs_.end() ? 0 : it->second.buffer.size();
    }

    std::string refusal(size_t connections) const override {
        return "-ERR max number of clients reached (" + std::to_string(connections) +
               " connections)\r\n";
    }

    void close(ConnectionId id, bool flush) {
        if (inputs_.contains(id)) {
            closing_.insert(id);
        }
        stream_.close(id, flush);
    }

    struct Input {
        std::string buffer;  // bytes not yet parsed into a command
    };

    RespLimits limits_;
    RespHandler& handler_;
    std::map<ConnectionId, Input> inputs_;
    std::set<ConnectionId> closing_;
    StreamListener stream_;
};

RespListener::RespListener(boost::asio::io_context& io,
                           RespListenerOptions options,
                           RespHandler& handler)
    : impl_(std::make_unique<Impl>(io, std::move(options), handler)) {}

RespListener::~RespListener() = default;

Result<bool, std::string> RespListener::start() {
    return impl_->stream_.start();
}

uint16_t RespListener::port() const {
    return impl_->stream_.port();
}

void RespListener::send(ConnectionId id, std::string bytes) {
    impl_->stream_.send(id, std::move(bytes));
}

void RespListener::close(ConnectionId id, bool flush) {
    impl_->close(id, flush);
}

void RespListener::pause_reading(ConnectionId id, bool paused) {
    impl_->stream_.pause_reading(id, paused);
}

bool RespListener::is_open(ConnectionId id) const {
    return impl_->stream_.is_open(id);
}

void RespListener::set_tls(std::shared_ptr<const TlsContext> tls) {
    impl_->stream_.set_tls(std::move(tls));
}

void RespListener::stop() {
    impl_->stream_.stop();
}

StreamListenerStats RespListener::stats() const {
    return impl_->stream_.stats();
}

}  // namespace raftlock::net
