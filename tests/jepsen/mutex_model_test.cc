#include <catch2/catch.hpp>

#include "history_builder.h"

namespace raftlock::jepsen {
namespace {

using test::HistoryBuilder;
using test::verdict_of;

TEST_CASE("acquire, fenced write, release and acquire again with a larger token is legal",
          "[jepsen][mutex]") {
    HistoryBuilder h;
    h.op(1, "acquire", "L", "null", "5")
        .op(1, "fenced-write", "L", "[5,\"a\"]", "null")
        .op(1, "release", "L", "5", "null")
        .op(2, "acquire", "L", "null", "9")
        .op(2, "release", "L", "9", "null");
    CHECK(verdict_of("mutex", h) == Verdict::kLinearizable);
}

TEST_CASE("two clients cannot hold the same lock at once", "[jepsen][mutex]") {
    HistoryBuilder h;
    h.op(1, "acquire", "L", "null", "5").op(2, "acquire", "L", "null", "9");
    CHECK(verdict_of("mutex", h) == Verdict::kNotLinearizable);
}

TEST_CASE("concurrent acquires may be granted in either order", "[jepsen][mutex]") {
    HistoryBuilder h;
    h.invoke(1, "acquire", "L")
        .invoke(2, "acquire", "L")
        .ok(2, "acquire", "L", "9")
        .invoke(2, "release", "L", "9")
        .ok(2, "release", "L")
        .ok(1, "acquire", "L", "12");
    CHECK(verdict_of("mutex", h) == Verdict::kLinearizable);
}

TEST_CASE("the tokens of one lock increase", "[jepsen][mutex]") {
    HistoryBuilder h;
    h.op(1, "acquire", "L", "null", "9")
        .op(1, "release", "L", "9", "null")
        .op(2, "acquire", "L", "null", "7");
    CHECK(verdict_of("mutex", h) == Verdict::kNotLinearizable);
}

TEST_CASE("only the holder's token releases the lock", "[jepsen][mutex]") {
    HistoryBuilder h;
    h.op(1, "acquire", "L", "null", "5").op(2, "release", "L", "4", "null");
    CHECK(verdict_of("mutex", h) == Verdict::kNotLinearizable);
}

TEST_CASE("a fenced write with a stale token must fail", "[jepsen][mutex]") {
    HistoryBuilder accepted;
    accepted.op(1, "acquire", "L", "null", "5")
        .op(1, "release", "L", "5", "null")
        .op(2, "acquire", "L", "null", "8")
        .op(1, "fenced-write", "L", "[5,\"late\"]", "null");
    CHECK(verdict_of("mutex", accepted) == Verdict::kNotLinearizable);

    HistoryBuilder refused;
    refused.op(1, "acquire", "L", "null", "5")
        .op(1, "release", "L", "5", "null")
        .op(2, "acquire", "L", "null", "8")
        .invoke(1, "fenced-write", "L", "[5,\"late\"]")
        .fail(1, "fenced-write", "L", "[5,\"late\"]", "stale-token");
    CHECK(verdict_of("mutex", refused) == Verdict::kLinearizable);
}

TEST_CASE("an acquire with an unknown outcome may hold the lock or never have happened",
          "[jepsen][mutex]") {
    HistoryBuilder never;
    never.invoke(1, "acquire", "L").info(1, "acquire", "L").op(2, "acquire", "L", "null", "8");
    CHECK(verdict_of("mutex", never) == Verdict::kLinearizable);

    HistoryBuilder held_forever;  // an info grant may also keep the lock until the end
    held_forever.op(2, "acquire", "L", "null", "3")
        .invoke(1, "acquire", "L")
        .info(1, "acquire", "L")
        .invoke(2, "release", "L", "3")
        .info(2, "release", "L", "3");
    CHECK(verdict_of("mutex", held_forever) == Verdict::kLinearizable);

    HistoryBuilder released_later;  // an info release may free the lock for the next client
    released_later.op(1, "acquire", "L", "null", "5")
        .invoke(1, "release", "L", "5")
        .info(1, "release", "L", "5")
        .op(2, "acquire", "L", "null", "8");
    CHECK(verdict_of("mutex", released_later) == Verdict::kLinearizable);
}

TEST_CASE("locks with different names are independent", "[jepsen][mutex]") {
    HistoryBuilder h;
    h.op(1, "acquire", "A", "null", "5").op(2, "acquire", "B", "null", "6");
    CheckResult r = test::check_text("mutex", h.text());
    CHECK(r.verdict == Verdict::kLinearizable);
    CHECK(r.partitions == 2);
}

TEST_CASE("the mutex model refuses an ok acquire without a token at the completion line",
          "[jepsen][mutex]") {
    HistoryBuilder h;
    h.op(1, "acquire", "L", "null", "null");
    CHECK(test::bad_line("mutex", h.text()) == 2);
    HistoryBuilder release;
    release.op(1, "release", "L", "\"x\"", "null");
    CHECK(test::bad_line("mutex", release.text()) == 1);
}

}  // namespace
}  // namespace raftlock::jepsen
