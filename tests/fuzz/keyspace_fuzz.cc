// libFuzzer: a Redis client's bytes all the way into the keyspace. The input is a RESP pipeline;
// every command that passes precheck runs against a state machine (writes as RedisCommand entries
// through the codec, reads as queries), with cluster time moving by the first byte of each
// command. MULTI ... EXEC becomes one RedisTransaction entry, with the keys WATCH named watched
// from the index it ran at. After every entry the invariants must hold, a read must not change the
// state, and a second machine fed the same entries must stay identical (determinism, EVAL scripts
// included), as must a third that restored the first's snapshot halfway (WATCH's records of
// changes are in it).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/assert.h"
#include "net/resp_codec.h"
#include "statemachine/codec.h"
#include "statemachine/redis/commands.h"
#include "statemachine/state_machine.h"

namespace {

namespace sm = raftlock::statemachine;
namespace redis = raftlock::statemachine::redis;
using raftlock::net::parse_resp_command;
using raftlock::net::RespLimits;
using raftlock::net::RespParse;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    RespLimits limits;
    limits.bulk_bytes_max = 1 << 16;
    limits.array_items_max = 256;
    sm::StateMachine a;
    sm::StateMachine b;
    std::optional<sm::StateMachine> restored;
    sm::Index index = 0;
    sm::TimeMs now = 1000;
    std::optional<redis::Transaction> multi;
    std::vector<redis::WatchedKey> watched;
    for (int commands = 0; commands < 64 && !input.empty(); ++commands) {
        if (commands == 32) {
            restored.emplace();
            RL_ASSERT(restored->restore(a.snapshot()) == sm::ErrorCode::kOk);
        }
        auto parsed = parse_resp_command(input, limits);
        if (parsed.status != RespParse::kCommand) {
            break;
        }
        input.remove_prefix(parsed.consumed);
        if (parsed.argv.empty() || redis::precheck(parsed.argv)) {
            continue;
        }
        now += static_cast<uint8_t>(parsed.argv[0].empty() ? 0 : parsed.argv[0][0]) % 8 * 50;
        const std::string name = redis::lower(parsed.argv[0]);
        if (name == "multi") {
            multi.emplace();
            continue;
        }
        if (name == "watch") {
            for (size_t i = 1; i < parsed.argv.size(); ++i) {
                watched.push_back(redis::WatchedKey{parsed.argv[i], index});
            }
            continue;
        }
        if (multi && name != "exec") {
            multi->commands.push_back(parsed.argv);  // a connection command gets its error
            continue;
        }
        const redis::Route route = redis::route_of(parsed.argv);
        if (route == redis::Route::kConnection && name != "exec") {
            continue;
        }
        if (route == redis::Route::kRead) {
            const uint64_t before = a.state_hash();
            RL_ASSERT(a.redis_query(parsed.argv) == b.redis_query(parsed.argv));
            RL_ASSERT_MSG(a.state_hash() == before, "a read changed the state");
            continue;
        }
        sm::Command c;
        c.seq = static_cast<uint64_t>(commands) + 1;
        c.time_ms = now;
        if (name == "exec") {
            if (!multi) {
                continue;
            }
            c.op = sm::RedisTransaction{
                7, redis::Transaction{std::move(watched), std::move(multi->commands)}, 100000};
            multi.reset();
            watched.clear();
        } else {
            c.op = sm::RedisCommand{7, parsed.argv};
        }
        auto bytes = sm::encode_command(c);
        if (!bytes.ok()) {
            continue;
        }
        ++index;
        const sm::ApplyResult ra = a.apply(index, *bytes);
        const sm::ApplyResult rb = b.apply(index, *bytes);
        RL_ASSERT_MSG(ra == rb, "two replicas answered the same entry differently");
        if (restored) {
            RL_ASSERT_MSG(restored->apply(index, *bytes) == ra,
                          "a replica restored from a snapshot answered differently");
        }
        const std::string broken = a.check_invariants();
        RL_ASSERT_MSG(broken.empty(), broken.c_str());
    }
    RL_ASSERT_MSG(a.state_hash() == b.state_hash(), "two replicas diverged");
    RL_ASSERT_MSG(!restored || restored->state_hash() == a.state_hash(),
                  "a replica restored from a snapshot diverged");
    return 0;
}
