#pragma once

// The character classes PostgreSQL's scanner (scan.l) and its type input functions share: the
// lexer and the value parser (value.cc) must agree on them.

namespace raftlock::statemachine::sql {

// scanner_isspace: the ASCII whitespace PostgreSQL skips between tokens and around values.
inline bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

inline bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

}  // namespace raftlock::statemachine::sql
