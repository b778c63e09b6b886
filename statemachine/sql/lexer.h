#pragma once

// The SQL mode's lexer: PostgreSQL's lexical rules (scan.l) for the subset parser.h describes.
// Internal to the parser, which is its only user; tests reach it through parse().

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "statemachine/sql/parser.h"

namespace raftlock::statemachine::sql {

// The SQLSTATEs the lexer and the parser report.
inline constexpr std::string_view kSyntaxError = "42601";
inline constexpr std::string_view kNotSupported = "0A000";

enum class TokenKind : uint8_t {
    kEnd,          // the end of the query (always the last token unless kError is)
    kIdent,        // an unquoted identifier or keyword: `text` folded to lower case
    kQuotedIdent,  // "...": `text` with its case and "" made one quote
    kString,       // '...': `text` is the value
    kInteger,      // decimal digits: `text` holds them without underscores
    kNumeric,      // a constant with a point or an exponent: `text` as written
    kParam,        // $n: `param` is n, saturated at UINT32_MAX
    kOp,           // an operator or punctuation: `text` is its canonical spelling ("<>" for "!=")
    kError,        // a lexical error, reported when the parser reaches this token (as PostgreSQL's
                   // scanner reports it when the grammar asks for the token)
};

struct Token {
    TokenKind kind = TokenKind::kEnd;
    std::string text;
    uint32_t param = 0;
    uint32_t begin = 0;  // [begin, end): the token's bytes in the query
    uint32_t end = 0;
    uint32_t pos = 0;  // 1-based character position of its first byte
};

struct Lexed {
    std::vector<Token> tokens;  // never empty: ends in kEnd, or in kError
    SyntaxError error;          // what the final kError token stands for
};

// Longest identifier PostgreSQL keeps (NAMEDATALEN - 1 bytes); longer ones are truncated.
inline constexpr size_t kIdentifierBytesMax = 63;

// The tokens of `query`, ending in kEnd, or in kError at the first lexical error or at the token
// that would exceed `tokens_max`. Preconditions: `query` is valid UTF-8 without NUL bytes and
// shorter than 4 GiB (parse() checks these first).
Lexed lex(std::string_view query, size_t tokens_max);

// The 1-based character position of byte `offset` of a valid UTF-8 `query`.
uint32_t char_pos(std::string_view query, size_t offset);

// Whether `query` is valid UTF-8 without NUL bytes; if not, the error PostgreSQL gives.
std::optional<SyntaxError> check_encoding(std::string_view query);

}  // namespace raftlock::statemachine::sql
