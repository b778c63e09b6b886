#pragma once

// A Redis reply as the keyspace produces it, in RESP3's shape (docs/redis-mode.md). The state
// machine builds these deterministically; the RESP front end (net/resp_codec.h) writes them as
// RESP2 or RESP3, whichever the connection chose with HELLO. Scripts (lua_script.h) convert to and
// from it with Redis's rules.

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace raftlock::statemachine::redis {

struct Value {
    enum class Kind : uint8_t {
        kNull = 0,   // RESP2 "$-1" (a missing key); RESP3 "_"
        kNullArray,  // RESP2 "*-1" (EXEC aborted by WATCH); RESP3 "_"
        kSimple,     // "+OK"
        kError,      // "-ERR ..." (text holds everything after the '-': "ERR ...", "WRONGTYPE ...")
        kInteger,    // ":1"
        kBulk,       // "$3\r\nabc"
        kArray,      // "*n"
        kMap,        // RESP3 "%n" (items alternate key, value); RESP2 a flat array of 2n items
        kPush,       // RESP3 ">n" (pub/sub messages); RESP2 an array
        kDouble,     // RESP3 ",1.5" (text holds the number as Redis 7.0 prints it); RESP2 a bulk
        kSet,        // RESP3 "~n" (SMEMBERS); RESP2 an array
        kPairs,      // RESP3 an array of n/2 arrays of two (ZRANGE WITHSCORES); RESP2 a flat array
    };

    Kind kind = Kind::kNull;
    int64_t integer = 0;
    std::string text;          // kSimple, kError, kBulk
    std::vector<Value> items;  // kArray, kMap, kPush

    static Value null() { return Value{}; }
    static Value null_array() { return Value{Kind::kNullArray, 0, {}, {}}; }
    static Value simple(std::string s) { return Value{Kind::kSimple, 0, std::move(s), {}}; }
    static Value ok() { return simple("OK"); }
    // `message` starts with the error code, as Redis words it: "ERR syntax error".
    static Value error(std::string message) {
        return Value{Kind::kError, 0, std::move(message), {}};
    }
    static Value integer_of(int64_t n) { return Value{Kind::kInteger, n, {}, {}}; }
    static Value bulk(std::string s) { return Value{Kind::kBulk, 0, std::move(s), {}}; }
    static Value array(std::vector<Value> items) {
        return Value{Kind::kArray, 0, {}, std::move(items)};
    }
    static Value map(std::vector<Value> items) {
        return Value{Kind::kMap, 0, {}, std::move(items)};
    }
    static Value push(std::vector<Value> items) {
        return Value{Kind::kPush, 0, {}, std::move(items)};
    }
    // A score or increment: "%.17g" as Redis 7.0's addReplyDouble writes it ("inf", "-inf").
    static Value real(double d) { return Value{Kind::kDouble, 0, format_double(d), {}}; }
    static Value set(std::vector<Value> items) {
        return Value{Kind::kSet, 0, {}, std::move(items)};
    }
    // items alternate member, score.
    static Value pairs(std::vector<Value> items) {
        return Value{Kind::kPairs, 0, {}, std::move(items)};
    }
    static std::string format_double(double d) {
        if (std::isinf(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        std::array<char, 32> text{};
        const int size = std::snprintf(text.data(), text.size(), "%.17g", d);
        return std::string(text.data(), static_cast<size_t>(size));
    }

    bool is_error() const { return kind == Kind::kError; }
    friend bool operator==(const Value&, const Value&) = default;
};

// Redis's argument vector: argv[0] is the command name (any case), the rest its arguments.
using Argv = std::vector<std::string>;

// A PUBLISH, by a command or from a script: part of what applying the entry produces, so that
// every node delivers it to its own subscribers, in log order (docs/redis-mode.md, pub/sub).
struct Publication {
    std::string channel;
    std::string message;
    // The item of a transaction's EXEC reply that answers this PUBLISH, which the node answering
    // the client replaces with its own count of receivers; none for a lone PUBLISH (its whole
    // reply is the count) or a script's.
    std::optional<size_t> exec_item;
    friend bool operator==(const Publication&, const Publication&) = default;
};

// A key WATCH named, and the applied index of the state it was served at: EXEC aborts when the
// key was changed by a later entry (docs/redis-mode.md, transactions).
struct WatchedKey {
    std::string key;
    uint64_t index = 0;
    friend bool operator==(const WatchedKey&, const WatchedKey&) = default;
};

// MULTI ... EXEC: one log entry. The queued keyspace commands (connection commands such as PING
// stay with the front end) run one after another, nothing between them, unless a watched key
// changed first.
struct Transaction {
    std::vector<WatchedKey> watched;
    std::vector<Argv> commands;
    friend bool operator==(const Transaction&, const Transaction&) = default;
};

}  // namespace raftlock::statemachine::redis
