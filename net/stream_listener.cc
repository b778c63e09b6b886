#include "net/stream_listener.h"

#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "base/assert.h"
#include "net/asio_listen.h"
#include "net/log_limiter.h"
#include "net/write_batch.h"

namespace raftlock::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;

namespace {

// Every connection reads into one shared buffer (wait for readable, then a non-blocking read), so
// ten thousand idle clients do not each pin a read buffer. It also bounds the bytes one connection
// hands to the protocol per turn of the loop (kReadChunkBytes, write_batch.h).

struct Conn {
    Conn(tcp::socket s, ConnectionId id_)
        : socket(std::move(s)), idle_timer(socket.get_executor()), id(id_) {}

    tcp::socket socket;
    asio::steady_timer idle_timer;  // the message deadline (or the closing deadline)
    uint64_t idle_generation = 0;   // tells a stale expiry from the current one
    bool deadline_armed = false;    // a message deadline runs (see update_deadline)
    bool spoke = false;             // has completed a message
    ConnectionId id;
    std::string address;          // the remote IP, holding a slot of the budget (empty: none)
    std::deque<std::string> out;  // encoded messages not yet handed to a write
    size_t out_bytes = 0;         // queued + being written
    bool writing = false;
    bool flush_posted = false;
    bool closing = false;  // flushing `out`, then half-closed; input is discarded
    bool closed = false;
    bool paused = false;              // pause_reading: no read is armed until resumed
    bool reading = false;             // a wait for readable is pending
    std::unique_ptr<TlsSession> tls;  // on a TLS port: what `out` holds is already ciphertext
    bool handshake_told = false;      // the protocol heard of the completed handshake
};

// Owned through a shared_ptr held by every pending handler (see peer_transport.cc).
class ListenerCore : public std::enable_shared_from_this<ListenerCore> {
public:
    using ConnPtr = std::shared_ptr<Conn>;

    ListenerCore(asio::io_context& io, StreamListenerOptions options, StreamProtocol& protocol)
        : io_(io),
          options_(std::move(options)),
          protocol_(protocol),
          acceptor_(io),
          retry_(io),
          next_id_(options_.first_id) {
        RL_ASSERT(options_.connections_max > 0);
        RL_ASSERT(options_.message_deadline_ms > 0);
        RL_ASSERT(options_.first_id > 0);
        RL_ASSERT(options_.send_queue_bytes_max > 0);
        RL_ASSERT(options_.tls == nullptr || options_.tls->role() == TlsRole::kServer);
    }

    Result<bool, std::string> start();
    uint16_t port() const { return port_; }
    void send(ConnectionId id, std::string bytes);
    void close(ConnectionId id, bool flush);
    void pause_reading(ConnectionId id, bool paused);
    void start_tls(ConnectionId id);
    void set_tls(std::shared_ptr<const TlsContext> tls) {
        RL_ASSERT(options_.tls != nullptr && tls != nullptr);
        RL_ASSERT(tls->role() == TlsRole::kServer);
        options_.tls = std::move(tls);
    }
    bool is_open(ConnectionId id) const {
        const auto it = conns_.find(id);
        return !stopped_ && it != conns_.end() && !it->second->closing;
    }
    void stop();
    void count_protocol_error() { ++stats_.protocol_errors; }
    StreamListenerStats stats() const {
        StreamListenerStats s = stats_;
        s.connections = conns_.size();
        return s;
    }

private:
    void accept();
    void on_accept(tcp::socket socket);
    void refuse(tcp::socket socket, const std::string& limit);
    void read(const ConnPtr& c);
    void on_readable(const ConnPtr& c);
    // Decrypts what was read; false when the connection failed and is closing.
    bool decrypt(const ConnPtr& c, std::string_view ciphertext, std::string& plaintext);
    void begin_tls(const ConnPtr& c);
    void tls_failed(const ConnPtr& c, const std::string& reason);
    // Queues what the connection's TLS session has to send (handshake, records, alerts).
    void send_tls_output(const ConnPtr& c);
    void update_deadline(const ConnPtr& c, size_t partial_before, size_t bytes_read);
    void arm_deadline(const ConnPtr& c);
    void cancel_deadline(const ConnPtr& c);
    void enqueue(const ConnPtr& c, std::string bytes);
    void close_slow_consumer(const ConnPtr& c, size_t bytes);
    void post_flush(const ConnPtr& c);
    void flush(const ConnPtr& c);
    void begin_close(const ConnPtr& c);
    // By value: `c` may be the map entry that close_now erases.
    void close_now(ConnPtr c);

    asio::io_context& io_;
    StreamListenerOptions options_;
    StreamProtocol& protocol_;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    uint16_t port_ = 0;
    std::map<ConnectionId, ConnPtr> conns_;
    ConnectionId next_id_;
    bool started_ = false;
    bool stopped_ = false;
    StreamListenerStats stats_;
    LogLimiter log_{kRepeatedLineInterval};
    std::array<char, kReadChunkBytes> read_buffer_;
};

Result<bool, std::string> ListenerCore::start() {
    RL_ASSERT(!started_);
    RL_ASSERT(!stopped_);
    started_ = true;
    const std::string error = open_acceptor(acceptor_, options_.listen_host, options_.listen_port);
    if (!error.empty()) {
        return error;
    }
    port_ = acceptor_.local_endpoint().port();
    accept();
    return true;
}

void ListenerCore::stop() {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
    for (auto& [id, c] : conns_) {
        c->closed = true;
        c->socket.close(ignored);
        c->idle_timer.cancel();
        if (!c->address.empty()) {
            options_.budget->release(c->address);
        }
    }
    conns_.clear();
}

void ListenerCore::accept() {
    accept_forever(
        shared_from_this(), acceptor_, retry_, stopped_,
        [this](tcp::socket socket) { on_accept(std::move(socket)); },
        [this](const error_code& ec) {
            log_.log("accept", options_.name + ": accept failed: " + ec.message());
        });
}

void ListenerCore::on_accept(tcp::socket socket) {
    if (conns_.size() >= options_.connections_max) {
        refuse(std::move(socket), fmt::format("{} connections on this port (--max-connections)",
                                              options_.connections_max));
        return;
    }
    std::string address;
    if (options_.budget != nullptr) {
        error_code ec;
        const tcp::endpoint remote = socket.remote_endpoint(ec);
        if (ec) {
            return;  // already gone
        }
        address = remote.address().to_string();
        if (std::string why = options_.budget->admit(address); !why.empty()) {
            refuse(std::move(socket), why);
            return;
        }
    }
    error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    if (!ec) {
        socket.non_blocking(true, ec);  // reads are done by hand after wait_read
    }
    if (ec) {
        if (!address.empty()) {
            options_.budget->release(address);
        }
        return;  // the client is already gone; the socket closes with its destructor
    }
    const std::string remote = remote_text(socket);
    auto c = std::make_shared<Conn>(std::move(socket), next_id_++);
    c->address = std::move(address);
    if (options_.tls != nullptr && !options_.tls_on_request) {
        begin_tls(c);
    }
    conns_.emplace(c->id, c);
    ++stats_.accepted;
    protocol_.on_open(c->id, remote);
    if (!c->closed && !stopped_) {
        arm_deadline(c);  // the first message, like every other, must arrive in time
        read(c);
    }
}

// Over a limit: the protocol's refusal (the kernel buffers it at once), then close.
void ListenerCore::refuse(tcp::socket socket, const std::string& limit) {
    ++stats_.refused;
    log_.log("refuse", fmt::format("{}: refusing connections: {}", options_.name, limit));
    // A TLS client could not read the protocol's refusal in the clear: it only sees the close.
    const bool encrypted = options_.tls != nullptr && !options_.tls_on_request;
    auto bytes =
        std::make_shared<std::string>(encrypted ? std::string() : protocol_.refusal(conns_.size()));
    auto s = std::make_shared<tcp::socket>(std::move(socket));
    asio::async_write(*s, asio::buffer(*bytes), [s, bytes](error_code, size_t) {
        error_code ignored;
        s->shutdown(tcp::socket::shutdown_both, ignored);
        s->close(ignored);
    });
}

void ListenerCore::read(const ConnPtr& c) {
    if (c->paused || c->reading) {
        return;
    }
    c->reading = true;
    c->socket.async_wait(tcp::socket::wait_read, [self = shared_from_this(), c](error_code ec) {
        c->reading = false;
        if (self->stopped_ || c->closed) {
            return;
        }
        if (ec) {
            self->close_now(c);
            return;
        }
        self->on_readable(c);
    });
}

void ListenerCore::on_readable(const ConnPtr& c) {
    error_code ec;
    const size_t n = c->socket.read_some(asio::buffer(read_buffer_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
        read(c);  // a spurious wakeup
        return;
    }
    if (ec) {
        close_now(c);  // EOF or reset: the client is gone
        return;
    }
    if (c->closing) {
        read(c);  // discarded, but reading notices the client closing its end
        return;
    }
    std::string_view bytes(read_buffer_.data(), n);
    std::string plaintext;
    if (c->tls != nullptr) {
        if (!decrypt(c, bytes, plaintext)) {
            return;
        }
        bytes = plaintext;
    }
    const size_t partial_before = protocol_.partial_bytes(c->id);
    const bool was_encrypted = c->tls != nullptr;
    if (!bytes.empty()) {
        protocol_.on_bytes(c->id, bytes);
    }
    // The protocol may have closed this connection or stopped the listener.
    if (c->closed || stopped_) {
        return;
    }
    if (c->tls != nullptr && c->tls->peer_closed()) {
        close_now(c);  // close_notify: the client's end of the stream
        return;
    }
    // (A connection that started TLS in on_bytes has the deadline start_tls armed: the message
    // that asked for TLS does not let its handshake take for ever.)
    if (!c->closing && (was_encrypted || c->tls == nullptr)) {
        update_deadline(c, partial_before, bytes.size());
    }
    read(c);
}

void ListenerCore::begin_tls(const ConnPtr& c) {
    RL_ASSERT(options_.tls != nullptr);
    RL_ASSERT(c->tls == nullptr);
    c->tls = TlsSession::start_server(options_.tls);
}

void ListenerCore::start_tls(ConnectionId id) {
    RL_ASSERT_MSG(options_.tls != nullptr && options_.tls_on_request,
                  "start_tls on a port without TLS on request");
    const auto it = conns_.find(id);
    if (stopped_ || it == conns_.end() || it->second->closing) {
        return;
    }
    const ConnPtr& c = it->second;
    begin_tls(c);
    // As for a new connection: the handshake and then a whole message within the deadline.
    c->spoke = false;
    if (!c->paused) {
        arm_deadline(c);
    }
}

bool ListenerCore::decrypt(const ConnPtr& c, std::string_view ciphertext, std::string& plaintext) {
    RL_ASSERT(c->tls != nullptr && !c->closing);
    const Result<bool, std::string> fed = c->tls->feed(ciphertext, plaintext);
    // Handshake messages (and, after a failure, the alert) go out before anything else.
    send_tls_output(c);
    if (c->closed) {
        return false;
    }
    if (!fed.ok()) {
        tls_failed(c, fed.error());
        return false;
    }
    if (!c->handshake_told && c->tls->handshake_done()) {
        c->handshake_told = true;
        // Before the first plaintext reaches the protocol.
        if (std::optional<std::string> name = c->tls->peer_common_name()) {
            protocol_.on_peer_certificate(c->id, *name);
        }
        return !c->closing;
    }
    return true;
}

void ListenerCore::send_tls_output(const ConnPtr& c) {
    if (std::string out = c->tls->take_output(); !out.empty()) {
        enqueue(c, std::move(out));
    }
}

void ListenerCore::tls_failed(const ConnPtr& c, const std::string& reason) {
    ++stats_.tls_failures;
    log_.log("tls",
             fmt::format("{}: closed a connection whose TLS failed: {}", options_.name, reason));
    begin_close(c);  // the alert first, then the close
}

void ListenerCore::pause_reading(ConnectionId id, bool paused) {
    const auto it = conns_.find(id);
    if (stopped_ || it == conns_.end()) {
        return;
    }
    const ConnPtr& c = it->second;
    c->paused = paused;
    if (paused && !c->closing) {
        cancel_deadline(c);
    }
    if (!paused && !c->closed) {
        if (!c->closing && (protocol_.partial_bytes(c->id) > 0 || !c->spoke)) {
            arm_deadline(c);  // a fresh one: the pause was ours
        }
        read(c);
    }
}

// A message must arrive whole within message_deadline_ms of its first byte (and the first message
// within that time of the connect): a deadline that every byte restarted let a client sending one
// byte a second hold its connection forever (issue 16, row 7). A connection that has spoken and
// holds no partial message may stay idle. The protocol's buffered bytes tell whether this read
// completed a message: without one they grew by exactly the bytes read.
void ListenerCore::update_deadline(const ConnPtr& c, size_t partial_before, size_t bytes_read) {
    const size_t partial_after = protocol_.partial_bytes(c->id);
    const bool completed = partial_after < partial_before + bytes_read;
    c->spoke = c->spoke || completed;
    if (c->paused) {
        cancel_deadline(c);  // we are the one holding its work back; resuming re-arms
    } else if (partial_after == 0 && c->spoke) {
        cancel_deadline(c);
    } else if (completed || !c->deadline_armed) {
        arm_deadline(c);  // a new message began: its own deadline
    }
}

void ListenerCore::arm_deadline(const ConnPtr& c) {
    const uint64_t generation = ++c->idle_generation;
    c->deadline_armed = true;
    c->idle_timer.expires_after(milliseconds(options_.message_deadline_ms));
    c->idle_timer.async_wait([self = shared_from_this(), c, generation](error_code ec) {
        if (ec || self->stopped_ || c->closed || c->idle_generation != generation) {
            return;
        }
        ++self->stats_.idle_timeouts;
        self->log_.log("message-deadline",
                       fmt::format("{}: closed a connection that sent no whole message within {} "
                                   "ms (--client-message-deadline-ms)",
                                   self->options_.name, self->options_.message_deadline_ms));
        // A stuck sender may not read either: no error reply, just close.
        self->close_now(c);
    });
}

void ListenerCore::cancel_deadline(const ConnPtr& c) {
    ++c->idle_generation;
    c->deadline_armed = false;
    c->idle_timer.cancel();
}

void ListenerCore::send(ConnectionId id, std::string bytes) {
    const auto it = conns_.find(id);
    if (stopped_ || it == conns_.end() || it->second->closing) {
        return;
    }
    const ConnPtr& c = it->second;
    if (c->tls == nullptr) {
        enqueue(c, std::move(bytes));
        return;
    }
    // Encrypted now (or when the handshake completes: then with its last flight).
    if (const Result<bool, std::string> w = c->tls->write(bytes); !w.ok()) {
        const ConnPtr failed = c;
        tls_failed(failed, w.error());
        return;
    }
    send_tls_output(c);
}

void ListenerCore::close(ConnectionId id, bool flush) {
    const auto it = conns_.find(id);
    if (stopped_ || it == conns_.end()) {
        return;
    }
    const ConnPtr c = it->second;
    if (flush) {
        begin_close(c);
    } else {
        close_now(c);
    }
}

void ListenerCore::enqueue(const ConnPtr& c, std::string bytes) {
    RL_ASSERT(c->out_bytes <= options_.send_queue_bytes_max);
    if (bytes.size() > options_.send_queue_bytes_max - c->out_bytes) {
        close_slow_consumer(c, bytes.size());
        return;
    }
    c->out_bytes += bytes.size();
    c->out.push_back(std::move(bytes));
    post_flush(c);
}

// The client does not read what it asked for; holding more would let it exhaust memory, so it goes
// (as Redis's client-output-buffer-limit). Without a flush: its queue is what is too big.
void ListenerCore::close_slow_consumer(const ConnPtr& c, size_t bytes) {
    ++stats_.slow_consumers;
    RL_ASSERT(c->out_bytes + bytes > options_.send_queue_bytes_max);
    // The same text every time, so the limiter holds repeats back (and counts them): a client
    // that reconnects and does it again must not flood the log.
    log_.log("output-buffer",
             fmt::format("{}: closed a connection whose unread replies would exceed {} bytes "
                         "(--client-output-buffer-bytes-max)",
                         options_.name, options_.send_queue_bytes_max));
    close_now(c);
}

// Messages queued in one turn of the loop go out in one gathered write.
void ListenerCore::post_flush(const ConnPtr& c) {
    if (c->flush_posted || c->writing) {
        return;
    }
    c->flush_posted = true;
    asio::post(io_, [self = shared_from_this(), c] {
        c->flush_posted = false;
        if (!self->stopped_ && !c->closed) {
            self->flush(c);
        }
    });
}

void ListenerCore::flush(const ConnPtr& c) {
    if (c->writing) {
        return;
    }
    if (c->out.empty()) {
        if (c->closing) {
            // Half-close and keep reading until the client closes too (or the deadline): closing
            // with its bytes unread would send a reset, which can destroy our last reply (the
            // error saying why) before the client reads it.
            error_code ignored;
            c->socket.shutdown(tcp::socket::shutdown_send, ignored);
        }
        return;
    }
    auto batch = std::make_shared<WriteBatch>();
    while (!c->out.empty() && batch->frames.size() < kWriteBatchFramesMax &&
           (batch->bytes == 0 || batch->bytes + c->out.front().size() <= kWriteBatchBytesMax)) {
        batch->bytes += c->out.front().size();
        batch->frames.push_back(std::move(c->out.front()));
        c->out.pop_front();
    }
    batch->buffers.reserve(batch->frames.size());
    for (const std::string& f : batch->frames) {
        batch->buffers.push_back(asio::buffer(f));
    }
    c->writing = true;
    asio::async_write(c->socket, batch->buffers,
                      [self = shared_from_this(), c, batch](error_code ec, size_t) {
                          if (self->stopped_ || c->closed) {
                              return;
                          }
                          c->writing = false;
                          c->out_bytes -= batch->bytes;
                          if (ec) {
                              self->close_now(c);
                              return;
                          }
                          self->flush(c);
                      });
}

// Flushes, half-closes, and waits for the client's end; all of it within message_deadline_ms, so
// a client that neither reads nor closes does not keep its slot.
void ListenerCore::begin_close(const ConnPtr& c) {
    if (c->closing) {
        return;
    }
    if (c->tls != nullptr) {
        c->tls->shutdown();  // close_notify after the last reply
        send_tls_output(c);
        if (c->closed) {
            return;
        }
    }
    c->closing = true;
    c->deadline_armed = false;
    const uint64_t generation = ++c->idle_generation;
    c->idle_timer.expires_after(milliseconds(options_.message_deadline_ms));
    c->idle_timer.async_wait([self = shared_from_this(), c, generation](error_code ec) {
        if (!ec && !self->stopped_ && !c->closed && c->idle_generation == generation) {
            self->close_now(c);
        }
    });
    if (!c->writing && !c->flush_posted) {
        flush(c);
    }
    // Keep reading (and discarding) to notice the client closing its end.
    c->paused = false;
    read(c);
}

void ListenerCore::close_now(ConnPtr c) {
    if (c->closed) {
        return;
    }
    c->closed = true;
    error_code ignored;
    c->socket.shutdown(tcp::socket::shutdown_both, ignored);
    c->socket.close(ignored);
    c->idle_timer.cancel();
    conns_.erase(c->id);
    if (!c->address.empty()) {
        options_.budget->release(c->address);
    }
    // Not from here: close_now can run inside the handler's own send() or close().
    asio::post(io_, [self = shared_from_this(), id = c->id] {
        if (!self->stopped_) {
            self->protocol_.on_close(id);
        }
    });
}

}  // namespace

class StreamListener::Impl {
public:
    Impl(asio::io_context& io, StreamListenerOptions options, StreamProtocol& protocol)
        : core(std::make_shared<ListenerCore>(io, std::move(options), protocol)) {}
    ~Impl() { core->stop(); }

    std::shared_ptr<ListenerCore> core;
};

StreamListener::StreamListener(asio::io_context& io,
                               StreamListenerOptions options,
                               StreamProtocol& protocol)
    : impl_(std::make_unique<Impl>(io, std::move(options), protocol)) {}

StreamListener::~StreamListener() = default;

Result<bool, std::string> StreamListener::start() {
    return impl_->core->start();
}

uint16_t StreamListener::port() const {
    return impl_->core->port();
}

void StreamListener::send(ConnectionId id, std::string bytes) {
    impl_->core->send(id, std::move(bytes));
}

void StreamListener::close(ConnectionId id, bool flush) {
    impl_->core->close(id, flush);
}

void StreamListener::pause_reading(ConnectionId id, bool paused) {
    impl_->core->pause_reading(id, paused);
}

bool StreamListener::is_open(ConnectionId id) const {
    return impl_->core->is_open(id);
}

void StreamListener::start_tls(ConnectionId id) {
    impl_->core->start_tls(id);
}

void StreamListener::set_tls(std::shared_ptr<const TlsContext> tls) {
    impl_->core->set_tls(std::move(tls));
}

void StreamListener::stop() {
    impl_->core->stop();
}

void StreamListener::count_protocol_error() {
    impl_->core->count_protocol_error();
}

StreamListenerStats StreamListener::stats() const {
    return impl_->core->stats();
}

}  // namespace raftlock::net
