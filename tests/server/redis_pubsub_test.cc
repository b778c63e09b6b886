// Pub/sub in the Redis front end: subscribed-connection mode in RESP2, push frames in RESP3, the
// node's registry of channels and patterns, and the delivery of what the node applies (publish()).
// The replies are Redis 7.0's, byte for byte, as redis-server 7.0.15 gave them.

#include <string>

#include <catch2/catch.hpp>

#include "redis_frontend_fixture.h"

namespace raftlock::server {
namespace redis_frontend_test {

constexpr net::ConnectionId kOther = net::kRespConnectionBit | 2;

std::string push2(std::initializer_list<std::string> items) {
    std::string out = "*" + std::to_string(items.size()) + "\r\n";
    for (const std::string& item : items) {
        out += item.starts_with(":") ? item + "\r\n"
                                     : "$" + std::to_string(item.size()) + "\r\n" + item + "\r\n";
    }
    return out;
}

TEST_CASE("RESP2: a subscribed connection gets arrays and runs only pub/sub commands",
          "[redis][pubsub]") {
    Fixture f;
    f.command({"SUBSCRIBE", "a", "b"});
    CHECK(f.take() == push2({"subscribe", "a", ":1"}) + push2({"subscribe", "b", ":2"}));
    CHECK(f.frontend.publish("a", "hi") == 1);
    CHECK(f.take() == push2({"message", "a", "hi"}));
    CHECK(f.frontend.publish("c", "nobody") == 0);
    CHECK(f.take().empty());
    f.command({"GET", "k"});
    f.command({"PING"});
    f.command({"PING", "x"});
    CHECK(f.backend.calls.empty());
    CHECK(f.take() ==
          "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
          "RESET are allowed in this context\r\n" +
              push2({"pong", ""}) + push2({"pong", "x"}));
    f.command({"PSUBSCRIBE", "h*"});
    CHECK(f.take() == push2({"psubscribe", "h*", ":3"}));
    CHECK(f.frontend.publish("hello", "m") == 1);
    CHECK(f.take() == push2({"pmessage", "h*", "hello", "m"}));
    // Without arguments: every channel held, in name order; then none is left.
    f.command({"UNSUBSCRIBE"});
    CHECK(f.take() == push2({"unsubscribe", "a", ":2"}) + push2({"unsubscribe", "b", ":1"}));
    f.command({"UNSUBSCRIBE"});
    CHECK(f.take() == "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n");
    f.command({"PUNSUBSCRIBE", "h*"});
    CHECK(f.take() == push2({"punsubscribe", "h*", ":0"}));
    // Out of subscribed mode: commands run again.
    f.command({"GET", "k"});
    CHECK(f.backend.calls.size() == 1);
    CHECK(f.frontend.subscriptions().check_invariants() == "");
}

TEST_CASE("RESP3: messages are push frames, between replies, and any command runs",
          "[redis][pubsub]") {
    Fixture f;
    f.command({"HELLO", "3"});
    f.take();
    f.command({"SUBSCRIBE", "a"});
    CHECK(f.take() == ">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n");
    f.command({"GET", "k"});
    REQUIRE(f.backend.calls.size() == 1);
    // A message published while the GET is in flight goes out at once, before the GET's reply.
    CHECK(f.frontend.publish("a", "hi") == 1);
    CHECK(f.take() == ">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$2\r\nhi\r\n");
    f.answer(0, Value::null());
    CHECK(f.take() == "_\r\n");
    f.command({"PING"});
    CHECK(f.take() == "+PONG\r\n");   // not RESP2's array
    f.command({"UNSUBSCRIBE", "x"});  // not held: the count is unchanged
    CHECK(f.take() == ">3\r\n$11\r\nunsubscribe\r\n$1\r\nx\r\n:1\r\n");
}

TEST_CASE("a SUBSCRIBE behind a command in flight listens only once it runs", "[redis][pubsub]") {
    Fixture f;
    f.command({"SET", "k", "v"});
    f.command({"SUBSCRIBE", "a"});
    REQUIRE(f.backend.calls.size() == 1);
    // Not subscribed yet: a RESP2 client must not read a message before the SET's reply and the
    // SUBSCRIBE's.
    CHECK(f.frontend.publish("a", "early") == 0);
    CHECK(f.take().empty());
    f.answer(0, Value::ok());
    CHECK(f.take() == "+OK\r\n" + push2({"subscribe", "a", ":1"}));
    CHECK(f.frontend.publish("a", "late") == 1);
    CHECK(f.take() == push2({"message", "a", "late"}));
}

TEST_CASE("the node's registry: channel subscribers first, then patterns; PUBSUB counts",
          "[redis][pubsub]") {
    Fixture f;
    f.frontend.on_resp_open(kOther, "127.0.0.1:5001");
    f.command({"PSUBSCRIBE", "lock:*", "lock:?"});
    f.command_on(kOther, {"SUBSCRIBE", "lock:a", "lock:b"});
    f.take_from(kConn);
    f.take_from(kOther);
    CHECK(f.frontend.publish("lock:a", "x") == 3);
    CHECK(f.take_from(kConn) == push2({"pmessage", "lock:*", "lock:a", "x"}) +
                                    push2({"pmessage", "lock:?", "lock:a", "x"}));
    CHECK(f.take_from(kOther) == push2({"message", "lock:a", "x"}));
    CHECK(f.frontend.publish("lock:bb", "y") == 1);  // lock:* only
    // PUBSUB from a third connection (RESP2, not subscribed).
    constexpr net::ConnectionId kThird = net::kRespConnectionBit | 3;
    f.frontend.on_resp_open(kThird, "127.0.0.1:5002");
    f.command_on(kThird, {"PUBSUB", "CHANNELS"});
    f.command_on(kThird, {"PUBSUB", "CHANNELS", "*b"});
    f.command_on(kThird, {"PUBSUB", "NUMSUB", "lock:a", "none"});
    f.command_on(kThird, {"PUBSUB", "NUMPAT"});
    f.command_on(kThird, {"PUBSUB", "NUMPAT", "x"});
    f.command_on(kThird, {"PUBSUB", "FOO"});
    CHECK(f.take_from(kThird) ==
          "*2\r\n$6\r\nlock:a\r\n$6\r\nlock:b\r\n*1\r\n$6\r\nlock:b\r\n"
          "*4\r\n$6\r\nlock:a\r\n:1\r\n$4\r\nnone\r\n:0\r\n:2\r\n"
          "-ERR unknown subcommand or wrong number of arguments for 'NUMPAT'. Try PUBSUB HELP.\r\n"
          "-ERR unknown subcommand 'FOO'. Try PUBSUB HELP.\r\n");
    // A closed connection leaves nothing behind.
    f.frontend.on_resp_close(kOther);
    CHECK(f.frontend.subscriptions().subscribers("lock:a") == 0);
    CHECK(f.frontend.subscriptions().channels(std::nullopt).empty());
    CHECK(f.frontend.publish("lock:a", "z") == 2);
    CHECK(f.frontend.subscriptions().check_invariants() == "");
    // Nor is a connection closed for not reading its replies counted.
    f.output.gone.insert(kConn);
    CHECK(f.frontend.publish("lock:a", "z") == 0);
}

TEST_CASE("a connection's subscriptions are bounded, all or nothing", "[redis][pubsub]") {
    RedisFrontendOptions options;
    options.subscriptions_max = 3;
    options.subscription_bytes_max = 10;
    Fixture f(options);
    f.command({"SUBSCRIBE", "a", "b"});
    f.take();
    f.command({"PSUBSCRIBE", "c", "d"});  // 4 > 3: none of them
    CHECK(f.take() ==
          "-ERR raftlock: a connection may hold at most 3 channels and patterns, of 10 bytes "
          "together\r\n");
    CHECK(f.frontend.subscriptions().count(kConn) == 2);
    f.command({"SUBSCRIBE", "a", "b", "a"});  // held already: nothing new to count
    CHECK(f.take() == push2({"subscribe", "a", ":2"}) + push2({"subscribe", "b", ":2"}) +
                          push2({"subscribe", "a", ":2"}));
    f.command({"SUBSCRIBE", "0123456789"});  // 12 bytes > 10
    CHECK(f.take().starts_with("-ERR raftlock: a connection may hold at most"));
    CHECK(f.frontend.subscriptions().bytes(kConn) == 2);
}

TEST_CASE("SUBSCRIBE and PUBSUB need read access to the Redis keyspace", "[redis][pubsub]") {
    Fixture f;
    f.backend.users = true;
    f.command({"AUTH", "bob", "secret"});
    f.command({"SUBSCRIBE", "a"});
    CHECK(f.take() == "+OK\r\n" + push2({"subscribe", "a", ":1"}));
    RedisFrontendOptions options;
    options.certificate_user = true;
    Fixture g(options);
    g.backend.users = true;
    g.frontend.on_resp_certificate(kConn, "reader-not");
    g.command({"SUBSCRIBE", "a"});
    g.command({"PSUBSCRIBE", "*"});
    g.command({"PUBSUB", "NUMPAT"});
    const std::string refused = "-NOPERM user \"reader-not\" lacks read on the Redis keyspace\r\n";
    CHECK(g.take() == refused + refused + refused);
    CHECK(g.frontend.subscriptions().count(kConn) == 0);
}

TEST_CASE("RESET leaves subscribed mode and RESP3, as a new connection", "[redis][pubsub]") {
    Fixture f;
    f.command({"HELLO", "3", "SETNAME", "me"});
    f.command({"SUBSCRIBE", "a"});
    f.take();
    f.command({"RESET"});
    f.command({"CLIENT", "GETNAME"});
    f.command({"PUBSUB", "NUMSUB", "a"});
    CHECK(f.take() == "+RESET\r\n$-1\r\n*2\r\n$1\r\na\r\n:0\r\n");
    CHECK(f.frontend.publish("a", "m") == 0);
    // Before AUTH too, as in Redis; it does not log in.
    RedisFrontendOptions options;
    options.password = "secret";
    Fixture g(options);
    g.command({"RESET"});
    g.command({"GET", "k"});
    CHECK(g.take() == "+RESET\r\n-NOAUTH Authentication required.\r\n");
}

}  // namespace redis_frontend_test
}  // namespace raftlock::server
