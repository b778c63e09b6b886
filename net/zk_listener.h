#pragma once

// The ZooKeeper port (docs/zookeeper-mode.md): ZooKeeper's client protocol, over StreamListener.
//
// The listener only frames: each message is a 4-byte big-endian length and that many bytes
// (zk_codec.h decodes them); the handler gets every whole message in order, and its replies are
// whole encoded messages. A length above max_message_bytes (ZooKeeper's jute.maxbuffer) or below
// zero closes the connection, as ZooKeeper does.
//
// Four-letter words: a connection whose first four bytes are one of the words ZooKeeper's admin
// tools send (`ruok`, `srvr`, `stat`, `isro`, ...) gets the handler's text for it and is closed, as
// ZooKeeper answers them on its client port. A word the handler does not serve is closed without
// an answer, as ZooKeeper does for one outside its whitelist. Their first bytes cannot be a
// message's length: read as one, they exceed any message ZooKeeper allows.
//
// Backpressure as on the PostgreSQL port: while the handler has a connection paused, whole
// messages already read stay in the decoder and are handed over, in order, when it resumes.
//
// Connection ids carry kZkConnectionBit, so they never collide with the other client ports'.
//
// Threads: everything on the io_context's thread, handler calls included. Asio lives in the .cc.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "net/stream_listener.h"
#include "net/zk_codec.h"

namespace raftlock::net {

inline constexpr ConnectionId kZkConnectionBit = ConnectionId{1} << 60;

struct ZkListenerOptions {
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 0;                            // 0: ephemeral (tests)
    uint32_t max_message_bytes = zk::kDefaultMaxBuffer;  // jute.maxbuffer
    size_t send_queue_bytes_max = kSendQueueBytesMaxDefault;
    size_t connections_max = 10000;
    uint32_t message_deadline_ms = 30000;
    std::shared_ptr<ConnectionBudget>
        budget;                             // shared by a node's client ports (stream_listener.h)
    std::shared_ptr<const TlsContext> tls;  // non-null: TLS only (stream_listener.h)
};

class ZkHandler {
public:
    virtual ~ZkHandler() = default;
    virtual void on_zk_open(ConnectionId id, const std::string& remote) = 0;
    // One whole message (its length removed), in arrival order. May send, close or pause.
    virtual void on_zk_message(ConnectionId id, std::string_view payload) = 0;
    // The connection is gone; no more calls for it. Never called from inside send() or close().
    virtual void on_zk_close(ConnectionId id) = 0;
    // The answer to a four-letter word, or nullopt for one not served. No open or close call
    // comes for such a connection: it never becomes a ZooKeeper session's.
    virtual std::optional<std::string> on_zk_four_letter_word(std::string_view word) = 0;
};

class ZkListener {
public:
    ZkListener(boost::asio::io_context& io, ZkListenerOptions options, ZkHandler& handler);
    ~ZkListener();
    ZkListener(const ZkListener&) = delete;
    ZkListener& operator=(const ZkListener&) = delete;

    Result<bool, std::string> start();  // binds and listens; errors name the address and cause
    uint16_t port() const;
    // Queues bytes for the connection; ignored when it is gone or closing.
    void send(ConnectionId id, std::string bytes);
    // Closes after the queued output is flushed (or at once when `flush` is false). Nothing more
    // is handed to the handler for it but on_zk_close.
    void close(ConnectionId id, bool flush = true);
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
