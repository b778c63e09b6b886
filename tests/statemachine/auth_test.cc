// Users, roles and permissions (statemachine/auth.h): the changes, and the checks every write
// passes where it applies once authentication is enabled. Each refusal also checks that nothing
// changed.

#include "statemachine/auth.h"

#include <catch2/catch.hpp>

#include "harness.h"

namespace raftlock::statemachine {
namespace {

using testing::Harness;

Credentials password(char fill) {
    return Credentials{std::string(16, fill), 4096, std::string(32, fill), std::string(32, 'v')};
}

// Drives the harness with a user stamped on each command, as a node stamps its client's.
struct AuthHarness : Harness {
    ApplyResult as(const std::string& user, SessionId session, Op op) {
        Command c;
        c.client_id = session;
        c.seq = session == kNoSession ? ++nonce : ++seqs[session];
        c.time_ms = time_ms;
        c.user = user;
        c.op = std::move(op);
        return apply(c);
    }
    SessionId open_as(const std::string& user) {
        Command c;
        c.seq = ++nonce;
        c.time_ms = time_ms;
        c.user = user;
        c.op = OpenSession{10000};
        ApplyResult out = apply(c);
        REQUIRE(out.response.code == ErrorCode::kOk);
        return out.response.session;
    }
    ErrorCode change(const std::string& user, Op op) {
        return as(user, kNoSession, std::move(op)).response.code;
    }
    // root, bob (role "jobs": write on locks "jobs/", read on nodes "/"), carol (no roles).
    void set_up() {
        REQUIRE(leader(AuthBootstrap{password('r')}).response.code == ErrorCode::kOk);
        REQUIRE(change("root", UserChange{UserAction::kAdd, "bob", password('b'), ""}) ==
                ErrorCode::kOk);
        REQUIRE(change("root", UserChange{UserAction::kAdd, "carol", password('c'), ""}) ==
                ErrorCode::kOk);
        REQUIRE(change("root", RoleChange{RoleAction::kAdd, "jobs", {}}) == ErrorCode::kOk);
        REQUIRE(change("root", RoleChange{RoleAction::kGrant, "jobs",
                                          Permission{Access::kWrite, Space::kLock, "jobs/"}}) ==
                ErrorCode::kOk);
        REQUIRE(change("root", RoleChange{RoleAction::kGrant, "jobs",
                                          Permission{Access::kRead, Space::kNode, "/"}}) ==
                ErrorCode::kOk);
        REQUIRE(change("root", UserChange{UserAction::kGrantRole, "bob", {}, "jobs"}) ==
                ErrorCode::kOk);
    }
    uint64_t nonce = 0;
};

TEST_CASE("with authentication disabled nothing is checked, as before users existed",
          "[statemachine][auth]") {
    AuthHarness h;
    CHECK_FALSE(h.sm.auth().enabled());
    SessionId s = h.open();  // no user at all
    CHECK(h.lock(s, "db").lock == LockOutcome::kGranted);
    // A user that does not exist, on a session it does not own: still unchecked.
    CHECK(h.as("mallory", s, Acquire{"other", "", LockMode::kExclusive, 1, 0, 0}).response.lock ==
          LockOutcome::kGranted);
}

TEST_CASE("enabling needs a user holding root; bootstrap works once, on an empty cluster",
          "[statemachine][auth]") {
    AuthHarness h;
    CHECK(h.change("", AuthEnable{true}) == ErrorCode::kBadArguments);
    CHECK_FALSE(h.sm.auth().enabled());
    REQUIRE(h.leader(AuthBootstrap{password('r')}).response.code == ErrorCode::kOk);
    CHECK(h.sm.auth().enabled());
    CHECK(h.sm.auth().is_root("root"));
    CHECK(h.sm.auth().credentials("root") == password('r'));
    // A second node proposing its root password later changes nothing.
    ApplyResult again = h.leader(AuthBootstrap{password('x')});
    CHECK(again.response.code == ErrorCode::kUserExists);
    CHECK(h.sm.auth().credentials("root") == password('r'));
}

TEST_CASE("a write needs an authenticated, existing user", "[statemachine][auth]") {
    AuthHarness h;
    h.set_up();
    ApplyResult anonymous = h.as("", kNoSession, OpenSession{10000});
    CHECK(anonymous.response.code == ErrorCode::kPermissionDenied);
    CHECK_THAT(anonymous.response.message, Catch::Contains("authentication required"));
    ApplyResult ghost = h.as("ghost", kNoSession, OpenSession{10000});
    CHECK(ghost.response.code == ErrorCode::kPermissionDenied);
    CHECK_THAT(ghost.response.message, Catch::Contains("\"ghost\" does not exist"));
    CHECK(h.sm.session_count() == 0);
    CHECK(h.sm.auth().user_count() == 3);
}

TEST_CASE("a role grants its access on the names under its prefix, and nothing else",
          "[statemachine][auth]") {
    AuthHarness h;
    h.set_up();
    SessionId bob = h.open_as("bob");
    CHECK(h.sm.session(bob)->owner == "bob");
    CHECK(h.as("bob", bob, Acquire{"jobs/a", "", LockMode::kExclusive, 1, 0, 0}).response.lock ==
          LockOutcome::kGranted);
    ApplyResult outside = h.as("bob", bob, Acquire{"db", "", LockMode::kExclusive, 1, 0, 0});
    CHECK(outside.response.code == ErrorCode::kPermissionDenied);
    CHECK(outside.response.message == "user \"bob\" lacks write on lock \"db\"");
    CHECK_FALSE(h.sm.describe_lock("db"));
    // Read on nodes is not write: the create is refused, and the node does not appear.
    ApplyResult create = h.as("bob", bob, Create{"/x", "", NodeKind::kPersistent, 0, {}});
    CHECK(create.response.message == "user \"bob\" lacks write on node \"/x\"");
    CHECK_FALSE(h.sm.exists("/x"));
    // A multi is refused whole when one sub-op is, and applies nothing.
    Multi multi;
    multi.ops = {Check{"/", -1}, Create{"/y", "", NodeKind::kPersistent, 0, {}}};
    CHECK(h.as("bob", bob, multi).response.code == ErrorCode::kPermissionDenied);
    CHECK_FALSE(h.sm.exists("/y"));
    // carol holds no role: every lock is refused; root may do anything.
    SessionId carol = h.open_as("carol");
    CHECK(
        h.as("carol", carol, Acquire{"jobs/b", "", LockMode::kExclusive, 1, 0, 0}).response.code ==
        ErrorCode::kPermissionDenied);
    SessionId root = h.open_as("root");
    CHECK(h.as("root", root, Create{"/x", "", NodeKind::kPersistent, 0, {}}).response.code ==
          ErrorCode::kOk);
    // A refusal is saved like any reply: the retry gets it again, not a second try.
    Command retry;
    retry.client_id = bob;
    retry.seq = h.seqs[bob] - 1;  // the refused multi's
    retry.time_ms = h.time_ms;
    retry.user = "bob";
    retry.op = multi;
    ApplyResult replay = h.apply(retry);
    CHECK(replay.replayed);
    CHECK(replay.response.code == ErrorCode::kPermissionDenied);
}

TEST_CASE("a session belongs to the user that opened it", "[statemachine][auth]") {
    AuthHarness h;
    h.set_up();
    SessionId bob = h.open_as("bob");
    REQUIRE(h.as("bob", bob, Acquire{"jobs/a", "", LockMode::kExclusive, 1, 0, 0}).response.lock ==
            LockOutcome::kGranted);
    const Index token = h.sm.describe_lock("jobs/a")->holders[0].token;
    // issue 18's attack: another user writes with bob's session and a huge sequence number.
    Command attack;
    attack.client_id = bob;
    attack.seq = 1'000'000;
    attack.time_ms = h.time_ms;
    attack.user = "carol";
    attack.op = Release{"jobs/a", "", token};
    ApplyResult refused = h.apply(attack);
    CHECK(refused.response.code == ErrorCode::kPermissionDenied);
    CHECK_THAT(refused.response.message, Catch::Contains("may not use session"));
    // Nothing moved: bob still holds the lock, and his next request (seq 2) is served.
    CHECK(h.sm.describe_lock("jobs/a")->holders.size() == 1);
    CHECK(h.sm.highest_seq_used(bob) == 1);
    CHECK(h.as("bob", bob, KeepAlive{}).response.code == ErrorCode::kOk);
    // Closing it, or attaching to it, is refused the same way.
    CHECK(h.as("carol", bob, CloseSession{}).response.code == ErrorCode::kPermissionDenied);
    CHECK(h.change("carol", AttachSession{bob, kAttachSeqGap + 10}) ==
          ErrorCode::kPermissionDenied);
    CHECK(h.sm.session(bob));
    // Admin on the lock does not make another user's session one's own: only root may use it.
    REQUIRE(h.change("root", RoleChange{RoleAction::kAdd, "ops", {}}) == ErrorCode::kOk);
    REQUIRE(h.change("root", RoleChange{RoleAction::kGrant, "ops",
                                        Permission{Access::kAdmin, Space::kLock, "jobs/"}}) ==
            ErrorCode::kOk);
    REQUIRE(h.change("root", UserChange{UserAction::kGrantRole, "carol", {}, "ops"}) ==
            ErrorCode::kOk);
    CHECK(h.as("carol", bob, Release{"jobs/a", "", token}).response.code ==
          ErrorCode::kPermissionDenied);
    ApplyResult released = h.as("root", bob, Release{"jobs/a", "", token});
    CHECK(released.response.lock == LockOutcome::kReleased);
    CHECK(h.sm.lock_totals().held == 0);
    CHECK(h.as("root", bob, CloseSession{}).response.code == ErrorCode::kOk);
    CHECK_FALSE(h.sm.session(bob));
}

TEST_CASE("admin on a lock takes another user's hold of it away, and only admin",
          "[statemachine][auth][force]") {
    AuthHarness h;
    h.set_up();
    SessionId bob = h.open_as("bob");
    REQUIRE(h.as("bob", bob, Acquire{"jobs/a", "", LockMode::kExclusive, 1, 0, 0}).response.lock ==
            LockOutcome::kGranted);
    const Index token = h.sm.describe_lock("jobs/a")->holders[0].token;
    // Write on the lock is not enough, and nobody's session is touched by a refusal.
    ApplyResult refused = h.as("bob", kNoSession, ForceRelease{"jobs/a", bob, token});
    CHECK(refused.response.code == ErrorCode::kPermissionDenied);
    CHECK(refused.response.message == "user \"bob\" lacks admin on lock \"jobs/a\"");
    CHECK(h.as("carol", kNoSession, ForceRelease{"jobs/a", bob, token}).response.code ==
          ErrorCode::kPermissionDenied);
    // Admin on another prefix is not admin here.
    REQUIRE(h.change("root", RoleChange{RoleAction::kAdd, "db-ops", {}}) == ErrorCode::kOk);
    REQUIRE(h.change("root", RoleChange{RoleAction::kGrant, "db-ops",
                                        Permission{Access::kAdmin, Space::kLock, "db/"}}) ==
            ErrorCode::kOk);
    REQUIRE(h.change("root", UserChange{UserAction::kGrantRole, "carol", {}, "db-ops"}) ==
            ErrorCode::kOk);
    CHECK(h.as("carol", kNoSession, ForceRelease{"jobs/a", bob, token}).response.message ==
          "user \"carol\" lacks admin on lock \"jobs/a\"");
    CHECK(h.sm.describe_lock("jobs/a")->holders.size() == 1);
    CHECK(h.sm.highest_seq_used(bob) == 1);
    // Admin on "jobs/" takes it, without using (or being able to use) bob's session.
    REQUIRE(h.change("root", RoleChange{RoleAction::kGrant, "db-ops",
                                        Permission{Access::kAdmin, Space::kLock, "jobs/"}}) ==
            ErrorCode::kOk);
    ApplyResult forced = h.as("carol", kNoSession, ForceRelease{"jobs/a", bob, token});
    CHECK(forced.response.code == ErrorCode::kOk);
    CHECK(forced.response.lock == LockOutcome::kReleased);
    CHECK_FALSE(h.sm.describe_lock("jobs/a"));
    CHECK(h.sm.session(bob));
    CHECK(h.sm.highest_seq_used(bob) == 1);
    CHECK(h.as("bob", bob, KeepAlive{}).response.code == ErrorCode::kOk);
}

TEST_CASE("users and roles are changed by root; a user may change its own password",
          "[statemachine][auth]") {
    AuthHarness h;
    h.set_up();
    CHECK(h.change("bob", UserChange{UserAction::kAdd, "eve", password('e'), ""}) ==
          ErrorCode::kPermissionDenied);
    CHECK_FALSE(h.sm.auth().user_exists("eve"));
    CHECK(h.change("bob", UserChange{UserAction::kGrantRole, "bob", {}, "root"}) ==
          ErrorCode::kPermissionDenied);
    CHECK(h.change("bob", RoleChange{RoleAction::kGrant, "jobs",
                                     Permission{Access::kWrite, Space::kLock, ""}}) ==
          ErrorCode::kPermissionDenied);
    CHECK(h.change("bob", AuthEnable{false}) == ErrorCode::kPermissionDenied);
    CHECK(h.sm.auth().enabled());
    CHECK(h.change("bob", UserChange{UserAction::kSetPassword, "carol", password('x'), ""}) ==
          ErrorCode::kPermissionDenied);
    CHECK(h.change("bob", UserChange{UserAction::kSetPassword, "bob", password('n'), ""}) ==
          ErrorCode::kOk);
    CHECK(h.sm.auth().credentials("bob") == password('n'));
    // What each change says when it cannot apply.
    ApplyResult twice =
        h.as("root", kNoSession, UserChange{UserAction::kAdd, "bob", password('b'), ""});
    CHECK(twice.response.code == ErrorCode::kUserExists);
    CHECK(twice.response.message == "user \"bob\" exists already");
    CHECK(h.change("root", UserChange{UserAction::kGrantRole, "bob", {}, "nope"}) ==
          ErrorCode::kNoRole);
    CHECK(h.change("root", UserChange{UserAction::kDelete, "nobody", {}, ""}) ==
          ErrorCode::kNoUser);
    CHECK(h.change("root", RoleChange{RoleAction::kAdd, "jobs", {}}) == ErrorCode::kRoleExists);
    CHECK(h.change("root", RoleChange{RoleAction::kAdd, "root", {}}) == ErrorCode::kRoleExists);
    CHECK(h.change("root", RoleChange{RoleAction::kDelete, "root", {}}) ==
          ErrorCode::kBadArguments);
    // The last root cannot go while authentication is on: that would lock everyone out.
    CHECK(h.change("root", UserChange{UserAction::kDelete, "root", {}, ""}) ==
          ErrorCode::kBadArguments);
    CHECK(h.change("root", UserChange{UserAction::kRevokeRole, "root", {}, "root"}) ==
          ErrorCode::kBadArguments);
    CHECK(h.sm.auth().is_root("root"));
    // Deleting a role takes it from its users: bob loses his locks' permission.
    CHECK(h.change("root", RoleChange{RoleAction::kDelete, "jobs", {}}) == ErrorCode::kOk);
    CHECK(h.sm.auth().user("bob")->roles.empty());
    SessionId bob = h.open_as("bob");
    CHECK(h.as("bob", bob, Acquire{"jobs/a", "", LockMode::kExclusive, 1, 0, 0}).response.code ==
          ErrorCode::kPermissionDenied);
    // Turned off by root, every check passes again.
    CHECK(h.change("root", AuthEnable{false}) == ErrorCode::kOk);
    CHECK(h.as("bob", bob, Acquire{"jobs/a", "", LockMode::kExclusive, 1, 0, 0}).response.lock ==
          LockOutcome::kGranted);
}

TEST_CASE("internal ops need no user; Redis and SQL need write on their space",
          "[statemachine][auth]") {
    AuthHarness h;
    h.set_up();
    SessionId bob = h.open_as("bob");
    CHECK(h.leader(ExpireSession{bob}).response.code == ErrorCode::kOk);
    CHECK(h.leader(Noop{}).response.code == ErrorCode::kOk);
    Command redis;
    redis.seq = 1;
    redis.time_ms = h.time_ms;
    redis.user = "bob";
    redis.op = RedisCommand{7, {"SET", "k", "v"}, 0};
    ApplyResult denied = h.apply(redis);
    CHECK(denied.response.message == "user \"bob\" lacks write on redis \"\"");
    CHECK(denied.response.redis ==
          redis::Value::error("NOPERM user \"bob\" lacks write on redis \"\""));
    CHECK(h.sm.redis_key_count() == 0);
    REQUIRE(h.change("root", RoleChange{RoleAction::kGrant, "jobs",
                                        Permission{Access::kWrite, Space::kRedis, ""}}) ==
            ErrorCode::kOk);
    redis.seq = 2;
    CHECK(h.apply(redis).response.redis == redis::Value::simple("OK"));
    CHECK(h.sm.redis_key_count() == 1);
}

TEST_CASE("users, roles and owners survive a snapshot", "[statemachine][auth][snapshot]") {
    AuthHarness h;
    h.set_up();
    SessionId bob = h.open_as("bob");
    REQUIRE(h.as("bob", bob, Acquire{"db", "", LockMode::kExclusive, 1, 0, 0}).response.code ==
            ErrorCode::kPermissionDenied);  // a saved refusal, with its message
    StateMachine copy;
    REQUIRE(copy.restore(h.sm.snapshot()) == ErrorCode::kOk);
    CHECK(copy.state_hash() == h.sm.state_hash());
    CHECK(copy.auth() == h.sm.auth());
    CHECK(copy.session(bob)->owner == "bob");
    CHECK(copy.saved_response(bob, 1)->message == "user \"bob\" lacks write on lock \"db\"");
    CHECK(copy.auth().role("jobs")->permissions.size() == 2);
}

TEST_CASE("permission prefixes are byte prefixes; the empty one covers a whole space",
          "[statemachine][auth]") {
    AuthStore store;
    std::string message;
    REQUIRE(store.add_user("u", Credentials{}, message) == ErrorCode::kOk);
    REQUIRE(store.add_user("root", Credentials{}, message) == ErrorCode::kOk);
    REQUIRE(store.grant_role("root", "root", message) == ErrorCode::kOk);
    REQUIRE(store.add_role("r", message) == ErrorCode::kOk);
    REQUIRE(store.grant_permission("r", Permission{Access::kRead, Space::kNode, "/app"}, message) ==
            ErrorCode::kOk);
    REQUIRE(store.grant_permission("r", Permission{Access::kAdmin, Space::kLock, ""}, message) ==
            ErrorCode::kOk);
    REQUIRE(store.grant_role("u", "r", message) == ErrorCode::kOk);
    REQUIRE(store.set_enabled(true, message) == ErrorCode::kOk);
    CHECK(store.permits("u", Need{Access::kRead, Space::kNode, "/app"}));
    CHECK(store.permits("u", Need{Access::kRead, Space::kNode, "/app/x"}));
    CHECK(store.permits("u", Need{Access::kRead, Space::kNode, "/apple"}));  // as etcd's
    CHECK_FALSE(store.permits("u", Need{Access::kRead, Space::kNode, "/ap"}));
    CHECK_FALSE(store.permits("u", Need{Access::kWrite, Space::kNode, "/app/x"}));
    CHECK(store.permits("u", Need{Access::kWrite, Space::kLock, "anything"}));  // admin > write
    CHECK_FALSE(store.permits("u", Need{Access::kRead, Space::kRedis, ""}));
    CHECK_FALSE(store.permits("nobody", Need{Access::kRead, Space::kLock, "x"}));
    CHECK(store.permits("root", Need{Access::kAdmin, Space::kSql, ""}));
    // Redis and SQL take only the empty prefix.
    CHECK_FALSE(valid_permission(Permission{Access::kRead, Space::kRedis, "k"}));
    CHECK_FALSE(valid_auth_name("with space"));
    CHECK_FALSE(valid_auth_name(""));
    CHECK(valid_auth_name("alice@example.com"));
}

TEST_CASE("leader-only ops are named and recognised", "[statemachine][auth]") {
    CHECK(leader_only(Op{AuthBootstrap{}}));
    CHECK(leader_only(Op{Noop{}}));
    CHECK(leader_only(Op{ExpireSession{1}}));
    CHECK_FALSE(leader_only(Op{UserChange{}}));
    CHECK(op_name(Op{AuthBootstrap{}}) == "AuthBootstrap");
    CHECK(op_name(Op{OpenSession{}}) == "OpenSession");
    CHECK(op_name(Op{SetAcl{}}) == "SetAcl");
}

}  // namespace
}  // namespace raftlock::statemachine
