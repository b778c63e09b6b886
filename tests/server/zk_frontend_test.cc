// The ZooKeeper front end's connection logic: the handshake (new session, reconnect, a wrong
// password), each operation's native request and jute reply, reply order under pipelining, the
// read/write barrier, watch events, and what closes a connection. The backend here only records
// native requests and lets the test answer them in any order.

#include "server/zk_frontend.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "server/request_codec.h"
#include "tests/server/zk_frontend_fixture.h"

// Inside the fixture's namespace, so its names are found before any other test file's in a unity
// build; named, not anonymous, so this file's helpers stay apart from theirs too.
namespace raftlock::server::zk_frontend_fixture {
namespace zk_frontend_test {

namespace zk = net::zk;

TEST_CASE("a new session is opened with the timeout clamped and answered with its password",
          "[zk]") {
    Fixture f;
    zk::ConnectRequest connect;
    connect.timeout_ms = 500;  // below the minimum
    f.send_connect(connect);
    REQUIRE(f.backend.requests.size() == 1);
    REQUIRE(f.backend.requests[0].has_open_session());
    CHECK(f.backend.requests[0].open_session().timeout_ms() == 2000);
    proto::Response opened = ok(40);
    opened.mutable_open_session()->set_session_id(9);
    opened.mutable_open_session()->set_timeout_ms(2000);
    f.answer(0, opened);
    const std::vector<std::string> sent = messages(f.output.sent);
    REQUIRE(sent.size() == 1);
    const std::string& m = sent[0];
    CHECK(net::load_u32(m, 0) == 0);     // protocol version
    CHECK(net::load_u32(m, 4) == 2000);  // negotiated timeout
    CHECK(net::load_u64(m, 8) == 9);     // session id
    CHECK(string_at(m, 16) == f.frontend.password_of(9));
    CHECK(f.frontend.password_of(9).size() == zk::kPasswordBytes);
    CHECK(f.frontend.password_of(9) != f.frontend.password_of(10));
    CHECK_FALSE(f.output.closed);
}

TEST_CASE("a reconnect attaches the session and numbers writes from its first seq", "[zk]") {
    Fixture f;
    zk::ConnectRequest connect;
    connect.session_id = 9;
    connect.timeout_ms = 10000;
    connect.password = f.frontend.password_of(9);
    f.send_connect(connect);
    REQUIRE(f.backend.requests.size() == 1);
    REQUIRE(f.backend.requests[0].has_attach_session());
    CHECK(f.backend.requests[0].session_id() == 9);
    proto::Response attached = ok(60);
    attached.mutable_attach_session()->set_first_seq(5000);
    attached.mutable_attach_session()->set_timeout_ms(8000);
    f.answer(0, attached);
    const std::vector<std::string> sent = messages(std::exchange(f.output.sent, {}));
    REQUIRE(sent.size() == 1);
    CHECK(net::load_u32(sent[0], 4) == 8000);  // the session's own timeout
    CHECK(net::load_u64(sent[0], 8) == 9);

    f.send(create_request(1, "/a", zk::CreateMode::kEphemeral));
    f.send(create_request(2, "/b", zk::CreateMode::kPersistent));
    REQUIRE(f.backend.requests.size() == 3);
    CHECK(f.backend.requests[1].seq() == 5000);
    CHECK(f.backend.requests[1].create().kind() == proto::EPHEMERAL);
    CHECK(f.backend.requests[2].seq() == 5001);
    CHECK(f.backend.requests[2].ack_seq() == 4999);  // 5000 is not answered yet
}

TEST_CASE("a wrong password is answered as an expired session", "[zk]") {
    Fixture f;
    zk::ConnectRequest connect;
    connect.session_id = 9;
    connect.password = std::string(16, 'x');
    f.send_connect(connect);
    CHECK(f.backend.requests.empty());
    const std::vector<std::string> sent = messages(f.output.sent);
    REQUIRE(sent.size() == 1);
    CHECK(net::load_u32(sent[0], 4) == 0);  // timeout 0, session 0: expired
    CHECK(net::load_u64(sent[0], 8) == 0);
    CHECK(f.output.closed);
}

TEST_CASE("an expired session on reconnect is answered as such", "[zk]") {
    Fixture f;
    zk::ConnectRequest connect;
    connect.session_id = 9;
    connect.password = f.frontend.password_of(9);
    f.send_connect(connect);
    proto::Response expired;
    expired.set_code(proto::SESSION_EXPIRED);
    f.answer(0, expired);
    const std::vector<std::string> sent = messages(f.output.sent);
    REQUIRE(sent.size() == 1);
    CHECK(net::load_u32(sent[0], 4) == 0);
    CHECK(f.output.closed);
}

TEST_CASE("a read waits for the writes before it; replies leave in request order", "[zk]") {
    Fixture f;
    f.open();
    f.send(create_request(1, "/a", zk::CreateMode::kPersistent));
    f.send(create_request(2, "/b", zk::CreateMode::kPersistent));
    f.send(path_request(3, zk::OpCode::kGetData, "/a"));
    f.send(path_request(4, zk::OpCode::kExists, "/b"));
    // The two writes are in flight together; the reads wait for both.
    REQUIRE(f.backend.requests.size() == 2);
    proto::Response b = ok(52);
    b.mutable_node()->set_path("/b");
    f.answer(1, b);
    CHECK(f.output.sent.empty());  // /a's reply comes first
    REQUIRE(f.backend.requests.size() == 2);
    proto::Response a = ok(51);
    a.mutable_node()->set_path("/a");
    f.answer(0, a);
    std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 2);
    CHECK(replies[0].xid == 1);
    CHECK(string_at(replies[0].body) == "/a");
    CHECK(replies[1].xid == 2);
    CHECK(replies[1].zxid == 52);
    // Now both reads go together.
    REQUIRE(f.backend.requests.size() == 4);
    CHECK(f.backend.requests[2].get().path() == "/a");
    CHECK(f.backend.requests[3].exists().path() == "/b");
    proto::Response missing = ok(53);
    missing.mutable_exists()->set_exists(false);
    f.answer(3, missing);
    proto::Response got = ok(53);
    got.mutable_get()->set_data("d");
    got.mutable_get()->mutable_stat()->set_version(4);
    f.answer(2, got);
    replies = f.take_replies();
    REQUIRE(replies.size() == 2);
    CHECK(replies[0].xid == 3);
    CHECK(replies[0].err == 0);
    CHECK(string_at(replies[0].body) == "d");
    CHECK(replies[1].xid == 4);
    CHECK(replies[1].err == static_cast<int32_t>(zk::Err::kNoNode));
}

TEST_CASE("local reads ask for no ReadIndex round; a sync goes alone and the reads wait", "[zk]") {
    ZkFrontendOptions options = Fixture::defaults();
    options.local_reads = true;
    Fixture f(options);
    f.open();
    f.send(path_request(1, zk::OpCode::kGetData, "/a"));
    f.send(path_request(2, zk::OpCode::kSync, "/a"));
    f.send(path_request(3, zk::OpCode::kExists, "/a"));
    f.send(path_request(4, zk::OpCode::kExists, "/b"));
    // The read before the sync goes first, alone: the sync waits for its answer.
    REQUIRE(f.backend.requests.size() == 1);
    CHECK(f.backend.requests[0].local_read());
    proto::Response got = ok(50);
    got.mutable_get()->set_data("d");
    f.answer(0, got);
    // Then the sync, a linearizable read; the reads after it wait until it is answered.
    REQUIRE(f.backend.requests.size() == 2);
    CHECK(f.backend.requests[1].exists().path() == "/a");
    CHECK_FALSE(f.backend.requests[1].local_read());
    proto::Response synced = ok(55);
    synced.mutable_exists()->set_exists(true);
    f.answer(1, synced);
    REQUIRE(f.backend.requests.size() == 4);
    CHECK(f.backend.requests[2].local_read());
    CHECK(f.backend.requests[3].local_read());
    CHECK(f.take_replies().size() == 2);

    // Without the option every read is linearizable and a sync travels with them.
    Fixture linear;
    linear.open();
    linear.send(path_request(1, zk::OpCode::kGetData, "/a"));
    linear.send(path_request(2, zk::OpCode::kSync, "/a"));
    linear.send(path_request(3, zk::OpCode::kExists, "/a"));
    REQUIRE(linear.backend.requests.size() == 3);  // all three together
    CHECK_FALSE(linear.backend.requests[0].local_read());
    CHECK_FALSE(linear.backend.requests[2].local_read());
}

TEST_CASE("writes number their seqs and ack only the writes answered before them", "[zk]") {
    Fixture f;
    f.open();
    f.send(create_request(1, "/a", zk::CreateMode::kPersistent));
    f.send(path_request(2, zk::OpCode::kGetData, "/a"));
    f.send(create_request(3, "/b", zk::CreateMode::kPersistent));
    f.send(create_request(4, "/c", zk::CreateMode::kPersistent));
    REQUIRE(f.backend.requests.size() == 1);
    f.answer(0, ok(51));
    REQUIRE(f.backend.requests.size() == 2);  // the read
    proto::Response got = ok(51);
    got.mutable_get()->set_data("d");
    f.answer(1, got);
    REQUIRE(f.backend.requests.size() == 4);  // both later writes, together
    f.answer(3, ok(53));                      // the second of them first
    f.answer(2, ok(52));
    f.send(create_request(5, "/d", zk::CreateMode::kPersistent));
    REQUIRE(f.backend.requests.size() == 5);
    const std::vector<std::pair<uint64_t, uint64_t>> seq_ack = {{1, 0}, {2, 1}, {3, 1}, {4, 3}};
    const size_t writes[] = {0, 2, 3, 4};
    for (size_t i = 0; i < 4; ++i) {
        const proto::Request& w = f.backend.requests[writes[i]];
        CHECK(w.session_id() == 9);
        CHECK(std::make_pair(w.seq(), w.ack_seq()) == seq_ack[i]);
        // What the Replica checks of every session write (exactly-once: ack_seq < seq).
        CHECK(to_command(w, 1).ok());
    }
    CHECK(f.take_replies().size() == 4);
}

TEST_CASE("addWatch sets a native persistent watch and answers an ErrorResponse record", "[zk]") {
    Fixture f;
    f.open();
    f.send(zk::Request{1, zk::OpCode::kAddWatch, zk::AddWatchRequest{"/locks", 1}});
    f.send(zk::Request{2, zk::OpCode::kAddWatch, zk::AddWatchRequest{"/locks", 7}});
    REQUIRE(f.backend.requests.size() == 1);
    CHECK(f.backend.requests[0].add_watch().path() == "/locks");
    CHECK(f.backend.requests[0].add_watch().recursive());
    f.answer(0, ok());
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 2);
    CHECK(replies[0].xid == 1);
    CHECK(replies[0].err == 0);
    // The Java client reads a 4-byte ErrorResponse after a successful addWatch.
    CHECK(replies[0].body == std::string(4, '\0'));
    CHECK(replies[1].err == static_cast<int32_t>(zk::Err::kBadArguments));  // no mode 7
}

TEST_CASE("errors map to ZooKeeper's codes, and a refused op is answered in its turn", "[zk]") {
    Fixture f;
    f.open();
    f.send(create_request(1, "/a", zk::CreateMode::kPersistent));
    f.send(zk::Request{2, zk::OpCode::kSetAcl, zk::SetAclRequest{"/a", {}, -1}});
    proto::Response exists_already = ok();
    exists_already.set_code(proto::NODE_EXISTS);
    f.answer(0, exists_already);
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 2);
    CHECK(replies[0].err == static_cast<int32_t>(zk::Err::kNodeExists));
    CHECK(replies[1].xid == 2);
    CHECK(replies[1].err == static_cast<int32_t>(zk::Err::kInvalidAcl));  // an empty ACL
    CHECK_FALSE(f.output.closed);
}

TEST_CASE("no leader, an unknown outcome or bad bytes close the connection", "[zk]") {
    SECTION("unavailable") {
        Fixture f;
        f.open();
        f.send(create_request(1, "/a", zk::CreateMode::kPersistent));
        proto::Response unavailable = ok();
        unavailable.set_code(proto::UNAVAILABLE);
        f.answer(0, unavailable);
        CHECK(f.output.closed);
        CHECK(f.output.sent.empty());
    }
    SECTION("timeout") {
        Fixture f;
        f.open();
        f.send(create_request(1, "/a", zk::CreateMode::kPersistent));
        proto::Response timeout = ok();
        timeout.set_code(proto::TIMEOUT);
        f.answer(0, timeout);
        CHECK(f.output.closed);
    }
    SECTION("a truncated request") {
        Fixture f;
        f.open();
        f.frontend.on_zk_message(kConn, std::string("\0\0\0\1\0\0", 6));
        CHECK(f.output.closed);
        CHECK(f.backend.requests.empty());
    }
}

TEST_CASE("a watch event goes out at once, as a notification", "[zk]") {
    Fixture f;
    f.open();
    f.send(path_request(1, zk::OpCode::kExists, "/w", true));
    REQUIRE(f.backend.requests.size() == 1);
    CHECK(f.backend.requests[0].exists().watch());
    proto::ServerMessage event;
    event.mutable_watch_event()->set_path("/w");
    event.mutable_watch_event()->set_type(proto::NODE_CREATED);
    event.mutable_watch_event()->set_zxid(70);
    f.frontend.on_server_message(kConn, event);
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].xid == zk::kXidNotification);
    CHECK(replies[0].zxid == 70);
    CHECK(net::load_u32(replies[0].body, 0) == static_cast<uint32_t>(zk::EventType::kNodeCreated));
    CHECK(net::load_u32(replies[0].body, 4) ==
          static_cast<uint32_t>(zk::KeeperState::kSyncConnected));
    CHECK(string_at(replies[0].body, 8) == "/w");
}

TEST_CASE("a connection that pipelines past the limit stops being read until it drains", "[zk]") {
    Fixture f;
    f.open();
    for (int32_t xid = 1; xid <= 8; ++xid) {
        f.send(path_request(xid, zk::OpCode::kExists, "/p"));
    }
    CHECK(f.output.paused);
    for (size_t i = 0; i < f.backend.requests.size(); ++i) {
        proto::Response r = ok();
        r.mutable_exists()->set_exists(false);
        f.answer(i, r);
    }
    CHECK_FALSE(f.output.paused);
    CHECK(f.take_replies().size() == 8);
}

TEST_CASE("closeSession is a write answered before the connection closes", "[zk]") {
    Fixture f;
    f.open();
    f.send(zk::Request{1, zk::OpCode::kCloseSession, zk::EmptyRequest{}});
    REQUIRE(f.backend.requests.size() == 1);
    CHECK(f.backend.requests[0].has_close_session());
    CHECK(f.backend.requests[0].seq() == 1);
    f.answer(0, ok());
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].xid == 1);
    CHECK(f.output.closed);
}

TEST_CASE("requests renew the session as pings do, once per third of its timeout", "[zk]") {
    int64_t now_ms = 1000;
    ZkFrontendOptions options = Fixture::defaults();
    options.steady_ms = [&now_ms] { return now_ms; };
    Fixture f(options);
    f.open(9000);  // renewed at 1000
    auto keepalives = [&f] {
        return std::count_if(f.backend.requests.begin(), f.backend.requests.end(),
                             [](const proto::Request& r) { return r.has_keep_alive(); });
    };

    now_ms = 3999;  // less than a third of the timeout since the open
    f.send(path_request(1, zk::OpCode::kExists, "/p"));
    CHECK(keepalives() == 0);
    now_ms = 4000;
    f.send(path_request(2, zk::OpCode::kExists, "/p"));
    REQUIRE(f.backend.requests.size() == 3);
    const proto::Request& renewal = f.backend.requests[1];
    CHECK(renewal.has_keep_alive());
    CHECK(renewal.session_id() == 9);
    now_ms = 6000;  // 2000 since the renewal
    f.send(path_request(3, zk::OpCode::kExists, "/p"));
    CHECK(keepalives() == 1);
    now_ms = 6500;  // a ping renews too: the next request's clock starts from it
    f.send(zk::Request{4, zk::OpCode::kPing, zk::EmptyRequest{}});
    CHECK(keepalives() == 2);
    now_ms = 9000;
    f.send(path_request(5, zk::OpCode::kExists, "/p"));
    CHECK(keepalives() == 2);

    // The renewal's answer is nobody's reply: the client sees its five, in order.
    f.answer(1, ok());
    CHECK(f.take_replies().empty());
    for (size_t i = 0; i < f.backend.requests.size(); ++i) {
        if (i == 1) {
            continue;
        }
        proto::Response r = ok();
        if (f.backend.requests[i].has_exists()) {
            r.mutable_exists()->set_exists(false);
        }
        f.answer(i, r);
    }
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 5);
    for (size_t i = 0; i < replies.size(); ++i) {
        CHECK(replies[i].xid == static_cast<int32_t>(i + 1));
    }
}

}  // namespace zk_frontend_test
}  // namespace raftlock::server::zk_frontend_fixture
