#include "net/peer_transport.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <set>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "base/assert.h"
#include "net/asio_listen.h"
#include "net/frame.h"
#include "net/log_limiter.h"
#include "net/message_frame.h"
#include "net/write_batch.h"
#include "proto/peer.pb.h"

namespace raftlock::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;

std::string peer_tls_name(uint64_t cluster_id, uint64_t node_id) {
    return fmt::format("node-{}.cluster-{}", node_id, cluster_id);
}

namespace {

// Hello and HelloReply are a few dozen bytes; anything larger is not a raftlock peer.
constexpr uint32_t kHandshakeFrameBytesMax = 4096;

// Empty when `hello` may open a connection to this node, else the reason in words.
std::string hello_refusal(const proto::Hello& hello,
                          const PeerTransportOptions& options,
                          bool from_known) {
    if (hello.protocol_version() != kPeerProtocolVersion) {
        return fmt::format("protocol version {} is not {}", hello.protocol_version(),
                           kPeerProtocolVersion);
    }
    if (hello.cluster_id() != options.cluster_id) {
        return fmt::format("cluster id {} is not this cluster's ({})", hello.cluster_id(),
                           options.cluster_id);
    }
    if (hello.to() != options.self_id) {
        return fmt::format("this is node {}, not node {}", options.self_id, hello.to());
    }
    if (!from_known) {
        return fmt::format("node {} is not a peer of node {}", hello.from(), options.self_id);
    }
    return "";
}

// The dialled side of one peer: the connection this node sends on, and the queue that feeds it.
struct OutPeer {
    enum class State : uint8_t { kIdle, kBackoff, kConnecting, kHandshaking, kConnected };

    OutPeer(asio::io_context& io, PeerAddress a, uint32_t backoff)
        : address(std::move(a)),
          socket(io),
          timer(io),
          resolver(io),
          decoder(kHandshakeFrameBytesMax),
          backoff_ms(backoff) {
        stats.id = address.id;
    }

    PeerAddress address;
    State state = State::kIdle;
    tcp::socket socket;
    asio::steady_timer timer;  // the connect/handshake deadline, then the backoff
    tcp::resolver resolver;
    // Bumped whenever an attempt ends, so handlers of an earlier socket see they are stale.
    uint64_t generation = 0;
    FrameDecoder decoder;  // HelloReply
    std::array<char, 512> read_buffer;
    std::chrono::steady_clock::time_point connected_at;
    std::deque<std::string> queue;  // encoded frames not yet handed to a write
    size_t queue_bytes = 0;
    bool writing = false;
    bool flush_posted = false;
    std::unique_ptr<TlsSession> tls;  // with mutual TLS, for the current connection
    std::deque<std::string> raw;      // TLS handshake bytes (and the Hello) to write before frames
    size_t inflight_frames = 0;
    size_t inflight_bytes = 0;
    uint32_t backoff_ms;
    // No longer a peer (set_peers): not dialled, sent to or accepted. Kept, not destroyed, because
    // pending handlers hold a pointer to it.
    bool retired = false;
    PeerStats stats;  // counters; connected and the queue sizes are filled in by stats()
};

// An accepted connection: read only, after the HelloReply.
struct Incoming {
    Incoming(tcp::socket s, uint64_t id_, uint32_t frame_bytes_max)
        : socket(std::move(s)), timer(socket.get_executor()), decoder(frame_bytes_max), id(id_) {}

    tcp::socket socket;
    asio::steady_timer timer;  // the Hello deadline
    FrameDecoder decoder;
    uint64_t id;
    std::string remote;
    uint64_t from = 0;                // the peer's id once its Hello was accepted
    std::unique_ptr<TlsSession> tls;  // with mutual TLS
    std::deque<std::string> out;      // bytes to write: the handshake's, the HelloReply
    bool writing = false;
    bool close_when_sent = false;  // refused: closed once `out` is written
    // When a frame last arrived (the accept, before any): the quietest of a peer's connections is
    // the one its sender has given up on.
    std::chrono::steady_clock::time_point last_frame_at = std::chrono::steady_clock::now();
    bool closed = false;
    std::array<char, kReadChunkBytes> read_buffer;
};

// Owned through a shared_ptr that every pending handler holds, so a handler that runs after stop()
// (or after the PeerTransport is gone) finds `stopped_` set and returns without touching sockets.
class PeerCore : public std::enable_shared_from_this<PeerCore> {
public:
    PeerCore(asio::io_context& io,
             PeerTransportOptions options,
             PeerTransport::FrameHandler handler);

    Result<bool, std::string> start();
    uint16_t port() const { return port_; }
    bool send(uint64_t to, const proto::PeerFrame& frame);
    void set_peers(const std::vector<PeerAddress>& peers);
    void stop();
    std::vector<PeerStats> stats() const;
    uint64_t incoming_evicted() const { return evicted_silent_; }
    uint64_t tls_failures() const { return tls_failures_; }
    void set_tls(std::shared_ptr<const TlsContext> server,
                 std::shared_ptr<const TlsContext> client) {
        RL_ASSERT(options_.tls_server != nullptr && server != nullptr && client != nullptr);
        options_.tls_server = std::move(server);
        options_.tls_client = std::move(client);
    }

private:
    using InPtr = std::shared_ptr<Incoming>;

    void accept();
    void on_accept(tcp::socket socket);
    void read_incoming(const InPtr& in);
    bool evict_silent_incoming();
    bool drain_incoming(const InPtr& in);
    bool on_incoming_frame(const InPtr& in, proto::PeerFrame&& frame);
    bool on_hello(const InPtr& in, const proto::Hello& hello);
    // Decrypts what an incoming connection read (sending what its TLS answers); false when the
    // connection failed and is closing.
    bool decrypt_incoming(const InPtr& in, std::string_view ciphertext, std::string& plaintext);
    // Sends a frame (encrypted with TLS) on an incoming connection; closes it after when `last`.
    void reply_incoming(const InPtr& in, std::string frame, bool last);
    void write_incoming(const InPtr& in, std::string bytes);
    void close_quietest_from(const InPtr& newest);
    void close_incoming(Incoming& in, const std::string& why);

    void dial(OutPeer& peer);
    void on_connected(OutPeer& peer, uint64_t gen);
    void read_outgoing(OutPeer& peer, uint64_t gen);
    void write_raw(OutPeer& peer, std::string bytes);
    void on_outgoing_bytes(OutPeer& peer, uint64_t gen, size_t n);
    void post_flush(OutPeer& peer);
    void flush(OutPeer& peer);
    void fail(OutPeer& peer, const std::string& why);
    void hang_up(OutPeer& peer);
    milliseconds next_backoff(OutPeer& peer);
    void log_out(const OutPeer& peer, const char* cause, const std::string& what);

    asio::io_context& io_;
    PeerTransportOptions options_;
    PeerTransport::FrameHandler handler_;
    tcp::acceptor acceptor_;
    asio::steady_timer accept_retry_;
    uint16_t port_ = 0;
    std::map<uint64_t, std::unique_ptr<OutPeer>> peers_;
    std::map<uint64_t, InPtr> incoming_;
    uint64_t next_incoming_id_ = 1;
    uint64_t evicted_silent_ = 0;
    uint64_t tls_failures_ = 0;
    bool started_ = false;
    bool stopped_ = false;
    LogLimiter log_{kRepeatedLineInterval};
    std::minstd_rand rng_;  // backoff jitter only; not part of any replicated decision
};

PeerCore::PeerCore(asio::io_context& io,
                   PeerTransportOptions options,
                   PeerTransport::FrameHandler handler)
    : io_(io),
      options_(std::move(options)),
      handler_(std::move(handler)),
      acceptor_(io),
      accept_retry_(io),
      rng_(std::random_device{}()) {
    RL_ASSERT(options_.self_id != 0);
    RL_ASSERT(options_.backoff_ms_min > 0);
    RL_ASSERT(options_.backoff_ms_min <= options_.backoff_ms_max);
    RL_ASSERT(options_.queue_frames_max > 0);
    RL_ASSERT(handler_ != nullptr);
    RL_ASSERT((options_.tls_server == nullptr) == (options_.tls_client == nullptr));
    RL_ASSERT(options_.tls_server == nullptr || options_.tls_server->role() == TlsRole::kServer);
    RL_ASSERT(options_.tls_client == nullptr || options_.tls_client->role() == TlsRole::kClient);
    for (const PeerAddress& a : options_.peers) {
        RL_ASSERT_MSG(a.id != 0 && a.id != options_.self_id, "peer ids are positive, not self");
        auto peer = std::make_unique<OutPeer>(io_, a, options_.backoff_ms_min);
        const bool inserted = peers_.emplace(a.id, std::move(peer)).second;
        RL_ASSERT_MSG(inserted, "duplicate peer id");
    }
}

Result<bool, std::string> PeerCore::start() {
    RL_ASSERT(!started_);
    RL_ASSERT(!stopped_);
    started_ = true;
    const std::string error = open_acceptor(acceptor_, options_.listen_host, options_.listen_port);
    if (!error.empty()) {
        return error;
    }
    port_ = acceptor_.local_endpoint().port();
    accept();
    for (auto& [id, peer] : peers_) {
        if (!peer->retired) {
            dial(*peer);
        }
    }
    return true;
}

void PeerCore::stop() {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
    for (auto& [id, peer] : peers_) {
        hang_up(*peer);
    }
    for (auto& [id, in] : incoming_) {
        in->closed = true;
        in->socket.close(ignored);
        in->timer.cancel();
    }
    incoming_.clear();
}

// Ends the current attempt or connection without scheduling another: stale handlers see the new
// generation and return.
void PeerCore::hang_up(OutPeer& peer) {
    error_code ignored;
    peer.socket.close(ignored);
    peer.timer.cancel();
    peer.resolver.cancel();
    ++peer.generation;
    peer.state = OutPeer::State::kIdle;
    peer.writing = false;
    peer.inflight_frames = 0;
    peer.inflight_bytes = 0;
    peer.decoder = FrameDecoder(kHandshakeFrameBytesMax);
    peer.tls.reset();
    peer.raw.clear();
}

void PeerCore::set_peers(const std::vector<PeerAddress>& peers) {
    if (stopped_) {
        return;
    }
    std::set<uint64_t> wanted;
    for (const PeerAddress& a : peers) {
        RL_ASSERT_MSG(a.id != 0 && a.id != options_.self_id, "peer ids are positive, not self");
        RL_ASSERT_MSG(wanted.insert(a.id).second, "duplicate peer id");
        auto it = peers_.find(a.id);
        if (it == peers_.end()) {
            it = peers_.emplace(a.id, std::make_unique<OutPeer>(io_, a, options_.backoff_ms_min))
                     .first;
        } else {
            OutPeer& peer = *it->second;
            if (!peer.retired && peer.address.host == a.host && peer.address.port == a.port) {
                continue;
            }
            // A returning peer, or one at a new address: a fresh connection.
            hang_up(peer);
            peer.address = a;
            peer.retired = false;
            peer.backoff_ms = options_.backoff_ms_min;
        }
        log_.log(fmt::format("peer:{}:{}:{}", a.id, a.host, a.port),
                 fmt::format("node {}: node {} is a peer at {}:{}", options_.self_id, a.id, a.host,
                             a.port));
        if (started_) {
            dial(*it->second);
        }
    }
    for (auto& [id, peer] : peers_) {
        if (wanted.count(id) != 0 || peer->retired) {
            continue;
        }
        // A removed member: its queue is dropped, its connections closed, its Hellos refused.
        hang_up(*peer);
        peer->retired = true;
        peer->queue.clear();
        peer->queue_bytes = 0;
        std::vector<InPtr> from_it;
        for (const auto& [in_id, in] : incoming_) {
            if (in->from == id) {
                from_it.push_back(in);
            }
        }
        for (const InPtr& in : from_it) {
            close_incoming(*in, "");
        }
        log_.log(fmt::format("retired:{}", id),
                 fmt::format("node {}: node {} is no longer a peer", options_.self_id, id));
    }
}

std::vector<PeerStats> PeerCore::stats() const {
    std::vector<PeerStats> out;
    out.reserve(peers_.size());
    for (const auto& [id, peer] : peers_) {
        if (peer->retired) {
            continue;
        }
        PeerStats s = peer->stats;
        s.connected = peer->state == OutPeer::State::kConnected;
        s.queued_frames = peer->queue.size() + peer->inflight_frames;
        s.queued_bytes = peer->queue_bytes + peer->inflight_bytes;
        out.push_back(s);
    }
    return out;  // sorted: peers_ is a map by id
}

// --- the accepting side ---------------------------------------------------------------------

void PeerCore::accept() {
    accept_forever(
        shared_from_this(), acceptor_, accept_retry_, stopped_,
        [this](tcp::socket socket) { on_accept(std::move(socket)); },
        [this](const error_code& ec) {
            log_.log("accept",
                     fmt::format("node {}: accept failed: {}", options_.self_id, ec.message()));
        });
}

void PeerCore::on_accept(tcp::socket socket) {
    const std::string remote = remote_text(socket);
    if (incoming_.size() >= options_.incoming_connections_max && !evict_silent_incoming()) {
        // Every slot is a peer that said Hello: a real member redialling replaces its own
        // (close_quietest_from).
        log_.log("incoming-full",
                 fmt::format("node {}: refusing incoming connections: {} peers hold every slot",
                             options_.self_id, options_.incoming_connections_max));
        error_code ignored;
        socket.close(ignored);
        return;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto in = std::make_shared<Incoming>(std::move(socket), next_incoming_id_++,
                                         options_.frame_bytes_max);
    in->remote = remote;
    if (options_.tls_server != nullptr) {
        in->tls = TlsSession::start_server(options_.tls_server);
    }
    incoming_.emplace(in->id, in);
    // A connection that never says Hello holds a slot; the deadline frees it.
    in->timer.expires_after(milliseconds(options_.connect_timeout_ms));
    in->timer.async_wait([self = shared_from_this(), in](error_code ec) {
        if (ec || self->stopped_ || in->closed || in->from != 0) {
            return;
        }
        self->close_incoming(*in, "no Hello in time");
    });
    read_incoming(in);
}

// Full of connections that have not said Hello (a member proves itself in its first frame, within
// milliseconds): the oldest of them goes, so that idle or slow sockets cannot keep a restarted
// member out (issue 16, row 9). False when every connection is a peer's.
bool PeerCore::evict_silent_incoming() {
    for (auto& [id, in] : incoming_) {  // by id: oldest first
        if (in->from == 0) {
            ++evicted_silent_;
            log_.log("incoming-evict",
                     fmt::format("node {}: incoming connections full ({}): closing the oldest "
                                 "that has not said Hello",
                                 options_.self_id, options_.incoming_connections_max));
            const InPtr victim = in;  // close_incoming erases the map entry
            close_incoming(*victim, "");
            return true;
        }
    }
    return false;
}

void PeerCore::read_incoming(const InPtr& in) {
    in->socket.async_read_some(
        asio::buffer(in->read_buffer), [self = shared_from_this(), in](error_code ec, size_t n) {
            if (self->stopped_ || in->closed) {
                return;
            }
            if (ec) {
                // The peer closing its end is how a restart or a give-up looks: not worth a line.
                self->close_incoming(*in, ec == asio::error::eof ? "" : ec.message());
                return;
            }
            std::string_view bytes(in->read_buffer.data(), n);
            std::string plaintext;
            if (in->tls != nullptr) {
                if (!self->decrypt_incoming(in, bytes, plaintext)) {
                    return;
                }
                bytes = plaintext;
            }
            in->decoder.feed(bytes);
            if (self->drain_incoming(in)) {
                self->read_incoming(in);
            }
        });
}

// Handles every whole frame buffered. False when the connection was closed (or must not be read
// any more). Bounded: each iteration consumes one frame of the bytes already received.
bool PeerCore::drain_incoming(const InPtr& in) {
    for (;;) {
        std::string_view payload;
        const FrameDecoder::State state = in->decoder.next(payload);
        if (state == FrameDecoder::State::kNeedMore) {
            return true;
        }
        if (state == FrameDecoder::State::kTooLarge) {
            close_incoming(
                *in, fmt::format("a frame of {} bytes is above the bound of {}",
                                 in->decoder.rejected_length(), in->decoder.frame_bytes_max()));
            return false;
        }
        proto::PeerFrame frame;
        if (!frame.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
            close_incoming(*in,
                           fmt::format("a frame of {} bytes is not a PeerFrame", payload.size()));
            return false;
        }
        if (!on_incoming_frame(in, std::move(frame))) {
            return false;
        }
    }
}

bool PeerCore::on_incoming_frame(const InPtr& in, proto::PeerFrame&& frame) {
    if (in->from == 0) {
        if (!frame.has_hello()) {
            close_incoming(*in, "the first frame is not a Hello");
            return false;
        }
        return on_hello(in, frame.hello());
    }
    switch (frame.body_case()) {
        case proto::PeerFrame::kHello:
        case proto::PeerFrame::kHelloReply:
        case proto::PeerFrame::BODY_NOT_SET:
            close_incoming(*in, fmt::format("unexpected frame (body case {}) after the handshake",
                                            static_cast<int>(frame.body_case())));
            return false;
        default:
            break;
    }
    const uint64_t from = in->from;
    in->last_frame_at = std::chrono::steady_clock::now();
    OutPeer& peer = *peers_.at(from);
    if (peer.retired) {
        close_incoming(*in, "no longer a peer");
        return false;
    }
    ++peer.stats.frames_received;
    handler_(from, std::move(frame));
    // The handler may have stopped the transport.
    return !stopped_ && !in->closed;
}

bool PeerCore::on_hello(const InPtr& in, const proto::Hello& hello) {
    auto known = peers_.find(hello.from());
    const bool removed = known != peers_.end() && known->second->retired;
    std::string refusal = hello_refusal(hello, options_, known != peers_.end());
    if (refusal.empty() && removed) {
        refusal = fmt::format("node {} was removed from the cluster", hello.from());
    }
    if (refusal.empty() && in->tls != nullptr) {
        // The CA vouches for the name; the name must be the member the Hello claims to be.
        const std::string expected = peer_tls_name(options_.cluster_id, hello.from());
        if (!in->tls->peer_certificate_names(expected)) {
            refusal = fmt::format("its certificate (common name '{}') does not name {}",
                                  in->tls->peer_common_name().value_or(""), expected);
        }
    }
    proto::PeerFrame reply;
    reply.mutable_hello_reply()->set_accepted(refusal.empty());
    reply.mutable_hello_reply()->set_reason(refusal);
    reply.mutable_hello_reply()->set_removed(removed);
    std::string bytes;
    encode_message_frame(reply, bytes);
    if (!refusal.empty()) {
        if (known != peers_.end()) {
            ++known->second->stats.handshakes_refused;
        }
        log_.log(fmt::format("refuse:{}:{}", hello.from(), refusal),
                 fmt::format("node {}: refused {} (says node {}): {}", options_.self_id, in->remote,
                             hello.from(), refusal));
        // Nothing more is read; the connection closes once the reply is out (or at the deadline).
        reply_incoming(in, std::move(bytes), true);
        return false;
    }
    in->from = hello.from();
    in->timer.cancel();
    close_quietest_from(in);
    log_.log(
        fmt::format("accept:{}", in->from),
        fmt::format("node {}: accepted node {} from {}", options_.self_id, in->from, in->remote));
    reply_incoming(in, std::move(bytes), false);
    return !in->closed;
}

bool PeerCore::decrypt_incoming(const InPtr& in,
                                std::string_view ciphertext,
                                std::string& plaintext) {
    RL_ASSERT(in->tls != nullptr && !in->closed);
    const Result<bool, std::string> fed = in->tls->feed(ciphertext, plaintext);
    write_incoming(in, in->tls->take_output());  // the handshake's answer, or the alert
    if (in->closed) {
        return false;
    }
    if (!fed.ok()) {
        ++tls_failures_;
        log_.log(
            fmt::format("in-tls:{}", fed.error()),
            fmt::format("node {}: refused {}: TLS: {}", options_.self_id, in->remote, fed.error()));
        in->close_when_sent = true;
        write_incoming(in, "");
        return false;
    }
    if (in->tls->peer_closed()) {
        close_incoming(*in, "");
        return false;
    }
    return true;
}

void PeerCore::reply_incoming(const InPtr& in, std::string frame, bool last) {
    if (in->tls != nullptr) {
        if (const Result<bool, std::string> w = in->tls->write(frame); !w.ok()) {
            close_incoming(*in, "TLS: " + w.error());
            return;
        }
        frame = in->tls->take_output();
    }
    in->close_when_sent = in->close_when_sent || last;
    write_incoming(in, std::move(frame));
}

// One write at a time; a refused connection closes once its last bytes are out.
void PeerCore::write_incoming(const InPtr& in, std::string bytes) {
    if (in->closed) {
        return;
    }
    if (!bytes.empty()) {
        in->out.push_back(std::move(bytes));
    }
    if (in->writing) {
        return;
    }
    if (in->out.empty()) {
        if (in->close_when_sent) {
            close_incoming(*in, "");
        }
        return;
    }
    in->writing = true;
    auto data = std::make_shared<std::string>(std::move(in->out.front()));
    in->out.pop_front();
    asio::async_write(in->socket, asio::buffer(*data),
                      [self = shared_from_this(), in, data](error_code ec, size_t) {
                          if (self->stopped_ || in->closed) {
                              return;
                          }
                          in->writing = false;
                          if (ec) {
                              self->close_incoming(
                                  *in, in->close_when_sent ? "" : "sending: " + ec.message());
                              return;
                          }
                          self->write_incoming(in, "");
                      });
}

// A peer sends on one connection; another from it is left from an attempt it gave up on (its
// end may be dead without our knowing), or is not the peer at all: the port has no
// authentication, and anyone can say Hello with its id. Up to incoming_per_peer_max stay open, so
// such a stranger does not cut the live link; past that, the one silent the longest goes, which
// is never the live link of a peer that is sending.
void PeerCore::close_quietest_from(const InPtr& newest) {
    std::vector<InPtr> others;
    for (const auto& [id, other] : incoming_) {
        if (other != newest && other->from == newest->from) {
            others.push_back(other);
        }
    }
    RL_ASSERT(options_.incoming_per_peer_max >= 1);
    while (others.size() + 1 > options_.incoming_per_peer_max) {
        auto quietest = std::min_element(
            others.begin(), others.end(),
            [](const InPtr& a, const InPtr& b) { return a->last_frame_at < b->last_frame_at; });
        close_incoming(**quietest, "");
        others.erase(quietest);
    }
}

void PeerCore::close_incoming(Incoming& in, const std::string& why) {
    if (in.closed) {
        return;
    }
    in.closed = true;
    error_code ignored;
    in.socket.close(ignored);
    in.timer.cancel();
    if (!why.empty()) {
        log_.log(fmt::format("in:{}:{}", in.from, why),
                 fmt::format("node {}: closed the connection from {} (node {}): {}",
                             options_.self_id, in.remote, in.from, why));
    }
    incoming_.erase(in.id);  // last: the map may hold the only other reference
}

// --- the dialling side ----------------------------------------------------------------------

void PeerCore::log_out(const OutPeer& peer, const char* cause, const std::string& what) {
    log_.log(fmt::format("out:{}:{}", peer.address.id, cause),
             fmt::format("node {} -> node {} ({}:{}): {}", options_.self_id, peer.address.id,
                         peer.address.host, peer.address.port, what));
}

void PeerCore::dial(OutPeer& peer) {
    RL_ASSERT(peer.state == OutPeer::State::kIdle || peer.state == OutPeer::State::kBackoff);
    peer.state = OutPeer::State::kConnecting;
    const uint64_t gen = ++peer.generation;
    auto self = shared_from_this();
    OutPeer* p = &peer;  // peers_ only grows (retired peers stay); handlers hold `self`
    peer.timer.expires_after(milliseconds(options_.connect_timeout_ms));
    peer.timer.async_wait([self, p, gen](error_code ec) {
        if (!ec && !self->stopped_ && p->generation == gen) {
            self->fail(*p, "timed out connecting");
        }
    });
    auto on_connect = [self, p, gen](error_code ec) {
        if (self->stopped_ || p->generation != gen) {
            return;
        }
        if (ec) {
            self->fail(*p, "connect: " + ec.message());
            return;
        }
        self->on_connected(*p, gen);
    };
    error_code ec;
    const asio::ip::address address = asio::ip::make_address(peer.address.host, ec);
    if (!ec) {
        peer.socket.async_connect(tcp::endpoint(address, peer.address.port), on_connect);
        return;
    }
    peer.resolver.async_resolve(
        peer.address.host, std::to_string(peer.address.port),
        [self, p, gen, on_connect](error_code rec, const tcp::resolver::results_type& results) {
            if (self->stopped_ || p->generation != gen) {
                return;
            }
            if (rec) {
                self->fail(*p, "resolve: " + rec.message());
                return;
            }
            asio::async_connect(
                p->socket, results,
                [on_connect](error_code cec, const tcp::endpoint&) { on_connect(cec); });
        });
}

void PeerCore::on_connected(OutPeer& peer, uint64_t gen) {
    error_code ignored;
    // Raft messages are small and latency-bound; batching is done here, not by Nagle.
    peer.socket.set_option(tcp::no_delay(true), ignored);
    peer.state = OutPeer::State::kHandshaking;
    proto::PeerFrame frame;
    proto::Hello* hello = frame.mutable_hello();
    hello->set_protocol_version(kPeerProtocolVersion);
    hello->set_cluster_id(options_.cluster_id);
    hello->set_from(options_.self_id);
    hello->set_to(peer.address.id);
    std::string bytes;
    encode_message_frame(frame, bytes);
    if (options_.tls_client != nullptr) {
        // The peer's certificate must name the member dialled (checked in the handshake); the
        // Hello waits inside the session until the handshake completes.
        peer.tls = std::make_unique<TlsSession>(
            options_.tls_client, peer_tls_name(options_.cluster_id, peer.address.id));
        Result<bool, std::string> ok = peer.tls->start();
        if (ok.ok()) {
            ok = peer.tls->write(bytes);
        }
        if (!ok.ok()) {
            fail(peer, "TLS: " + ok.error());
            return;
        }
        bytes = peer.tls->take_output();  // the ClientHello
    }
    write_raw(peer, std::move(bytes));
    read_outgoing(peer, gen);
}

// Handshake bytes go out one write at a time, before any frame (flush waits for `writing`).
void PeerCore::write_raw(OutPeer& peer, std::string bytes) {
    if (!bytes.empty()) {
        peer.raw.push_back(std::move(bytes));
    }
    if (peer.writing || peer.raw.empty()) {
        return;
    }
    peer.writing = true;
    auto data = std::make_shared<std::string>(std::move(peer.raw.front()));
    peer.raw.pop_front();
    OutPeer* p = &peer;
    asio::async_write(
        peer.socket, asio::buffer(*data),
        [self = shared_from_this(), p, gen = peer.generation, data](error_code ec, size_t) {
            if (self->stopped_ || p->generation != gen) {
                return;
            }
            p->writing = false;
            if (ec) {
                self->fail(*p, "write: " + ec.message());
                return;
            }
            if (!p->raw.empty()) {
                self->write_raw(*p, "");
            } else {
                self->flush(*p);
            }
        });
}

// Reads the HelloReply, then keeps a read pending only to learn promptly that the peer closed.
void PeerCore::read_outgoing(OutPeer& peer, uint64_t gen) {
    OutPeer* p = &peer;
    peer.socket.async_read_some(asio::buffer(peer.read_buffer), [self = shared_from_this(), p, gen](
                                                                    error_code ec, size_t n) {
        if (self->stopped_ || p->generation != gen) {
            return;
        }
        if (ec) {
            self->fail(*p, ec == asio::error::eof ? "closed by the peer" : ec.message());
            return;
        }
        self->on_outgoing_bytes(*p, gen, n);
    });
}

void PeerCore::on_outgoing_bytes(OutPeer& peer, uint64_t gen, size_t n) {
    std::string_view bytes(peer.read_buffer.data(), n);
    std::string plaintext;
    if (peer.tls != nullptr) {
        const Result<bool, std::string> fed = peer.tls->feed(bytes, plaintext);
        std::string out = peer.tls->take_output();
        if (!fed.ok()) {
            ++tls_failures_;
            fail(peer, "TLS: " + fed.error());
            return;
        }
        if (peer.tls->peer_closed()) {
            fail(peer, "closed by the peer");
            return;
        }
        if (!out.empty()) {
            if (peer.state == OutPeer::State::kConnected) {
                fail(peer, "unexpected TLS messages after the handshake");
                return;
            }
            write_raw(peer, std::move(out));  // the client's Finished, and the Hello behind it
        }
        if (plaintext.empty()) {
            read_outgoing(peer, gen);
            return;
        }
        bytes = plaintext;
    }
    if (peer.state == OutPeer::State::kConnected) {
        fail(peer, "unexpected bytes after the HelloReply");
        return;
    }
    peer.decoder.feed(bytes);
    std::string_view payload;
    const FrameDecoder::State state = peer.decoder.next(payload);
    if (state == FrameDecoder::State::kNeedMore) {
        read_outgoing(peer, gen);
        return;
    }
    proto::PeerFrame frame;
    if (state == FrameDecoder::State::kTooLarge ||
        !frame.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
        !frame.has_hello_reply() || peer.decoder.buffered_bytes() != 0) {
        fail(peer, "the answer to Hello is not a HelloReply");
        return;
    }
    if (!frame.hello_reply().accepted()) {
        ++peer.stats.refused_by_peer;
        const bool removed = frame.hello_reply().removed();
        fail(peer, "refused: " + frame.hello_reply().reason());
        if (removed && options_.on_removed) {
            options_.on_removed(peer.address.id);  // may stop the transport
        }
        return;
    }
    peer.state = OutPeer::State::kConnected;
    peer.connected_at = std::chrono::steady_clock::now();
    ++peer.stats.connects;
    peer.timer.cancel();
    log_out(peer, "connected", "connected");
    read_outgoing(peer, gen);
    flush(peer);
}

bool PeerCore::send(uint64_t to, const proto::PeerFrame& frame) {
    if (stopped_) {
        return false;
    }
    const auto it = peers_.find(to);
    if (it == peers_.end() || it->second->retired) {
        return false;
    }
    OutPeer& peer = *it->second;
    const size_t payload_bytes = frame.ByteSizeLong();
    const size_t frame_bytes = kFrameHeaderBytes + payload_bytes;
    if (payload_bytes > options_.frame_bytes_max) {
        // The peer would close the connection on it; a bug upstream, but not worth a crash.
        log_out(peer, "oversized",
                fmt::format("dropped a frame of {} bytes (bound {})", payload_bytes,
                            options_.frame_bytes_max));
        ++peer.stats.frames_dropped;
        return false;
    }
    if (peer.queue.size() + peer.inflight_frames >= options_.queue_frames_max ||
        peer.queue_bytes + peer.inflight_bytes + frame_bytes > options_.queue_bytes_max) {
        ++peer.stats.frames_dropped;  // Raft retransmits; blocking the loop would be worse
        return false;
    }
    std::string bytes;
    encode_message_frame(frame, bytes);
    RL_ASSERT(bytes.size() == frame_bytes);
    peer.queue_bytes += bytes.size();
    peer.queue.push_back(std::move(bytes));
    post_flush(peer);
    return true;
}

// Sends made in one turn of the loop (a Ready's messages) go out in one gathered write.
void PeerCore::post_flush(OutPeer& peer) {
    if (peer.flush_posted || peer.writing || peer.state != OutPeer::State::kConnected) {
        return;
    }
    peer.flush_posted = true;
    OutPeer* p = &peer;
    asio::post(io_, [self = shared_from_this(), p] {
        p->flush_posted = false;
        if (!self->stopped_) {
            self->flush(*p);
        }
    });
}

void PeerCore::flush(OutPeer& peer) {
    if (peer.state != OutPeer::State::kConnected || peer.writing || peer.queue.empty()) {
        return;
    }
    auto batch = std::make_shared<WriteBatch>();
    while (!peer.queue.empty() && batch->frames.size() < kWriteBatchFramesMax &&
           (batch->bytes == 0 || batch->bytes + peer.queue.front().size() <= kWriteBatchBytesMax)) {
        batch->bytes += peer.queue.front().size();
        batch->frames.push_back(std::move(peer.queue.front()));
        peer.queue.pop_front();
    }
    peer.queue_bytes -= batch->bytes;
    const size_t frames = batch->frames.size();
    if (peer.tls != nullptr) {
        // One TLS write for the batch: records up to 16 KiB instead of one per frame.
        std::string plaintext;
        plaintext.reserve(batch->bytes);
        for (const std::string& f : batch->frames) {
            plaintext += f;
        }
        if (const Result<bool, std::string> w = peer.tls->write(plaintext); !w.ok()) {
            fail(peer, "TLS: " + w.error());
            return;
        }
        batch->frames.assign(1, peer.tls->take_output());
    }
    // Buffers point into the strings, so they are taken after the vector stopped moving.
    batch->buffers.reserve(batch->frames.size());
    for (const std::string& f : batch->frames) {
        batch->buffers.push_back(asio::buffer(f));
    }
    peer.writing = true;
    peer.inflight_frames = frames;
    peer.inflight_bytes = batch->bytes;
    OutPeer* p = &peer;
    asio::async_write(peer.socket, batch->buffers,
                      [self = shared_from_this(), p, gen = peer.generation, batch, frames](
                          error_code ec, size_t) {
                          if (self->stopped_ || p->generation != gen) {
                              return;
                          }
                          p->writing = false;
                          p->inflight_frames = 0;
                          p->inflight_bytes = 0;
                          if (ec) {
                              self->fail(*p, "write: " + ec.message());
                              return;
                          }
                          p->stats.frames_sent += frames;
                          self->flush(*p);
                      });
}

milliseconds PeerCore::next_backoff(OutPeer& peer) {
    // A connection that stayed up a while ends the failure streak; one that drops at once (a
    // flapping peer) keeps backing off.
    if (peer.state == OutPeer::State::kConnected &&
        std::chrono::steady_clock::now() - peer.connected_at >=
            milliseconds(options_.backoff_ms_max)) {
        peer.backoff_ms = options_.backoff_ms_min;
    }
    const uint32_t high = peer.backoff_ms;
    std::uniform_int_distribution<uint32_t> jitter(high / 2, high);
    peer.backoff_ms = std::min(options_.backoff_ms_max, peer.backoff_ms * 2);
    return milliseconds(jitter(rng_));
}

// Ends the current attempt or connection and schedules the next dial. Frames being written are
// lost (the peer may or may not have them; Raft retransmits, on_link_lost tells the rest); queued
// frames wait.
void PeerCore::fail(OutPeer& peer, const std::string& why) {
    log_out(peer, "failed", why);
    const bool was_connected = peer.state == OutPeer::State::kConnected;
    const milliseconds delay = next_backoff(peer);
    error_code ignored;
    peer.socket.close(ignored);
    peer.resolver.cancel();
    const uint64_t gen = ++peer.generation;
    peer.state = OutPeer::State::kBackoff;
    peer.writing = false;
    peer.inflight_frames = 0;
    peer.inflight_bytes = 0;
    peer.decoder = FrameDecoder(kHandshakeFrameBytesMax);
    peer.tls.reset();
    peer.raw.clear();
    OutPeer* p = &peer;
    peer.timer.expires_after(delay);
    peer.timer.async_wait([self = shared_from_this(), p, gen](error_code ec) {
        if (!ec && !self->stopped_ && p->generation == gen) {
            self->dial(*p);
        }
    });
    if (was_connected && options_.on_link_lost) {
        options_.on_link_lost(peer.address.id);  // last: the handler may send to this peer
    }
}

}  // namespace

class PeerTransport::Impl {
public:
    Impl(asio::io_context& io, PeerTransportOptions options, FrameHandler handler)
        : core(std::make_shared<PeerCore>(io, std::move(options), std::move(handler))) {}
    ~Impl() { core->stop(); }

    std::shared_ptr<PeerCore> core;
};

PeerTransport::PeerTransport(asio::io_context& io,
                             PeerTransportOptions options,
                             FrameHandler handler)
    : impl_(std::make_unique<Impl>(io, std::move(options), std::move(handler))) {}

PeerTransport::~PeerTransport() = default;

Result<bool, std::string> PeerTransport::start() {
    return impl_->core->start();
}

uint16_t PeerTransport::port() const {
    return impl_->core->port();
}

bool PeerTransport::send(uint64_t to, const proto::PeerFrame& frame) {
    return impl_->core->send(to, frame);
}

void PeerTransport::set_peers(const std::vector<PeerAddress>& peers) {
    impl_->core->set_peers(peers);
}

void PeerTransport::stop() {
    impl_->core->stop();
}

std::vector<PeerStats> PeerTransport::stats() const {
    return impl_->core->stats();
}

uint64_t PeerTransport::incoming_evicted() const {
    return impl_->core->incoming_evicted();
}

uint64_t PeerTransport::tls_failures() const {
    return impl_->core->tls_failures();
}

void PeerTransport::set_tls(std::shared_ptr<const TlsContext> server,
                            std::shared_ptr<const TlsContext> client) {
    impl_->core->set_tls(std::move(server), std::move(client));
}

}  // namespace raftlock::net
