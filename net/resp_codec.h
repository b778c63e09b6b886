#pragma once

// The Redis protocol (RESP2 and RESP3) as pure functions over bytes: commands in, replies out. The
// RESP listener (net/resp_listener.cc) owns the sockets and calls these; the fuzzer
// (tests/fuzz/resp_fuzz.cc) calls exactly the same code. Commands are parsed as Redis 7 parses
// them (networking.c: processMultibulkBuffer, processInlineBuffer; sds.c: sdssplitargs), with
// Redis's error texts, so a client sees the same answer to a malformed request as from Redis.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "statemachine/redis/value.h"

namespace raftlock::net {

struct RespLimits {
    // Largest bulk argument ("$<len>") of a command, and of a reply in parse_resp_reply. Redis's
    // proto-max-bulk-len defaults to 512 MB; ours is 16 MiB because every write becomes a Raft
    // entry that each node holds in memory.
    size_t bulk_bytes_max = 16u << 20;
    // Most arguments of one multibulk command ("*<n>"), and items of one reply aggregate. Redis 7
    // accepts up to INT_MAX (Redis 6: 1024 * 1024). Inline commands are not counted, as in Redis:
    // their size is bounded by their line.
    size_t array_items_max = 1u << 20;
    // Redis's PROTO_INLINE_MAX_SIZE: how many bytes may wait without the end of a line (an inline
    // command's '\n', a count line's '\r') before the request is refused. A complete line is not
    // measured, as in Redis.
    size_t inline_bytes_max = 64u << 10;
};

enum class RespParse : uint8_t {
    kNeedMore,  // the input holds no complete command (reply) yet: read more and parse again
    kCommand,   // a complete command (reply) of `consumed` bytes
    kError,     // a protocol error: reply "-ERR " + error and close the connection, as Redis does
};

struct RespCommand {
    RespParse status = RespParse::kNeedMore;
    size_t consumed = 0;  // > 0 exactly when status == kCommand
    // Empty for an empty command ("*0", "*-1", a blank inline line): Redis skips those silently.
    statemachine::redis::Argv argv;
    std::string error;  // kError: Redis's text, e.g. "Protocol error: invalid bulk length"
};

// Parses one command from the front of `input`: the bytes a client sent and we have not consumed
// yet, which may end in the middle of a command or hold several pipelined ones. A first byte of '*'
// starts a multibulk command ("*<n>\r\n" then n times "$<len>\r\n<bytes>\r\n"), anything else an
// inline one (a line split into arguments with sdssplitargs's quoting; empty arguments dropped).
//
// Like Redis: the byte after each line's '\r' and the two bytes after bulk data are skipped without
// being looked at; whether a partial request is refused as too big depends only on the bytes that
// have arrived, so callers must re-parse from the command's first byte (as the listener does).
// Unlike Redis, lines are found with memchr rather than strchr, so a NUL byte does not hide the
// end of a line; on an inline line it still ends the arguments, as it does in sdssplitargs.
//
// Cost: linear in the bytes of the command; nothing is allocated for a partial command, and what
// is allocated for a complete one is bounded by its bytes.
RespCommand parse_resp_command(std::string_view input, const RespLimits& limits);

// Appends the RESP encoding of `value` to `out`. `protocol` is 2 or 3 (what HELLO chose).
// RESP2: kNull "$-1", kNullArray "*-1", kMap a flat array of its 2n items, kPush an array.
// RESP3: kNull and kNullArray "_", kMap "%n", kPush ">n". The rest is the same in both.
// Simple strings and errors cannot hold '\r' or '\n' on the wire: they are written as spaces.
// Precondition: a kMap has an even number of items.
void encode_resp(const statemachine::redis::Value& value, int protocol, std::string& out);

struct RespReply {
    RespParse status = RespParse::kNeedMore;  // kCommand: a complete reply
    size_t consumed = 0;                      // > 0 exactly when status == kCommand
    statemachine::redis::Value value;
    std::string error;
};

// Parses one reply from the front of `input`, for tests and tools (a Redis client's side). Accepts
// every RESP2 and RESP3 type: + - : $ * and _ % > ~ # , ( = ! |. RESP3 types without a Value kind
// map as Redis maps them to RESP2: a set '~' to an array, a boolean '#' to the integer 1 or 0, a
// double ',' and a big number '(' to a bulk of their text, a verbatim string '=' to a bulk of its
// text without the "txt:" prefix, a blob error '!' to an error; an attribute '|' is skipped. Lines
// must end in "\r\n" here. Aggregates nest at most 128 deep (deeper is an error). Streamed types
// ("$?", "*?") are errors.
RespReply parse_resp_reply(std::string_view input, const RespLimits& limits);

}  // namespace raftlock::net
