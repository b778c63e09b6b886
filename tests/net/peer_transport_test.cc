#include "net/peer_transport.h"

#include <map>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "net/frame.h"
#include "net/message_frame.h"
#include "net/raft_codec.h"
#include "proto/peer.pb.h"
#include "tests/net/net_test_util.h"
#include "tests/test_ports.h"

namespace raftlock::net {
namespace {

namespace asio = boost::asio;
using test_ports::unused_port;
using testing::RawClient;
using testing::run_for;
using testing::run_until;
using namespace std::chrono_literals;

constexpr uint64_t kCluster = 7;

PeerTransportOptions options_for(uint64_t self,
                                 uint16_t port,
                                 std::vector<PeerAddress> peers,
                                 uint64_t cluster = kCluster) {
    PeerTransportOptions o;
    o.cluster_id = cluster;
    o.self_id = self;
    o.listen_port = port;
    o.peers = std::move(peers);
    // Short backoffs keep the reconnect tests fast.
    o.backoff_ms_min = 5;
    o.backoff_ms_max = 40;
    o.connect_timeout_ms = 500;
    return o;
}

// A transport and everything its handler was given.
struct Node {
    Node(asio::io_context& io, PeerTransportOptions o)
        : transport(io, std::move(o), [this](uint64_t from, proto::PeerFrame&& frame) {
              received.emplace_back(from, std::move(frame));
          }) {
        auto started = transport.start();
        REQUIRE(started.ok());
    }

    // Indexes of the raft frames received from `from`, in arrival order.
    std::vector<uint64_t> indexes_from(uint64_t from) const {
        std::vector<uint64_t> out;
        for (const auto& [f, frame] : received) {
            if (f == from && frame.has_raft()) {
                out.push_back(frame.raft().index());
            }
        }
        return out;
    }

    PeerStats stats_of(uint64_t peer) const {
        for (const PeerStats& s : transport.stats()) {
            if (s.id == peer) {
                return s;
            }
        }
        FAIL("no such peer " << peer);
        return {};
    }

    PeerTransport transport;
    std::vector<std::pair<uint64_t, proto::PeerFrame>> received;
};

proto::PeerFrame raft_frame(uint64_t from, uint64_t to, uint64_t index, size_t data_bytes = 0) {
    raft::Message m;
    m.type = raft::MessageType::kAppend;
    m.from = from;
    m.to = to;
    m.term = 1;
    m.index = index;
    if (data_bytes > 0) {
        m.entries.push_back(
            raft::Entry{1, index + 1, raft::EntryType::kNormal, std::string(data_bytes, 'd')});
    }
    proto::PeerFrame frame;
    to_proto(m, *frame.mutable_raft());
    return frame;
}

std::vector<uint64_t> iota(uint64_t first, uint64_t count) {
    std::vector<uint64_t> out;
    for (uint64_t i = 0; i < count; ++i) {
        out.push_back(first + i);
    }
    return out;
}

std::string hello_bytes(uint64_t from, uint64_t to) {
    proto::PeerFrame frame;
    frame.mutable_hello()->set_protocol_version(kPeerProtocolVersion);
    frame.mutable_hello()->set_cluster_id(kCluster);
    frame.mutable_hello()->set_from(from);
    frame.mutable_hello()->set_to(to);
    std::string out;
    encode_message_frame(frame, out);
    return out;
}

TEST_CASE("three transports deliver frames in order, each pair both ways", "[net][peer]") {
    asio::io_context io;
    const std::map<uint64_t, uint16_t> ports = {
        {1, unused_port()}, {2, unused_port()}, {3, unused_port()}};
    std::map<uint64_t, std::unique_ptr<Node>> nodes;
    for (const auto& [id, port] : ports) {
        std::vector<PeerAddress> peers;
        for (const auto& [other, other_port] : ports) {
            if (other != id) {
                peers.push_back(PeerAddress{other, "127.0.0.1", other_port});
            }
        }
        nodes[id] = std::make_unique<Node>(io, options_for(id, port, peers));
    }
    // Sent before any connection exists: queued, then delivered oldest first.
    constexpr uint64_t kFrames = 200;
    for (uint64_t i = 0; i < kFrames; ++i) {
        for (const auto& [from, node] : nodes) {
            for (const auto& [to, other] : nodes) {
                if (to != from) {
                    REQUIRE(node->transport.send(to, raft_frame(from, to, i, i % 7 * 100)));
                }
            }
        }
    }
    REQUIRE(run_until(io, [&] {
        for (const auto& [id, node] : nodes) {
            if (node->received.size() < 2 * kFrames) {
                return false;
            }
        }
        return true;
    }));
    for (const auto& [to, node] : nodes) {
        for (const auto& [from, other] : nodes) {
            if (from != to) {
                CHECK(node->indexes_from(from) == iota(0, kFrames));
                const PeerStats s = other->stats_of(to);
                CHECK(s.connected);
                CHECK(s.frames_sent == kFrames);
                CHECK(s.frames_dropped == 0);
                CHECK(s.connects == 1);
                CHECK(node->stats_of(from).frames_received == kFrames);
            }
        }
    }
    CHECK(!nodes[1]->transport.send(1, raft_frame(1, 1, 0)));    // self is not a peer
    CHECK(!nodes[1]->transport.send(99, raft_frame(1, 99, 0)));  // nor is a stranger
}

TEST_CASE("a Hello from another cluster is refused", "[net][peer]") {
    asio::io_context io;
    const uint16_t port_a = unused_port();
    Node b(io, options_for(2, 0, {{1, "127.0.0.1", port_a}}));
    Node a(io, options_for(1, port_a, {{2, "127.0.0.1", b.transport.port()}}, kCluster + 1));
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 0)));
    REQUIRE(run_until(io, [&] {
        return b.stats_of(1).handshakes_refused >= 2 && a.stats_of(2).refused_by_peer >= 2;
    }));
    CHECK(!a.stats_of(2).connected);
    CHECK(a.stats_of(2).connects == 0);
    CHECK(a.stats_of(2).queued_frames == 1);  // kept for when a connection is accepted
    CHECK(b.received.empty());
}

TEST_CASE("a Hello from a node id the acceptor does not know is refused", "[net][peer]") {
    asio::io_context io;
    Node b(io, options_for(2, 0, {{1, "127.0.0.1", unused_port()}}));
    Node stranger(io, options_for(9, 0, {{2, "127.0.0.1", b.transport.port()}}));
    REQUIRE(stranger.transport.send(2, raft_frame(9, 2, 0)));
    REQUIRE(run_until(io, [&] { return stranger.stats_of(2).refused_by_peer >= 2; }));
    CHECK(stranger.stats_of(2).connects == 0);
    CHECK(b.received.empty());
}

TEST_CASE("a Hello meant for another node is refused", "[net][peer]") {
    asio::io_context io;
    Node b(io, options_for(2, 0, {{1, "127.0.0.1", unused_port()}}));
    // Node 1 has node 3 at node 2's address (a stale or wrong configuration).
    Node a(io, options_for(1, 0, {{3, "127.0.0.1", b.transport.port()}}));
    REQUIRE(a.transport.send(3, raft_frame(1, 3, 0)));
    REQUIRE(run_until(io, [&] {
        return b.stats_of(1).handshakes_refused >= 1 && a.stats_of(3).refused_by_peer >= 1;
    }));
    CHECK(a.stats_of(3).connects == 0);
    CHECK(b.received.empty());
}

TEST_CASE("set_peers adds peers, and a retired peer is told it was removed", "[net][peer]") {
    asio::io_context io;
    std::vector<uint64_t> removed_by;
    PeerTransportOptions a_options = options_for(1, 0, {});
    a_options.on_removed = [&](uint64_t peer) { removed_by.push_back(peer); };
    Node a(io, a_options);
    Node b(io, options_for(2, 0, {}));
    CHECK(!a.transport.send(2, raft_frame(1, 2, 0)));  // not a peer yet

    // A membership change adds them to each other.
    a.transport.set_peers({{2, "127.0.0.1", b.transport.port()}});
    b.transport.set_peers({{1, "127.0.0.1", a.transport.port()}});
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 0)));
    REQUIRE(b.transport.send(1, raft_frame(2, 1, 0)));
    REQUIRE(run_until(io, [&] { return b.received.size() == 1 && a.received.size() == 1; }));
    CHECK(b.indexes_from(1) == iota(0, 1));

    // Node 2 applies node 1's removal: it stops sending to node 1 and hangs up on it; node 1's
    // next Hello is refused as from a removed node.
    b.transport.set_peers({});
    CHECK(!b.transport.send(1, raft_frame(2, 1, 1)));
    CHECK(b.transport.stats().empty());
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 1)));
    REQUIRE(run_until(io, [&] { return !removed_by.empty(); }));
    CHECK(removed_by.front() == 2);
    CHECK(b.indexes_from(1) == iota(0, 1));  // nothing after the removal was taken

    // Re-adding (at a new address for the same id is the same path) makes it a peer again.
    b.transport.set_peers({{1, "127.0.0.1", a.transport.port()}});
    REQUIRE(b.transport.send(1, raft_frame(2, 1, 2)));
    REQUIRE(run_until(io, [&] { return a.received.size() == 2; }));
}

TEST_CASE("a sender reconnects after the receiver restarts and delivers what it queued",
          "[net][peer]") {
    asio::io_context io;
    const uint16_t port_b = unused_port();
    const auto b_options = options_for(2, port_b, {{1, "127.0.0.1", unused_port()}});
    auto b = std::make_unique<Node>(io, b_options);
    Node a(io, options_for(1, 0, {{2, "127.0.0.1", port_b}}));
    for (uint64_t i = 0; i < 10; ++i) {
        REQUIRE(a.transport.send(2, raft_frame(1, 2, i)));
    }
    REQUIRE(run_until(io, [&] { return b->received.size() == 10; }));

    b.reset();  // the receiver goes away; the sender notices the closed connection
    REQUIRE(run_until(io, [&] { return !a.stats_of(2).connected; }));
    for (uint64_t i = 10; i < 15; ++i) {
        REQUIRE(a.transport.send(2, raft_frame(1, 2, i)));
    }
    run_for(io, 50ms);  // a few failed dials while nobody listens
    CHECK(a.stats_of(2).queued_frames == 5);

    b = std::make_unique<Node>(io, b_options);  // same port
    REQUIRE(run_until(io, [&] { return b->received.size() == 5; }));
    CHECK(b->indexes_from(1) == iota(10, 5));
    CHECK(a.stats_of(2).connects == 2);
    CHECK(a.stats_of(2).queued_frames == 0);
}

TEST_CASE("a lost established link is reported once; failed dials are not", "[net][peer]") {
    asio::io_context io;
    const uint16_t port_b = unused_port();
    const auto b_options = options_for(2, port_b, {{1, "127.0.0.1", unused_port()}});
    std::vector<uint64_t> lost;
    auto a_options = options_for(1, 0, {{2, "127.0.0.1", port_b}});
    a_options.on_link_lost = [&](uint64_t peer) { lost.push_back(peer); };
    Node a(io, a_options);
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 0)));
    run_for(io, 50ms);  // dials fail while nobody listens: no link was lost
    CHECK(lost.empty());

    auto b = std::make_unique<Node>(io, b_options);
    REQUIRE(run_until(io, [&] { return b->received.size() == 1; }));
    CHECK(lost.empty());
    b.reset();  // the link goes with the receiver
    REQUIRE(run_until(io, [&] { return !lost.empty(); }));
    CHECK(lost == std::vector<uint64_t>{2});
    // The handler may resend at once; the frame waits for the redial and arrives.
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 1)));
    b = std::make_unique<Node>(io, b_options);
    REQUIRE(run_until(io, [&] { return b->received.size() == 1; }));
    CHECK(b->indexes_from(1) == std::vector<uint64_t>{1});
    CHECK(a.stats_of(2).connects == 2);
    CHECK(lost.size() == 1);
}

TEST_CASE("a stranger saying Hello as a peer does not cut the peer's live link", "[net][peer]") {
    asio::io_context io;
    std::vector<uint64_t> lost;
    Node b(io, options_for(2, 0, {{1, "127.0.0.1", unused_port()}}));
    auto a_options = options_for(1, 0, {{2, "127.0.0.1", b.transport.port()}});
    a_options.on_link_lost = [&](uint64_t peer) { lost.push_back(peer); };
    Node a(io, a_options);
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 0)));
    REQUIRE(run_until(io, [&] { return b.received.size() == 1; }));

    // Strangers one after another, each saying Hello as node 1 while node 1 keeps sending: the
    // quietest connection goes each time, and that is always the stranger before.
    uint64_t next = 1;
    for (int stranger = 0; stranger < 3; ++stranger) {
        RawClient impostor(io, b.transport.port());
        impostor.start_reading();
        impostor.write(hello_bytes(1, 2));
        for (int i = 0; i < 5; ++i) {
            REQUIRE(a.transport.send(2, raft_frame(1, 2, next++)));
            run_for(io, 2ms);
        }
        REQUIRE(run_until(io, [&] { return !impostor.received().empty(); }));  // its HelloReply
    }
    REQUIRE(run_until(io, [&] { return b.received.size() == next; }));
    CHECK(b.indexes_from(1) == iota(0, next));
    CHECK(a.stats_of(2).connects == 1);
    CHECK(lost.empty());

    // A peer that redials (its old link dead to it, silent to us) is let in, and its quiet old
    // connection goes once a third arrives: the slots per peer stay bounded.
    RawClient old_link(io, b.transport.port());
    old_link.start_reading();
    old_link.write(hello_bytes(1, 2));
    REQUIRE(run_until(io, [&] { return !old_link.received().empty(); }));
    REQUIRE(a.transport.send(2, raft_frame(1, 2, next++)));  // node 1's live link stays busy
    REQUIRE(run_until(io, [&] { return b.received.size() == next; }));
    RawClient redial(io, b.transport.port());
    redial.start_reading();
    redial.write(hello_bytes(1, 2));
    REQUIRE(run_until(io, [&] { return old_link.closed_by_server(); }));
    CHECK_FALSE(redial.closed_by_server());
    REQUIRE(a.transport.send(2, raft_frame(1, 2, next++)));
    REQUIRE(run_until(io, [&] { return b.received.size() == next; }));
    CHECK(a.stats_of(2).connects == 1);
}

TEST_CASE("a full send queue drops and counts, never blocks", "[net][peer]") {
    asio::io_context io;
    const uint16_t port_b = unused_port();  // nobody listens yet
    auto a_options = options_for(1, 0, {{2, "127.0.0.1", port_b}});
    a_options.queue_frames_max = 4;
    Node a(io, a_options);
    size_t accepted = 0;
    for (uint64_t i = 0; i < 10; ++i) {
        accepted += a.transport.send(2, raft_frame(1, 2, i)) ? 1 : 0;
    }
    CHECK(accepted == 4);
    CHECK(a.stats_of(2).frames_dropped == 6);
    CHECK(a.stats_of(2).queued_frames == 4);

    SECTION("the bytes bound holds too") {
        auto o = options_for(3, 0, {{2, "127.0.0.1", port_b}});
        o.queue_bytes_max = 3000;
        Node c(io, o);
        CHECK(c.transport.send(2, raft_frame(3, 2, 0, 1000)));
        CHECK(c.transport.send(2, raft_frame(3, 2, 1, 1000)));
        CHECK(!c.transport.send(2, raft_frame(3, 2, 2, 1000)));
        CHECK(c.stats_of(2).frames_dropped == 1);
        CHECK(c.stats_of(2).queued_bytes <= 3000);
    }
    SECTION("the queued frames go out when the peer appears") {
        Node b(io, options_for(2, port_b, {{1, "127.0.0.1", unused_port()}}));
        REQUIRE(run_until(io, [&] { return b.received.size() == 4; }));
        CHECK(b.indexes_from(1) == iota(0, 4));
    }
}

TEST_CASE("garbage on the peer port closes only that connection", "[net][peer]") {
    asio::io_context io;
    // Node 3 exists only for the attacker to claim: a Hello from node 1 would be taken as node 1
    // reconnecting, which may close node 1's quietest connection by design.
    Node b(io,
           options_for(2, 0, {{1, "127.0.0.1", unused_port()}, {3, "127.0.0.1", unused_port()}}));
    Node a(io, options_for(1, 0, {{2, "127.0.0.1", b.transport.port()}}));
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 0)));
    REQUIRE(run_until(io, [&] { return b.received.size() == 1; }));

    std::string bad_frame;
    append_frame(bad_frame, "\xff\xff\xff\xff");  // not a PeerFrame
    std::string oversized("\x7f\xff\xff\xff", 4);
    std::string raft_before_hello;
    encode_message_frame(raft_frame(1, 2, 100), raft_before_hello);
    std::string second_hello = hello_bytes(3, 2) + hello_bytes(3, 2);
    const std::vector<std::string> attacks = {bad_frame, oversized, raft_before_hello,
                                              second_hello};
    for (const std::string& bytes : attacks) {
        RawClient bad(io, b.transport.port());
        bad.start_reading();
        bad.write(bytes);
        REQUIRE(run_until(io, [&] { return bad.closed_by_server(); }));
    }
    // The real connection was untouched: same connection, frames still flow in order.
    for (uint64_t i = 1; i < 20; ++i) {
        REQUIRE(a.transport.send(2, raft_frame(1, 2, i)));
    }
    REQUIRE(run_until(io, [&] { return b.received.size() == 20; }));
    CHECK(b.indexes_from(1) == iota(0, 20));
    CHECK(a.stats_of(2).connects == 1);
}

TEST_CASE("a connection that never says Hello is closed at the deadline", "[net][peer]") {
    asio::io_context io;
    auto o = options_for(2, 0, {{1, "127.0.0.1", unused_port()}});
    o.connect_timeout_ms = 50;
    Node b(io, o);
    RawClient silent(io, b.transport.port());
    silent.start_reading();
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(run_until(io, [&] { return silent.closed_by_server(); }));
    CHECK(std::chrono::steady_clock::now() - start >= 40ms);
}

TEST_CASE("stop closes everything and the handler is not called afterwards", "[net][peer]") {
    asio::io_context io;
    Node b(io, options_for(2, 0, {{1, "127.0.0.1", unused_port()}}));
    Node a(io, options_for(1, 0, {{2, "127.0.0.1", b.transport.port()}}));
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 0)));
    REQUIRE(run_until(io, [&] { return b.received.size() == 1; }));
    REQUIRE(a.transport.send(2, raft_frame(1, 2, 1)));
    b.transport.stop();
    run_for(io, 30ms);
    CHECK(b.received.size() == 1);
    CHECK(!b.transport.send(1, raft_frame(2, 1, 0)));
    a.transport.stop();
    CHECK(!a.transport.send(2, raft_frame(1, 2, 2)));
}

TEST_CASE("start names the address when it cannot listen", "[net][peer]") {
    asio::io_context io;
    Node b(io, options_for(2, 0, {}));
    PeerTransport clash(io, options_for(3, b.transport.port(), {}), [](uint64_t, auto&&) {});
    auto r = clash.start();
    REQUIRE(!r.ok());
    CHECK_THAT(r.error(), Catch::StartsWith("127.0.0.1:" + std::to_string(b.transport.port())));
    auto o = options_for(4, 0, {});
    o.listen_host = "not-an-address";
    PeerTransport bad_host(io, o, [](uint64_t, auto&&) {});
    auto r2 = bad_host.start();
    REQUIRE(!r2.ok());
    CHECK_THAT(r2.error(), Catch::Contains("not an IP address"));
}

}  // namespace
}  // namespace raftlock::net
