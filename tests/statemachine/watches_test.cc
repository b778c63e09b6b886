#include "statemachine/watches.h"

#include <catch2/catch.hpp>

#include "harness.h"

namespace raftlock::statemachine {
namespace {

using testing::Harness;
using T = WatchTrigger;
constexpr EventType kCreated = EventType::kNodeCreated;
constexpr EventType kDeleted = EventType::kNodeDeleted;
constexpr EventType kChanged = EventType::kNodeDataChanged;
constexpr EventType kChildren = EventType::kNodeChildrenChanged;

// --- the triggers each operation produces (ZooKeeper Programmer's Guide, "ZooKeeper Watches") ---

TEST_CASE("create triggers NodeCreated on the node and NodeChildrenChanged on its parent",
          "[statemachine][watches]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    ApplyResult out = h.run(s, Create{"/a/b", "", NodeKind::kPersistent, 0});
    CHECK(out.triggers ==
          std::vector<T>{{"/a/b", kCreated, out.index}, {"/a", kChildren, out.index}});
}

TEST_CASE("delete triggers NodeDeleted on the node and NodeChildrenChanged on its parent",
          "[statemachine][watches]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    ApplyResult out = h.run(s, Delete{"/a", -1});
    CHECK(out.triggers == std::vector<T>{{"/a", kDeleted, out.index}, {"/", kChildren, out.index}});
}

TEST_CASE("set triggers NodeDataChanged on the node only", "[statemachine][watches]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    ApplyResult out = h.run(s, SetData{"/a", "x", -1});
    CHECK(out.triggers == std::vector<T>{{"/a", kChanged, out.index}});
}

TEST_CASE("a failed operation triggers nothing", "[statemachine][watches]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    CHECK(h.run(s, Create{"/a", "", NodeKind::kPersistent, 0}).triggers.empty());
    CHECK(h.run(s, SetData{"/a", "", 9}).triggers.empty());
    CHECK(h.run(s, Delete{"/zz", -1}).triggers.empty());
}

TEST_CASE("a session's end triggers NodeDeleted for each of its ephemeral nodes",
          "[statemachine][watches]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/p");
    h.create(s, "/p/e1", NodeKind::kEphemeral);
    h.create(s, "/p/e2", NodeKind::kEphemeral);
    ApplyResult out = h.leader(ExpireSession{s});
    CHECK(out.triggers == std::vector<T>{{"/p/e1", kDeleted, out.index},
                                         {"/p", kChildren, out.index},
                                         {"/p/e2", kDeleted, out.index},
                                         {"/p", kChildren, out.index}});
}

// --- how a server's registry matches them ---

TEST_CASE("a data watch fires once, on data change or delete, not on child changes",
          "[statemachine][watches]") {
    WatchRegistry reg;
    REQUIRE(reg.add(1, "/a", WatchKind::kData) == ErrorCode::kOk);
    CHECK(reg.dispatch({{"/a", kChildren, 5}}).empty());
    CHECK(reg.dispatch({{"/a", kChanged, 6}}) == std::vector<WatchEvent>{{1, "/a", kChanged, 6}});
    CHECK(reg.dispatch({{"/a", kChanged, 7}}).empty());
    reg.add(1, "/a", WatchKind::kData);
    CHECK(reg.dispatch({{"/a", kDeleted, 8}}).size() == 1);
    CHECK(reg.watch_count(1) == 0);
}

TEST_CASE("an exists watch on a missing node fires when it is created", "[statemachine][watches]") {
    WatchRegistry reg;
    reg.add(1, "/a", WatchKind::kExists);
    CHECK(reg.dispatch({{"/a", kCreated, 3}}) == std::vector<WatchEvent>{{1, "/a", kCreated, 3}});
    CHECK(reg.dispatch({{"/a", kChanged, 4}}).empty());
}

TEST_CASE("a child watch fires once, on child changes or the node's delete",
          "[statemachine][watches]") {
    WatchRegistry reg;
    reg.add(1, "/a", WatchKind::kChildren);
    CHECK(reg.dispatch({{"/a", kChanged, 2}}).empty());
    CHECK(reg.dispatch({{"/a", kChildren, 3}}).size() == 1);
    CHECK(reg.dispatch({{"/a", kChildren, 4}}).empty());
    reg.add(1, "/a", WatchKind::kChildren);
    CHECK(reg.dispatch({{"/a", kDeleted, 5}}).size() == 1);
}

TEST_CASE("a persistent watch fires on every event of its path and stays",
          "[statemachine][watches]") {
    WatchRegistry reg;
    reg.add(1, "/a", WatchKind::kPersistent);
    for (EventType type : {kCreated, kChanged, kChildren, kDeleted, kCreated}) {
        CHECK(reg.dispatch({{"/a", type, 1}}).size() == 1);
    }
    CHECK(reg.dispatch({{"/a/b", kCreated, 1}}).empty());
    CHECK(reg.remove(1, "/a", WatchKind::kPersistent));
    CHECK(reg.dispatch({{"/a", kChanged, 1}}).empty());
}

TEST_CASE("a recursive watch fires for its subtree except NodeChildrenChanged, and stays",
          "[statemachine][watches]") {
    WatchRegistry reg;
    reg.add(1, "/a", WatchKind::kPersistentRecursive);
    CHECK(reg.dispatch({{"/a", kChanged, 1}}).size() == 1);
    CHECK(reg.dispatch({{"/a/b/c", kCreated, 2}}).size() == 1);
    CHECK(reg.dispatch({{"/a/b", kDeleted, 3}}).size() == 1);
    CHECK(reg.dispatch({{"/a/b", kChildren, 4}}).empty());
    CHECK(reg.dispatch({{"/ab", kCreated, 5}}).empty());
    reg.add(2, "/", WatchKind::kPersistentRecursive);
    CHECK(reg.dispatch({{"/x", kCreated, 6}}) == std::vector<WatchEvent>{{2, "/x", kCreated, 6}});
}

TEST_CASE("a watcher gets one event per trigger however many of its watches match",
          "[statemachine][watches]") {
    WatchRegistry reg;
    reg.add(1, "/a", WatchKind::kData);
    reg.add(1, "/a", WatchKind::kChildren);
    reg.add(1, "/a", WatchKind::kPersistent);
    reg.add(1, "/", WatchKind::kPersistentRecursive);
    reg.add(2, "/a", WatchKind::kData);
    CHECK(reg.dispatch({{"/a", kDeleted, 9}}) ==
          std::vector<WatchEvent>{{1, "/a", kDeleted, 9}, {2, "/a", kDeleted, 9}});
}

TEST_CASE("closing a watcher drops all its watches", "[statemachine][watches]") {
    WatchRegistry reg;
    reg.add(1, "/a", WatchKind::kData);
    reg.add(1, "/b", WatchKind::kPersistentRecursive);
    reg.remove_watcher(1);
    CHECK(reg.watch_count(1) == 0);
    CHECK(reg.dispatch({{"/a", kChanged, 1}, {"/b", kChanged, 2}}).empty());
}

TEST_CASE("watches per watcher are bounded and paths are checked", "[statemachine][watches]") {
    WatchRegistry reg;
    for (size_t i = 0; i < kWatchesPerWatcherMax; i++) {
        REQUIRE(reg.add(1, "/n" + std::to_string(i), WatchKind::kData) == ErrorCode::kOk);
    }
    CHECK(reg.add(1, "/more", WatchKind::kData) == ErrorCode::kLimitExceeded);
    CHECK(reg.add(2, "bad", WatchKind::kData) == ErrorCode::kBadArguments);
}

TEST_CASE("applied triggers reach the watches a client set, end to end",
          "[statemachine][watches]") {
    Harness h;
    WatchRegistry reg;
    SessionId s = h.open();
    reg.add(7, "/", WatchKind::kChildren);
    reg.add(7, "/job", WatchKind::kExists);
    ApplyResult out = h.run(s, Create{"/job", "", NodeKind::kPersistent, 0});
    std::vector<WatchEvent> events = reg.dispatch(out.triggers);
    CHECK(events ==
          std::vector<WatchEvent>{{7, "/job", kCreated, h.index}, {7, "/", kChildren, h.index}});
}

// --- a snapshot restore: the triggers the skipped entries would have produced ---

Stat stat_at(Index czxid, Index mzxid, Index pzxid) {
    Stat s;
    s.czxid = czxid;
    s.mzxid = mzxid;
    s.pzxid = pzxid;
    return s;
}

TEST_CASE("a restore turns the watched nodes' changes into their triggers",
          "[statemachine][watches]") {
    const WatchedView before{{"/same", stat_at(2, 2, 2)},
                             {"/set", stat_at(3, 3, 3)},
                             {"/kids", stat_at(4, 4, 4)},
                             {"/gone", stat_at(5, 5, 5)},
                             {"/again", stat_at(6, 6, 6)}};
    const WatchedView after{{"/same", stat_at(2, 2, 2)},
                            {"/set", stat_at(3, 40, 3)},
                            {"/kids", stat_at(4, 4, 41)},
                            {"/again", stat_at(42, 42, 42)},
                            {"/new", stat_at(43, 43, 43)}};
    CHECK(restore_triggers(before, after, 50) == std::vector<T>{{"/again", kDeleted, 42},
                                                                {"/again", kCreated, 42},
                                                                {"/gone", kDeleted, 50},
                                                                {"/kids", kChildren, 41},
                                                                {"/new", kCreated, 43},
                                                                {"/set", kChanged, 40}});
    CHECK(restore_triggers(before, before, 50).empty());
}

TEST_CASE("a restore fires and removes the one-shot watches of changed nodes",
          "[statemachine][watches]") {
    WatchRegistry r;
    REQUIRE(r.add(1, "/set", WatchKind::kData) == ErrorCode::kOk);
    REQUIRE(r.add(1, "/same", WatchKind::kData) == ErrorCode::kOk);
    REQUIRE(r.add(2, "/tree", WatchKind::kPersistentRecursive) == ErrorCode::kOk);
    CHECK(r.watched_paths() == std::vector<std::string>{"/same", "/set"});
    CHECK(r.recursive_roots() == std::vector<std::string>{"/tree"});
    const WatchedView before{{"/same", stat_at(2, 2, 2)}, {"/set", stat_at(3, 3, 3)}};
    const WatchedView after{
        {"/same", stat_at(2, 2, 2)}, {"/set", stat_at(3, 9, 3)}, {"/tree/x", stat_at(8, 8, 8)}};
    const std::vector<WatchEvent> events = r.dispatch(restore_triggers(before, after, 10));
    CHECK(events == std::vector<WatchEvent>{{1, "/set", kChanged, 9}, {2, "/tree/x", kCreated, 8}});
    CHECK(r.watched_paths() == std::vector<std::string>{"/same"});  // the fired one is gone
}

}  // namespace
}  // namespace raftlock::statemachine
