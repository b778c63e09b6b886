// An entry a node cannot decode stops it (DESIGN.md: never skipped). Leaders propose only commands
// that encode and validate, so such an entry comes from a newer format (an older binary reading a
// newer log) or a bug; a replica that skipped it while the others applied it would diverge. The
// test writes one into a stopped node's log, committed, and restarts the node.

#include <string>

#include <catch2/catch.hpp>

#include "process_cluster.h"
#include "raw_client.h"
#include "storage/durable_store.h"

namespace raftlock::integration {
namespace {

TEST_CASE("a committed entry that does not decode stops the node at its replay",
          "[integration][undecodable]") {
    ProcessCluster c(1);
    REQUIRE(c.wait_for_leader() == 1);
    {
        RawConnection conn(c.ports(1).client);
        proto::Request open;
        open.set_request_id(1);
        open.mutable_open_session()->set_timeout_ms(5000);
        REQUIRE(conn.call(open).code() == proto::OK);
    }
    c.stop(1);
    raft::Index index = 0;
    {
        auto store = storage::open_durable_store(c.dir() + "/node1");
        REQUIRE(store.ok());
        raft::InitialState init = (*store)->initial_state();
        index = (*store)->last_index() + 1;
        // Format version 99: what a later raftlockd might write.
        (*store)->append({raft::Entry{.term = init.hard_state.term,
                                      .index = index,
                                      .type = raft::EntryType::kNormal,
                                      .data = std::string("\x63garbage", 8)}});
        init.hard_state.commit = index;
        (*store)->set_hard_state(init.hard_state);
    }
    c.start(1);
    const int status = c.wait_exit(1, 15000);
    INFO("node log:\n" << c.log_of(1));
    CHECK(status == 128 + 6);  // RL_PANIC aborts
    CHECK(c.log_of(1).find("entry " + std::to_string(index)) != std::string::npos);
    CHECK(c.log_of(1).find("does not decode as a command") != std::string::npos);
}

}  // namespace
}  // namespace raftlock::integration
