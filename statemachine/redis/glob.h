#pragma once

// Redis's glob-style patterns (KEYS, SCAN MATCH): * ? [abc] [^abc] [a-z] and \ to escape.

#include <string_view>

namespace raftlock::statemachine::redis {

// True when `text` matches `pattern`. Linear backtracking on the last '*' only, so a hostile
// pattern costs O(pattern * text), never exponential time.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace raftlock::statemachine::redis
