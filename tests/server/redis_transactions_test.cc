// Transactions in the Redis front end: MULTI queues, EXEC sends the keyspace commands and the
// watched keys as one transaction and puts the connection commands' replies in place, WATCH is a
// read answered with an index. The replies are Redis 7.0's, byte for byte, as redis-server 7.0.15
// gave them (the state machine's side is tests/redis/transactions_test.cc).

#include <string>

#include <catch2/catch.hpp>

#include "redis_frontend_fixture.h"

namespace raftlock::server {
namespace redis_frontend_test {

TEST_CASE("MULTI queues; EXEC sends one transaction and answers in command order",
          "[redis][transactions]") {
    Fixture f;
    f.command({"MULTI"});
    f.command({"SET", "k", "v"});
    f.command({"PING"});
    f.command({"GET", "k"});
    f.command({"ECHO", "hi"});
    CHECK(f.take() == "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n");
    CHECK(f.backend.calls.empty());  // nothing runs before EXEC
    f.command({"EXEC"});
    REQUIRE(f.backend.calls.size() == 1);
    const Backend::Call& exec = f.backend.calls[0];
    CHECK(exec.argv == redis::Argv{"EXEC"});
    CHECK(exec.transaction.commands ==
          std::vector<redis::Argv>{{"SET", "k", "v"}, {"GET", "k"}});  // no PING, no ECHO
    CHECK(exec.transaction.watched.empty());
    CHECK(f.take().empty());
    f.answer(0, Value::array({Value::ok(), Value::bulk("v")}));
    CHECK(f.take() == "*4\r\n+OK\r\n+PONG\r\n$1\r\nv\r\n$2\r\nhi\r\n");
    // The transaction is over: the next command runs at once.
    f.command({"GET", "k"});
    CHECK(f.backend.calls.size() == 2);
}

TEST_CASE("WATCH records the index it was served at; EXEC carries it and ends it",
          "[redis][transactions]") {
    Fixture f;
    f.command({"WATCH", "a", "b"});
    REQUIRE(f.backend.calls.size() == 1);
    CHECK(f.backend.calls[0].argv == redis::Argv{"WATCH"});
    f.answer(0, Value::integer_of(41));
    f.command({"WATCH", "b", "c"});  // b keeps its first index
    f.answer(1, Value::integer_of(45));
    CHECK(f.take() == "+OK\r\n+OK\r\n");
    f.command({"MULTI"});
    f.command({"INCR", "a"});
    f.command({"EXEC"});
    REQUIRE(f.backend.calls.size() == 3);
    CHECK(f.backend.calls[2].transaction.watched ==
          std::vector<redis::WatchedKey>{{"a", 41}, {"b", 41}, {"c", 45}});
    f.answer(2, Value::null_array());  // a watched key changed
    CHECK(f.take() == "+OK\r\n+QUEUED\r\n*-1\r\n");
    // EXEC unwatched everything: the next transaction carries no watch. With connection commands
    // only and nothing watched, it never leaves the front end.
    f.command({"MULTI"});
    f.command({"PING"});
    f.command({"EXEC"});
    CHECK(f.backend.calls.size() == 3);
    CHECK(f.take() == "+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n");
    // UNWATCH and DISCARD forget the watches too; a watch with only PING queued still goes.
    f.command({"WATCH", "x"});
    f.answer(3, Value::integer_of(50));
    f.command({"UNWATCH"});
    f.command({"WATCH", "y"});
    f.answer(4, Value::integer_of(51));
    f.command({"MULTI"});
    f.command({"PING"});
    f.command({"EXEC"});
    REQUIRE(f.backend.calls.size() == 6);
    CHECK(f.backend.calls[5].transaction.watched == std::vector<redis::WatchedKey>{{"y", 51}});
    CHECK(f.backend.calls[5].transaction.commands.empty());
    f.answer(5, Value::array({}));
    CHECK(f.take() == "+OK\r\n+OK\r\n+OK\r\n+OK\r\n+QUEUED\r\n*1\r\n+PONG\r\n");
    // A WATCH the backend refuses answers its error and watches nothing.
    f.command({"WATCH", "z"});
    f.answer(6, Value::error("TRYAGAIN raftlock: no leader"));
    f.command({"MULTI"});
    f.command({"EXEC"});
    CHECK(f.backend.calls.size() == 7);
    CHECK(f.take() == "-TRYAGAIN raftlock: no leader\r\n+OK\r\n*0\r\n");
}

TEST_CASE("transaction errors are Redis's, and a refused command fails EXEC",
          "[redis][transactions]") {
    Fixture f;
    f.command({"EXEC"});
    f.command({"DISCARD"});
    CHECK(f.take() == "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n");
    f.command({"MULTI"});
    f.command({"MULTI"});       // an error that does not fail the transaction
    f.command({"WATCH", "k"});  // nor does this one
    f.command({"SET", "k", "v"});
    f.command({"EXEC"});
    CHECK(f.take() ==
          "+OK\r\n-ERR MULTI calls can not be nested\r\n-ERR WATCH inside MULTI is not "
          "allowed\r\n+QUEUED\r\n");
    f.answer(0, Value::array({Value::ok()}));
    CHECK(f.take() == "*1\r\n+OK\r\n");
    f.command({"MULTI"});
    f.command({"NOSUCH", "x"});
    f.command({"GET"});
    f.command({"SET", "k", "v"});
    f.command({"EXEC"});
    CHECK(f.backend.calls.size() == 1);
    CHECK(f.take() ==
          "+OK\r\n-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n-ERR wrong "
          "number of arguments for 'get' command\r\n+QUEUED\r\n-EXECABORT Transaction discarded "
          "because of previous errors.\r\n");
    f.command({"MULTI"});
    f.command({"SET", "k", "v"});
    f.command({"DISCARD"});
    f.command({"GET", "k"});
    CHECK(f.take() == "+OK\r\n+QUEUED\r\n+OK\r\n");
    CHECK(f.backend.calls.size() == 2);  // the GET, at once
    // RESET inside MULTI discards it too.
    f.answer(1, Value::null());
    f.command({"MULTI"});
    f.command({"RESET"});
    f.command({"EXEC"});
    CHECK(f.take() == "$-1\r\n+OK\r\n+RESET\r\n-ERR EXEC without MULTI\r\n");
}

TEST_CASE("RESP3 shapes; HELLO and SUBSCRIBE inside a transaction take effect in turn",
          "[redis][transactions]") {
    Fixture f;
    f.command({"HELLO", "3"});
    f.take();
    f.command({"MULTI"});
    f.command({"GET", "k"});
    f.command({"EXEC"});
    f.answer(0, Value::null_array());  // RESP3 has one null
    f.command({"MULTI"});
    f.command({"GET", "k"});
    f.command({"HELLO", "2"});
    f.command({"GET", "k"});
    f.command({"SUBSCRIBE", "ch"});
    f.command({"EXEC"});
    f.answer(1, Value::array({Value::null(), Value::null()}));
    const std::string out = f.take();
    CHECK(
        out.starts_with("+OK\r\n+QUEUED\r\n_\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
                        "+QUEUED\r\n*4\r\n_\r\n*14\r\n"));  // HELLO 2's map, flattened
    CHECK(out.ends_with("$-1\r\n*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"));
    // Subscribed in RESP2 now: only the pub/sub commands run.
    f.command({"GET", "k"});
    CHECK(f.take().starts_with("-ERR Can't execute 'get'"));
}

TEST_CASE("what a connection may queue and watch is bounded", "[redis][transactions]") {
    RedisFrontendOptions options;
    options.watched_keys_max = 3;
    Fixture f(options);
    f.command({"WATCH", "a", "b"});
    f.answer(0, Value::integer_of(7));
    f.command({"WATCH", "b", "c"});  // b is watched already: three keys in all
    f.answer(1, Value::integer_of(8));
    f.command({"WATCH", "d"});
    CHECK(f.backend.calls.size() == 2);
    CHECK(f.take() ==
          "+OK\r\n+OK\r\n-ERR raftlock: a connection may watch at most 3 keys, of 1048576 bytes "
          "together\r\n");
    // A queue over a command's bytes fails the transaction, and holds nothing more.
    f.command({"MULTI"});
    f.command({"SET", "a", std::string(3u << 20, 'x')});
    f.command({"SET", "b", std::string(2u << 20, 'y')});
    f.command({"EXEC"});
    CHECK(f.take() ==
          "+OK\r\n+QUEUED\r\n-ERR raftlock: a transaction may carry at most 1048576 arguments and "
          "4259840 bytes\r\n-EXECABORT Transaction discarded because of previous errors.\r\n");
    CHECK(f.backend.calls.size() == 2);
}

TEST_CASE("WATCH runs alone: after the commands before it, before those after it",
          "[redis][transactions]") {
    Fixture f;
    f.command({"SET", "k", "1"});
    f.command({"WATCH", "k"});  // its index must cover the SET: it waits for its reply
    CHECK(f.backend.calls.size() == 1);
    f.answer(0, Value::ok());
    REQUIRE(f.backend.calls.size() == 2);
    CHECK(f.backend.calls[1].argv == redis::Argv{"WATCH"});
    // A read pipelined after it waits for its answer: two reads in flight may be served at
    // different states in either order, and the GET must not see an older state than the index
    // the WATCH recorded (a change between them would escape both: found by the simulator).
    f.command({"GET", "k"});
    CHECK(f.backend.calls.size() == 2);
    f.answer(1, Value::integer_of(9));
    REQUIRE(f.backend.calls.size() == 3);
    f.command({"MULTI"});
    f.command({"SET", "k", "2"});
    f.command({"EXEC"});
    CHECK(f.backend.calls.size() == 3);  // the EXEC waits for the GET
    f.answer(2, Value::bulk("1"));
    REQUIRE(f.backend.calls.size() == 4);
    CHECK(f.backend.calls[3].transaction.watched == std::vector<redis::WatchedKey>{{"k", 9}});
    f.answer(3, Value::array({Value::ok()}));
    CHECK(f.take() == "+OK\r\n+OK\r\n$1\r\n1\r\n+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n");
}

TEST_CASE("WAIT waits for the writes before it and holds back the commands after it",
          "[redis][wait]") {
    Fixture f;
    f.command({"SET", "k", "1"});
    f.command({"WAIT", "2", "100"});
    f.command({"GET", "k"});
    CHECK(f.backend.calls.size() == 1);
    f.answer(0, Value::ok());
    REQUIRE(f.backend.calls.size() == 2);
    CHECK(f.backend.calls[1].argv == redis::Argv{"WAIT", "2", "100"});
    CHECK(f.backend.calls.size() == 2);  // the GET waits for the WAIT, as a blocked Redis client
    f.answer(1, Value::integer_of(1));
    REQUIRE(f.backend.calls.size() == 3);
    f.answer(2, Value::bulk("1"));
    CHECK(f.take() == "+OK\r\n:1\r\n$1\r\n1\r\n");
    // Redis's errors, numreplicas checked first; none reaches the backend.
    f.command({"WAIT", "x", "-1"});
    f.command({"WAIT", "1", "x"});
    f.command({"WAIT", "1", "-1"});
    f.command({"WAIT", "1"});
    CHECK(f.take() ==
          "-ERR value is not an integer or out of range\r\n-ERR timeout is not an integer or out "
          "of range\r\n-ERR timeout is negative\r\n-ERR wrong number of arguments for 'wait' "
          "command\r\n");
    CHECK(f.backend.calls.size() == 3);
    // Inside MULTI it does not block: the count now (the fixture's backend says 2).
    f.command({"MULTI"});
    f.command({"WAIT", "5", "0"});
    f.command({"EXEC"});
    CHECK(f.take() == "+OK\r\n+QUEUED\r\n*1\r\n:2\r\n");
}

}  // namespace redis_frontend_test
}  // namespace raftlock::server
