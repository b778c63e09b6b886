#pragma once

// The Redis port (docs/redis-mode.md): RESP commands in, RESP replies out, over StreamListener.
//
// The listener only frames: every complete command goes to the handler in order; replies are the
// handler's encoded bytes. Malformed RESP gets "-ERR Protocol error: ..." and closes only that
// connection, as Redis does. Connection ids carry kRespConnectionBit, so they never collide with
// the client port's.
//
// Threads: everything on the io_context's thread, handler calls included. Asio lives in the .cc.

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "net/resp_codec.h"
#include "net/stream_listener.h"

namespace raftlock::net {

inline constexpr ConnectionId kRespConnectionBit = ConnectionId{1} << 62;

struct RespListenerOptions {
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 0;  // 0: ephemeral (tests)
    RespLimits limits;
    size_t send_queue_bytes_max = kSendQueueBytesMaxDefault;
    size_t connections_max = 10000;
    uint32_t message_deadline_ms = 30000;
    std::shared_ptr<ConnectionBudget>
        budget;                             // shared by a node's client ports (stream_listener.h)
    std::shared_ptr<const TlsContext> tls;  // non-null: TLS only (stream_listener.h)
};

class RespHandler {
public:
    virtual ~RespHandler() = default;
    virtual void on_resp_open(ConnectionId id, const std::string& remote) = 0;
    // On a TLS port, before the connection's first command: the common name of the client
    // certificate the CA verified. Not called without one.
    virtual void on_resp_certificate(ConnectionId id, const std::string& common_name) = 0;
    // A complete, non-empty command (empty ones are skipped, as Redis does).
    virtual void on_resp_command(ConnectionId id, statemachine::redis::Argv&& argv) = 0;
    // The connection is gone; no more calls for it. Never called from inside send() or close().
    virtual void on_resp_close(ConnectionId id) = 0;
};

class RespListener {
public:
    RespListener(boost::asio::io_context& io, RespListenerOptions options, RespHandler& handler);
    ~RespListener();
    RespListener(const RespListener&) = delete;
    RespListener& operator=(const RespListener&) = delete;

    Result<bool, std::string> start();
    uint16_t port() const;
    void send(ConnectionId id, std::string bytes);
    void close(ConnectionId id, bool flush = true);
    // Whether a reply can still be sent (see StreamListener::is_open).
    bool is_open(ConnectionId id) const;
    // Backpressure: no commands are read from the connection while paused.
    void pause_reading(ConnectionId id, bool paused);
    // The TLS context for new connections: a reloaded certificate. Only on a port with TLS.
    void set_tls(std::shared_ptr<const TlsContext> tls);
    void stop();
    StreamListenerStats stats() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace raftlock::net
