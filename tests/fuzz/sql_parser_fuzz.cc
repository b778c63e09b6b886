// libFuzzer: bytes from a PostgreSQL client's Query or Parse message -> the SQL mode's parser, and
// the same bytes into the value input functions.
//
// Invariants: parse() never crashes, hangs or recurses without bound, whatever the bytes; it is
// deterministic (a second parse gives the same statements or the same error); every tree it
// returns is well formed (arity of each node, depth within the limit, non-empty lists, INSERT rows
// of one length, distinct column names) and prints with to_string; an error has a SQLSTATE of
// the closed set and a position inside the query; tighter limits can only turn a success into a
// 54000 error, never into other statements. A value that parse_text accepts prints with to_text
// and parses back to itself.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/assert.h"
#include "statemachine/sql/parser.h"
#include "statemachine/sql/value.h"

namespace {

using namespace raftlock::statemachine::sql;
using raftlock::Result;

using Parsed = Result<std::vector<ParsedStatement>, SyntaxError>;

// Checks the shape of `e` and returns its height.
uint32_t check_expr(const Expr& e) {
    size_t arity = 0;
    switch (e.kind) {
        case Expr::Kind::kLiteral:
        case Expr::Kind::kColumn:
        case Expr::Kind::kStar:
            break;
        case Expr::Kind::kParam:
            RL_ASSERT(e.param >= 1);
            break;
        case Expr::Kind::kFunction:
            RL_ASSERT(!e.name.empty());
            arity = e.args.size();
            break;
        case Expr::Kind::kBinary:
            arity = 2;
            break;
        case Expr::Kind::kNegate:
        case Expr::Kind::kIsNull:
        case Expr::Kind::kCast:
            arity = 1;
            break;
    }
    RL_ASSERT(e.args.size() == arity);
    RL_ASSERT(e.pos >= 1);
    uint32_t height = 0;
    for (const ExprPtr& arg : e.args) {
        RL_ASSERT(arg != nullptr);
        height = std::max(height, check_expr(*arg));
    }
    return height + 1;
}

void check_expr(const ExprPtr& e, const ParseLimits& limits) {
    RL_ASSERT(e != nullptr);
    RL_ASSERT(check_expr(*e) <= limits.depth_max);
}

void check_items(const std::vector<SelectItem>& items, const ParseLimits& limits) {
    RL_ASSERT(items.size() <= limits.list_items_max);
    for (const SelectItem& item : items) {
        check_expr(item.expr, limits);
    }
}

void check_statement(const Statement& statement, const ParseLimits& limits) {
    if (const auto* s = std::get_if<Select>(&statement)) {
        RL_ASSERT(!s->items.empty());
        check_items(s->items, limits);
        if (s->where) {
            check_expr(s->where, limits);
        }
        if (s->limit) {
            check_expr(*s->limit, limits);
        }
    } else if (const auto* ins = std::get_if<Insert>(&statement)) {
        RL_ASSERT(!ins->rows.empty());
        RL_ASSERT(ins->rows.size() <= limits.list_items_max);
        for (const auto& row : ins->rows) {
            RL_ASSERT(row.size() == ins->rows.front().size());
            if (!ins->columns.empty()) {
                RL_ASSERT(row.size() == ins->columns.size());
            }
        }
        RL_ASSERT(std::set<std::string>(ins->columns.begin(), ins->columns.end()).size() ==
                  ins->columns.size());
        check_items(ins->returning, limits);
    } else if (const auto* up = std::get_if<Update>(&statement)) {
        RL_ASSERT(!up->assignments.empty());
        for (const Assignment& a : up->assignments) {
            check_expr(a.value, limits);
        }
        check_items(up->returning, limits);
    } else if (const auto* create = std::get_if<CreateTable>(&statement)) {
        RL_ASSERT(!create->columns.empty());
        std::set<std::string> names;
        for (const ColumnDef& c : create->columns) {
            RL_ASSERT(names.insert(c.name).second);
            if (c.varchar_max > 0) {
                RL_ASSERT(c.type == Type::kText);
            }
        }
    }
}

// The statements' text forms, or the error as text.
std::string describe(const Parsed& parsed, std::string_view query, const ParseLimits& limits) {
    if (!parsed.ok()) {
        const SyntaxError& e = parsed.error();
        static const std::set<std::string> kStates = {
            "42601", "0A000", "54000", "54011", "22003",
            "22023", "22021", "42P02", "42701", "42P16",
        };
        RL_ASSERT_MSG(kStates.count(e.sqlstate) == 1, e.sqlstate.c_str());
        RL_ASSERT(!e.message.empty());
        RL_ASSERT(e.message.find('\0') == std::string::npos);
        RL_ASSERT(e.pos <= query.size() + 1);
        return "error " + e.sqlstate + " " + std::to_string(e.pos) + " " + e.message;
    }
    std::string out;
    for (const ParsedStatement& s : *parsed) {
        RL_ASSERT(s.pos >= 1);
        RL_ASSERT(s.pos <= query.size());
        RL_ASSERT(s.params_max <= limits.params_max);
        check_statement(s.statement, limits);
        out += std::to_string(s.pos) + " " + std::to_string(s.params_max) + " " +
               to_string(s.statement) + "\n";
    }
    return out;
}

void check_values(std::string_view text) {
    for (Type type : {Type::kBool, Type::kInt4, Type::kInt8, Type::kTimestamptz, Type::kText}) {
        bool out_of_range = false;
        const std::optional<Value> v = parse_text(type, text, &out_of_range);
        if (!v) {
            continue;
        }
        RL_ASSERT(!out_of_range);
        RL_ASSERT(v->type == type);
        const std::optional<std::string> printed = to_text(*v);
        RL_ASSERT(printed.has_value());
        const std::optional<Value> again = parse_text(type, *printed);
        RL_ASSERT_MSG(again.has_value() && *again == *v, printed->c_str());
        RL_ASSERT(compare(*v, *again) == std::strong_ordering::equal);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view query(reinterpret_cast<const char*>(data), size);
    const ParseLimits defaults;
    const std::string first = describe(parse(query, defaults), query, defaults);
    RL_ASSERT_MSG(describe(parse(query, defaults), query, defaults) == first,
                  "parsing the same query twice gave different answers");

    ParseLimits small;
    small.query_bytes_max = 4096;
    small.tokens_max = 64;
    small.depth_max = 6;
    small.list_items_max = 3;
    small.params_max = 4;
    const Parsed tight = parse(query, small);
    const std::string tight_text = describe(tight, query, small);
    if (tight.ok()) {
        RL_ASSERT_MSG(tight_text == first, "tighter limits changed the statements");
    } else if (!first.starts_with("error ")) {
        RL_ASSERT_MSG(tight.error().sqlstate == "54000", tight_text.c_str());
    }
    if (size <= 256) {
        check_values(query);
    }
    return 0;
}
