#pragma once

// The SQL mode's parser (docs/sql-mode.md "Grammar"): one query string, as a PostgreSQL simple
// Query message or a Parse message carries it, in; the statements of the subset out, or one error
// with PostgreSQL's SQLSTATE, wording and cursor position. Pure and deterministic: no clocks, no
// I/O, no locale; the same bytes always give the same statements or the same error.
//
// Lexical rules are PostgreSQL's (scan.l) for the subset: unquoted identifiers are folded to
// lower case (ASCII only) and, like quoted ones, truncated to 63 bytes (NAMEDATALEN - 1, at a
// character boundary); keywords are case-insensitive; '...' strings with '' escapes, and adjacent
// strings separated by whitespace that holds a newline are one string; comments are "--" to the end
// of the line and nested /* */; operators follow PostgreSQL's rules ("!=" is "<>", a
// multi-character operator does not end in + or -, so "=-1" is "=" then "-1"); integers may hold
// underscores between digits (PostgreSQL 16). The query must be valid UTF-8 without NUL bytes, as
// PostgreSQL requires of any query text.
//
// Everything valid outside the subset is refused with 0A000 naming what is missing; nothing is
// accepted to mean something other than what PostgreSQL would make of it. Deliberate choices:
// - Precedence is PostgreSQL's: AND < IS [NOT] NULL < comparisons (non-associative) < + - <
//   unary - < ::, so `a = b IS NULL` is `(a = b) IS NULL`. ISNULL and NOTNULL are IS [NOT] NULL.
// - A minus sign directly before an integer constant is folded into it, as PostgreSQL's grammar
//   does (`-2147483648` is an int4, `-9223372036854775808` an int8); the constant's type is int4
//   when its value fits, else int8; beyond int8 it is 22003. `-(5)` is a negation, not folded
//   (PostgreSQL folds through parentheses too: only the type of `-(2147483648)` differs).
// - CURRENT_TIMESTAMP is now() (with the column name "current_timestamp" in a select list).
// - A select or RETURNING list `*` is one item of kind kStar; `*` beside other items and `t.*`
//   are refused. An alias is kept as written; the engine resolves nothing here (ORDER BY an
//   output column's alias, for one, is the engine's to resolve or refuse).
// - Column flags are as written: PRIMARY KEY sets primary_key only (the engine takes it to imply
//   UNIQUE and NOT NULL). A DEFAULT is a constant, now(), or a cast or negation of one.
// - Tables may be written `public.t` (reduced to `t`); functions `pg_catalog.f` (reduced to `f`).
// - LIMIT ALL is no limit; ONLY before a table is accepted (there is no inheritance);
//   DROP TABLE ... CASCADE and RESTRICT are accepted (nothing can depend on a table).
// - RESET ALL is SetVar{"all", nullopt}; SET TIME ZONE x is SetVar{"timezone", x}; SET NAMES x is
//   client_encoding; SHOW TIME ZONE and SHOW TRANSACTION ISOLATION LEVEL show "timezone" and
//   "transaction_isolation". A numeric SET value keeps its text ("1.5"), an integer its value.
// - Checks PostgreSQL makes right after parsing, which need no schema, are made here with its
//   SQLSTATEs: duplicate columns (42701), INSERT row lengths (42601), repeated assignments
//   (42601), conflicting column constraints (42601), several primary keys (42P16), ORDER BY a
//   constant (0A000 for a select-list position, 42601 for any other constant).
//
// Errors (SyntaxError::sqlstate):
//   42601 syntax_error: "syntax error at or near \"X\"", "syntax error at end of input",
//         "unterminated quoted string at or near \"'abc\"", "unterminated quoted identifier ...",
//         "unterminated /* comment ...", "zero-length delimited identifier ...",
//         "trailing junk after numeric literal ...", "trailing junk after parameter ..."
//   0A000 feature_not_supported: "<what> is not supported in the SQL mode[; <what to do>]"
//   54000 program_limit_exceeded: a limit of ParseLimits
//   22003 numeric_value_out_of_range: "value \"X\" is out of range for type bigint"
//   22023 invalid_parameter_value: a varchar length outside [1, 10485760]
//   22021 character_not_in_repertoire: "invalid byte sequence for encoding \"UTF8\": 0x.."
//   42P02 undefined_parameter: "there is no parameter $0"
//   42701 duplicate_column, 42P16 invalid_table_definition: as above
//   54011 too_many_columns: "tables can have at most 1600 columns" (PostgreSQL's limit)

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "statemachine/sql/ast.h"

namespace raftlock::statemachine::sql {

struct ParseLimits {
    size_t query_bytes_max = 1u << 20;  // the whole query string
    size_t tokens_max = 100000;         // tokens of the whole query (comments are not tokens)
    // How deeply expressions nest: parentheses, function arguments, casts, negations and operator
    // chains each add a level (`1 + 2 + 3` is three deep). Bounds the parser's recursion and the
    // recursion of anything that walks the tree, so it must stay small (the fuzzer relies on it).
    // Precondition: at most 1000.
    uint32_t depth_max = 64;
    size_t list_items_max = 10000;  // items of any one list: select items, VALUES rows, ...
    uint32_t params_max = 65535;    // highest $n (the protocol counts parameters in 16 bits)
};

// Named after PostgreSQL's most common case; carries every error the parser reports.
struct SyntaxError {
    std::string sqlstate;  // five characters, see above
    std::string message;   // PostgreSQL's wording where it has one; valid UTF-8, no NUL
    uint32_t pos = 0;      // 1-based character offset into the query; 0: no position

    friend bool operator==(const SyntaxError&, const SyntaxError&) = default;
};

// Parses `query` into its statements, in order. Empty statements (";;", a query of only
// whitespace and comments) are skipped, so the vector may be empty (PostgreSQL answers
// EmptyQueryResponse). Statement positions are those of their first token. On any error, no
// statement is returned (PostgreSQL parses the whole string before running any of it).
//
// Guarantees on success: every select list, VALUES list and assignment list has at least one
// item and at most limits.list_items_max; expression trees are at most limits.depth_max deep;
// params_max <= limits.params_max and every $n is >= 1; CreateTable columns have distinct names.
// Cost: linear in the query's bytes, but for the duplicate-name checks (n log n in the names).
Result<std::vector<ParsedStatement>, SyntaxError> parse(std::string_view query,
                                                        const ParseLimits& limits);

}  // namespace raftlock::statemachine::sql
