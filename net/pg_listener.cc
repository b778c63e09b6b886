#include "net/pg_listener.h"

#include <map>
#include <set>
#include <variant>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "base/assert.h"

namespace raftlock::net {

namespace {

StreamListenerOptions stream_options(const PgListenerOptions& o) {
    StreamListenerOptions s;
    s.name = "postgres port";
    s.listen_host = o.listen_host;
    s.listen_port = o.listen_port;
    s.send_queue_bytes_max = o.send_queue_bytes_max;
    s.connections_max = o.connections_max;
    s.message_deadline_ms = o.message_deadline_ms;
    s.budget = o.budget;
    s.tls = o.tls;
    s.tls_on_request = true;  // the SSLRequest (drain, below)
    s.first_id = kPgConnectionBit | 1;
    return s;
}

std::string fatal_error(std::string_view sqlstate, std::string message) {
    PgDiagnostic d;
    d.severity = PgSeverity::kFatal;
    d.sqlstate = std::string(sqlstate);
    d.message = std::move(message);
    std::string out;
    encode_error_response(d, out);
    return out;
}

}  // namespace

class PgListener::Impl final : public StreamProtocol {
public:
    struct Input {
        PgDecoder decoder;
        bool paused = false;
        bool held = false;          // paused with bytes not yet decoded
        bool drain_posted = false;  // a drain after resuming is queued on the io_context
        bool done = false;          // a CancelRequest: nothing more is decoded
        bool encrypted = false;     // TLS started after its SSLRequest
    };

    Impl(boost::asio::io_context& io, PgListenerOptions options, PgHandler& handler)
        : io_(io),
          tls_(options.tls != nullptr),
          limits_(options.limits),
          handler_(handler),
          stream_(io, stream_options(options), *this) {}

    void on_open(ConnectionId id, const std::string& remote) override {
        inputs_.emplace(id, Input{PgDecoder(limits_)});
        handler_.on_pg_open(id, remote);
    }

    // After the SSLRequest's handshake, before the StartupMessage.
    void on_peer_certificate(ConnectionId id, const std::string& common_name) override {
        handler_.on_pg_certificate(id, common_name);
    }

    void on_bytes(ConnectionId id, std::string_view bytes) override {
        auto it = inputs_.find(id);
        RL_ASSERT(it != inputs_.end());
        it->second.decoder.feed(bytes);
        drain(id);
    }

    void on_close(ConnectionId id) override {
        inputs_.erase(id);
        closing_.erase(id);
        handler_.on_pg_close(id);
    }

    // Only an incomplete message the client is still sending counts: complete messages held back
    // while the handler has the connection paused wait for the server, not the client.
    size_t partial_bytes(ConnectionId id) const override {
        auto it = inputs_.find(id);
        if (it == inputs_.end() || it->second.held || it->second.done) {
            return 0;
        }
        return it->second.decoder.partial_bytes();
    }

    std::string refusal(size_t) const override {
        return fatal_error("53300", "sorry, too many clients already");
    }

    // Hands the handler every complete message, in order, until none is left or the connection
    // is paused, closing, or done (a CancelRequest).
    void drain(ConnectionId id) {
        for (;;) {
            auto it = inputs_.find(id);
            if (stopped_ || it == inputs_.end() || closing_.contains(id) || it->second.done) {
                return;
            }
            Input& in = it->second;
            if (in.paused) {
                in.held = true;  // may hold complete messages: handed over on resume
                return;
            }
            PgNext next = in.decoder.next();
            if (!next.ok()) {
                stream_.count_protocol_error();
                stream_.send(id, fatal_error(PgProtocolError::kSqlstate, next.error().message));
                close(id, true);
                return;
            }
            if (!next.value()) {
                in.held = false;
                return;
            }
            PgFrontendMessage message = std::move(*next.value());
            if (tls_ && !encryption(id, in, message)) {
                continue;  // the SSLRequest was answered here, or the connection is refused
            }
            if (std::holds_alternative<PgStartup>(message)) {
                in.decoder.start_regular();  // see the header: before the handler sees it
            }
            const bool cancel = std::holds_alternative<PgCancelRequest>(message);
            in.done = cancel;
            handler_.on_pg_message(id, std::move(message));
            if (cancel) {
                close(id, true);
                return;
            }
        }
    }

    // On a TLS port: an SSLRequest is answered here ('S', then the handshake), and a
    // StartupMessage in the clear is refused. True when the handler takes the message (a
    // GSSENCRequest, refused by it; a CancelRequest, which PostgreSQL takes in the clear too).
    bool encryption(ConnectionId id, Input& in, const PgFrontendMessage& message) {
        RL_ASSERT(tls_);
        if (std::holds_alternative<PgSslRequest>(message)) {
            RL_ASSERT(!in.encrypted);  // the decoder refuses a second SSLRequest
            // Bytes after the request were sent in the clear before the handshake: whatever
            // they are, no one may inject them into the encrypted session (CVE-2021-23214).
            if (in.decoder.partial_bytes() > 0) {
                refuse(id, PgProtocolError::kSqlstate,
                       "received unencrypted data after SSL request");
                return false;
            }
            stream_.send(id, std::string(kPgEncryptionAccepted));
            stream_.start_tls(id);
            in.encrypted = true;
            return false;
        }
        if (std::holds_alternative<PgStartup>(message) && !in.encrypted) {
            refuse(id, "28000",
                   "this port accepts only TLS connections: connect with sslmode=require "
                   "(or verify-full)");
            return false;
        }
        return true;
    }

    void refuse(ConnectionId id, std::string_view sqlstate, std::string message) {
        stream_.count_protocol_error();
        stream_.send(id, fatal_error(sqlstate, std::move(message)));
        close(id, true);
    }

    void pause_reading(ConnectionId id, bool paused) {
        auto it = inputs_.find(id);
        if (it != inputs_.end()) {
            Input& in = it->second;
            in.paused = paused;
            // Not from here: the handler may be calling from inside its own on_pg_message.
            if (!paused && in.held && !in.drain_posted && !stopped_) {
                in.drain_posted = true;
                boost::asio::post(io_, [this, id, alive = std::weak_ptr<int>(alive_)] {
                    if (alive.expired() || stopped_) {
                        return;
                    }
                    if (auto found = inputs_.find(id); found != inputs_.end()) {
                        found->second.drain_posted = false;
                        drain(id);
                    }
                });
            }
        }
        stream_.pause_reading(id, paused);
    }

    void close(ConnectionId id, bool flush) {
        if (inputs_.contains(id)) {
            closing_.insert(id);
        }
        stream_.close(id, flush);
    }

    void stop() {
        stopped_ = true;
        stream_.stop();
    }

    boost::asio::io_context& io_;
    const bool tls_;
    PgLimits limits_;
    PgHandler& handler_;
    std::map<ConnectionId, Input> inputs_;
    std::set<ConnectionId> closing_;
    bool stopped_ = false;
    // Posted drains hold a weak reference: one that runs after the listener is gone does nothing.
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
    StreamListener stream_;
};

PgListener::PgListener(boost::asio::io_context& io, PgListenerOptions options, PgHandler& handler)
    : impl_(std::make_unique<Impl>(io, std::move(options), handler)) {}

PgListener::~PgListener() = default;

Result<bool, std::string> PgListener::start() {
    return impl_->stream_.start();
}

uint16_t PgListener::port() const {
    return impl_->stream_.port();
}

void PgListener::send(ConnectionId id, std::string bytes) {
    impl_->stream_.send(id, std::move(bytes));
}

void PgListener::close(ConnectionId id, bool flush) {
    impl_->close(id, flush);
}

void PgListener::pause_reading(ConnectionId id, bool paused) {
    impl_->pause_reading(id, paused);
}

bool PgListener::is_open(ConnectionId id) const {
    return impl_->stream_.is_open(id);
}

void PgListener::set_tls(std::shared_ptr<const TlsContext> tls) {
    impl_->stream_.set_tls(std::move(tls));
}

void PgListener::stop() {
    impl_->stop();
}

StreamListenerStats PgListener::stats() const {
    return impl_->stream_.stats();
}

}  // namespace raftlock::net
