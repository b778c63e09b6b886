#include "raft/driver.h"

#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "raft/conf_change.h"
#include "raft/memory_storage.h"
#include "raft/text.h"

namespace raftlock::raft {
namespace {

// Records every call, persists into a MemoryStorage, and stops at `stop_at` when set.
class RecordingHost final : public DriverHost {
public:
    explicit RecordingHost(MemoryStorage& storage) : storage_(storage) {}

    std::vector<std::string> calls;
    std::optional<DriverStage> stop_at;
    std::vector<Message> sent;

    void on_ready(const Ready&) override { calls.push_back("ready"); }
    void send(std::vector<Message>&& messages) override {
        std::string line = "send";
        for (Message& m : messages) {
            line += fmt::format(" {}", m.type);
            sent.push_back(std::move(m));
        }
        calls.push_back(line);
    }
    void persist(const Ready& ready, bool sync) override {
        calls.push_back(fmt::format("persist entries={} hard_state={} sync={}",
                                    ready.entries.size(), ready.hard_state.has_value(), sync));
        if (ready.snapshot) {
            storage_.apply_snapshot(*ready.snapshot);
        }
        storage_.append(ready.entries);
        if (ready.hard_state) {
            storage_.set_hard_state(*ready.hard_state);
        }
    }
    void apply_snapshot(const Snapshot&) override { calls.push_back("apply snapshot"); }
    void apply_entries(const std::vector<Entry>& entries) override {
        calls.push_back(fmt::format("apply {}", entries.size()));
    }
    void serve_reads(const std::vector<ReadState>& reads) override {
        calls.push_back(fmt::format("reads {}", reads.size()));
    }
    bool proceed(DriverStage stage) override { return stop_at != stage; }

private:
    MemoryStorage& storage_;
};

struct Founder {
    explicit Founder(size_t voters) {
        ConfState conf;
        for (NodeId id = 1; id <= voters; ++id) {
            conf.voters.push_back(id);
        }
        const Bootstrap boot = make_bootstrap(conf);
        storage.append({boot.entry});
        storage.set_hard_state(boot.hard_state);
        Config c;
        c.id = 1;
        c.applied = 1;
        c.pre_vote = false;
        node = std::make_unique<RawNode>(c, storage);
    }
    MemoryStorage storage;
    std::unique_ptr<RawNode> node;
};

TEST_CASE("the driver makes a candidate's vote durable before its vote requests leave",
          "[sim][driver]") {
    Founder f(3);
    RecordingHost host(f.storage);
    Driver driver(*f.node, host);
    f.node->campaign();
    REQUIRE(driver.run(10) == DriveResult::kHandled);
    REQUIRE(host.calls.size() == 3);
    CHECK(host.calls[0] == "ready");
    CHECK(host.calls[1] == "persist entries=0 hard_state=true sync=true");
    CHECK(host.calls[2] == "send MsgVote MsgVote");
    CHECK(f.storage.initial_state().hard_state.vote == 1);
}

TEST_CASE("the driver sends a leader's appends before its own write and applies after it",
          "[sim][driver]") {
    Founder f(3);
    RecordingHost host(f.storage);
    Driver driver(*f.node, host);
    f.node->campaign();
    REQUIRE(driver.run(10) == DriveResult::kHandled);
    host.calls.clear();
    f.node->step(Message{.type = MessageType::kVoteResponse, .from = 2, .to = 1, .term = 2});
    REQUIRE(driver.run(10) == DriveResult::kHandled);
    REQUIRE(host.calls.size() >= 3);
    CHECK(host.calls[0] == "ready");
    CHECK(host.calls[1] == "send MsgApp MsgApp");
    CHECK(host.calls[2] == "persist entries=1 hard_state=false sync=true");
    // Follower 2 acknowledges: the term-start entry commits and is applied.
    host.calls.clear();
    f.node->step(
        Message{.type = MessageType::kAppendResponse, .from = 2, .to = 1, .term = 2, .index = 2});
    REQUIRE(driver.run(10) == DriveResult::kHandled);
    CHECK(std::find(host.calls.begin(), host.calls.end(), "apply 1") != host.calls.end());
}

TEST_CASE("a host that stops the driver gets no further calls and the Ready is not advanced",
          "[sim][driver]") {
    Founder f(3);
    RecordingHost host(f.storage);
    host.stop_at = DriverStage::kPersisted;
    Driver driver(*f.node, host);
    f.node->campaign();
    CHECK(driver.run(10) == DriveResult::kStopped);
    CHECK(driver.stopped());
    CHECK(driver.readies_handled() == 0);
    REQUIRE(host.calls.size() == 2);
    CHECK(host.calls[1] == "persist entries=0 hard_state=true sync=true");
    CHECK(host.sent.empty());  // the vote requests never left
}

TEST_CASE("a node with nothing to do leaves the driver idle", "[sim][driver]") {
    Founder f(3);
    RecordingHost host(f.storage);
    Driver driver(*f.node, host);
    CHECK(driver.run(10) == DriveResult::kIdle);
    CHECK(host.calls.empty());
}

}  // namespace
}  // namespace raftlock::raft
