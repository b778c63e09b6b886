#pragma once

// A TCP port of byte-stream connections, whatever the protocol on them: accepting, reading,
// queued gathered writes, closing politely, and the limits every client port needs. The client
// port (client_listener.h, protobuf frames) and the Redis port (resp_listener.h, RESP) are this
// plus their decoder.
//
// Limits, none of which affects other connections:
// - a connection whose unsent output would exceed send_queue_bytes_max (a client that does not
//   read its replies) is closed at once, without flushing, with a rate-limited log line naming the
//   limit; stats().slow_consumers counts it. As Redis's client-output-buffer-limit hard limit:
//   disconnect, not backpressure, because a client that pipelines without reading would otherwise
//   hold the server's memory (and its queued work) for as long as it likes. Reading stops with
//   the close, and is_open() turns false at once, so the protocol can skip work for it;
// - more than connections_max connections on this port, or more than the shared budget allows
//   (options.budget: the node's client connections, and those from one address): a new one gets
//   the protocol's refusal bytes and is closed;
// - a message must arrive whole within message_deadline_ms of its first byte, and the first
//   message within that time of the connect (a slowloris sending a byte a second is closed; each
//   byte does not restart the deadline). A connection that has spoken and holds no partial
//   message (StreamProtocol::partial_bytes == 0) may stay idle. While the protocol holds the
//   connection's reading paused, its deadline does not run (the wait is ours, not the client's).
//   On a TLS port the handshake must complete within the first message's deadline.
//
// TLS (options.tls, net/tls.h): every connection speaks TLS from its first byte, or, with
// options.tls_on_request, from where the protocol calls start_tls() (PostgreSQL's SSLRequest:
// the client asks in the clear, the server answers, then the handshake). The protocol sees only
// plaintext. A failed handshake (plain text on the port, a certificate the
// CA did not sign) closes the connection with TLS's alert and a rate-limited log line naming the
// reason; stats().tls_failures counts it. set_tls() swaps the context for new connections.
//
// Threads: everything on the io_context's thread, protocol calls included. Asio lives in the .cc.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "net/connection_budget.h"
#include "net/tls.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace raftlock::net {

using ConnectionId = uint64_t;  // unique among the port's connections, never 0

// Unsent reply bytes one client connection may hold (--client-output-buffer-bytes-max): 8 replies
// of the largest size (a 4 MiB frame or value), so a client that reads never reaches it, while
// 30 clients that never read hold at most ~1 GiB between them.
inline constexpr size_t kSendQueueBytesMaxDefault = size_t{32} << 20;

struct StreamListenerOptions {
    std::string name = "client port";  // in log lines
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 0;                                 // 0: ephemeral (tests)
    size_t send_queue_bytes_max = kSendQueueBytesMaxDefault;  // >= 1
    size_t connections_max = 10000;
    uint32_t message_deadline_ms = 30000;  // --client-message-deadline-ms
    ConnectionId first_id = 1;  // ids count up from here (ports of one process use distinct ranges)
    // Shared by a node's client ports: the node-wide and per-address limits (null: none but
    // connections_max). A refused connection gets the protocol's refusal, as at connections_max.
    std::shared_ptr<ConnectionBudget> budget;
    // Non-null: the port speaks TLS with this server context.
    std::shared_ptr<const TlsContext> tls;
    // With `tls`: connections start in the clear and the protocol switches each with start_tls().
    bool tls_on_request = false;
};

// The protocol on the connections.
class StreamProtocol {
public:
    virtual ~StreamProtocol() = default;
    virtual void on_open(ConnectionId id, const std::string& remote) = 0;
    // On a TLS port, once the handshake is done and before the connection's first bytes: the
    // common name of the client certificate the CA verified (not called without one). May close
    // the connection. A protocol without users ignores it.
    virtual void on_peer_certificate(ConnectionId /*id*/, const std::string& /*common_name*/) {}
    // Bytes read from the connection (at most one read's worth). May send, close or pause it.
    virtual void on_bytes(ConnectionId id, std::string_view bytes) = 0;
    // The connection is gone (closed by either side); no more calls for it. Called from its own
    // turn of the event loop, never from inside send() or close().
    virtual void on_close(ConnectionId id) = 0;
    // Bytes of input the connection holds that are not yet a whole message handed on (the message
    // deadline applies when > 0; a read that leaves fewer than before plus the bytes read has
    // completed a message).
    virtual size_t partial_bytes(ConnectionId id) const = 0;
    // What a connection refused at connections_max is sent before it is closed.
    virtual std::string refusal(size_t connections) const = 0;
};

struct StreamListenerStats {
    size_t connections = 0;
    uint64_t accepted = 0;
    uint64_t protocol_errors = 0;  // counted by the protocol through count_protocol_error()
    uint64_t slow_consumers = 0;   // connections closed for an overfull send queue
    uint64_t idle_timeouts = 0;    // connections closed at their message deadline
    uint64_t refused = 0;          // connections refused at accept (connections_max)
    uint64_t tls_failures = 0;     // connections closed for a failed TLS handshake or record
};

class StreamListener {
public:
    StreamListener(boost::asio::io_context& io,
                   StreamListenerOptions options,
                   StreamProtocol& protocol);
    ~StreamListener();
    StreamListener(const StreamListener&) = delete;
    StreamListener& operator=(const StreamListener&) = delete;

    Result<bool, std::string> start();  // binds and listens; errors name the address and cause
    uint16_t port() const;

    // Queues bytes for the connection; ignored when the connection is gone or closing.
    void send(ConnectionId id, std::string bytes);
    // True while the connection is open and not closing: whether a reply to it can still be sent.
    bool is_open(ConnectionId id) const;
    // Closes after the queued output is flushed (or at once when `flush` is false). Input that
    // arrives meanwhile is discarded.
    void close(ConnectionId id, bool flush = true);
    // Stops (or resumes) reading from the connection: backpressure for a protocol whose handler
    // has too much of the connection's work pending.
    void pause_reading(ConnectionId id, bool paused);
    // From the next byte on, the connection speaks TLS: what was sent before goes in the clear,
    // what is sent after is encrypted. Only on a port with tls_on_request, once per connection.
    // The handshake and then a whole message must arrive within message_deadline_ms. Ignored when
    // the connection is gone or closing.
    void start_tls(ConnectionId id);
    // The TLS context new connections get (open ones keep theirs): a reloaded certificate. Only on
    // a port started with TLS.
    void set_tls(std::shared_ptr<const TlsContext> tls);
    // Closes the listener and every connection at once. No protocol call follows, not even
    // on_close: the server is going away with it.
    void stop();

    void count_protocol_error();
    StreamListenerStats stats() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace raftlock::net
