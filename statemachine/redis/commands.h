#pragma once

// The Redis command table (docs/redis-mode.md): which commands exist, their arity as Redis counts
// it (negative: at least that many), and how the front end routes each one.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "statemachine/redis/value.h"

namespace raftlock::statemachine::redis {

// The command formats (statemachine/codec.h) that changed the set of Redis commands: lists, sets
// and sorted sets came with format 6, PUBLISH (and the pub/sub connection commands) with format 7,
// MULTI, EXEC, DISCARD, WATCH and UNWATCH (and the RedisTransaction entry) with format 8.
// Kept here so that the keyspace does not depend on the codec; codec.h pins them to its own
// constants.
inline constexpr uint8_t kRedisFormatCollections = 6;
inline constexpr uint8_t kRedisFormatPubSub = 7;
inline constexpr uint8_t kRedisFormatTransactions = 8;
// Format 9 (AcquireMany's wait) changed nothing here: its entries run format 8's commands.
inline constexpr uint8_t kRedisFormatNewest = 9;

enum class Route : uint8_t {
    kRead = 0,    // served from the local keyspace after a ReadIndex round (linearizable)
    kWrite,       // replicated through the log as a RedisCommand
    kConnection,  // answered by the front end itself (PING, HELLO, MULTI, SUBSCRIBE, ...)
};

struct CommandSpec {
    std::string_view name;  // lower case
    int arity = 0;          // Redis's convention: n exactly, -n at least n (the name included)
    Route route = Route::kRead;
    bool scriptable = true;  // may run inside EVAL through redis.call
    // The first command format (statemachine/codec.h) whose entries may carry it: in an entry of an
    // earlier format the command is unknown, as it was to the servers that applied that entry.
    uint8_t since_format = 1;
};

// Every command this mode serves, in name order.
std::span<const CommandSpec> all_commands();
// nullptr when Redis has no such command here, or not in entries of command format `format`.
// `name` in any case.
const CommandSpec* find_command(std::string_view name, uint8_t format = kRedisFormatNewest);

// The error Redis gives before running a command: unknown command, wrong number of arguments.
// nullopt when argv may be dispatched.
std::optional<Value> precheck(const Argv& argv, uint8_t format = kRedisFormatNewest);

// Where argv goes: its command's route, refined by subcommand (SCRIPT EXISTS reads, SCRIPT LOAD
// writes). argv must have passed precheck.
Route route_of(const Argv& argv);
// Whether argv may change the keyspace: true unless it names a read (an unknown command counts as
// a write, so that permission checks err on the safe side).
bool may_write(const Argv& argv);

// Redis's error texts, shared by the keyspace and the front end.
inline constexpr std::string_view kSyntaxError = "ERR syntax error";
inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";
std::string wrong_arity(std::string_view lower_name);
// Redis's string2ll: an optional '-', digits, no leading zeros, no spaces, within int64.
std::optional<int64_t> parse_int(std::string_view s);
std::string lower(std::string_view s);

}  // namespace raftlock::statemachine::redis
