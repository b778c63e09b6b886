#include "net/client_listener.h"

#include <map>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "net/frame.h"
#include "net/message_frame.h"
#include "proto/client.pb.h"
#include "tests/net/net_test_util.h"

namespace raftlock::net {
// Named, not anonymous: in a unity build its helpers stay apart from other test files'.
namespace client_listener_test {

namespace asio = boost::asio;
using testing::RawClient;
using testing::run_for;
using testing::run_until;
using namespace std::chrono_literals;

// Records every call; can answer each request (echoing its id) or close from inside the call.
class FakeHandler final : public ClientHandler {
public:
    void on_client_open(ConnectionId id, const std::string& remote) override {
        CHECK(!remote.empty());
        CHECK(open.insert(id).second);
    }
    // This port speaks no TLS: never called.
    void on_client_certificate(ConnectionId id, const std::string& name) override {
        FAIL("a certificate named " << name << " on connection " << id << " without TLS");
    }
    void on_client_request(ConnectionId id, proto::Request&& request) override {
        CHECK(open.count(id) == 1);
        CHECK(closed.count(id) == 0);
        requests[id].push_back(request);
        if (listener != nullptr && answer) {
            proto::ServerMessage reply;
            reply.mutable_response()->set_request_id(request.request_id());
            listener->send(id, reply);
        }
        if (listener != nullptr && close_after_request) {
            listener->close(id);
        }
    }
    void on_client_close(ConnectionId id) override {
        CHECK(open.count(id) == 1);
        CHECK(closed.insert(id).second);
    }

    ClientListener* listener = nullptr;
    bool answer = false;
    bool close_after_request = false;
    std::set<ConnectionId> open;
    std::set<ConnectionId> closed;
    std::map<ConnectionId, std::vector<proto::Request>> requests;
};

struct Fixture {
    explicit Fixture(ClientListenerOptions options = {}) : listener(io, options, handler) {
        handler.listener = &listener;
        REQUIRE(listener.start().ok());
    }
    // The id of the n-th connection the handler saw open (ids are handed out in accept order).
    ConnectionId nth_open(size_t n) const {
        REQUIRE(handler.open.size() > n);
        return *std::next(handler.open.begin(), static_cast<long>(n));
    }

    asio::io_context io;
    FakeHandler handler;
    ClientListener listener;
};

std::string request_frame(uint64_t request_id, const std::string& path = "/a") {
    proto::Request request;
    request.set_request_id(request_id);
    request.mutable_get()->set_path(path);
    std::string out;
    encode_message_frame(request, out);
    return out;
}

// Every ServerMessage in `bytes` (whole frames only).
std::vector<proto::ServerMessage> messages_in(const std::string& bytes) {
    FrameDecoder decoder(64u << 20);
    decoder.feed(bytes);
    std::vector<proto::ServerMessage> out;
    std::string_view payload;
    while (decoder.next(payload) == FrameDecoder::State::kFrame) {
        proto::ServerMessage m;
        REQUIRE(m.ParseFromArray(payload.data(), static_cast<int>(payload.size())));
        out.push_back(m);
    }
    return out;
}

// The one BAD_REQUEST a misbehaving client gets before the server closes.
proto::Response only_response(const RawClient& client) {
    const auto messages = messages_in(client.received());
    REQUIRE(messages.size() == 1);
    REQUIRE(messages[0].has_response());
    return messages[0].response();
}

TEST_CASE("requests reach the handler in order and replies reach the client", "[net][client]") {
    Fixture f;
    f.handler.answer = true;
    RawClient c(f.io, f.listener.port());
    c.start_reading();
    std::string batch;
    for (uint64_t id = 1; id <= 50; ++id) {
        batch += request_frame(id);
    }
    c.write(batch.substr(0, 7));  // a split frame is reassembled
    c.write(batch.substr(7));
    REQUIRE(run_until(f.io, [&] { return messages_in(c.received()).size() == 50; }));
    const ConnectionId id = f.nth_open(0);
    REQUIRE(f.handler.requests[id].size() == 50);
    const auto replies = messages_in(c.received());
    for (uint64_t i = 0; i < 50; ++i) {
        CHECK(f.handler.requests[id][i].request_id() == i + 1);
        CHECK(replies[i].response().request_id() == i + 1);
    }
    CHECK(f.listener.stats().connections == 1);
    CHECK(f.listener.stats().accepted == 1);
    c.close();
    REQUIRE(run_until(f.io, [&] { return f.handler.closed.count(id) == 1; }));
    CHECK(f.listener.stats().connections == 0);
}

TEST_CASE("garbage gets a BAD_REQUEST saying why, then the connection closes", "[net][client]") {
    Fixture f;
    RawClient c(f.io, f.listener.port());
    c.start_reading();
    std::string garbage;
    append_frame(garbage, "\xff\xff\xff\xff\xff");
    c.write(request_frame(1) + garbage + request_frame(2));
    REQUIRE(run_until(f.io, [&] { return c.closed_by_server(); }));
    const proto::Response r = only_response(c);
    CHECK(r.code() == proto::BAD_REQUEST);
    CHECK_THAT(r.message(), Catch::Contains("not a Request"));
    CHECK(f.listener.stats().protocol_errors == 1);
    const ConnectionId id = f.nth_open(0);
    CHECK(f.handler.requests[id].size() == 1);  // the request after the garbage is not handled
    REQUIRE(run_until(f.io, [&] { return f.handler.closed.count(id) == 1; }));
}

TEST_CASE("a request without a body gets BAD_REQUEST with its request id", "[net][client]") {
    Fixture f;
    RawClient c(f.io, f.listener.port());
    c.start_reading();
    proto::Request empty;
    empty.set_request_id(77);
    std::string bytes;
    encode_message_frame(empty, bytes);
    c.write(bytes);
    REQUIRE(run_until(f.io, [&] { return c.closed_by_server(); }));
    const proto::Response r = only_response(c);
    CHECK(r.code() == proto::BAD_REQUEST);
    CHECK(r.request_id() == 77);
    CHECK_THAT(r.message(), Catch::Contains("no body"));
}

TEST_CASE("an oversized frame is refused before its payload is read", "[net][client]") {
    ClientListenerOptions o;
    o.frame_bytes_max = 1024;
    Fixture f(o);
    RawClient c(f.io, f.listener.port());
    c.start_reading();
    std::string big;
    append_frame(big, std::string(200000, 'x'));  // sent whole: the server must not reset on it
    c.write(big);
    REQUIRE(run_until(f.io, [&] { return c.closed_by_server(); }));
    const proto::Response r = only_response(c);
    CHECK(r.code() == proto::BAD_REQUEST);
    CHECK_THAT(r.message(), Catch::Contains("200000 bytes") && Catch::Contains("1024"));
    CHECK(f.listener.stats().protocol_errors == 1);
}

TEST_CASE("a partial frame with no progress is closed; an idle connection is not",
          "[net][client]") {
    ClientListenerOptions o;
    o.message_deadline_ms = 60;
    Fixture f(o);
    RawClient idle(f.io, f.listener.port());
    idle.start_reading();
    idle.write(request_frame(1));  // whole frames only, then silence
    RawClient stuck(f.io, f.listener.port());
    stuck.start_reading();
    stuck.write(request_frame(2).substr(0, 6));
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(run_until(f.io, [&] { return stuck.closed_by_server(); }));
    CHECK(std::chrono::steady_clock::now() - start >= 50ms);
    CHECK(stuck.received().empty());
    CHECK(f.listener.stats().idle_timeouts == 1);
    run_for(f.io, 100ms);
    CHECK(!idle.closed_by_server());
    CHECK(f.listener.stats().connections == 1);
}

// Issue 16, row 7: each byte used to restart the deadline, so a client sending one byte every
// few milliseconds (a second, in the report) kept its connection forever.
TEST_CASE("a frame trickled in byte by byte is cut off at its deadline", "[net][client]") {
    ClientListenerOptions o;
    o.message_deadline_ms = 60;
    Fixture f(o);
    RawClient slow(f.io, f.listener.port());
    slow.start_reading();
    const std::string frame = request_frame(3, std::string(40, 'p'));
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < frame.size() && !slow.closed_by_server(); ++i) {
        slow.write(frame.substr(i, 1));
        run_for(f.io, 5ms);  // 5 ms per byte, 200+ ms in all
    }
    REQUIRE(run_until(f.io, [&] { return slow.closed_by_server(); }));
    CHECK(std::chrono::steady_clock::now() - start < 150ms);
    CHECK(f.handler.requests.empty());
    CHECK(f.listener.stats().idle_timeouts == 1);
}

TEST_CASE("a client whose reads always end mid-frame is not cut off while frames complete",
          "[net][client]") {
    ClientListenerOptions o;
    o.message_deadline_ms = 60;
    Fixture f(o);
    RawClient pipeline(f.io, f.listener.port());
    pipeline.start_reading();
    // Each write ends one frame and begins the next: a partial frame is always buffered, for
    // 200+ ms in all, but a frame completes every 10 ms.
    std::string stream;
    for (uint64_t id = 1; id <= 21; ++id) {
        stream += request_frame(id);
    }
    const size_t step = request_frame(1).size();
    size_t sent = 0;
    for (size_t cut = step / 2; cut < stream.size(); cut += step) {
        pipeline.write(stream.substr(sent, cut - sent));
        sent = cut;
        run_for(f.io, 10ms);
    }
    pipeline.write(stream.substr(sent));
    const auto received = [&] {
        return f.handler.requests.empty() ? size_t{0} : f.handler.requests.begin()->second.size();
    };
    REQUIRE(run_until(f.io, [&] { return received() == 21; }));
    CHECK(!pipeline.closed_by_server());
    CHECK(f.listener.stats().idle_timeouts == 0);
}

TEST_CASE("a connection that never sends a whole first frame is closed", "[net][client]") {
    ClientListenerOptions o;
    o.message_deadline_ms = 60;
    Fixture f(o);
    RawClient silent(f.io, f.listener.port());
    silent.start_reading();
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(run_until(f.io, [&] { return silent.closed_by_server(); }));
    CHECK(std::chrono::steady_clock::now() - start >= 50ms);
    CHECK(f.listener.stats().idle_timeouts == 1);
}

TEST_CASE("a client that does not read is closed when its queue passes the bound",
          "[net][client]") {
    ClientListenerOptions o;
    o.send_queue_bytes_max = 256 * 1024;
    Fixture f(o);
    RawClient reader(f.io, f.listener.port());
    reader.start_reading();
    RawClient deaf(f.io, f.listener.port(), 4096);  // never reads
    REQUIRE(run_until(f.io, [&] { return f.handler.open.size() == 2; }));
    const ConnectionId reader_id = f.nth_open(0);
    const ConnectionId deaf_id = f.nth_open(1);
    proto::ServerMessage big;
    big.mutable_response()->set_message(std::string(32 * 1024, 'm'));
    // Kernel buffers take a few MiB first; 64 MiB is a bound on the loop, not an expectation.
    size_t sent = 0;
    for (; sent < 2048 && f.listener.stats().slow_consumers == 0; ++sent) {
        f.listener.send(deaf_id, big);
        testing::poll(f.io);
    }
    CHECK(f.listener.stats().slow_consumers == 1);
    REQUIRE(run_until(f.io, [&] { return f.handler.closed.count(deaf_id) == 1; }));
    // The reader is unaffected.
    proto::ServerMessage hello;
    hello.mutable_response()->set_request_id(5);
    f.listener.send(reader_id, hello);
    REQUIRE(run_until(f.io, [&] { return messages_in(reader.received()).size() == 1; }));
    CHECK(f.listener.stats().connections == 1);
}

TEST_CASE("a connection over the output bound is no longer open before on_close arrives",
          "[net][client]") {
    // The protocol asks is_open() to skip work (a pipelined backlog) for a connection that is
    // gone; it must turn false at the send that crosses the bound, not a turn of the loop later.
    ClientListenerOptions o;
    o.send_queue_bytes_max = 64 * 1024;
    Fixture f(o);
    RawClient deaf(f.io, f.listener.port(), 4096);  // never reads
    REQUIRE(run_until(f.io, [&] { return f.handler.open.size() == 1; }));
    const ConnectionId id = f.nth_open(0);
    CHECK(f.listener.is_open(id));
    proto::ServerMessage huge;  // one reply larger than the whole bound, into an empty queue
    huge.mutable_response()->set_message(std::string(o.send_queue_bytes_max, 'm'));
    f.listener.send(id, huge);
    CHECK(f.listener.stats().slow_consumers == 1);
    CHECK_FALSE(f.listener.is_open(id));
    CHECK(f.handler.closed.count(id) == 0);
    REQUIRE(run_until(f.io, [&] { return f.handler.closed.count(id) == 1; }));
    CHECK_FALSE(f.listener.is_open(id));
    CHECK(f.listener.stats().connections == 0);
}

TEST_CASE("the default output bound holds eight of the largest replies", "[net][client]") {
    CHECK(kSendQueueBytesMaxDefault == size_t{32} << 20);
    CHECK(ClientListenerOptions{}.send_queue_bytes_max == kSendQueueBytesMaxDefault);
    CHECK(StreamListenerOptions{}.send_queue_bytes_max >=
          8 * ClientListenerOptions{}.frame_bytes_max);
}

TEST_CASE("connections above the limit get UNAVAILABLE and are closed", "[net][client]") {
    ClientListenerOptions o;
    o.connections_max = 3;
    Fixture f(o);
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < 3; ++i) {
        clients.push_back(std::make_unique<RawClient>(f.io, f.listener.port()));
        clients.back()->start_reading();
    }
    REQUIRE(run_until(f.io, [&] { return f.listener.stats().connections == 3; }));
    for (int i = 0; i < 2; ++i) {
        clients.push_back(std::make_unique<RawClient>(f.io, f.listener.port()));
        clients.back()->start_reading();
    }
    REQUIRE(run_until(f.io, [&] { return clients[3]->closed_by_server(); }));
    REQUIRE(run_until(f.io, [&] { return clients[4]->closed_by_server(); }));
    CHECK(only_response(*clients[3]).code() == proto::UNAVAILABLE);
    CHECK(f.listener.stats().refused == 2);
    CHECK(f.listener.stats().connections == 3);
    CHECK(f.handler.open.size() == 3);
    // A slot freed is a slot usable again.
    clients[0]->close();
    REQUIRE(run_until(f.io, [&] { return f.listener.stats().connections == 2; }));
    RawClient late(f.io, f.listener.port());
    late.start_reading();
    REQUIRE(run_until(f.io, [&] { return f.listener.stats().connections == 3; }));
    run_for(f.io, 20ms);
    CHECK(!late.closed_by_server());
}

TEST_CASE("a well-behaved client keeps working while others misbehave", "[net][client]") {
    ClientListenerOptions o;
    o.frame_bytes_max = 4096;
    o.message_deadline_ms = 50;
    Fixture f(o);
    f.handler.answer = true;
    RawClient good(f.io, f.listener.port());
    good.start_reading();
    std::vector<std::unique_ptr<RawClient>> bad;
    uint64_t next_id = 1;
    for (int round = 0; round < 5; ++round) {
        good.write(request_frame(next_id++));
        for (const std::string& bytes :
             {std::string("\0\0\0\2\xff\xff", 6), std::string("\0\1\0\0", 4),
              request_frame(9).substr(0, 5)}) {
            bad.push_back(std::make_unique<RawClient>(f.io, f.listener.port()));
            bad.back()->start_reading();
            bad.back()->write(bytes);
        }
        good.write(request_frame(next_id++));
        run_for(f.io, 5ms);
    }
    REQUIRE(run_until(f.io, [&] {
        for (const auto& c : bad) {
            if (!c->closed_by_server()) {
                return false;
            }
        }
        return messages_in(good.received()).size() == next_id - 1;
    }));
    CHECK(!good.closed_by_server());
    CHECK(f.listener.stats().protocol_errors == 10);
    CHECK(f.listener.stats().idle_timeouts == 5);
}

TEST_CASE("close after flush delivers queued replies first", "[net][client]") {
    Fixture f;
    f.handler.answer = true;
    f.handler.close_after_request = true;
    RawClient c(f.io, f.listener.port());
    c.start_reading();
    c.write(request_frame(1) + request_frame(2));
    REQUIRE(run_until(f.io, [&] { return c.closed_by_server(); }));
    const auto replies = messages_in(c.received());
    REQUIRE(replies.size() == 1);  // the second request arrived after the close: discarded
    CHECK(replies[0].response().request_id() == 1);
    REQUIRE(run_until(f.io, [&] { return f.handler.closed.size() == 1; }));
}

TEST_CASE("stop closes every connection without further handler calls", "[net][client]") {
    Fixture f;
    RawClient c(f.io, f.listener.port());
    c.start_reading();
    REQUIRE(run_until(f.io, [&] { return f.handler.open.size() == 1; }));
    f.listener.stop();
    REQUIRE(run_until(f.io, [&] { return c.closed_by_server(); }));
    run_for(f.io, 10ms);
    CHECK(f.handler.closed.empty());
    f.listener.send(f.nth_open(0), proto::ServerMessage());  // ignored, no crash
}

}  // namespace client_listener_test
}  // namespace raftlock::net
