#include "client/request_table.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

using namespace std::chrono_literals;

namespace {

PendingRequest pending(RequestClass request_class, SteadyTime deadline, int* answered = nullptr) {
    PendingRequest p;
    p.request_class = request_class;
    p.deadline = deadline;
    p.done = [answered](ClientResult<proto::Response>) {
        if (answered) {
            (*answered)++;
        }
    };
    return p;
}

}  // namespace

TEST_CASE("requests get increasing ids and responses find them by id", "[client][table]") {
    const SteadyTime t = SteadyTime{} + 100s;
    RequestTable table(8);
    const uint64_t a = table.add(pending(RequestClass::kRead, t));
    const uint64_t b = table.add(pending(RequestClass::kSessionWrite, t));
    CHECK(a < b);
    REQUIRE(table.find(a) != nullptr);
    CHECK(table.find(a)->request.request_id() == a);
    CHECK(table.find(b)->request_class == RequestClass::kSessionWrite);
    // An answer for an id we do not have (late, or never ours) matches nothing.
    CHECK(table.find(b + 100) == nullptr);
    CHECK(!table.take(b + 100).has_value());
    auto taken = table.take(a);
    REQUIRE(taken.has_value());
    CHECK(taken->request.request_id() == a);
    CHECK(table.find(a) == nullptr);
    CHECK(table.size() == 1);
}

TEST_CASE("after a reconnect unsent requests go out in submission order", "[client][table]") {
    const SteadyTime t = SteadyTime{} + 100s;
    RequestTable table(8);
    const uint64_t a = table.add(pending(RequestClass::kSessionWrite, t));
    const uint64_t pinned = table.add(pending(RequestClass::kPinned, t));
    const uint64_t b = table.add(pending(RequestClass::kSessionWrite, t));
    const uint64_t c = table.add(pending(RequestClass::kRead, t));
    table.find(a)->on_wire = true;
    table.find(pinned)->on_wire = true;
    CHECK(table.unsent_ids() == std::vector<uint64_t>{b, c});
    table.mark_all_off_wire();
    CHECK(table.unsent_ids() == std::vector<uint64_t>{a, b, c});
    // A pinned request lives on its own connection, which the main one's loss does not touch.
    CHECK(table.find(pinned)->on_wire);
}

TEST_CASE("expired requests leave the table in id order", "[client][table]") {
    const SteadyTime t = SteadyTime{} + 100s;
    RequestTable table(8);
    const uint64_t late = table.add(pending(RequestClass::kRead, t + 5s));
    const uint64_t early = table.add(pending(RequestClass::kRead, t + 1s));
    const uint64_t middle = table.add(pending(RequestClass::kRead, t + 2s));
    CHECK(table.earliest_deadline() == t + 1s);
    auto expired = table.take_expired(t + 2s);
    REQUIRE(expired.size() == 2);
    CHECK(expired[0].request.request_id() == early);
    CHECK(expired[1].request.request_id() == middle);
    CHECK(table.earliest_deadline() == t + 5s);
    CHECK(table.find(late) != nullptr);
}

TEST_CASE("the table is bounded", "[client][table]") {
    const SteadyTime t = SteadyTime{} + 100s;
    RequestTable table(2);
    table.add(pending(RequestClass::kRead, t));
    CHECK(!table.full());
    table.add(pending(RequestClass::kRead, t));
    CHECK(table.full());
    CHECK(table.take_all().size() == 2);
    CHECK(table.size() == 0);
}

}  // namespace raftlock::client
