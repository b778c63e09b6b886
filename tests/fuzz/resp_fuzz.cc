// libFuzzer: bytes from a Redis client -> parse_resp_command, command after command, exactly as
// the RESP listener consumes its buffer; and the same bytes read as replies by parse_resp_reply.
// The first input byte picks the limits (Redis's defaults, or small ones the fuzzer can reach) and
// where to cut each command for the partial-input check.
//
// Invariants: a command never claims more bytes than it has, and always at least one; a proper
// prefix of a command is incomplete (or refused as too big, which depends on the bytes waiting);
// arguments fit the limits; every command's arguments, sent as an array of bulks (what client
// libraries send), parse back to the same arguments, as a command and as a reply in RESP2 and
// RESP3; every reply parsed re-encodes and parses back to itself.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/assert.h"
#include "net/resp_codec.h"
#include "tests/net/resp_through.h"

namespace {

using raftlock::net::encode_resp;
using raftlock::net::parse_resp_command;
using raftlock::net::parse_resp_reply;
using raftlock::net::RespCommand;
using raftlock::net::RespLimits;
using raftlock::net::RespParse;
using raftlock::net::RespReply;
using raftlock::net::testing::through;
using raftlock::statemachine::redis::Argv;
using raftlock::statemachine::redis::Value;

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

void check_round_trip(const Value& value) {
    for (int protocol : {2, 3}) {
        std::string bytes;
        encode_resp(value, protocol, bytes);
        const RespReply back = parse_resp_reply(bytes, RespLimits{});
        RL_ASSERT(back.status == RespParse::kCommand);
        RL_ASSERT(back.consumed == bytes.size());
        RL_ASSERT(back.value == through(value, protocol));
    }
}

void check_argv_round_trip(const Argv& argv) {
    std::vector<Value> items;
    items.reserve(argv.size());
    for (const std::string& arg : argv) {
        items.push_back(Value::bulk(arg));
    }
    const Value request = Value::array(std::move(items));
    check_round_trip(request);
    // An array of bulks is also the multibulk form of the command.
    std::string bytes;
    encode_resp(request, 2, bytes);
    const RespCommand again = parse_resp_command(bytes, RespLimits{});
    RL_ASSERT(again.status == RespParse::kCommand);
    RL_ASSERT(again.consumed == bytes.size());
    RL_ASSERT(again.argv == argv);
}

void check_command(std::string_view rest, const RespCommand& c, const RespLimits& limits) {
    RL_ASSERT(c.consumed > 0);
    RL_ASSERT(c.consumed <= rest.size());
    RL_ASSERT(c.error.empty());
    size_t arg_bytes = 0;
    for (const std::string& arg : c.argv) {
        arg_bytes += arg.size();
        if (rest[0] == '*') {
            RL_ASSERT(arg.size() <= limits.bulk_bytes_max);
        } else {
            RL_ASSERT(!arg.empty());  // inline commands drop empty arguments
        }
    }
    RL_ASSERT(arg_bytes <= c.consumed);
    if (rest[0] == '*') {
        RL_ASSERT(c.argv.size() <= limits.array_items_max);
    }
}

void check_commands(std::string_view stream, const RespLimits& limits, size_t cut_seed) {
    std::string_view rest = stream;
    while (!rest.empty()) {
        const RespCommand c = parse_resp_command(rest, limits);
        if (c.status == RespParse::kNeedMore) {
            RL_ASSERT(c.consumed == 0);
            RL_ASSERT(c.argv.empty());
            return;
        }
        if (c.status == RespParse::kError) {
            RL_ASSERT(c.consumed == 0);
            RL_ASSERT(starts_with(c.error, "Protocol error: "));
            return;
        }
        check_command(rest, c, limits);
        // A proper prefix has not arrived whole yet.
        for (size_t cut : {cut_seed % c.consumed, c.consumed / 2, c.consumed - 1}) {
            const RespCommand partial = parse_resp_command(rest.substr(0, cut), limits);
            RL_ASSERT(partial.consumed == 0);
            if (partial.status == RespParse::kError) {
                RL_ASSERT(starts_with(partial.error, "Protocol error: too big "));
            } else {
                RL_ASSERT(partial.status == RespParse::kNeedMore);
            }
        }
        check_argv_round_trip(c.argv);
        rest.remove_prefix(c.consumed);
    }
}

void check_replies(std::string_view stream, const RespLimits& limits) {
    std::string_view rest = stream;
    while (!rest.empty()) {
        const RespReply r = parse_resp_reply(rest, limits);
        if (r.status != RespParse::kCommand) {
            RL_ASSERT(r.consumed == 0);
            if (r.status == RespParse::kError) {
                RL_ASSERT(!r.error.empty());
            }
            return;
        }
        RL_ASSERT(r.consumed > 0);
        RL_ASSERT(r.consumed <= rest.size());
        check_round_trip(r.value);
        rest.remove_prefix(r.consumed);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) {
        return 0;
    }
    RespLimits limits;
    if (data[0] & 1) {
        limits.bulk_bytes_max = 64;
        limits.array_items_max = 8;
        limits.inline_bytes_max = 128;
    }
    const size_t cut_seed = data[0] >> 1;
    const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
    check_commands(stream, limits, cut_seed);
    check_replies(stream, limits);
    return 0;
}
