#include "raft/ready_loop.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "raft/conf_change.h"
#include "raft/memory_storage.h"
#include "raft/raft.h"
#include "raft/text.h"

namespace raftlock::raft {
namespace {

// Records every call and persists into a MemoryStorage. A synchronous host completes each write
// before persist() returns (as the core simulator's disk); otherwise writes wait in `writes` until
// complete_write() (as the server's storage thread). Deferred calls wait in `deferred`.
class RecordingHost final : public ReadyHost {
public:
    RecordingHost(MemoryStorage& storage, bool synchronous)
        : storage_(storage), synchronous_(synchronous) {}

    std::vector<std::string> calls;
    std::optional<ReadyStage> stop_at;
    std::vector<Message> sent;
    std::deque<Callback> writes;
    std::deque<Callback> deferred;

    void on_ready(const Ready&) override { calls.push_back("ready"); }
    void send(std::vector<Message>& messages) override {
        std::string line = "send";
        for (Message& m : messages) {
            line += fmt::format(" {}", m.type);
            sent.push_back(std::move(m));
        }
        calls.push_back(line);
    }
    void persist(std::shared_ptr<const Ready> ready, bool sync, Callback done) override {
        calls.push_back(fmt::format("persist entries={} hard_state={} sync={}",
                                    ready->entries.size(), ready->hard_state.has_value(), sync));
        if (ready->snapshot) {
            storage_.apply_snapshot(*ready->snapshot);
        }
        storage_.append(ready->entries);
        if (ready->hard_state) {
            storage_.set_hard_state(*ready->hard_state);
        }
        if (synchronous_) {
            done();
        } else {
            writes.push_back(std::move(done));
        }
    }
    void persist_commit(const HardState& hard_state) override {
        calls.push_back(fmt::format("persist commit={}", hard_state.commit));
        storage_.set_hard_state(hard_state);
    }
    void apply_snapshot(const Snapshot&) override { calls.push_back("apply snapshot"); }
    void apply_entries(const std::vector<Entry>& entries) override {
        calls.push_back(fmt::format("apply {}", entries.size()));
    }
    void serve_reads(std::vector<ReadState>& reads) override {
        calls.push_back(fmt::format("reads {}", reads.size()));
    }
    void defer(Callback fn) override {
        calls.push_back("defer");
        deferred.push_back(std::move(fn));
    }
    bool proceed(ReadyStage stage) override { return stop_at != stage; }

    void complete_write() {
        REQUIRE(!writes.empty());
        Callback done = std::move(writes.front());
        writes.pop_front();
        done();
    }
    void run_deferred() {
        REQUIRE(!deferred.empty());
        Callback fn = std::move(deferred.front());
        deferred.pop_front();
        fn();
    }
    bool called(const std::string& call) const {
        return std::find(calls.begin(), calls.end(), call) != calls.end();
    }

private:
    MemoryStorage& storage_;
    bool synchronous_;
};

struct Founder {
    // Founding member `id` of a cluster of `voters`, as RawNode's application starts it.
    explicit Founder(size_t voters, uint64_t max_committed_entries_per_ready = 0, NodeId id = 1) {
        ConfState conf;
        for (NodeId id = 1; id <= voters; ++id) {
            conf.voters.push_back(id);
        }
        const Bootstrap boot = make_bootstrap(conf);
        storage.append({boot.entry});
        storage.set_hard_state(boot.hard_state);
        Config c;
        c.id = id;
        c.applied = 1;
        c.pre_vote = false;
        if (max_committed_entries_per_ready > 0) {
            c.max_committed_entries_per_ready = max_committed_entries_per_ready;
        }
        node = std::make_unique<RawNode>(c, storage);
    }
    MemoryStorage storage;
    std::unique_ptr<RawNode> node;
};

// Campaigns and wins with node 2's vote; the loop is left with the leader's first write pending
// (asynchronous host) or done (synchronous).
void elect(Founder& f, RecordingHost& host, ReadyLoop& loop, bool synchronous) {
    f.node->campaign();
    loop.drive();
    if (!synchronous) {
        host.complete_write();
    }
    f.node->step(Message{.type = MessageType::kVoteResponse, .from = 2, .to = 1, .term = 2});
    loop.drive();
}

TEST_CASE("the Ready loop makes a candidate's vote durable before its vote requests leave",
          "[raft][ready_loop]") {
    Founder f(3);
    RecordingHost host(f.storage, true);
    ReadyLoop loop(*f.node, host);
    f.node->campaign();
    loop.drive();
    REQUIRE(host.calls.size() == 3);
    CHECK(host.calls[0] == "ready");
    CHECK(host.calls[1] == "persist entries=0 hard_state=true sync=true");
    CHECK(host.calls[2] == "send MsgVote MsgVote");
    CHECK(f.storage.initial_state().hard_state.vote == 1);
    CHECK(loop.readies_handled() == 1);
}

TEST_CASE("with an asynchronous write, nothing of the Ready happens before the write completes",
          "[raft][ready_loop]") {
    Founder f(3);
    RecordingHost host(f.storage, false);
    ReadyLoop loop(*f.node, host);
    f.node->campaign();
    loop.drive();
    REQUIRE(loop.persisting());
    CHECK(host.sent.empty());
    CHECK(loop.readies_handled() == 0);
    // Inputs meanwhile go into the next Ready; driving again does not take it.
    f.node->step(Message{.type = MessageType::kVoteResponse, .from = 2, .to = 1, .term = 2});
    const size_t calls_before = host.calls.size();
    loop.drive();
    CHECK(host.calls.size() == calls_before);
    // The write completes: the vote requests leave, and the loop goes on to the next Ready (the
    // leader's term-start entry: its appends go out early, its own write starts).
    host.complete_write();
    CHECK(host.sent.size() == 4);  // two vote requests, then two appends
    CHECK(loop.readies_handled() == 1);
    CHECK(loop.persisting());
    CHECK(host.calls.back() == "persist entries=1 hard_state=false sync=true");
    CHECK(host.called("send MsgApp MsgApp"));
}

TEST_CASE("the Ready loop applies a leader's entry only after its own write",
          "[raft][ready_loop]") {
    for (const bool synchronous : {true, false}) {
        CAPTURE(synchronous);
        Founder f(3);
        RecordingHost host(f.storage, synchronous);
        ReadyLoop loop(*f.node, host);
        elect(f, host, loop, synchronous);
        // Follower 2 acknowledges the term-start entry before the leader's own write is done
        // (asynchronous) or after it (synchronous): it commits once both are.
        f.node->step(Message{
            .type = MessageType::kAppendResponse, .from = 2, .to = 1, .term = 2, .index = 2});
        loop.drive();
        if (!synchronous) {
            CHECK_FALSE(host.called("apply 1"));
            host.complete_write();
        }
        CHECK(host.called("apply 1"));
    }
}

TEST_CASE("a Ready that applied entries ends the turn: the next waits for a deferred drive",
          "[raft][ready_loop]") {
    Founder f(3, 1);  // one committed entry per Ready
    RecordingHost host(f.storage, true);
    ReadyLoop loop(*f.node, host);
    elect(f, host, loop, true);
    REQUIRE(f.node->propose("x").ok());
    REQUIRE(f.node->propose("y").ok());
    loop.drive();
    host.calls.clear();
    // Entries 2 to 4 commit at once; each Ready applies one.
    f.node->step(
        Message{.type = MessageType::kAppendResponse, .from = 2, .to = 1, .term = 2, .index = 4});
    loop.drive();
    CHECK(std::count(host.calls.begin(), host.calls.end(), "apply 1") == 1);
    CHECK(host.calls.back() == "defer");
    CHECK(loop.drive_deferred());
    // Driving again (another input) does not take the next Ready ahead of the deferred drive.
    loop.drive();
    CHECK(std::count(host.calls.begin(), host.calls.end(), "apply 1") == 1);
    host.run_deferred();
    CHECK(std::count(host.calls.begin(), host.calls.end(), "apply 1") == 2);
    host.run_deferred();
    CHECK(std::count(host.calls.begin(), host.calls.end(), "apply 1") == 3);
    CHECK_FALSE(loop.drive_deferred());
    CHECK(host.deferred.empty());
}

TEST_CASE("a Ready that only moves the commit index finishes without waiting for its write",
          "[raft][ready_loop]") {
    Founder f(3);
    RecordingHost host(f.storage, false);
    ReadyLoop loop(*f.node, host);
    elect(f, host, loop, false);
    host.complete_write();  // the leader's own term-start entry
    CHECK_FALSE(loop.persisting());
    host.calls.clear();
    f.node->step(
        Message{.type = MessageType::kAppendResponse, .from = 2, .to = 1, .term = 2, .index = 2});
    loop.drive();
    CHECK(host.called("persist commit=2"));
    CHECK(host.called("apply 1"));
    CHECK_FALSE(loop.persisting());
    CHECK(host.writes.empty());
}

TEST_CASE("a host that stops the Ready loop gets no further calls and nothing is advanced",
          "[raft][ready_loop]") {
    for (const bool synchronous : {true, false}) {
        CAPTURE(synchronous);
        Founder f(3);
        RecordingHost host(f.storage, synchronous);
        host.stop_at = ReadyStage::kPersisted;
        ReadyLoop loop(*f.node, host);
        f.node->campaign();
        loop.drive();
        if (!synchronous) {
            CHECK_FALSE(loop.stopped());
            host.complete_write();
        }
        CHECK(loop.stopped());
        CHECK(loop.readies_handled() == 0);
        REQUIRE(host.calls.size() == 2);
        CHECK(host.calls[1] == "persist entries=0 hard_state=true sync=true");
        CHECK(host.sent.empty());  // the vote requests never left
    }
}

size_t count_calls(const RecordingHost& host, const std::string& call) {
    return static_cast<size_t>(std::count(host.calls.begin(), host.calls.end(), call));
}

TEST_CASE("a pipelined loop takes the next Ready while a write is in flight",
          "[raft][ready_loop][pipeline]") {
    Founder f(3);
    RecordingHost host(f.storage, false);
    ReadyLoop loop(*f.node, host, 3);
    elect(f, host, loop, false);  // the term-start entry (2) is being written
    REQUIRE(loop.in_flight() == 1);
    // Follower 2 has entry 2 (so the leader replicates to it without probing); nothing commits:
    // the leader's own copy is not durable yet.
    f.node->step(
        Message{.type = MessageType::kAppendResponse, .from = 2, .to = 1, .term = 2, .index = 2});
    loop.drive();
    CHECK(f.node->status().hard_state.commit == 1);
    host.sent.clear();
    REQUIRE(f.node->propose("x").ok());
    loop.drive();
    // Entry 3's Ready is taken at once: its append leaves and its write queues behind entry 2's.
    CHECK(loop.in_flight() == 2);
    CHECK(host.writes.size() == 2);
    CHECK(count_calls(host, "persist entries=1 hard_state=false sync=true") == 2);
    REQUIRE(host.sent.size() == 1);
    CHECK(host.sent[0].type == MessageType::kAppend);
    CHECK(host.sent[0].to == 2);
    CHECK(host.sent[0].entries.back().index == 3);
    // Follower 2 has both entries; the leader counts only its own completed writes, so nothing
    // commits until entry 2's write is done, and then only entry 2.
    f.node->step(
        Message{.type = MessageType::kAppendResponse, .from = 2, .to = 1, .term = 2, .index = 3});
    loop.drive();
    CHECK(f.node->status().hard_state.commit == 1);
    host.complete_write();
    CHECK(f.node->status().hard_state.commit == 2);
    // Entry 2's commit is in a Ready queued behind entry 3's write: Readies finish in order.
    CHECK(loop.in_flight() == 2);
    CHECK(count_calls(host, "apply 1") == 0);
    host.complete_write();
    CHECK(count_calls(host, "apply 1") == 1);  // entry 2; entry 3 commits on the next turn
    CHECK(f.node->status().hard_state.commit == 3);
    while (!host.deferred.empty()) {
        host.run_deferred();
    }
    CHECK(count_calls(host, "apply 1") == 2);
    CHECK(loop.in_flight() == 0);
    CHECK(f.node->readies_outstanding() == 0);
}

TEST_CASE("a pipelined loop stops taking Readies at its limit", "[raft][ready_loop][pipeline]") {
    Founder f(3);
    RecordingHost host(f.storage, false);
    ReadyLoop loop(*f.node, host, 2);
    elect(f, host, loop, false);
    REQUIRE(f.node->propose("x").ok());
    loop.drive();
    REQUIRE(loop.in_flight() == 2);
    REQUIRE(f.node->propose("y").ok());
    REQUIRE(f.node->propose("z").ok());
    loop.drive();
    CHECK(loop.in_flight() == 2);  // y and z wait, and go out together in one Ready
    host.complete_write();
    CHECK(loop.in_flight() == 2);
    CHECK(host.calls.back() == "persist entries=2 hard_state=false sync=true");
}

TEST_CASE("a follower's pipelined writes replaced by a conflict are written again",
          "[raft][ready_loop][pipeline]") {
    Founder f(3, 0, 3);  // node 3, a follower
    MemoryStorage& storage = f.storage;
    RawNode& node = *f.node;
    RecordingHost host(storage, false);
    ReadyLoop loop(node, host, 4);
    // Leader 1 of term 2 appends entries 2 and 3; the follower's write is in flight.
    node.step(Message{
        .type = MessageType::kAppend,
        .from = 1,
        .to = 3,
        .term = 2,
        .log_term = 1,
        .index = 1,
        .entries = {Entry{2, 2, EntryType::kNormal, "a"}, Entry{2, 3, EntryType::kNormal, "b"}},
        .commit = 1});
    loop.drive();
    REQUIRE(loop.in_flight() == 1);
    // Leader 2 of term 3 replaces entry 3 before that write completes.
    node.step(Message{.type = MessageType::kAppend,
                      .from = 2,
                      .to = 3,
                      .term = 3,
                      .log_term = 2,
                      .index = 2,
                      .entries = {Entry{3, 3, EntryType::kNormal, "c"}},
                      .commit = 1});
    loop.drive();
    REQUIRE(loop.in_flight() == 2);
    CHECK(host.calls.back() == "persist entries=1 hard_state=true sync=true");
    // The first write lands, but its last entry (3 of term 2) was replaced: none of it counts
    // as stable yet (entry 2 will, with the next write, which comes after it).
    host.complete_write();
    CHECK(node.raft().log().last_stable_index() == 1);
    host.complete_write();
    CHECK(node.raft().log().last_stable_index() == 3);
    CHECK(storage.term(3).value() == 3);
    // Each acknowledgement left only after the write it promises.
    REQUIRE(host.sent.size() == 2);
    CHECK(host.sent[0].type == MessageType::kAppendResponse);
    CHECK(host.sent[0].index == 3);
    CHECK(host.sent[1].to == 2);
    CHECK(host.sent[1].index == 3);
}

TEST_CASE("a node with nothing to do leaves the Ready loop idle", "[raft][ready_loop]") {
    Founder f(3);
    RecordingHost host(f.storage, true);
    ReadyLoop loop(*f.node, host);
    loop.drive();
    CHECK(host.calls.empty());
    CHECK(loop.readies_handled() == 0);
}

}  // namespace
}  // namespace raftlock::raft
