#include "client/watch_registry.h"

#include <catch2/catch.hpp>

namespace raftlock::client {

namespace {

WatchEvent event(const char* path, EventType type) {
    return WatchEvent{path, type, 9};
}

}  // namespace

TEST_CASE("watches match events as ZooKeeper documents", "[client][watch]") {
    using E = EventType;
    using K = WatchKind;
    struct Case {
        K kind;
        const char* watch_path;
        const char* event_path;
        E type;
        bool fires;
    };
    const Case cases[] = {
        {K::kData, "/a", "/a", E::kNodeDataChanged, true},
        {K::kData, "/a", "/a", E::kNodeDeleted, true},
        {K::kData, "/a", "/a", E::kNodeChildrenChanged, false},
        {K::kData, "/a", "/a/b", E::kNodeDataChanged, false},
        {K::kExists, "/a", "/a", E::kNodeCreated, true},
        {K::kExists, "/a", "/a", E::kNodeChildrenChanged, false},
        {K::kChildren, "/a", "/a", E::kNodeChildrenChanged, true},
        {K::kChildren, "/a", "/a", E::kNodeDeleted, true},
        {K::kChildren, "/a", "/a", E::kNodeDataChanged, false},
        {K::kPersistent, "/a", "/a", E::kNodeChildrenChanged, true},
        {K::kPersistent, "/a", "/a/b", E::kNodeCreated, false},
        {K::kPersistentRecursive, "/a", "/a/b/c", E::kNodeCreated, true},
        {K::kPersistentRecursive, "/a", "/a", E::kNodeDataChanged, true},
        {K::kPersistentRecursive, "/a", "/ab", E::kNodeCreated, false},
        {K::kPersistentRecursive, "/a", "/a/b", E::kNodeChildrenChanged, false},
        {K::kPersistentRecursive, "/", "/x", E::kNodeDeleted, true},
    };
    for (const Case& c : cases) {
        INFO(static_cast<int>(c.kind) << " " << c.watch_path << " " << c.event_path);
        CHECK(watch_matches(c.kind, c.watch_path, event(c.event_path, c.type)) == c.fires);
    }
}

TEST_CASE("a one-shot watch fires once, a persistent one stays", "[client][watch]") {
    WatchRegistry registry(10);
    int one_shot = 0;
    int persistent = 0;
    registry.add(Watch{"/a", WatchKind::kData, {}, [&](const WatchEvent&) { one_shot++; }});
    registry.add(Watch{"/a", WatchKind::kPersistent, {}, [&](const WatchEvent&) { persistent++; }});
    for (const auto& callback : registry.dispatch(event("/a", EventType::kNodeDataChanged))) {
        callback(event("/a", EventType::kNodeDataChanged));
    }
    for (const auto& callback : registry.dispatch(event("/a", EventType::kNodeDataChanged))) {
        callback(event("/a", EventType::kNodeDataChanged));
    }
    CHECK(one_shot == 1);
    CHECK(persistent == 2);
    CHECK(registry.size() == 1);
}

TEST_CASE("the registry is bounded and knows shared persistent watches", "[client][watch]") {
    WatchRegistry registry(2);
    const auto noop = [](const WatchEvent&) {};
    const WatchId a = registry.add(Watch{"/p", WatchKind::kPersistent, {}, noop});
    registry.add(Watch{"/p", WatchKind::kPersistent, {}, noop});
    CHECK(registry.full());
    REQUIRE(registry.remove(a).has_value());
    CHECK(registry.has_persistent("/p", WatchKind::kPersistent));
    CHECK(!registry.has_persistent("/p", WatchKind::kPersistentRecursive));
    CHECK(!registry.remove(a).has_value());
}

TEST_CASE("a re-read after a reconnect tells what a one-shot watch missed", "[client][watch]") {
    const WatchSnapshot present{true, 5, {}};
    const WatchSnapshot changed{true, 6, {}};
    const WatchSnapshot missing{false, 0, {}};
    CHECK(!change_since(WatchKind::kData, present, present).has_value());
    CHECK(change_since(WatchKind::kData, present, changed) == EventType::kNodeDataChanged);
    CHECK(change_since(WatchKind::kData, present, missing) == EventType::kNodeDeleted);
    CHECK(change_since(WatchKind::kExists, missing, present) == EventType::kNodeCreated);
    CHECK(!change_since(WatchKind::kExists, missing, missing).has_value());
    const WatchSnapshot kids{true, 5, {"a"}};
    const WatchSnapshot more_kids{true, 5, {"a", "b"}};
    CHECK(!change_since(WatchKind::kChildren, kids, kids).has_value());
    CHECK(change_since(WatchKind::kChildren, kids, more_kids) == EventType::kNodeChildrenChanged);
    CHECK(change_since(WatchKind::kChildren, kids, missing) == EventType::kNodeDeleted);
}

}  // namespace raftlock::client
