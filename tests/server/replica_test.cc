#include <map>

#include <catch2/catch.hpp>

#include "replica_cluster.h"
#include "statemachine/codec.h"

namespace raftlock::server::test {
namespace {

// Builds requests; `seq` counts per session as a client library would.
struct Client {
    uint64_t session = 0;
    uint64_t seq = 0;
    uint64_t next_id = 1;

    proto::Request open(int64_t timeout_ms) {
        proto::Request r;
        r.set_request_id(next_id++);
        r.mutable_open_session()->set_timeout_ms(timeout_ms);
        return r;
    }
    proto::Request write() {
        proto::Request r;
        r.set_request_id(next_id++);
        r.set_session_id(session);
        r.set_seq(++seq);
        r.set_ack_seq(seq - 1);
        return r;
    }
    proto::Request read() {
        proto::Request r;
        r.set_request_id(next_id++);
        r.set_session_id(session);
        return r;
    }
    proto::Request acquire(const std::string& name, int64_t wait_ms) {
        proto::Request r = write();
        r.mutable_acquire()->set_name(name);
        r.mutable_acquire()->set_wait_ms(wait_ms);
        return r;
    }
    proto::Request release(const std::string& name, uint64_t token) {
        proto::Request r = write();
        r.mutable_release()->set_name(name);
        r.mutable_release()->set_token(token);
        return r;
    }
    proto::Request keepalive() {
        proto::Request r = read();
        r.mutable_keep_alive();
        return r;
    }
};

uint64_t open_session(ReplicaCluster& c,
                      uint64_t node,
                      net::ConnectionId conn,
                      Client& client,
                      int64_t timeout_ms = 2000) {
    auto r = c.call(node, conn, client.open(timeout_ms));
    REQUIRE(r.has_value());
    REQUIRE(r->code() == proto::OK);
    client.session = r->open_session().session_id();
    REQUIRE(client.session > 0);
    return client.session;
}

// Takes `name` for `client` with no wait; returns the fencing token.
uint64_t hold(ReplicaCluster& c,
              uint64_t node,
              net::ConnectionId conn,
              Client& client,
              const std::string& name) {
    auto held = c.call(node, conn, client.acquire(name, 0));
    REQUIRE(held.has_value());
    REQUIRE(held->lock().outcome() == proto::LOCK_GRANTED);
    return held->lock().token();
}

// Runs the cluster until the answer to request `id` on `conn` arrives.
proto::Response await_response(ReplicaCluster& c, net::ConnectionId conn, uint64_t id) {
    std::optional<proto::Response> answer;
    REQUIRE(c.run_until([&] { return (answer = c.take_response(conn, id)).has_value(); }));
    return *answer;
}

TEST_CASE("a write sent to a follower is forwarded, applied, and readable on every node",
          "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(follower, 1);
    Client client;
    open_session(c, follower, 1, client);

    proto::Request create = client.write();
    create.mutable_create()->set_path("/config");
    create.mutable_create()->set_data("v1");
    auto created = c.call(follower, 1, create);
    REQUIRE(created.has_value());
    CHECK(created->code() == proto::OK);
    CHECK(created->node().path() == "/config");
    CHECK(c.replica(follower).applied_index() >= created->node().stat().czxid());

    c.connect(leader, 2);
    proto::Request get = client.read();
    get.mutable_get()->set_path("/config");
    auto got = c.call(leader, 2, get);
    REQUIRE(got.has_value());
    CHECK(got->code() == proto::OK);
    CHECK(got->get().data() == "v1");
}

// Issue 18's report: a peer's ForwardWrite{ExpireSession} ended a holder's session at once.
TEST_CASE("a forwarded ExpireSession or Noop is refused: only the leader proposes them",
          "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(follower, 1);
    Client client;
    const uint64_t session = open_session(c, follower, 1, client, 5000);
    const uint64_t token = hold(c, follower, 1, client, "held");
    const uint64_t refused_before = c.metrics(leader).forwarded_internal_refused_total;
    for (const statemachine::Op& op : {statemachine::Op{statemachine::ExpireSession{session}},
                                       statemachine::Op{statemachine::Noop{}}}) {
        statemachine::Command forged;
        forged.op = op;
        proto::PeerFrame frame;
        frame.mutable_forward_write()->set_tag(77);
        frame.mutable_forward_write()->set_command(statemachine::encode_command(forged).value());
        c.replica(leader).on_peer_frame(follower, std::move(frame));
    }
    CHECK(c.metrics(leader).forwarded_internal_refused_total == refused_before + 2);
    c.run_until([] { return false; }, 500);
    // The session and its lock live: its release applies.
    auto released = c.call(follower, 1, client.release("held", token));
    REQUIRE(released.has_value());
    CHECK(released->code() == proto::OK);
}

TEST_CASE("a write forwarded on a link that then fails is forwarded again", "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(follower, 1);
    Client client;
    open_session(c, follower, 1, client);

    c.break_link(follower, leader);
    proto::Request create = client.write();
    create.mutable_create()->set_path("/lost-once");
    c.send(follower, 1, create);
    // The forward is gone with the link; without a resend the write would wait for its timeout.
    c.run_until([] { return false; }, 200);
    CHECK_FALSE(c.take_response(1, create.request_id()).has_value());
    c.restore_link(follower, leader);
    std::optional<proto::Response> created;
    REQUIRE(c.run_until(
        [&] {
            created = c.take_response(1, create.request_id());
            return created.has_value();
        },
        1000));  // well inside the request timeout
    CHECK(created->code() == proto::OK);
    CHECK(created->node().path() == "/lost-once");
}

// Found by the server simulator (seed 9102520): a copy of a forwarded write refused by a leader
// in a transfer was answered "not applied", though the first copy sat in that leader's log and
// committed. A client that believes it (SQL's 57P03, Redis's TRYAGAIN) and retries applies twice.
TEST_CASE("a write whose resent copy is refused still gets its first copy's outcome",
          "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    const uint64_t other = 6 - leader - follower;
    c.connect(follower, 1);
    c.connect(leader, 2);
    Client client;
    open_session(c, follower, 1, client);

    // The first copy reaches the leader's log; its appends are lost, so it cannot commit yet.
    c.break_link(leader, follower);
    c.break_link(leader, other);
    proto::Request create = client.write();
    create.mutable_create()->set_path("/once");
    c.send(follower, 1, create);
    c.run_until([] { return false; }, 30);  // well inside the election timeout
    // A transfer to a node that cannot catch up: the leader takes no proposals meanwhile.
    proto::Request transfer;
    transfer.set_request_id(1);
    transfer.mutable_transfer_leadership()->set_node_id(other);
    c.send(leader, 2, transfer);
    c.run_until([] { return false; }, 10);
    CHECK(c.metrics(leader).proposals_dropped_total == 0);
    // The follower's link to the leader fails and comes back: it sends a second copy, which the
    // transferring leader refuses; meanwhile the first copy commits with the follower's votes.
    c.restore_link(leader, follower);
    c.break_link(follower, leader);
    c.restore_link(follower, leader);
    const proto::Response created = await_response(c, 1, create.request_id());
    CHECK(c.metrics(leader).proposals_dropped_total >= 1);  // the second copy was refused
    CHECK(created.code() == proto::OK);
    CHECK(created.node().path() == "/once");
}

TEST_CASE("a read whose ReadIndex request was lost is asked again, and later reads wait for it",
          "[server][replica][reads]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(follower, 1);
    Client client;
    const auto exists = [&](const std::string& path) {
        proto::Request r = client.read();
        r.mutable_exists()->set_path(path);
        return r;
    };
    c.break_link(follower, leader);
    const proto::Request first = exists("/");
    c.send(follower, 1, first);
    c.run_until([] { return false; }, 200);  // its request to the leader is gone with the link
    CHECK_FALSE(c.take_response(1, first.request_id()).has_value());
    c.restore_link(follower, leader);
    // A later read's round is confirmed at once, but it is served only after the first one (a
    // connection's reads see states in the order it sent them), which is asked again after an
    // election timeout (100 ms here) instead of waiting out the request timeout (5 s).
    const proto::Request second = exists("/");
    c.send(follower, 1, second);
    std::vector<proto::Response> answers;  // in the order they arrived
    REQUIRE(c.run_until(
        [&] {
            for (const proto::Request* r : {&first, &second}) {
                const bool answered = std::any_of(answers.begin(), answers.end(), [&](auto& x) {
                    return x.request_id() == r->request_id();
                });
                if (auto response = answered ? std::nullopt : c.take_response(1, r->request_id())) {
                    answers.push_back(*response);
                }
            }
            return answers.size() == 2;
        },
        1000));
    CHECK(answers[0].request_id() == first.request_id());
    CHECK(answers[0].code() == proto::OK);
    CHECK(answers[1].code() == proto::OK);
    CHECK(answers[0].applied_index() <= answers[1].applied_index());
}

TEST_CASE("a retried write is applied once and answered with the saved result",
          "[server][replica]") {
    ReplicaCluster c;
    c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(follower, 1);
    Client client;
    open_session(c, follower, 1, client);
    proto::Request create = client.write();
    create.mutable_create()->set_path("/job-");
    create.mutable_create()->set_kind(proto::PERSISTENT_SEQUENTIAL);
    auto first = c.call(follower, 1, create);
    REQUIRE(first.has_value());
    create.set_request_id(99);  // the same (session, seq), as after a lost reply
    auto again = c.call(follower, 1, create);
    REQUIRE(again.has_value());
    CHECK(again->code() == proto::OK);
    CHECK(again->node().path() == first->node().path());
    proto::Request children = client.read();
    children.mutable_children()->set_path("/");
    auto list = c.call(follower, 1, children);
    REQUIRE(list.has_value());
    CHECK(list->children().names_size() == 1);
}

proto::Request attach_request(Client& client) {
    proto::Request r = client.read();
    r.mutable_attach_session();
    return r;
}

// The attach tests' setting: a session opened on connection 1 (to `first`), and connection 2 (to
// `second`), to which the session is to move.
Client open_on_first_of_two(ReplicaCluster& c, uint64_t first, uint64_t second) {
    c.connect(first, 1);
    c.connect(second, 2);
    Client owner;
    open_session(c, first, 1, owner);
    return owner;
}

Client on_session(uint64_t session) {
    Client client;
    client.session = session;
    return client;
}

proto::Request create_request(Client& client, const std::string& path) {
    proto::Request r = client.write();
    r.mutable_create()->set_path(path);
    return r;
}

TEST_CASE("a connection that attaches a session refuses the old connection's late writes",
          "[server][replica][sessions]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    Client old_conn = open_on_first_of_two(c, follower, leader);
    REQUIRE(c.call(follower, 1, create_request(old_conn, "/a"))->code() == proto::OK);
    // A write of the old connection still on its way: the follower cannot reach the leader.
    c.break_link(follower, leader);
    const proto::Request late = create_request(old_conn, "/late");
    c.send(follower, 1, late);

    Client new_conn = on_session(old_conn.session);
    auto attached = c.call(leader, 2, attach_request(new_conn));
    REQUIRE(attached.has_value());
    REQUIRE(attached->code() == proto::OK);
    const uint64_t first_seq = attached->attach_session().first_seq();
    // Above the applied write (seq 1) by more than the gap, so above the one in flight too.
    CHECK(first_seq > 1 + statemachine::kAttachSeqGap);
    CHECK(first_seq > late.seq());
    new_conn.seq = first_seq - 1;
    CHECK(c.call(leader, 2, create_request(new_conn, "/b"))->code() == proto::OK);

    c.restore_link(follower, leader);
    const proto::Response refused = await_response(c, 1, late.request_id());
    CHECK(refused.code() == proto::RESULT_DISCARDED);
    proto::Request exists = new_conn.read();
    exists.mutable_exists()->set_path("/late");
    auto found = c.call(leader, 2, exists);
    REQUIRE(found.has_value());
    CHECK_FALSE(found->exists().exists());
    CHECK(c.call(leader, 2, create_request(new_conn, "/c"))->code() == proto::OK);

    Client unknown = on_session(999999);
    CHECK(c.call(leader, 2, attach_request(unknown))->code() == proto::SESSION_EXPIRED);
}

TEST_CASE("a write numbered far beyond its session's last is refused, and the session goes on",
          "[server][replica][sessions]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    Client client = open_on_first_of_two(c, leader, follower);
    const uint64_t honest = client.seq;
    // Near the top of the range, which an attach could not move above (before command format
    // 5 such a write was remembered; Replica's attach keeps its overflow check for sessions that
    // format 4 logs numbered so).
    client.seq = UINT64_MAX - 10;
    auto refused = c.call(leader, 1, create_request(client, "/top"));
    REQUIRE(refused.has_value());
    CHECK(refused->code() == proto::BAD_ARGUMENTS);
    CHECK_THAT(refused->message(), Catch::Contains("refused, not remembered"));
    c.run_until(
        [&] { return c.replica(follower).applied_index() >= c.replica(leader).applied_index(); });
    // The numbering did not move: the honest next seq is served, on both nodes.
    client.seq = honest;
    CHECK(c.call(leader, 1, create_request(client, "/after"))->code() == proto::OK);
    CHECK(c.call(follower, 2, create_request(client, "/after-2"))->code() == proto::OK);
    CHECK_FALSE(c.replica(leader).state().exists("/top"));
}

TEST_CASE("an attach chosen on a lagging node is chosen again once the node catches up",
          "[server][replica][sessions]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t lagging = c.follower();
    Client writer = open_on_first_of_two(c, leader, lagging);
    c.run_until(
        [&] { return c.replica(lagging).applied_index() >= c.replica(leader).applied_index(); });
    // The lagging node stops hearing from the leader; the session writes on.
    c.break_link(leader, lagging);
    for (int i = 0; i < 3; ++i) {
        REQUIRE(c.call(leader, 1, create_request(writer, "/w" + std::to_string(i)))->code() ==
                proto::OK);
    }
    Client mover = on_session(writer.session);
    const proto::Request attach = attach_request(mover);
    c.send(lagging, 2, attach);  // chosen from a state without the three writes: refused
    c.run_until([] { return false; }, 300);
    c.restore_link(leader, lagging);
    const proto::Response attached = await_response(c, 2, attach.request_id());
    REQUIRE(attached.code() == proto::OK);
    CHECK(attached.attach_session().first_seq() > writer.seq + statemachine::kAttachSeqGap);
    // The writer's connection is the old one now.
    CHECK(c.call(leader, 1, create_request(writer, "/after"))->code() == proto::RESULT_DISCARDED);
}

TEST_CASE("a release hands the lock to a waiter connected to another node",
          "[server][replica][locks]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(leader, 1);
    c.connect(follower, 2);
    Client a;
    Client b;
    open_session(c, leader, 1, a);
    open_session(c, follower, 2, b);

    const uint64_t token_a = hold(c, leader, 1, a, "db");

    proto::Request wait = b.acquire("db", 60000);
    const uint64_t wait_id = wait.request_id();
    c.send(follower, 2, wait);
    c.run_until([] { return false; }, 300);
    CHECK(!c.take_response(2, wait_id).has_value());  // queued: no reply yet

    auto released = c.call(leader, 1, a.release("db", token_a));
    REQUIRE(released.has_value());
    CHECK(released->lock().outcome() == proto::LOCK_RELEASED);
    const proto::Response granted = await_response(c, 2, wait_id);
    CHECK(granted.code() == proto::OK);
    CHECK(granted.lock().outcome() == proto::LOCK_GRANTED);
    CHECK(granted.lock().token() > token_a);
}

TEST_CASE("a cancelled wait ends its acquire; a later acquire's grant goes to the later request",
          "[server][replica][locks]") {
    // Found by the server simulator (seed 2343): the replica kept the cancelled acquire as the
    // waiter of (session, lock, owner), and pushed a later acquire's grant to it.
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    c.connect(leader, 1);
    c.connect(leader, 2);
    Client a;
    Client b;
    open_session(c, leader, 1, a);
    open_session(c, leader, 2, b);
    const uint64_t token_a = hold(c, leader, 1, a, "db");

    proto::Request first = b.acquire("db", 60000);
    const uint64_t first_id = first.request_id();
    c.send(leader, 2, first);
    c.run_until([] { return false; }, 300);
    proto::Request cancel = b.write();
    cancel.mutable_cancel()->set_name("db");
    auto cancelled = c.call(leader, 2, cancel);
    REQUIRE(cancelled.has_value());
    CHECK(cancelled->lock().outcome() == proto::LOCK_CANCELLED);
    CHECK(await_response(c, 2, first_id).code() == proto::WAIT_TIMEOUT);

    proto::Request second = b.acquire("db", 60000);
    const uint64_t second_id = second.request_id();
    c.send(leader, 2, second);
    c.run_until([] { return false; }, 300);
    auto released = c.call(leader, 1, a.release("db", token_a));
    REQUIRE(released.has_value());
    CHECK(await_response(c, 2, second_id).lock().outcome() == proto::LOCK_GRANTED);
    CHECK_FALSE(c.take_response(2, first_id).has_value());
}

TEST_CASE("keepalives through a follower keep a session; silence expires it and frees its locks",
          "[server][replica][sessions]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(follower, 1);
    c.connect(leader, 2);
    Client a;
    Client b;
    open_session(c, follower, 1, a, 500);
    open_session(c, leader, 2, b, 10000);
    auto held = c.call(follower, 1, a.acquire("job", 0));
    REQUIRE(held.has_value());
    REQUIRE(held->lock().outcome() == proto::LOCK_GRANTED);

    // Keepalives every 150 ms for 2 s of cluster time keep the 500 ms session alive.
    for (int i = 0; i < 13; ++i) {
        auto ka = c.call(follower, 1, a.keepalive());
        REQUIRE(ka.has_value());
        REQUIRE(ka->code() == proto::OK);
        c.run_until([] { return false; }, 150);
    }
    proto::Request wait = b.acquire("job", 60000);
    const uint64_t wait_id = wait.request_id();
    c.send(leader, 2, wait);
    // Then silence: the leader expires the session, the waiter gets the lock, the session's
    // connection hears that the session ended.
    std::optional<proto::Response> granted;
    REQUIRE(c.run_until([&] { return (granted = c.take_response(2, wait_id)).has_value(); }, 3000));
    CHECK(granted->lock().outcome() == proto::LOCK_GRANTED);
    CHECK(granted->lock().token() > held->lock().token());
    // The follower hears of the expiry when it applies the entry, a heartbeat after the leader.
    bool ended = false;
    CHECK(c.run_until([&] {
        for (const proto::ServerMessage& m : c.take_pushes(1)) {
            ended =
                ended || (m.has_session_ended() && m.session_ended().session_id() == a.session &&
                          m.session_ended().expired());
        }
        return ended;
    }));
    auto late = c.call(follower, 1, a.keepalive());
    REQUIRE(late.has_value());
    CHECK(late->code() == proto::SESSION_EXPIRED);
}

// Found by the server simulator (tests/sim/replica/, its first sweep): an isolated leader
// took a keepalive into a ReadIndex round that could not complete; when the partition healed it
// asked the new leader for the round again, and acknowledged the keepalive the new leader had
// never recorded. The client's safe-until then outlasted the expiry the new leader made.
TEST_CASE("a keepalive an old leader recorded is not acknowledged through the new leader",
          "[server][replica][sessions]") {
    ReplicaCluster c;
    const uint64_t old_leader = c.wait_for_leader();
    c.connect(old_leader, 1);
    Client a;
    open_session(c, old_leader, 1, a, 10000);
    c.isolate(old_leader, true);
    proto::Request keepalive = a.keepalive();
    const uint64_t id = keepalive.request_id();
    c.send(old_leader, 1, keepalive);
    const uint64_t new_leader = c.wait_for_leader();
    REQUIRE(new_leader != old_leader);
    c.isolate(old_leader, false);
    std::optional<proto::Response> answer;
    REQUIRE(c.run_until([&] { return (answer = c.take_response(1, id)).has_value(); }, 3000));
    // Retry the keepalive (it reaches the new leader): never OK from the old leader's round.
    CHECK(answer->code() == proto::UNAVAILABLE);
    auto retried = c.call(old_leader, 1, a.keepalive());
    REQUIRE(retried.has_value());
    CHECK(retried->code() == proto::OK);
}

TEST_CASE("a local read is served from the node's state at once, only while it knows a leader",
          "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(leader, 1);
    c.connect(follower, 2);
    Client writer;
    open_session(c, leader, 1, writer);
    proto::Request create = writer.write();
    create.mutable_create()->set_path("/x");
    create.mutable_create()->set_data("v1");
    auto created = c.call(leader, 1, create);
    REQUIRE(created.has_value());
    REQUIRE(created->code() == proto::OK);
    REQUIRE(c.run_until([&] { return c.replica(follower).state().get("/x").ok(); }));

    Client reader;  // reads need no session
    auto get_x = [&](bool local) {
        proto::Request r = reader.read();
        r.mutable_get()->set_path("/x");
        r.set_local_read(local);
        return r;
    };
    proto::Request local = get_x(true);
    c.send(follower, 2, local);
    std::optional<proto::Response> at_once = c.take_response(2, local.request_id());
    REQUIRE(at_once.has_value());  // answered inside the call, no round with the leader
    CHECK(at_once->get().data() == "v1");
    // A linearizable read waits for its ReadIndex round.
    proto::Request linear = get_x(false);
    c.send(follower, 2, linear);
    CHECK_FALSE(c.take_response(2, linear.request_id()).has_value());
    CHECK(await_response(c, 2, linear.request_id()).get().data() == "v1");

    // Cut off, the follower soon knows no leader and serves no local read (it could be stale for
    // as long as the partition lasts): the read takes the ReadIndex path, which cannot succeed.
    c.isolate(follower, true);
    REQUIRE(c.run_until([&] { return c.replica(follower).leader() == raft::kNoNode; }));
    proto::Request cut_off = get_x(true);
    c.send(follower, 2, cut_off);
    CHECK_FALSE(c.take_response(2, cut_off.request_id()).has_value());
    CHECK(await_response(c, 2, cut_off.request_id()).code() != proto::OK);
    // Back with a leader and caught up, it serves them at once again.
    c.isolate(follower, false);
    REQUIRE(c.run_until([&] { return c.replica(follower).leader() != raft::kNoNode; }));
    REQUIRE(c.run_until([&] { return c.replica(follower).serves_local_reads(); }));
    proto::Request healed = get_x(true);
    c.send(follower, 2, healed);
    std::optional<proto::Response> again = c.take_response(2, healed.request_id());
    REQUIRE(again.has_value());
    CHECK(again->get().data() == "v1");
}

TEST_CASE("a watch set by a read fires once on the node of the connection", "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(follower, 1);
    c.connect(leader, 2);
    Client a;
    Client b;
    open_session(c, follower, 1, a);
    open_session(c, leader, 2, b);
    proto::Request exists = a.read();
    exists.mutable_exists()->set_path("/ready");
    exists.mutable_exists()->set_watch(true);
    auto e = c.call(follower, 1, exists);
    REQUIRE(e.has_value());
    CHECK(!e->exists().exists());
    proto::Request create = b.write();
    create.mutable_create()->set_path("/ready");
    auto created = c.call(leader, 2, create);
    REQUIRE(created.has_value());
    std::vector<proto::ServerMessage> pushes;
    REQUIRE(c.run_until([&] {
        for (auto& m : c.take_pushes(1)) {
            pushes.push_back(m);
        }
        return !pushes.empty();
    }));
    REQUIRE(pushes.size() == 1);
    CHECK(pushes[0].watch_event().path() == "/ready");
    CHECK(pushes[0].watch_event().type() == proto::NODE_CREATED);
    CHECK(pushes[0].watch_event().zxid() == created->node().stat().czxid());
}

// Writes `request` on `conn` and returns its answer, which must be OK.
proto::Response write_ok(ReplicaCluster& c,
                         uint64_t node,
                         net::ConnectionId conn,
                         proto::Request r) {
    auto answer = c.call(node, conn, std::move(r));
    REQUIRE(answer.has_value());
    REQUIRE(answer->code() == proto::OK);
    return *answer;
}

proto::Request create_node(Client& client, const std::string& path, proto::NodeKind kind) {
    proto::Request r = client.write();
    r.mutable_create()->set_path(path);
    r.mutable_create()->set_kind(kind);
    return r;
}

std::vector<std::pair<std::string, proto::EventType>> events_of(
    const std::vector<proto::ServerMessage>& pushes) {
    std::vector<std::pair<std::string, proto::EventType>> out;
    for (const proto::ServerMessage& m : pushes) {
        REQUIRE(m.has_watch_event());
        out.emplace_back(m.watch_event().path(), m.watch_event().type());
    }
    return out;
}

TEST_CASE("restored watches fire for what changed since the client's zxid and are set otherwise",
          "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    c.connect(leader, 1);
    Client a;
    open_session(c, leader, 1, a);
    for (const char* path : {"/d", "/k", "/c", "/c/x"}) {
        write_ok(c, leader, 1, create_node(a, path, proto::PERSISTENT));
    }
    // What the client saw before it lost its connection.
    const uint64_t seen =
        write_ok(c, leader, 1, create_node(a, "/q", proto::PERSISTENT)).applied_index();
    proto::Request set = a.write();
    set.mutable_set_data()->set_path("/d");
    set.mutable_set_data()->set_version(-1);
    write_ok(c, leader, 1, set);
    write_ok(c, leader, 1, create_node(a, "/c/y", proto::PERSISTENT));
    write_ok(c, leader, 1, create_node(a, "/e1", proto::PERSISTENT));

    c.connect(leader, 2);
    proto::Request restore = a.read();
    proto::RestoreWatches* w = restore.mutable_restore_watches();
    w->set_relative_zxid(seen);
    w->add_data("/d");         // changed since: fires NodeDataChanged
    w->add_data("/k");         // unchanged: set
    w->add_exists("/e1");      // created since: fires NodeCreated
    w->add_exists("/e2");      // still missing: set
    w->add_children("/c");     // a child since: fires NodeChildrenChanged
    w->add_children("/gone");  // no such node: fires NodeDeleted
    auto restored = c.call(leader, 2, restore);
    REQUIRE(restored.has_value());
    CHECK(restored->code() == proto::OK);
    using Events = std::vector<std::pair<std::string, proto::EventType>>;
    CHECK(events_of(c.take_pushes(2)) == Events{{"/d", proto::NODE_DATA_CHANGED},
                                                {"/e1", proto::NODE_CREATED},
                                                {"/c", proto::NODE_CHILDREN_CHANGED},
                                                {"/gone", proto::NODE_DELETED}});

    // The watches set fire on the next change, once.
    write_ok(c, leader, 1, create_node(a, "/e2", proto::PERSISTENT));
    proto::Request set_k = a.write();
    set_k.mutable_set_data()->set_path("/k");
    set_k.mutable_set_data()->set_version(-1);
    write_ok(c, leader, 1, set_k);
    write_ok(c, leader, 1, create_node(a, "/c/z", proto::PERSISTENT));  // /c's watch fired already
    CHECK(events_of(c.take_pushes(2)) ==
          Events{{"/e2", proto::NODE_CREATED}, {"/k", proto::NODE_DATA_CHANGED}});

    // checkWatches and removeWatches by kind (ZooKeeper's WatcherType).
    proto::Request rearm = a.read();
    rearm.mutable_restore_watches()->set_relative_zxid(c.replica(leader).applied_index());
    rearm.mutable_restore_watches()->add_data("/k");
    CHECK(c.call(leader, 2, rearm)->code() == proto::OK);
    auto remove = [&](proto::WatchKind kind, bool check_only) {
        proto::Request r = a.read();
        r.mutable_remove_watch()->set_path("/k");
        r.mutable_remove_watch()->add_kinds(kind);
        r.mutable_remove_watch()->set_check_only(check_only);
        return c.call(leader, 2, r)->code();
    };
    CHECK(remove(proto::WATCH_CHILDREN, true) == proto::NO_NODE);
    CHECK(remove(proto::WATCH_DATA, true) == proto::OK);
    CHECK(remove(proto::WATCH_DATA, false) == proto::OK);
    CHECK(remove(proto::WATCH_DATA, true) == proto::NO_NODE);
    proto::Request set_again = a.write();
    set_again.mutable_set_data()->set_path("/k");
    set_again.mutable_set_data()->set_version(-1);
    write_ok(c, leader, 1, set_again);
    CHECK(c.take_pushes(2).empty());

    proto::Request bad = a.read();
    bad.mutable_restore_watches()->add_data("no-slash");
    auto refused = c.call(leader, 2, bad);
    REQUIRE(refused.has_value());
    CHECK(refused->code() == proto::BAD_ARGUMENTS);
}

TEST_CASE("descendants are counted and a session's ephemeral nodes listed", "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    c.connect(leader, 1);
    Client a;
    Client b;
    open_session(c, leader, 1, a);
    open_session(c, leader, 1, b);
    write_ok(c, leader, 1, create_node(a, "/t", proto::PERSISTENT));
    write_ok(c, leader, 1, create_node(a, "/t/p", proto::PERSISTENT));
    write_ok(c, leader, 1, create_node(a, "/t/p/e", proto::EPHEMERAL));
    write_ok(c, leader, 1, create_node(a, "/t-sibling", proto::EPHEMERAL));
    write_ok(c, leader, 1, create_node(b, "/t/theirs", proto::EPHEMERAL));

    auto count = [&](const std::string& path) {
        proto::Request r = a.read();
        r.mutable_count_descendants()->set_path(path);
        return c.call(leader, 1, r);
    };
    CHECK(count("/t")->count().count() == 3);  // p, p/e, theirs; not /t-sibling
    CHECK(count("/t/p/e")->count().count() == 0);
    CHECK(count("/")->count().count() == 5);
    CHECK(count("/nothing")->code() == proto::NO_NODE);

    auto ephemerals = [&](Client& client, const std::string& prefix) {
        proto::Request r = client.read();
        r.mutable_list_ephemerals()->set_prefix(prefix);
        auto answer = c.call(leader, 1, r);
        REQUIRE(answer.has_value());
        return std::vector<std::string>(answer->paths().paths().begin(),
                                        answer->paths().paths().end());
    };
    CHECK(ephemerals(a, "/") == std::vector<std::string>{"/t-sibling", "/t/p/e"});
    CHECK(ephemerals(a, "/t/") == std::vector<std::string>{"/t/p/e"});
    CHECK(ephemerals(b, "/t") == std::vector<std::string>{"/t/theirs"});
}

TEST_CASE("locks survive the leader's crash and a restarted node recovers from its disk",
          "[server][replica][recovery]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(follower, 1);
    Client a;
    open_session(c, follower, 1, a, 5000);
    auto held = c.call(follower, 1, a.acquire("db", 0));
    REQUIRE(held.has_value());
    REQUIRE(held->lock().outcome() == proto::LOCK_GRANTED);

    c.crash(leader);
    const uint64_t next = c.wait_for_leader();
    CHECK(next != leader);
    proto::Request describe = a.read();
    describe.mutable_describe_lock()->set_name("db");
    auto info = c.call(follower, 1, describe);
    REQUIRE(info.has_value());
    REQUIRE(info->lock_info().holders_size() == 1);
    CHECK(info->lock_info().holders(0).token() == held->lock().token());

    c.restart(leader);
    REQUIRE(
        c.run_until([&] { return c.replica(leader).applied_index() >= info->applied_index(); }));
    c.connect(leader, 2);
    auto again = c.call(leader, 2, describe);
    REQUIRE(again.has_value());
    REQUIRE(again->lock_info().holders_size() == 1);
    CHECK(again->lock_info().holders(0).session() == a.session);
}

// A commit-only hard state waits for the next write (or tick) instead of waking the storage
// thread on its own: the leader, which learns each commit from its followers' acknowledgements
// after its own write, takes one storage turn per client write, not two; so does every node.
TEST_CASE("each commit is written with the next write, not on a storage turn of its own",
          "[server][replica][storage]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    c.connect(leader, 1);
    Client a;
    open_session(c, leader, 1, a, 5000);
    std::map<uint64_t, uint64_t> turns_before;
    for (uint64_t node : {1, 2, 3}) {
        turns_before[node] = c.replica(node).storage_turns();
    }
    const raft::Index applied_before = c.replica(leader).applied_index();
    constexpr int kCycles = 40;
    for (int i = 0; i < kCycles; ++i) {
        const uint64_t token = hold(c, leader, 1, a, "db");
        auto released = c.call(leader, 1, a.release("db", token));
        REQUIRE(released.has_value());
        REQUIRE(released->code() == proto::OK);
    }
    const uint64_t writes = c.replica(leader).applied_index() - applied_before;
    REQUIRE(writes >= 2 * kCycles);
    for (uint64_t node : {1, 2, 3}) {
        const uint64_t turns = c.replica(node).storage_turns() - turns_before[node];
        INFO("node " << node << (node == leader ? " (leader)" : "") << ": " << writes
                     << " entries, " << turns << " storage turns");
        // Two turns per write when each commit took its own; ticks while idle add a few.
        CHECK(turns <= writes + writes / 4);
    }
}

TEST_CASE("a commit no later write carries reaches the disk on the next tick",
          "[server][replica][storage][recovery]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    const uint64_t follower = c.follower();
    c.connect(leader, 1);
    Client a;
    open_session(c, leader, 1, a, 5000);
    hold(c, leader, 1, a, "db");
    const raft::Index last = c.replica(leader).applied_index();
    REQUIRE(c.run_until([&] { return c.replica(follower).applied_index() >= last; }));
    const int64_t now_ms = c.clock.now_ms;
    REQUIRE(c.run_until(
        [&] { return c.clock.now_ms >= now_ms + 2 * int64_t{c.config_template.tick_ms}; }));

    // Restarted alone, the follower replays its log up to the commit index on its disk.
    c.crash(follower);
    c.isolate(follower, true);
    c.restart(follower);
    REQUIRE(c.run_until([&] { return !c.replica(follower).catching_up(); }, 2000));
    CHECK(c.replica(follower).applied_index() >= last);
}

// Cluster time (the stamp on every entry, which TTLs, lock-delays and wait deadlines run on) must
// not run faster than the clocks: a key set with a TTL at stamp T may not expire before T + TTL
// has passed for real. A new leader continues it from the last applied stamp; a leader that led
// before, was cut off and kept stamping writes nobody committed, and is elected again later, must
// not continue from those old stamps (the replica simulator's seed 190621: a Redis lock lost
// 0.4 s early, its key read by another client's SET NX as expired).
TEST_CASE("a leader elected again stamps from the log, not from its own old stamps",
          "[server][replica][time]") {
    ReplicaCluster c;
    const uint64_t a = c.wait_for_leader();
    c.connect(a, 1);
    Client first;
    open_session(c, a, 1, first, 5000);
    // Nothing is proposed for a minute: cluster time stands still meanwhile.
    const int64_t idle_from_ms = c.clock.now_ms;
    REQUIRE(c.run_until([&] { return c.clock.now_ms >= idle_from_ms + 60000; }, 70000));

    // `a`, cut off, still takes a write as the leader it thinks it is and stamps it with its own
    // clock; the write is never committed.
    c.isolate(a, true);
    Client stale;
    c.send(a, 1, stale.open(5000));
    const uint64_t b = c.wait_for_leader();
    REQUIRE(b != a);
    c.connect(b, 2);
    Client second;
    open_session(c, b, 2, second, 5000);
    const int64_t cluster_before = c.replica(b).state().now_ms();
    const int64_t clock_before = c.clock.now_ms;

    // `a` comes back, catches up, and leads again: handed the leadership by `b` (a transfer is
    // an election `a` starts at once; waiting for its timer to fire first is a draw the other
    // follower may win every time in this single-threaded cluster).
    c.isolate(a, false);
    REQUIRE(c.run_until([&] {
        for (uint64_t n : {1, 2, 3}) {
            if (c.replica(n).applied_index() != c.replica(b).applied_index()) {
                return false;
            }
        }
        return true;
    }));
    REQUIRE(c.replica(b).is_leader());
    unsigned transfer_status = 0;
    c.replica(b).console_transfer_leadership(
        a, [&](unsigned status, std::string) { transfer_status = status; });
    CHECK(transfer_status == 202);
    REQUIRE(c.run_until([&] { return c.replica(a).is_leader(); }));
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader == a);
    c.connect(a, 3);
    Client third;
    open_session(c, a, 3, third, 5000);
    const int64_t cluster_after = c.replica(a).state().now_ms();
    const int64_t clock_after = c.clock.now_ms;
    INFO("cluster time advanced " << cluster_after - cluster_before << " ms in "
                                  << clock_after - clock_before << " ms");
    CHECK(cluster_after - cluster_before <= clock_after - clock_before);
}

TEST_CASE("bad requests get clear errors and change nothing", "[server][replica]") {
    ReplicaCluster c;
    const uint64_t leader = c.wait_for_leader();
    c.connect(leader, 1);
    proto::Request empty;
    empty.set_request_id(1);
    auto r = c.call(leader, 1, empty);
    REQUIRE(r.has_value());
    CHECK(r->code() == proto::BAD_REQUEST);
    Client a;
    proto::Request no_session = a.write();  // session 0
    no_session.mutable_create()->set_path("/x");
    r = c.call(leader, 1, no_session);
    REQUIRE(r.has_value());
    CHECK(r->code() == proto::BAD_ARGUMENTS);
    CHECK(!r->message().empty());
    proto::Request too_short = a.open(1);  // below the session timeout bounds
    r = c.call(leader, 1, too_short);
    REQUIRE(r.has_value());
    CHECK(r->code() == proto::BAD_ARGUMENTS);
}

}  // namespace
}  // namespace raftlock::server::test
