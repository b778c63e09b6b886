#pragma once

// One valid command of every op, for codec and text tests.

#include <vector>

#include "statemachine/command.h"

namespace raftlock::statemachine::testing {

inline Command session_command(Op op, uint64_t seq = 7) {
    Command c;
    c.client_id = 42;
    c.seq = seq;
    c.ack_seq = seq - 1;
    c.time_ms = 123456;
    c.op = std::move(op);
    return c;
}

inline std::vector<Command> sample_commands() {
    std::vector<Command> out;
    Command open;
    open.time_ms = 5;
    open.op = OpenSession{30000};
    out.push_back(open);
    Command expire;
    expire.op = ExpireSession{42};
    out.push_back(expire);
    Command noop;
    noop.time_ms = 99;
    noop.op = Noop{};
    out.push_back(noop);
    out.push_back(session_command(KeepAlive{}));
    out.push_back(session_command(CloseSession{}));
    out.push_back(session_command(
        Create{"/a/b-", std::string("x\0y", 3), NodeKind::kEphemeralSequential, 0}));
    out.push_back(session_command(Create{"/t", "d", NodeKind::kTtl, 5000}));
    out.push_back(session_command(Delete{"/a", -1}));
    out.push_back(session_command(SetData{"/a", std::string(300, 'z'), 17}));
    Multi multi;
    multi.ops = {Create{"/m", "", NodeKind::kContainer, 0}, Delete{"/n", 3}, SetData{"/o", "v", -1},
                 Check{"/p", 2}};
    multi.containers_at_end = false;  // as logged before containers waited for the multi's end
    out.push_back(session_command(multi));
    out.push_back(session_command(Acquire{"db", "worker-1", LockMode::kShared, 1, 500, 0}));
    out.push_back(session_command(Acquire{"pool", "", LockMode::kSemaphore, 5, 0, 1000}));
    out.push_back(session_command(Release{"db", "worker-1", 99}));
    out.push_back(session_command(Cancel{"db", "worker-1"}));
    AcquireMany many;
    many.locks = {LockSpec{"a", LockMode::kExclusive, 1}, LockSpec{"b", LockMode::kSemaphore, 3}};
    many.owner_tag = "t";
    many.lock_delay_ms = 10;
    out.push_back(session_command(many));
    Command fenced = session_command(SetData{"/res", "v", -1});
    fenced.fence = Fence{"db", 1234567};
    out.push_back(fenced);
    // Redis commands come from a server's at-most-once sequence, without a session.
    Command redis;
    redis.seq = 3;
    redis.time_ms = 77;
    redis.op = RedisCommand{0xfeedULL, {"SET", "k", std::string("v\0w", 3), "PX", "3000"}, 0};
    out.push_back(redis);  // unstamped: as written before script budgets
    redis.op = RedisCommand{0xfeedULL, {"EVAL", "return 1", "0"}, 100000};
    out.push_back(redis);
    sql::StatementRequest request;
    request.text = "SELECT k FROM t WHERE k = $1 AND at < $2 AND ok = $3 AND n = $4";
    request.params = {sql::Value::of_unknown("5"), sql::Value::of_timestamptz(1'700'000'000'000),
                      sql::Value::of_bool(true), sql::Value::of_int8(-9),
                      sql::Value::null(sql::Type::kText)};
    request.lock_timeout_ms = 2000;
    out.push_back(session_command(SqlStatement{request}));  // as written before row budgets
    request.rows_max = 100000;
    out.push_back(session_command(SqlStatement{request}));
    Command cancel;
    cancel.seq = 12;
    cancel.op = SqlCancel{42};
    out.push_back(cancel);
    // A connection taking over session 42 (ZooKeeper reconnect), with the server's nonce.
    Command attach;
    attach.seq = 13;
    attach.op = AttachSession{42, kAttachSeqGap + 1000};
    out.push_back(attach);
    // A multi whose emptied containers go at its end: zkCli's deleteall of a container.
    Multi deleteall;
    deleteall.ops = {Delete{"/c/x", -1}, Delete{"/c", -1}};
    out.push_back(session_command(deleteall));
    // ZooKeeper ACLs (format version 3): a create with an ACL and a caller, and a setACL.
    Create guarded{"/g", "x", NodeKind::kPersistent, 0,
                   Acl{AclEntry{kPermAll, AclId{"digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="}},
                       AclEntry{kPermRead, AclId{"ip", "10.0.0.0/8"}}}};
    Command as_alice = session_command(guarded);
    as_alice.caller =
        Caller{AclId{"ip", "10.0.0.5"}, AclId{"digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="}};
    out.push_back(as_alice);
    as_alice.op = SetAcl{"/g", Acl{AclEntry{kPermRead, AclId{"world", "anyone"}}}, 0};
    out.push_back(as_alice);
    // Users and permissions (format version 4): a write carrying its user, each change.
    Command as_bob = session_command(Acquire{"jobs/a", "w", LockMode::kExclusive, 1, 0, 0});
    as_bob.user = "bob";
    out.push_back(as_bob);
    const Credentials password{std::string(16, 's'), 4096, std::string(32, 'k'),
                               std::string(32, 'v')};
    Command change;
    change.seq = 14;
    change.user = "root";
    change.op = UserChange{UserAction::kAdd, "bob", password, ""};
    out.push_back(change);
    change.op = UserChange{UserAction::kGrantRole, "bob", {}, "jobs"};
    out.push_back(change);
    change.op =
        RoleChange{RoleAction::kGrant, "jobs", Permission{Access::kWrite, Space::kLock, "jobs/"}};
    out.push_back(change);
    change.op = AuthEnable{true};
    out.push_back(change);
    Command bootstrap;
    bootstrap.op = AuthBootstrap{password};
    out.push_back(bootstrap);
    // An administrator takes session 42's hold of "jobs/a" (version 5, tag 17).
    Command force;
    force.seq = 15;
    force.user = "alice";
    force.op = ForceRelease{"jobs/a", 42, 1234};
    out.push_back(force);
    // A Redis PUBLISH (version 7): its entry is a RedisCommand like any other, and the entry's
    // format is what lets it run.
    Command publish;
    publish.seq = 16;
    publish.op = RedisCommand{0xfeedULL, {"PUBLISH", "locks", "released"}, 100000};
    out.push_back(publish);
    // MULTI ... EXEC after WATCH (version 8, tag 33): two watched keys, three commands.
    Command exec;
    exec.seq = 17;
    exec.op = RedisTransaction{
        0xfeedULL,
        redis::Transaction{{{"counter", 41}, {"owner", 7}},
                           {{"GET", "counter"}, {"SET", "counter", "42"}, {"PUBLISH", "c", "42"}}},
        100000};
    out.push_back(exec);
    // A multi-lock that waits (version 9: AcquireMany ends with its wait_ms).
    AcquireMany waiting;
    waiting.locks = {LockSpec{"jobs/a", LockMode::kExclusive, 1},
                     LockSpec{"jobs/b", LockMode::kShared, 1}};
    waiting.owner_tag = "w";
    waiting.wait_ms = 30000;
    out.push_back(session_command(waiting));
    return out;
}

}  // namespace raftlock::statemachine::testing
