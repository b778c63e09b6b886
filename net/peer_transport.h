#pragma once

// Node-to-node transport (DESIGN.md §5, docs/protocol.md "Peer protocol"): one persistent outgoing
// TCP connection per peer, dialled by this node and used only for sending; incoming connections
// dialled by the peers are only read. Frames are length-prefixed protobuf PeerFrames (frame.h).
//
// - Handshake: the dialler sends Hello {protocol version, cluster id, from, to}; the acceptor
//   replies HelloReply and closes on any mismatch (another cluster, a node id it does not know,
//   a connection meant for another node), logging the reason once per peer and cause.
// - Mutual TLS (options.tls_server and tls_client, docs/security.md): every connection speaks
//   TLS from its first byte, both ends present certificates of the cluster CA, and each
//   certificate must name its member as peer_tls_name(cluster, id): the dialler's TLS checks
//   that the node it dialled answered, the acceptor that the certificate names the member the
//   Hello claims to be. Without them the port trusts whoever speaks its framing.
// - Bounded: each peer's send queue holds at most queue_frames_max frames / queue_bytes_max bytes;
//   send() on a full queue drops the frame (Raft retransmits) and counts it. Never blocks.
// - Reconnect with exponential backoff (backoff_ms_min doubling up to backoff_ms_max, jittered);
//   frames queued while disconnected are sent once connected, oldest first, unless dropped by the
//   bound.
// - A malformed frame (bad length, not a PeerFrame, a second Hello) closes that connection only.
// - At most incoming_per_peer_max accepted connections per peer id; past that the quietest goes,
//   so a redial replaces a dead link but a stranger claiming the id does not cut a live one.
//
// Threads: every method runs on the io_context's thread, which is also the thread the handler is
// called on. The Asio machinery lives in peer_transport.cc only.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "net/tls.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace raftlock::proto {
class PeerFrame;
}  // namespace raftlock::proto

namespace raftlock::net {

inline constexpr uint32_t kPeerProtocolVersion = 1;

// The name a member's peer certificate must hold (its DNS subject alternative name, or its common
// name): "node-3.cluster-1".
std::string peer_tls_name(uint64_t cluster_id, uint64_t node_id);

struct PeerAddress {
    uint64_t id = 0;
    std::string host;  // an IPv4/IPv6 address or a name resolved at each connect
    uint16_t port = 0;
};

struct PeerTransportOptions {
    uint64_t cluster_id = 0;
    uint64_t self_id = 0;
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 0;        // 0: an ephemeral port (tests); see PeerTransport::port()
    std::vector<PeerAddress> peers;  // every other voter/learner; self excluded (see set_peers)
    uint32_t frame_bytes_max = 64u << 20;
    size_t queue_frames_max = 8192;
    size_t queue_bytes_max = 256u << 20;
    uint32_t backoff_ms_min = 20;
    uint32_t backoff_ms_max = 1000;
    uint32_t connect_timeout_ms = 1000;  // connect + Hello/HelloReply, both directions
    // Incoming connections at once (handshaking or accepted); more are closed at accept. Peers
    // dial one connection each, so this only bounds strangers and reconnect storms.
    size_t incoming_connections_max = 64;
    // Incoming connections that said Hello as the same peer. A redialling peer's new connection
    // closes the quietest of its older ones once there are more (see docs/protocol.md).
    size_t incoming_per_peer_max = 2;
    // Called when a peer refuses this node's Hello because this node was removed from the
    // cluster (the peer retired it after applying the removal; see set_peers). Optional.
    std::function<void(uint64_t peer)> on_removed;
    // Called when an established outgoing connection to `peer` fails: frames written on it may
    // not have reached the peer (TCP accepted them; the peer's kernel may have discarded them).
    // Raft retransmits by itself; requests relayed to the peer must be sent again. Optional.
    std::function<void(uint64_t peer)> on_link_lost;
    // Mutual TLS: both or neither. tls_server (role server, requiring client certificates of the
    // cluster CA) for accepted connections, tls_client (role client, with this node's
    // certificate and the cluster CA) for dialled ones.
    std::shared_ptr<const TlsContext> tls_server;
    std::shared_ptr<const TlsContext> tls_client;
};

struct PeerStats {
    uint64_t id = 0;
    bool connected = false;  // the outgoing connection is established and accepted
    uint64_t frames_sent = 0;
    uint64_t frames_dropped = 0;  // queue full
    uint64_t frames_received = 0;
    uint64_t connects = 0;            // successful handshakes of the outgoing connection
    uint64_t handshakes_refused = 0;  // incoming Hellos refused (other cluster, unknown node, ...)
    uint64_t refused_by_peer = 0;     // our Hellos this peer refused (its log says why)
    size_t queued_frames = 0;
    size_t queued_bytes = 0;
};

class PeerTransport {
public:
    // Called with each frame other than Hello/HelloReply from an accepted incoming connection.
    // `from` is the id the peer proved in its Hello.
    using FrameHandler = std::function<void(uint64_t from, proto::PeerFrame&& frame)>;

    PeerTransport(boost::asio::io_context& io, PeerTransportOptions options, FrameHandler handler);
    ~PeerTransport();
    PeerTransport(const PeerTransport&) = delete;
    PeerTransport& operator=(const PeerTransport&) = delete;

    // Binds and listens; an error says which address and why ("127.0.0.1:7001: address in use").
    // Then starts dialling every peer.
    Result<bool, std::string> start();
    uint16_t port() const;  // the bound port, after start()

    // Queues `frame` for peer `to`. False when `to` is unknown or its queue is full (dropped).
    bool send(uint64_t to, const proto::PeerFrame& frame);

    // Replaces the peer list after a membership change: new peers are dialled, peers at a new
    // address redialled, and peers left out retired (their queue dropped, their connections
    // closed, their Hellos refused with HelloReply.removed). Call it with the committed
    // configuration's members still included until the removal is committed, or a removed
    // leader never hears that its own removal committed.
    void set_peers(const std::vector<PeerAddress>& peers);

    // Closes every connection and the listener; handler is not called afterwards.
    void stop();

    std::vector<PeerStats> stats() const;  // sorted by id
    // Incoming connections closed, oldest first, to make room for a new one while every slot was
    // taken and some had not said Hello.
    uint64_t incoming_evicted() const;
    // Connections (either direction) closed because TLS failed: a certificate of another CA, or
    // not naming the member expected, plain text on the port.
    uint64_t tls_failures() const;
    // New connections use these contexts (reloaded certificates). Only with TLS.
    void set_tls(std::shared_ptr<const TlsContext> server,
                 std::shared_ptr<const TlsContext> client);

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace raftlock::net
