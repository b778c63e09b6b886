#include <catch2/catch.hpp>

#include "harness.h"

namespace raftlock::statemachine {
namespace {

using testing::Harness;

TEST_CASE("create makes a node with ZooKeeper's stat and updates the parent's",
          "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.time_ms = 2000;
    Response r = h.create(s, "/a", NodeKind::kPersistent, "hello");
    REQUIRE(r.code == ErrorCode::kOk);
    CHECK(r.path == "/a");
    Index zxid = h.index;
    Stat expected;
    expected.czxid = expected.mzxid = expected.pzxid = zxid;
    expected.ctime = expected.mtime = 2000;
    expected.data_length = 5;
    CHECK(r.stat == expected);
    CHECK(h.sm.get("/a").value().data == "hello");
    Stat root = *h.sm.exists("/");
    CHECK(root.cversion == 1);
    CHECK(root.pzxid == zxid);
    CHECK(root.num_children == 1);
}

TEST_CASE("create under a missing parent gets NoNode", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    CHECK(h.create(s, "/a/b").code == ErrorCode::kNoNode);
}

TEST_CASE("create of an existing path gets NodeExists", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    CHECK(h.create(s, "/a").code == ErrorCode::kNodeExists);
}

TEST_CASE("create under an ephemeral node gets NoChildrenForEphemerals", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/e", NodeKind::kEphemeral);
    CHECK(h.create(s, "/e/c").code == ErrorCode::kNoChildrenForEphemerals);
}

TEST_CASE("sequential nodes get a 10-digit suffix from the parent's cversion",
          "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/q");
    CHECK(h.create(s, "/q/n-", NodeKind::kPersistentSequential).path == "/q/n-0000000000");
    h.create(s, "/q/x");
    CHECK(h.create(s, "/q/n-", NodeKind::kEphemeralSequential).path == "/q/n-0000000002");
    REQUIRE(h.run(s, Delete{"/q/x", -1}).response.code == ErrorCode::kOk);
    CHECK(h.create(s, "/q/", NodeKind::kPersistentSequential).path == "/q/0000000004");
}

TEST_CASE("an ephemeral node is owned by the session that created it", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/e", NodeKind::kEphemeral);
    CHECK(h.sm.exists("/e")->ephemeral_owner == s);
    CHECK(h.sm.session(s)->ephemerals == 1);
    h.create(s, "/p");
    CHECK(h.sm.exists("/p")->ephemeral_owner == kNoSession);
}

TEST_CASE("delete checks the version, and -1 matches any version", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    h.run(s, SetData{"/a", "x", -1});
    CHECK(h.run(s, Delete{"/a", 0}).response.code == ErrorCode::kBadVersion);
    CHECK(h.sm.exists("/a"));
    CHECK(h.run(s, Delete{"/a", 1}).response.code == ErrorCode::kOk);
    h.create(s, "/b");
    CHECK(h.run(s, Delete{"/b", -1}).response.code == ErrorCode::kOk);
}

TEST_CASE("delete of a node with children gets NotEmpty", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    h.create(s, "/a/b");
    CHECK(h.run(s, Delete{"/a", -1}).response.code == ErrorCode::kNotEmpty);
}

TEST_CASE("delete of a missing node gets NoNode", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    CHECK(h.run(s, Delete{"/nope", -1}).response.code == ErrorCode::kNoNode);
}

TEST_CASE("set increments the version and moves mzxid and mtime", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a", NodeKind::kPersistent, "1");
    h.time_ms += 50;
    Response r = h.run(s, SetData{"/a", "22", 0}).response;
    REQUIRE(r.code == ErrorCode::kOk);
    CHECK(r.stat.version == 1);
    CHECK(r.stat.mzxid == h.index);
    CHECK(r.stat.mtime == h.time_ms);
    CHECK(r.stat.data_length == 2);
    CHECK(r.stat.czxid < r.stat.mzxid);
}

TEST_CASE("set with a wrong version gets BadVersion, on a missing node NoNode",
          "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    CHECK(h.run(s, SetData{"/a", "x", 3}).response.code == ErrorCode::kBadVersion);
    CHECK(h.run(s, SetData{"/b", "x", -1}).response.code == ErrorCode::kNoNode);
}

TEST_CASE("children are listed in sorted order", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    for (const char* p : {"/c", "/a", "/b", "/a0"}) {
        h.create(s, p);
    }
    CHECK(h.sm.children("/").value() == std::vector<std::string>{"a", "a0", "b", "c"});
}

TEST_CASE("queries of a missing node get NoNode and of an invalid path BadArguments",
          "[statemachine][tree]") {
    Harness h;
    CHECK(h.sm.get("/x").error() == ErrorCode::kNoNode);
    CHECK(h.sm.children("/x").error() == ErrorCode::kNoNode);
    CHECK(h.sm.get("x").error() == ErrorCode::kBadArguments);
    CHECK(!h.sm.exists("/x"));
}

TEST_CASE("data larger than 1 MiB is refused with BadArguments", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    Command c;
    c.client_id = s;
    c.seq = 1;
    c.op = Create{"/big", std::string(kDataBytesMax + 1, 'x'), NodeKind::kPersistent, 0};
    CHECK(h.sm.apply_command(++h.index, c).response.code == ErrorCode::kBadArguments);
    CHECK(!h.sm.exists("/big"));
}

TEST_CASE("a container is deleted when its last child is deleted", "[statemachine][tree]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/c", NodeKind::kContainer);
    h.create(s, "/c/x");
    ApplyResult out = h.run(s, Delete{"/c/x", -1});
    CHECK(!h.sm.exists("/c"));
    CHECK(out.triggers.size() == 4);
    CHECK(out.triggers[2] == WatchTrigger{"/c", EventType::kNodeDeleted, out.index});
}

TEST_CASE("a TTL node is deleted once unmodified for its TTL", "[statemachine][tree][time]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/t", NodeKind::kTtl, "", 1000);
    h.advance(999);
    CHECK(h.sm.exists("/t"));
    ApplyResult out = h.advance(1);
    CHECK(!h.sm.exists("/t"));
    CHECK(out.triggers.front() == WatchTrigger{"/t", EventType::kNodeDeleted, out.index});
}

TEST_CASE("a sequential TTL node is named as a sequential node and lives as a TTL node",
          "[statemachine][tree][time]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/q");
    Response first = h.create(s, "/q/n-", NodeKind::kTtlSequential, "", 1000);
    REQUIRE(first.code == ErrorCode::kOk);
    CHECK(first.path == "/q/n-0000000000");
    Response second = h.create(s, "/q/n-", NodeKind::kTtlSequential, "", 2000);
    CHECK(second.path == "/q/n-0000000001");
    CHECK(h.sm.get("/q/n-0000000000").value().kind == NodeKind::kTtlSequential);
    h.advance(1000);
    CHECK(!h.sm.exists("/q/n-0000000000"));
    CHECK(h.sm.exists("/q/n-0000000001"));
    h.advance(1000);
    CHECK(h.sm.children("/q").value().empty());
}

TEST_CASE("a modified TTL node lives until its TTL after the modification",
          "[statemachine][tree][time]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/t", NodeKind::kTtl, "", 1000);
    h.time_ms += 600;
    h.run(s, SetData{"/t", "x", -1});
    h.advance(500);
    CHECK(h.sm.exists("/t"));
    h.advance(500);
    CHECK(!h.sm.exists("/t"));
}

TEST_CASE("a TTL node with children is not deleted", "[statemachine][tree][time]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/t", NodeKind::kTtl, "", 1000);
    h.create(s, "/t/c");
    h.advance(5000);
    CHECK(h.sm.exists("/t"));
    h.run(s, Delete{"/t/c", -1});
    h.advance(1000);
    CHECK(!h.sm.exists("/t"));
}

TEST_CASE("multi applies every op when all succeed", "[statemachine][tree][multi]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    Multi m;
    m.ops = {Check{"/a", 0}, Create{"/a/b", "x", NodeKind::kPersistent, 0}, SetData{"/a", "y", 0},
             Create{"/s-", "", NodeKind::kPersistentSequential, 0}};
    ApplyResult out = h.run(s, m);
    REQUIRE(out.response.code == ErrorCode::kOk);
    REQUIRE(out.response.results.size() == 4);
    CHECK(out.response.results[1].path == "/a/b");
    CHECK(out.response.results[3].path == "/s-0000000001");
    CHECK(h.sm.get("/a").value().data == "y");
    CHECK(out.triggers.size() == 5);
}

TEST_CASE("multi applies nothing when one op fails and reports which one",
          "[statemachine][tree][multi]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a", NodeKind::kPersistent, "v");
    h.create(s, "/d");
    h.create(s, "/c", NodeKind::kContainer);
    h.create(s, "/c/x");
    Stat root_before = *h.sm.exists("/");
    Multi m;
    m.ops = {Create{"/b", "", NodeKind::kEphemeral, 0},
             SetData{"/a", "w", -1},
             Delete{"/d", -1},
             Delete{"/c/x", -1},
             Create{"/a/x", "", NodeKind::kPersistent, 0},
             Create{"/a", "", NodeKind::kPersistent, 0}};
    ApplyResult out = h.run(s, m);
    CHECK(out.response.code == ErrorCode::kNodeExists);
    REQUIRE(out.response.results.size() == 6);
    CHECK(out.response.results[5].code == ErrorCode::kNodeExists);
    CHECK(out.response.results[0].code == ErrorCode::kRolledBack);
    CHECK(out.triggers.empty());
    CHECK(h.sm.get("/a").value().data == "v");
    CHECK(h.sm.exists("/c/x"));
    CHECK(!h.sm.exists("/b"));
    CHECK(h.sm.children("/").value() == std::vector<std::string>{"a", "c", "d"});
    CHECK(*h.sm.exists("/") == root_before);
    CHECK(h.sm.session(s)->ephemerals == 0);
}

TEST_CASE("a container a multi empties stays until the multi's end, then goes if still empty",
          "[statemachine][tree][multi][container]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/c", NodeKind::kContainer);
    h.create(s, "/c/x");
    // zkCli's deleteall: the child, then the container itself.
    Multi deleteall;
    deleteall.ops = {Delete{"/c/x", -1}, Delete{"/c", -1}};
    ApplyResult out = h.run(s, deleteall);
    CHECK(out.response.code == ErrorCode::kOk);
    CHECK(!h.sm.exists("/c"));

    // A new child in the emptied container keeps it.
    h.create(s, "/c", NodeKind::kContainer);
    h.create(s, "/c/x");
    Multi replace;
    replace.ops = {Delete{"/c/x", -1}, Create{"/c/y", "", NodeKind::kPersistent, 0}};
    CHECK(h.run(s, replace).response.code == ErrorCode::kOk);
    CHECK(h.sm.children("/c").value() == std::vector<std::string>{"y"});

    // Left empty, it goes at the end, with its emptied parent container, and their watches fire.
    h.create(s, "/p", NodeKind::kContainer);
    h.create(s, "/p/c", NodeKind::kContainer);
    h.create(s, "/p/c/x");
    Multi last;
    last.ops = {Delete{"/p/c/x", -1}, Check{"/p/c", -1}};
    out = h.run(s, last);
    CHECK(out.response.code == ErrorCode::kOk);
    CHECK(!h.sm.exists("/p/c"));
    CHECK(!h.sm.exists("/p"));
    size_t container_deletions = 0;
    for (const WatchTrigger& t : out.triggers) {
        if (t.type == EventType::kNodeDeleted && (t.path == "/p" || t.path == "/p/c")) {
            ++container_deletions;
        }
    }
    CHECK(container_deletions == 2);
}

TEST_CASE("a multi logged before containers waited for its end replays as it was applied",
          "[statemachine][tree][multi][container]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/c", NodeKind::kContainer);
    h.create(s, "/c/x");
    Multi old;
    old.ops = {Delete{"/c/x", -1}, Delete{"/c", -1}};
    old.containers_at_end = false;
    ApplyResult out = h.run(s, old);
    CHECK(out.response.code == ErrorCode::kNoNode);
    CHECK(out.response.results[1].code == ErrorCode::kNoNode);
    CHECK(h.sm.exists("/c/x"));
}

TEST_CASE("a multi check with a wrong version fails the whole multi",
          "[statemachine][tree][multi]") {
    Harness h;
    SessionId s = h.open();
    h.create(s, "/a");
    Multi m;
    m.ops = {Create{"/b", "", NodeKind::kPersistent, 0}, Check{"/a", 5}};
    CHECK(h.run(s, m).response.code == ErrorCode::kBadVersion);
    CHECK(!h.sm.exists("/b"));
}

TEST_CASE("a fenced write is applied only with a current holder's token",
          "[statemachine][tree][fencing]") {
    Harness h;
    SessionId a = h.open();
    SessionId b = h.open();
    Index old_token = h.lock(a, "L").token;
    h.create(a, "/res");
    h.run(a, Release{"L", "", old_token});
    Index new_token = h.lock(b, "L").token;
    Command stale;
    stale.client_id = a;
    stale.seq = ++h.seqs[a];
    stale.fence = Fence{"L", old_token};
    stale.op = SetData{"/res", "stale", -1};
    CHECK(h.apply(stale).response.code == ErrorCode::kFenceRejected);
    Command fresh = stale;
    fresh.client_id = b;
    fresh.seq = ++h.seqs[b];
    fresh.fence = Fence{"L", new_token};
    fresh.op = SetData{"/res", "fresh", -1};
    CHECK(h.apply(fresh).response.code == ErrorCode::kOk);
    CHECK(h.sm.get("/res").value().data == "fresh");
}

}  // namespace
}  // namespace raftlock::statemachine
