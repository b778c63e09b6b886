#include "server/request_codec.h"

#include <catch2/catch.hpp>

namespace raftlock::server {
namespace {

namespace sm = statemachine;

proto::Request session_request(uint64_t seq) {
    proto::Request r;
    r.set_request_id(5);
    r.set_session_id(42);
    r.set_seq(seq);
    r.set_ack_seq(seq - 1);
    return r;
}

TEST_CASE("the state machine's error codes keep their numbers on the wire", "[server][codec]") {
    for (uint8_t c = 0; c <= sm::kErrorCodeMax; ++c) {
        const auto code = static_cast<sm::ErrorCode>(c);
        CHECK(static_cast<int>(to_proto(code)) == c);
        CHECK(proto::Code_IsValid(to_proto(code)));
    }
    CHECK(proto::Code_Name(to_proto(sm::ErrorCode::kRolledBack)) == "ROLLED_BACK");
    CHECK(proto::Code_Name(to_proto(sm::ErrorCode::kLockBusy)) == "LOCK_BUSY");
}

TEST_CASE("an acquire request becomes a session command", "[server][codec]") {
    proto::Request r = session_request(3);
    r.mutable_acquire()->set_name("db");
    r.mutable_acquire()->set_owner_tag("w1");
    r.mutable_acquire()->set_mode(proto::SHARED);
    r.mutable_acquire()->set_wait_ms(5000);
    r.mutable_fence()->set_lock("other");
    r.mutable_fence()->set_token(17);
    CHECK(kind_of(r) == RequestKind::kWrite);
    auto c = to_command(r, 99);
    REQUIRE(c.ok());
    CHECK(c->client_id == 42);
    CHECK(c->seq == 3);
    CHECK(c->ack_seq == 2);
    CHECK(c->time_ms == 0);
    REQUIRE(c->fence.has_value());
    CHECK(c->fence->token == 17);
    const auto& a = std::get<sm::Acquire>(c->op);
    CHECK(a.name == "db");
    CHECK(a.mode == sm::LockMode::kShared);
    CHECK(a.permits == 1);
    CHECK(a.wait_ms == 5000);
}

TEST_CASE("an open session takes the server's nonce as its seq", "[server][codec]") {
    proto::Request r;
    r.mutable_open_session()->set_timeout_ms(10000);
    auto c = to_command(r, 0x0100000000000007ull);
    REQUIRE(c.ok());
    CHECK(c->client_id == sm::kNoSession);
    CHECK(c->seq == 0x0100000000000007ull);
}

TEST_CASE("bad requests are refused with a reason", "[server][codec]") {
    proto::Request no_session;
    no_session.mutable_create()->set_path("/a");
    CHECK(!to_command(no_session, 1).ok());

    proto::Request bad_ack = session_request(3);
    bad_ack.set_ack_seq(3);
    bad_ack.mutable_create()->set_path("/a");
    CHECK(!to_command(bad_ack, 1).ok());

    proto::Request bad_path = session_request(1);
    bad_path.mutable_create()->set_path("no-slash");
    auto c = to_command(bad_path, 1);
    REQUIRE(!c.ok());
    CHECK(c.error().find("invalid arguments") != std::string::npos);

    proto::Request bad_kind = session_request(1);
    bad_kind.mutable_create()->set_path("/a");
    bad_kind.mutable_create()->set_kind(static_cast<proto::NodeKind>(77));
    CHECK(!to_command(bad_kind, 1).ok());

    proto::Request bad_mode = session_request(1);
    bad_mode.mutable_acquire()->set_name("x");
    bad_mode.mutable_acquire()->set_mode(static_cast<proto::LockMode>(-3));
    CHECK(!to_command(bad_mode, 1).ok());

    proto::Request empty_multi = session_request(1);
    empty_multi.mutable_multi()->add_ops();
    CHECK(!to_command(empty_multi, 1).ok());

    proto::Request nothing;
    CHECK(kind_of(nothing) == RequestKind::kInvalid);
}

TEST_CASE("replies carry the op's result", "[server][codec]") {
    proto::Request r = session_request(1);
    r.mutable_create()->set_path("/job-");
    r.mutable_create()->set_kind(proto::PERSISTENT_SEQUENTIAL);
    auto c = to_command(r, 1);
    REQUIRE(c.ok());
    sm::Response response;
    response.path = "/job-0000000000";
    response.stat.czxid = 12;
    proto::Response out;
    fill_write_response(*c, response, out);
    CHECK(out.code() == proto::OK);
    CHECK(out.node().path() == "/job-0000000000");
    CHECK(out.node().stat().czxid() == 12);

    proto::Response busy;
    sm::Response lock_busy;
    lock_busy.code = sm::ErrorCode::kLockBusy;
    fill_write_response(*c, lock_busy, busy);
    CHECK(busy.code() == proto::LOCK_BUSY);
    CHECK(!busy.has_node());
    CHECK(!describe(proto::LOCK_BUSY).empty());
}

}  // namespace
}  // namespace raftlock::server
