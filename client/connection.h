#pragma once

// One TCP connection from the client to a raftlockd client port, over TLS when the options say so:
// connect (and handshake, and log in) with a deadline, send Request frames, receive ServerMessage
// frames (net/frame.h). Internal to the library.
//
// Threads: used under the owner's lock (ConnectionOptions::serial), which every one of its
// handlers takes on the io_context's thread before it touches anything; the owner may call in from
// any thread that holds it. A send writes to the socket on the calling thread when nothing is
// queued before it (decision 0022). Handlers are never called after close(), and on_closed is
// called at most once (for a failure the owner did not ask for).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "client/endpoints.h"
#include "net/tls.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace raftlock::proto {
class Request;
class ServerMessage;
}  // namespace raftlock::proto

namespace raftlock::client {

struct ConnectionOptions {
    std::chrono::milliseconds connect_timeout{1000};
    uint32_t frame_bytes_max = 4u << 20;
    size_t send_queue_bytes_max = 64u << 20;
    // Non-null: TLS, the endpoint's host checked against the server's certificate. The connect
    // timeout covers the handshake.
    std::shared_ptr<const net::TlsContext> tls;
    // Not empty: the connection logs in as this user (SCRAM-SHA-256, the Authenticate request)
    // before it counts as connected; the connect timeout covers the login. A refused login ends
    // the connection as a refusal (on_closed with was_connected false, the node's reason).
    std::string user;
    std::string password;
    // Required: the owner's lock (client/core.h), taken by every handler of the connection.
    std::mutex* serial = nullptr;
};

struct ConnectionHandlers {
    std::function<void()> on_connected;
    std::function<void(proto::ServerMessage&&)> on_message;
    // The connection failed or ended. `was_connected`: false when the connect itself failed.
    // `reason` names the endpoint and the cause, for error messages.
    std::function<void(bool was_connected, const std::string& reason)> on_closed;
    // The node refused the login (a wrong password, an unknown user): the connection ended, and
    // another node would say the same. Not set: on_closed(false, reason) instead.
    std::function<void(const std::string& reason)> on_login_refused;
};

class Connection {
public:
    virtual ~Connection() = default;
    // Precondition: on_connected was called. A send queue beyond its bound closes the connection.
    virtual void send(const proto::Request& request) = 0;
    // Closes without calling on_closed; idempotent.
    virtual void close() = 0;
    virtual const Endpoint& endpoint() const = 0;
};

// Starts connecting at once.
std::shared_ptr<Connection> start_connection(boost::asio::io_context& io,
                                             Endpoint endpoint,
                                             const ConnectionOptions& options,
                                             ConnectionHandlers handlers);

}  // namespace raftlock::client
