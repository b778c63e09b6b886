#pragma once

// A small driver for state machine tests: numbers entries, keeps per-session sequence numbers and
// a leader clock, sends every command through the codec (so the codec is exercised by every test),
// and checks the invariants after every entry.

#include <map>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "statemachine/codec.h"
#include "statemachine/state_machine.h"

namespace raftlock::statemachine::testing {

class Harness {
public:
    explicit Harness(Config config = {}) : sm(config) {}

    uint8_t format = kCommandFormatVersion;  // of the entries apply() writes

    ApplyResult apply(const Command& command) {
        Result<std::string, ErrorCode> bytes = encode_command(command);
        REQUIRE(bytes.ok());
        // An older format's layout is today's for the ops a test of it writes.
        bytes.value()[0] = static_cast<char>(format);
        ApplyResult out = sm.apply(++index, bytes.value());
        INFO(to_string(out));
        REQUIRE(sm.check_invariants() == "");
        return out;
    }

    // A request of `session` with the next sequence number.
    ApplyResult run(SessionId session, Op op) {
        return run_as(session, std::nullopt, std::move(op));
    }

    // The same, checked against the nodes' ACLs as `caller` (a ZooKeeper connection's ids).
    ApplyResult run_as(SessionId session, std::optional<Caller> caller, Op op) {
        Command c;
        c.client_id = session;
        c.seq = ++seqs[session];
        c.time_ms = time_ms;
        c.caller = std::move(caller);
        c.op = std::move(op);
        return apply(c);
    }

    // An entry the leader proposes (OpenSession, ExpireSession, Noop).
    ApplyResult leader(Op op) {
        Command c;
        c.time_ms = time_ms;
        c.op = std::move(op);
        return apply(c);
    }

    SessionId open(TimeMs timeout_ms = 10000) {
        ApplyResult out = leader(OpenSession{timeout_ms});
        REQUIRE(out.response.code == ErrorCode::kOk);
        return out.response.session;
    }

    // Moves the leader clock and applies a Noop so timers fire.
    ApplyResult advance(TimeMs ms) {
        time_ms += ms;
        return leader(Noop{});
    }

    Response create(SessionId s,
                    const std::string& path,
                    NodeKind kind = NodeKind::kPersistent,
                    const std::string& data = "",
                    TimeMs ttl_ms = 0) {
        return run(s, Create{path, data, kind, ttl_ms}).response;
    }

    Response lock(SessionId s,
                  const std::string& name,
                  const std::string& tag = "",
                  LockMode mode = LockMode::kExclusive,
                  TimeMs wait_ms = 0,
                  uint32_t permits = 1,
                  TimeMs lock_delay_ms = 0) {
        return run(s, Acquire{name, tag, mode, permits, wait_ms, lock_delay_ms}).response;
    }

    StateMachine sm;
    Index index = 0;
    TimeMs time_ms = 1000;
    std::map<SessionId, uint64_t> seqs;
};

}  // namespace raftlock::statemachine::testing
