#pragma once

// What a reply value reads back as after net::encode_resp and net::parse_resp_reply, for the
// round-trip checks of the RESP codec's unit test and its fuzz target.

#include <utility>
#include <vector>

#include "statemachine/redis/value.h"

namespace raftlock::net::testing {

using statemachine::redis::Value;

// What `v` reads back as after encode_resp with `protocol`: RESP2 has no map, push, set, pairs or
// double, RESP3 one null, and simple strings, errors and RESP3 doubles lose their line breaks.
inline Value through(const Value& v, int protocol) {
    Value out = v;
    out.items.clear();
    for (const Value& item : v.items) {
        out.items.push_back(through(item, protocol));
    }
    if (protocol == 2 && (v.kind == Value::Kind::kMap || v.kind == Value::Kind::kPush ||
                          v.kind == Value::Kind::kSet || v.kind == Value::Kind::kPairs)) {
        out.kind = Value::Kind::kArray;
    }
    if (protocol == 2 && v.kind == Value::Kind::kDouble) {
        out.kind = Value::Kind::kBulk;
    }
    if (protocol == 3 && v.kind == Value::Kind::kPairs) {
        // Each (member, score) comes back as an array of two.
        out.kind = Value::Kind::kArray;
        std::vector<Value> pairs;
        for (size_t i = 0; i + 1 < out.items.size(); i += 2) {
            pairs.push_back(Value::array({out.items[i], out.items[i + 1]}));
        }
        out.items = std::move(pairs);
    }
    if (protocol == 3 && v.kind == Value::Kind::kNullArray) {
        out.kind = Value::Kind::kNull;
    }
    if (v.kind == Value::Kind::kSimple || v.kind == Value::Kind::kError ||
        (protocol == 3 && v.kind == Value::Kind::kDouble)) {
        for (char& c : out.text) {
            if (c == '\r' || c == '\n') {
                c = ' ';
            }
        }
    }
    return out;
}

}  // namespace raftlock::net::testing
