#include "server/console_views.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/statemachine/harness.h"

namespace raftlock::server {
namespace {

namespace sm = statemachine;
using nlohmann::json;

TEST_CASE("the lock view shows holders with tokens and waiters in queue order",
          "[server][console]") {
    sm::testing::Harness h;
    const sm::SessionId holder = h.open();
    const sm::SessionId first = h.open();
    const sm::SessionId second = h.open();
    const sm::Response held = h.lock(holder, "db", "w1", sm::LockMode::kExclusive, 0, 1, 500);
    REQUIRE(held.lock == sm::LockOutcome::kGranted);
    h.time_ms += 100;
    REQUIRE(h.lock(first, "db", "", sm::LockMode::kExclusive, 5000).lock ==
            sm::LockOutcome::kQueued);
    h.time_ms += 100;
    REQUIRE(h.lock(second, "db", "", sm::LockMode::kShared, 5000).lock == sm::LockOutcome::kQueued);
    bool found = false;
    const json lock = json::parse(console_lock_json(h.sm, "db", h.time_ms + 1000, found));
    REQUIRE(found);
    CHECK(lock["kind"] == "exclusive");
    CHECK(lock["lock_delay_ms"] == 500);
    REQUIRE(lock["holders"].size() == 1);
    CHECK(lock["holders"][0]["session"] == holder);
    CHECK(lock["holders"][0]["owner"] == "w1");
    CHECK(lock["holders"][0]["token"] == held.token);
    CHECK(lock["holders"][0]["held_for_ms"] == 1200);  // granted 200 ms before h.time_ms
    REQUIRE(lock["waiters"].size() == 2);
    CHECK(lock["waiters"][0]["position"] == 1);
    CHECK(lock["waiters"][0]["session"] == first);
    CHECK(lock["waiters"][1]["session"] == second);
    CHECK(lock["waiters"][1]["mode"] == "shared");
    CHECK(lock["waiters"][1]["waited_ms"] == 1000);
    const json none = json::parse(console_lock_json(h.sm, "nope", h.time_ms, found));
    CHECK(!found);
    CHECK(none["error"] == "no such lock");
}

TEST_CASE("the locks list is capped and says there are more", "[server][console]") {
    sm::testing::Harness h;
    const sm::SessionId s = h.open();
    for (int i = 0; i < 5; ++i) {
        REQUIRE(h.lock(s, "a/" + std::to_string(i)).lock == sm::LockOutcome::kGranted);
    }
    REQUIRE(h.lock(s, "b/0").lock == sm::LockOutcome::kGranted);
    const json capped = json::parse(console_locks_json(h.sm, "a/", 3, h.time_ms));
    CHECK(capped["locks"].size() == 3);
    CHECK(capped["more"] == true);
    CHECK(capped["total"] == 6);
    const json all = json::parse(console_locks_json(h.sm, "a/", 5, h.time_ms));
    CHECK(all["locks"].size() == 5);
    CHECK(all["more"] == false);
    CHECK(all["locks"][0]["name"] == "a/0");
}

TEST_CASE("the node view lists children up to the limit and shows open data only",
          "[server][console]") {
    sm::testing::Harness h;
    const sm::SessionId s = h.open();
    REQUIRE(h.create(s, "/app", sm::NodeKind::kPersistent, "config").code == sm::ErrorCode::kOk);
    for (int i = 0; i < 4; ++i) {
        REQUIRE(h.create(s, "/app/n" + std::to_string(i)).code == sm::ErrorCode::kOk);
    }
    bool found = false;
    const json app = json::parse(console_node_json(h.sm, "/app", 3, found));
    REQUIRE(found);
    CHECK(app["data"] == "config");
    CHECK(app["children"].size() == 3);
    CHECK(app["more"] == 1);
    CHECK(app["stat"]["num_children"] == 4);
    CHECK(json::parse(console_node_json(h.sm, "/nope", 3, found))["error"] == "no such node");
    CHECK(!found);
    CHECK(json::parse(console_node_json(h.sm, "bad", 3, found))["error"] == "not a valid path");
}

}  // namespace
}  // namespace raftlock::server
