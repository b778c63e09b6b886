#pragma once

// The PostgreSQL port (docs/sql-mode.md): pg-wire messages in, the handler's encoded bytes out,
// over StreamListener, with one PgDecoder per connection.
//
// The listener only frames. Every decoded message goes to the handler, in order, including the
// startup packets; the handler answers them (an SSLRequest with net::kPgEncryptionRefused, a
// StartupMessage with an authentication request, and so on). Two decoder phases are the
// listener's business, because they decide how the next bytes are read:
// - after a StartupMessage the listener calls PgDecoder::start_regular() before handing the
//   message to the handler, so the bytes that follow (a PasswordMessage, pipelined queries) are
//   read as regular messages;
// - after a CancelRequest the listener decodes nothing more from that connection and closes it
//   once the handler has returned (the handler may close it first; PostgreSQL never answers a
//   cancel request).
// A protocol error from the decoder (malformed, unknown or oversized message) gets an
// ErrorResponse (FATAL, SQLSTATE 08P01, the decoder's message) and closes only that connection.
// A connection refused at connections_max gets FATAL 53300 "sorry, too many clients already", as
// PostgreSQL answers.
//
// Backpressure: while the handler has paused a connection (pause_reading), the listener neither
// reads from its socket nor hands it further messages: complete messages already read stay in the
// decoder and are handed over, in order, when reading resumes. So a handler that pauses at N
// queued messages never holds more than N. A connection paused this way is waiting for the
// server, not for its client, so it is not subject to the idle deadline for partial messages.
//
// Connection ids carry kPgConnectionBit, so they never collide with the client port's (small
// ids) or the Redis port's (kRespConnectionBit).
//
// Threads: everything on the io_context's thread, handler calls included. Asio lives in the .cc.

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "net/pg_codec.h"
#include "net/stream_listener.h"

namespace raftlock::net {

inline constexpr ConnectionId kPgConnectionBit = ConnectionId{1} << 61;

struct PgListenerOptions {
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 0;  // 0: ephemeral (tests)
    PgLimits limits;           // see PgDecoder's preconditions
    size_t send_queue_bytes_max = kSendQueueBytesMaxDefault;
    size_t connections_max = 10000;
    uint32_t message_deadline_ms = 30000;
    std::shared_ptr<ConnectionBudget>
        budget;  // shared by a node's client ports (stream_listener.h)
    // Non-null: TLS only. A client asks with an SSLRequest (answered 'S', then the handshake);
    // a StartupMessage in the clear is refused.
    std::shared_ptr<const TlsContext> tls;
};

class PgHandler {
public:
    virtual ~PgHandler() = default;
    virtual void on_pg_open(ConnectionId id, const std::string& remote) = 0;
    // On a TLS port, just before the StartupMessage: the common name of the client certificate
    // the CA verified. Not called without one.
    virtual void on_pg_certificate(ConnectionId id, const std::string& common_name) = 0;
    // One decoded message, in arrival order. May send, close or pause the connection.
    virtual void on_pg_message(ConnectionId id, PgFrontendMessage&& message) = 0;
    // The connection is gone; no more calls for it. Never called from inside send() or close().
    virtual void on_pg_close(ConnectionId id) = 0;
};

class PgListener {
public:
    PgListener(boost::asio::io_context& io, PgListenerOptions options, PgHandler& handler);
    ~PgListener();
    PgListener(const PgListener&) = delete;
    PgListener& operator=(const PgListener&) = delete;

    Result<bool, std::string> start();  // binds and listens; errors name the address and cause
    uint16_t port() const;
    // Queues bytes for the connection; ignored when it is gone or closing.
    void send(ConnectionId id, std::string bytes);
    // Closes after the queued output is flushed (or at once when `flush` is false). Nothing more
    // is handed to the handler for it but on_pg_close.
    void close(ConnectionId id, bool flush = true);
    // Whether a reply can still be sent (see StreamListener::is_open).
    bool is_open(ConnectionId id) const;
    // Backpressure: no messages are read from the connection, or handed over, while paused.
    void pause_reading(ConnectionId id, bool paused);
    // Closes the port and every connection at once; no handler call follows.
    // The TLS context for new connections: a reloaded certificate. Only on a port with TLS.
    void set_tls(std::shared_ptr<const TlsContext> tls);
    void stop();
    StreamListenerStats stats() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace raftlock::net
