#pragma once

// The client port (docs/protocol.md "Client protocol"): accepts TCP connections, decodes
// length-prefixed proto::Request frames, and sends proto::ServerMessage frames back.
//
// Limits, none of which affects other connections:
// - a frame longer than frame_bytes_max, bytes that do not parse as a Request, or a Request with no
//   body: the connection gets a Response {request_id 0 (or the request's id), BAD_REQUEST, a
//   message saying what was wrong} and is closed: flushed, half-closed, and dropped when the
//   client closes too or after message_deadline_ms (closing with unread input would reset the
//   connection and could destroy that response);
// - a connection whose unsent output exceeds send_queue_bytes_max (a client that does not read) is
//   closed;
// - more than connections_max connections: a new one gets a Response {0, UNAVAILABLE, a message}
//   and is closed;
// - a frame must arrive whole within message_deadline_ms of its first byte, and the first frame
//   within that time of the connect; bytes trickling in do not restart it. A connection that has
//   sent a whole frame and holds no partial one may stay idle: session liveness is the session's
//   business, not the connection's.
//
// Threads: everything on the io_context's thread, handler calls included. Asio lives in the .cc.

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "net/stream_listener.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace raftlock::proto {
class Request;
class ServerMessage;
}  // namespace raftlock::proto

namespace raftlock::net {

struct ClientListenerOptions {
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 0;             // 0: ephemeral (tests)
    uint32_t frame_bytes_max = 4u << 20;  // data <= 1 MiB plus the rest of a request
    size_t send_queue_bytes_max = kSendQueueBytesMaxDefault;
    size_t connections_max = 10000;
    uint32_t message_deadline_ms = 30000;
    std::shared_ptr<ConnectionBudget>
        budget;                             // shared by a node's client ports (stream_listener.h)
    std::shared_ptr<const TlsContext> tls;  // non-null: TLS only (stream_listener.h)
};

class ClientHandler {
public:
    virtual ~ClientHandler() = default;
    virtual void on_client_open(ConnectionId id, const std::string& remote) = 0;
    // On a TLS port, before the connection's first request: the common name of the client
    // certificate the CA verified. Not called without one.
    virtual void on_client_certificate(ConnectionId id, const std::string& common_name) = 0;
    virtual void on_client_request(ConnectionId id, proto::Request&& request) = 0;
    // The connection is gone (closed by either side); no more calls for it. Called from its own
    // turn of the event loop, never from inside send() or close().
    virtual void on_client_close(ConnectionId id) = 0;
};

using ClientListenerStats = StreamListenerStats;

class ClientListener {
public:
    ClientListener(boost::asio::io_context& io,
                   ClientListenerOptions options,
                   ClientHandler& handler);
    ~ClientListener();
    ClientListener(const ClientListener&) = delete;
    ClientListener& operator=(const ClientListener&) = delete;

    Result<bool, std::string> start();  // binds and listens; errors name the address and cause
    uint16_t port() const;

    // Queues a message for the connection; ignored when the connection is gone.
    void send(ConnectionId id, const proto::ServerMessage& message);
    // Closes after the queued output is flushed (or at once when `flush` is false). Input that
    // arrives meanwhile is discarded.
    void close(ConnectionId id, bool flush = true);
    // Whether a reply can still be sent (see StreamListener::is_open).
    bool is_open(ConnectionId id) const;
    // The TLS context for new connections: a reloaded certificate. Only on a port with TLS.
    void set_tls(std::shared_ptr<const TlsContext> tls);
    // Closes the listener and every connection at once. No handler call follows, not even
    // on_client_close: the server is going away with it.
    void stop();

    ClientListenerStats stats() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace raftlock::net
