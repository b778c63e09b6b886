// The Redis front end's connection logic: reply order under pipelining, the read/write barrier,
// connection commands, AUTH, QUIT and backpressure. The backend here only records commands and
// lets the test answer them in any order.

#include <string>

#include <catch2/catch.hpp>

#include "redis_frontend_fixture.h"

namespace raftlock::server {
namespace redis_frontend_test {

TEST_CASE("replies go out in command order whatever order they complete in", "[redis]") {
    Fixture f;
    f.command({"SET", "a", "1"});
    f.command({"SET", "b", "2"});
    f.command({"PING"});                   // a connection command waits behind the writes in flight
    REQUIRE(f.backend.calls.size() == 2);  // consecutive writes are pipelined
    f.answer(1, Value::ok());
    CHECK(f.take().empty());  // the first is not answered yet
    f.answer(0, Value::integer_of(7));
    CHECK(f.take() == ":7\r\n+OK\r\n+PONG\r\n");
}

TEST_CASE("a read waits for the writes before it, and a write for the reads", "[redis]") {
    Fixture f;
    f.command({"INCR", "n"});
    f.command({"GET", "n"});
    f.command({"GET", "m"});
    f.command({"DEL", "n"});
    REQUIRE(f.backend.calls.size() == 1);
    f.answer(0, Value::integer_of(1));
    REQUIRE(f.backend.calls.size() == 3);  // both reads go together
    CHECK(f.backend.calls[1].argv[0] == "GET");
    CHECK(f.backend.calls[2].argv[0] == "GET");
    f.answer(2, Value::null());
    f.answer(1, Value::bulk("1"));
    REQUIRE(f.backend.calls.size() == 4);
    f.answer(3, Value::integer_of(1));
    CHECK(f.take() == ":1\r\n$1\r\n1\r\n$-1\r\n:1\r\n");
}

TEST_CASE("errors that need no keyspace are answered in place", "[redis]") {
    Fixture f;
    f.command({"SET", "a", "1"});
    f.command({"NOPE", "x"});
    f.command({"GET"});
    CHECK(f.backend.calls.size() == 1);
    f.answer(0, Value::ok());
    CHECK(f.take() ==
          "+OK\r\n-ERR unknown command 'NOPE', with args beginning with: 'x' \r\n"
          "-ERR wrong number of arguments for 'get' command\r\n");
}

TEST_CASE("HELLO 3 switches the encoding of later replies", "[redis]") {
    Fixture f;
    f.command({"GET", "a"});
    f.command({"HELLO", "3"});
    f.command({"GET", "b"});
    f.answer(0, Value::null());
    REQUIRE(f.backend.calls.size() == 2);
    f.answer(1, Value::null());
    const std::string out = f.take();
    CHECK(out.starts_with("$-1\r\n%7\r\n"));  // RESP2 null, then HELLO's map in RESP3
    CHECK(out.ends_with("_\r\n"));            // RESP3 null
    f.command({"HELLO", "4"});
    CHECK(f.take() == "-NOPROTO unsupported protocol version\r\n");
}

TEST_CASE("with cluster users, AUTH user pass logs in; the third failure closes", "[redis]") {
    Fixture f;
    f.backend.users = true;
    f.command({"GET", "k"});
    CHECK(f.take() == "-NOAUTH Authentication required.\r\n");
    f.command({"AUTH", "bob", "secret"});
    CHECK(f.take() == "+OK\r\n");
    f.command({"GET", "k"});
    REQUIRE(f.backend.calls.size() == 1);
    CHECK(f.backend.calls[0].user == "bob");  // the backend checks what bob may do
    f.answer(0, Value::null());
    f.take();
    // AUTH password names the default user, which a cluster with users has not.
    f.command({"AUTH", "secret"});
    CHECK(f.take() == "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    f.command({"AUTH", "bob", "guess"});
    CHECK_FALSE(f.output.closed);
    f.command({"HELLO", "3", "AUTH", "bob", "guess"});  // the third failure
    CHECK(f.output.closed);
    f.command({"AUTH", "bob", "secret"});  // after it: not even read
    CHECK(f.backend.logins == 4);
}

TEST_CASE("with certificate users, the certificate's name is the user, with no AUTH", "[redis]") {
    for (const bool on : {true, false}) {
        INFO((on ? "--tls-client-cert-user on" : "off"));
        RedisFrontendOptions options;
        options.certificate_user = on;
        Fixture f(options);
        f.backend.users = true;
        f.frontend.on_resp_certificate(kConn, "alice");
        f.command({"GET", "k"});
        if (!on) {
            CHECK(f.take() == "-NOAUTH Authentication required.\r\n");
            CHECK(f.backend.calls.empty());
            continue;
        }
        REQUIRE(f.backend.calls.size() == 1);
        CHECK(f.backend.calls[0].user == "alice");  // the backend checks what alice may do
        CHECK(f.backend.logins == 0);
    }
}

TEST_CASE("AUTH gates every command but AUTH, HELLO and QUIT", "[redis]") {
    RedisFrontendOptions options;
    options.password = "secret";
    Fixture f(options);
    f.command({"GET", "a"});
    f.command({"AUTH", "wrong"});
    f.command({"AUTH", "default", "secret"});
    f.command({"PING"});
    CHECK(f.backend.calls.empty());
    CHECK(f.take() ==
          "-NOAUTH Authentication required.\r\n"
          "-WRONGPASS invalid username-password pair or user is disabled.\r\n+OK\r\n+PONG\r\n");
    Fixture g(options);
    g.command({"HELLO", "3", "AUTH", "default", "secret", "SETNAME", "me"});
    g.command({"CLIENT", "GETNAME"});
    CHECK(g.take().ends_with("$2\r\nme\r\n"));
}

TEST_CASE("connection commands", "[redis]") {
    Fixture f;
    f.command({"PING", "hi"});
    f.command({"ECHO", "x"});
    f.command({"SELECT", "0"});
    f.command({"SELECT", "3"});
    f.command({"CLIENT", "SETNAME", "a b"});
    f.command({"COMMAND", "COUNT"});
    f.command({"AUTH", "default", "anything"});  // the default user has no password here
    f.command({"AUTH", "x"});
    CHECK(f.take() ==
          "$2\r\nhi\r\n$1\r\nx\r\n+OK\r\n-ERR DB index is out of range\r\n"
          "-ERR Client names cannot contain spaces, newlines or special characters.\r\n:" +
              std::to_string(redis::all_commands().size()) +
              "\r\n+OK\r\n-ERR AUTH <password> called without any password configured for the "
              "default "
              "user. Are you sure your configuration is correct?\r\n");
    f.command({"INFO", "keyspace"});
    CHECK(f.take().find("db0:keys=3") != std::string::npos);
}

TEST_CASE("QUIT answers, then closes once the replies before it are out", "[redis]") {
    Fixture f;
    f.command({"SET", "a", "1"});
    f.command({"QUIT"});
    f.command({"GET", "a"});  // after QUIT: ignored
    CHECK(!f.output.closed);
    f.answer(0, Value::ok());
    CHECK(f.take() == "+OK\r\n+OK\r\n");
    CHECK(f.output.closed);
    CHECK(f.backend.calls.size() == 1);
}

TEST_CASE("a deep pipeline pauses reading until it drains", "[redis]") {
    RedisFrontendOptions options;
    options.pipeline_max = 4;
    Fixture f(options);
    for (int i = 0; i < 4; ++i) {
        f.command({"SET", "k", std::to_string(i)});
    }
    CHECK(f.output.paused);
    for (size_t i = 0; i < 4; ++i) {
        f.answer(i, Value::ok());
    }
    CHECK(!f.output.paused);
    f.frontend.on_resp_close(kConn);
    CHECK(f.backend.closes == 1);
    // A late reply for a closed connection is dropped.
    f.frontend.on_reply(kConn, 99, Value::ok());
}

}  // namespace redis_frontend_test
}  // namespace raftlock::server
