#include "server/console_feed.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/console_history.h"

namespace raftlock::server {
namespace {

ConsoleEvent grant(std::string lock, uint64_t token) {
    return ConsoleEvent{.kind = ConsoleEventKind::kGrant, .lock = std::move(lock), .token = token};
}

// A long-poll's client as the feed sees it: whether it still waits, and what woke it.
struct Client {
    bool connected = true;
    int wakes = 0;
    ConsoleFeed::Waiter waiter(uint64_t after, int64_t deadline_ms) {
        return {.after = after,
                .deadline_ms = deadline_ms,
                .waiting = [this] { return connected; },
                .wake = [this] { ++wakes; }};
    }
};

TEST_CASE("the feed numbers events and keeps the newest events_max", "[server][console]") {
    ConsoleFeed feed(3, 4);
    CHECK(feed.last_seq() == 0);
    CHECK(feed.first_seq() == 1);
    for (uint64_t t = 1; t <= 5; ++t) {
        feed.record(grant("a", t));
    }
    CHECK(feed.events() == 3);
    CHECK(feed.first_seq() == 3);
    CHECK(feed.last_seq() == 5);
    const std::vector<ConsoleEvent> all = feed.since(0, 100);
    REQUIRE(all.size() == 3);
    CHECK(all[0].seq == 3);
    CHECK(all[2].token == 5);
    CHECK(feed.since(4, 100).size() == 1);
    CHECK(feed.since(5, 100).empty());
    CHECK(feed.since(3, 1).front().seq == 4);
    // A reader that saw 1 missed 2: the answer says so.
    const auto json = nlohmann::json::parse(feed.events_json(1));
    CHECK(json["missed"] == true);
    CHECK(json["events"].size() == 3);
    CHECK(nlohmann::json::parse(feed.events_json(2))["missed"] == false);
    CHECK(nlohmann::json::parse(feed.events_json(5))["events"].empty());
}

TEST_CASE("a feed event's names are cut and serialise even when not UTF-8", "[server][console]") {
    ConsoleFeed feed;
    feed.record(grant(std::string(1000, 'x'), 7));
    feed.record(grant("bad\xff", 8));
    CHECK(feed.since(0, 10)[0].lock.size() == ConsoleFeed::kTextBytesMax);
    const auto json = nlohmann::json::parse(feed.events_json(0));
    CHECK(json["events"][0]["kind"] == "grant");
    CHECK(json["events"][0]["token"] == 7);
    CHECK(json["events"][1]["lock"].get<std::string>().starts_with("bad"));
}

TEST_CASE("a long-poll wakes at the next event, once", "[server][console]") {
    ConsoleFeed feed(16, 4);
    feed.record(grant("a", 1));
    Client c;
    CHECK(feed.park(c.waiter(0, 1000)) == ConsoleFeed::Park::kReady);  // event 1 is newer
    CHECK(feed.park(c.waiter(1, 1000)) == ConsoleFeed::Park::kParked);
    CHECK(feed.waiters() == 1);
    feed.record(grant("a", 2));
    CHECK(c.wakes == 1);
    CHECK(feed.waiters() == 0);
    feed.record(grant("a", 3));
    CHECK(c.wakes == 1);
    // A reader from before a restart (a number above the last) is answered at once.
    CHECK(feed.park(c.waiter(99, 1000)) == ConsoleFeed::Park::kReady);
}

TEST_CASE("a long-poll wakes at its deadline, and a gone one is dropped unwoken",
          "[server][console]") {
    ConsoleFeed feed(16, 4);
    Client early;
    Client late;
    Client gone;
    REQUIRE(feed.park(early.waiter(0, 100)) == ConsoleFeed::Park::kParked);
    REQUIRE(feed.park(late.waiter(0, 500)) == ConsoleFeed::Park::kParked);
    REQUIRE(feed.park(gone.waiter(0, 100)) == ConsoleFeed::Park::kParked);
    gone.connected = false;
    feed.expire(99);
    CHECK(early.wakes == 0);
    CHECK(feed.waiters() == 2);  // `gone` left
    feed.expire(100);
    CHECK(early.wakes == 1);
    CHECK(late.wakes == 0);
    CHECK(gone.wakes == 0);
    CHECK(feed.waiters() == 1);
    feed.expire(500);
    CHECK(late.wakes == 1);
    CHECK(feed.waiters() == 0);
}

TEST_CASE("the feed parks at most waiters_max long-polls, counting only live ones",
          "[server][console]") {
    ConsoleFeed feed(16, 2);
    Client a;
    Client b;
    Client c;
    CHECK(feed.park(a.waiter(0, 100)) == ConsoleFeed::Park::kParked);
    CHECK(feed.park(b.waiter(0, 100)) == ConsoleFeed::Park::kParked);
    CHECK(feed.park(c.waiter(0, 100)) == ConsoleFeed::Park::kFull);
    CHECK(feed.waiters() == 2);
    a.connected = false;  // its connection closed: its place is free
    CHECK(feed.park(c.waiter(0, 100)) == ConsoleFeed::Park::kParked);
    CHECK(feed.waiters() == 2);
    feed.record(grant("x", 1));
    CHECK(a.wakes == 0);
    CHECK(b.wakes == 1);
    CHECK(c.wakes == 1);
}

TEST_CASE("the history samples means and rates per span and keeps samples_max",
          "[server][console]") {
    ConsoleHistory history(2);
    ConsoleHistory::Counters c{.steady_ms = 1000, .wall_ms = 5000};
    history.sample(c);
    CHECK(history.size() == 0);  // the first call only remembers
    c.steady_ms = 2000;
    c.commit_count = 4;
    c.commit_sum_us = 8000;  // 4 commits of 2 ms
    c.fsync_count = 2;
    c.fsync_sum_us = 1000;
    c.applied_entries = 10;
    c.storage_syncs = 2;
    history.sample(c);
    REQUIRE(history.size() == 1);
    CHECK(history.back().commit_ms_mean == Approx(2.0));
    CHECK(history.back().fsync_ms_mean == Approx(0.5));
    CHECK(history.back().applied_per_s == Approx(10.0));
    CHECK(history.back().commits == 4);
    c.steady_ms = 2050;  // too short a span: skipped
    history.sample(c);
    CHECK(history.size() == 1);
    c.steady_ms = 2500;  // half a second, nothing new
    history.sample(c);
    CHECK(history.back().commit_ms_mean == 0.0);
    CHECK(history.back().applied_per_s == 0.0);
    c.steady_ms = 3500;
    c.applied_entries = 15;
    history.sample(c);
    CHECK(history.size() == 2);  // the oldest dropped
    CHECK(history.back().applied_per_s == Approx(5.0));
    const auto json = nlohmann::json::parse(history.json());
    CHECK(json["samples"].size() == 2);
}

}  // namespace
}  // namespace raftlock::server
