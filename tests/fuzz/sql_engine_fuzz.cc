// libFuzzer: SQL sessions all the way into the engine. The input is lines; each line is one step
// of one of four sessions, chosen by its first byte: '~' ends the session (it expires and a new
// one takes its place), '!' cancels its waiting statement, '+' moves cluster time, anything else
// is a statement (the rest of the line) sent as a SqlStatement entry through the codec — or, when
// it only reads and the session is outside a block, as a query. After every entry the invariants
// must hold, a query must not change the state, and a second machine fed the same entries must
// stay identical (determinism: waits, grants, deadlocks and timeouts included).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/assert.h"
#include "statemachine/codec.h"
#include "statemachine/sql/parser.h"
#include "statemachine/state_machine.h"

namespace {

namespace sm = raftlock::statemachine;
namespace sql = raftlock::statemachine::sql;

class Replicas {
public:
    sm::ApplyResult apply(const sm::Command& command) {
        auto bytes = sm::encode_command(command);
        if (!bytes.ok()) {
            return {};
        }
        ++index_;
        const sm::ApplyResult ra = a.apply(index_, *bytes);
        const sm::ApplyResult rb = b.apply(index_, *bytes);
        RL_ASSERT_MSG(ra == rb, "two replicas answered the same entry differently");
        const std::string broken = a.check_invariants();
        RL_ASSERT_MSG(broken.empty(), broken.c_str());
        return ra;
    }
    sm::SessionId open(sm::TimeMs now) {
        sm::Command c;
        c.time_ms = now;
        c.op = sm::OpenSession{60000};
        return apply(c).response.session;
    }

    sm::StateMachine a;
    sm::StateMachine b;

private:
    sm::Index index_ = 0;
};

bool reads_only(const std::string& text) {
    auto parsed = sql::parse(text, sql::ParseLimits{});
    return parsed.ok() && parsed->size() == 1 && sql::is_read_only(parsed->front().statement);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    Replicas r;
    sm::TimeMs now = 1000;
    std::array<sm::SessionId, 4> sessions{};
    std::array<uint64_t, 4> seqs{};
    for (size_t i = 0; i < sessions.size(); ++i) {
        sessions[i] = r.open(now);
    }
    for (int steps = 0; steps < 64 && !input.empty(); ++steps) {
        const size_t end = input.find('\n');
        const std::string_view line = input.substr(0, end);
        input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
        if (line.empty()) {
            continue;
        }
        const size_t who = static_cast<uint8_t>(line[0]) % sessions.size();
        const std::string rest(line.substr(1));
        sm::Command c;
        c.time_ms = now;
        switch (line[0]) {
            case '~':
                c.op = sm::ExpireSession{sessions[who]};
                r.apply(c);
                sessions[who] = r.open(now);
                seqs[who] = 0;
                continue;
            case '!':
                c.seq = static_cast<uint64_t>(steps) + 1;
                c.op = sm::SqlCancel{sessions[who]};
                r.apply(c);
                continue;
            case '+':
                now += static_cast<sm::TimeMs>(rest.size()) * 250;
                c.time_ms = now;
                c.op = sm::Noop{};
                r.apply(c);
                continue;
            default:
                break;
        }
        const sql::StatementRequest request{rest, {}, 500};
        if (reads_only(rest) && r.a.sql_tx_status(sessions[who]) == sql::TxStatus::kIdle) {
            const uint64_t before = r.a.state_hash();
            RL_ASSERT(r.a.sql_query(sessions[who], request) ==
                      r.b.sql_query(sessions[who], request));
            RL_ASSERT_MSG(r.a.state_hash() == before, "a read changed the state");
            continue;
        }
        c.client_id = sessions[who];
        c.seq = ++seqs[who];
        c.ack_seq = c.seq - 1;
        c.op = sm::SqlStatement{request};
        r.apply(c);
    }
    RL_ASSERT_MSG(r.a.state_hash() == r.b.state_hash(), "two replicas diverged");
    const std::string snapshot = r.a.snapshot();
    sm::StateMachine restored;
    RL_ASSERT_MSG(restored.restore(snapshot) == sm::ErrorCode::kOk, "a snapshot does not restore");
    RL_ASSERT_MSG(restored.snapshot() == snapshot, "a snapshot does not round-trip");
    return 0;
}
