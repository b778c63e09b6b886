// Expressions of the SQL mode: values, types, operators, casts and functions — the lock functions
// among them (PostgreSQL's pg_advisory_* and MySQL's GET_LOCK family), which take and release
// locks in the engine's lock table.

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/executor.h"

namespace raftlock::statemachine::sql {

namespace {

bool is_integer(Type t) {
    return t == Type::kInt4 || t == Type::kInt8;
}

// PostgreSQL's internal type names, which name the column of a bare cast (SELECT 1::bigint).
std::string_view internal_name(Type t) {
    switch (t) {
        case Type::kBool:
            return "bool";
        case Type::kInt4:
            return "int4";
        case Type::kInt8:
            return "int8";
        case Type::kText:
            return "text";
        case Type::kTimestamptz:
            return "timestamptz";
        case Type::kUnknown:
            return "unknown";
    }
    return "unknown";
}

// Characters of UTF-8 text (varchar(n) counts characters, not bytes).
size_t char_count(std::string_view s) {
    return static_cast<size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

std::optional<Value> Executor::coerce(const Value& v, Type type, uint32_t pos) {
    if (v.type == type || type == Type::kUnknown) {
        return v;
    }
    if (v.is_null) {
        return Value::null(type);
    }
    if (type == Type::kText) {
        return Value::of_text(*to_text(v));
    }
    if (v.type == Type::kUnknown) {
        bool out_of_range = false;
        std::optional<Value> parsed = parse_text(type, v.text, &out_of_range);
        if (!parsed && type == Type::kTimestamptz) {
            // PostgreSQL's datetime input errors: 22008 out of range, 22007 malformed.
            fail(out_of_range ? "22008" : "22007",
                 out_of_range ? fmt::format("date/time field value out of range: \"{}\"", v.text)
                              : fmt::format("invalid input syntax for type {}: \"{}\"",
                                            type_name(type), v.text),
                 pos);
            return std::nullopt;
        }
        if (!parsed) {
            if (out_of_range) {
                fail("22003",
                     fmt::format("value \"{}\" is out of range for type {}", v.text,
                                 type_name(type)),
                     pos);
            } else {
                fail("22P02",
                     fmt::format("invalid input syntax for type {}: \"{}\"", type_name(type),
                                 v.text),
                     pos);
            }
            return std::nullopt;
        }
        return parsed;
    }
    if (v.type == Type::kInt4 && type == Type::kInt8) {
        return Value::of_int8(v.integer);
    }
    if (v.type == Type::kInt8 && type == Type::kInt4) {
        if (v.integer < std::numeric_limits<int32_t>::min() ||
            v.integer > std::numeric_limits<int32_t>::max()) {
            fail("22003", "integer out of range", pos);
            return std::nullopt;
        }
        return Value::of_int4(static_cast<int32_t>(v.integer));
    }
    fail("42804",
         fmt::format("cannot use a value of type {} as {}", type_name(v.type), type_name(type)),
         pos);
    return std::nullopt;
}

std::optional<Value> Executor::to_column(const Value& v,
                                         const Engine::Column& column,
                                         uint32_t pos) {
    if (v.is_null) {
        if (column.not_null) {
            fail("23502",
                 fmt::format("null value in column \"{}\" violates not-null constraint",
                             column.name),
                 pos);
            return std::nullopt;
        }
        return Value::null(column.type);
    }
    if (v.type != column.type && v.type != Type::kUnknown && column.type != Type::kText &&
        !(is_integer(v.type) && is_integer(column.type))) {
        fail("42804",
             fmt::format("column \"{}\" is of type {} but expression is of type {}", column.name,
                         type_name(column.type), type_name(v.type)),
             pos);
        return std::nullopt;
    }
    std::optional<Value> out = coerce(v, column.type, pos);
    if (out && column.varchar_max > 0 && char_count(out->text) > column.varchar_max) {
        fail("22001",
             fmt::format("value too long for type character varying({})", column.varchar_max), pos);
        return std::nullopt;
    }
    return out;
}

std::optional<bool> Executor::eval_condition(const Expr* where,
                                             const Engine::Table& table,
                                             RowRef row) {
    if (where == nullptr) {
        return true;
    }
    std::optional<Value> v = eval(*where, &table, row);
    if (!v) {
        return std::nullopt;
    }
    if (v->is_null) {
        return false;
    }
    if (v->type != Type::kBool) {
        fail("42804",
             fmt::format("argument of WHERE must be type boolean, not type {}", type_name(v->type)),
             where->pos);
        return std::nullopt;
    }
    return v->boolean;
}

namespace {

std::optional<size_t> column_index(const Engine::Table& table, std::string_view name) {
    for (size_t i = 0; i < table.columns.size(); ++i) {
        if (table.columns[i].name == name) {
            return i;
        }
    }
    return std::nullopt;
}

}  // namespace

Type Executor::infer_type(const Expr& e, const Engine::Table* table) const {
    switch (e.kind) {
        case Expr::Kind::kLiteral:
            return e.literal.type == Type::kUnknown ? Type::kText : e.literal.type;
        case Expr::Kind::kParam: {
            const Value& p = request_.params.at(e.param - 1);
            return p.type == Type::kUnknown ? Type::kText : p.type;
        }
        case Expr::Kind::kColumn:
            if (table != nullptr) {
                if (auto i = column_index(*table, e.name)) {
                    return table->columns[*i].type;
                }
            }
            return Type::kText;
        case Expr::Kind::kFunction: {
            const std::string& n = e.name;
            if (n == "now" || n == "current_timestamp" || n == "transaction_timestamp" ||
                n == "statement_timestamp" || n == "clock_timestamp") {
                return Type::kTimestamptz;
            }
            if (n == "count" || n == "is_used_lock") {
                return Type::kInt8;
            }
            if (n == "pg_backend_pid" || n == "get_lock" || n == "release_lock" ||
                n == "is_free_lock" || n == "release_all_locks") {
                return Type::kInt4;
            }
            if (n.starts_with("pg_try_") || n == "pg_advisory_unlock" ||
                n == "pg_advisory_unlock_shared") {
                return Type::kBool;
            }
            if (n == "coalesce" && !e.args.empty()) {
                return infer_type(*e.args.front(), table);
            }
            return Type::kText;  // version(), void lock functions (empty text)
        }
        case Expr::Kind::kBinary:
            if (e.op == BinaryOp::kAdd || e.op == BinaryOp::kSub) {
                const Type l = infer_type(*e.args[0], table);
                const Type r = infer_type(*e.args[1], table);
                return (l == Type::kInt8 || r == Type::kInt8) ? Type::kInt8 : Type::kInt4;
            }
            return Type::kBool;
        case Expr::Kind::kNegate:
            return infer_type(*e.args[0], table);
        case Expr::Kind::kIsNull:
            return Type::kBool;
        case Expr::Kind::kCast:
            return e.cast_type;
        case Expr::Kind::kStar:
            return Type::kText;
    }
    return Type::kText;
}

std::string Executor::column_name(const SelectItem& item) const {
    if (!item.alias.empty()) {
        return item.alias;
    }
    const Expr& e = *item.expr;
    switch (e.kind) {
        case Expr::Kind::kColumn:
        case Expr::Kind::kFunction:
            return e.name;
        case Expr::Kind::kCast:
            if (e.args[0]->kind == Expr::Kind::kColumn ||
                e.args[0]->kind == Expr::Kind::kFunction) {
                return e.args[0]->name;
            }
            return std::string(internal_name(e.cast_type));
        case Expr::Kind::kLiteral:
            if (e.literal.type == Type::kBool) {
                return "bool";
            }
            return "?column?";
        default:
            return "?column?";
    }
}

namespace {

// The common type of a comparison's or an arithmetic's operands: an untyped literal or parameter
// takes the other side's type (both untyped: text), as PostgreSQL resolves unknown.
std::optional<Type> common_type(const Value& a, const Value& b) {
    if (a.type == Type::kUnknown && b.type == Type::kUnknown) {
        return Type::kText;
    }
    if (a.type == Type::kUnknown) {
        return b.type;
    }
    if (b.type == Type::kUnknown || a.type == b.type) {
        return a.type;
    }
    if (is_integer(a.type) && is_integer(b.type)) {
        return Type::kInt8;
    }
    return std::nullopt;
}

}  // namespace

std::optional<Value> Executor::eval(const Expr& e, const Engine::Table* table, RowRef row) {
    switch (e.kind) {
        case Expr::Kind::kLiteral:
            return e.literal;
        case Expr::Kind::kParam:
            if (e.param == 0 || e.param > request_.params.size()) {
                fail("42P02", fmt::format("there is no parameter ${}", e.param), e.pos);
                return std::nullopt;
            }
            return request_.params[e.param - 1];
        case Expr::Kind::kColumn: {
            const std::optional<size_t> i =
                table != nullptr ? column_index(*table, e.name) : std::nullopt;
            if (!i) {
                fail("42703", fmt::format("column \"{}\" does not exist", e.name), e.pos);
                return std::nullopt;
            }
            if (row.row == nullptr) {
                fail("42703", fmt::format("column \"{}\" cannot be used here", e.name), e.pos);
                return std::nullopt;
            }
            return (*row.row)[*i];
        }
        case Expr::Kind::kStar:
            fail("42601", "* is only allowed in a select list or count(*)", e.pos);
            return std::nullopt;
        case Expr::Kind::kFunction:
            return call_function(e, table, row);
        case Expr::Kind::kBinary:
            return eval_binary(e, table, row);
        case Expr::Kind::kNegate: {
            std::optional<Value> v = eval(*e.args[0], table, row);
            if (!v || v->is_null) {
                return v;
            }
            std::optional<Value> n = v->type == Type::kUnknown ? coerce(*v, Type::kInt4, e.pos) : v;
            if (!n) {
                return std::nullopt;
            }
            if (!is_integer(n->type) || n->integer == std::numeric_limits<int64_t>::min() ||
                (n->type == Type::kInt4 && n->integer == std::numeric_limits<int32_t>::min())) {
                fail(is_integer(n->type) ? "22003" : "42883",
                     is_integer(n->type)
                         ? "integer out of range"
                         : fmt::format("operator does not exist: - {}", type_name(n->type)),
                     e.pos);
                return std::nullopt;
            }
            n->integer = -n->integer;
            return n;
        }
        case Expr::Kind::kIsNull: {
            std::optional<Value> v = eval(*e.args[0], table, row);
            if (!v) {
                return std::nullopt;
            }
            return Value::of_bool(v->is_null != e.negated);
        }
        case Expr::Kind::kCast: {
            std::optional<Value> v = eval(*e.args[0], table, row);
            if (!v) {
                return std::nullopt;
            }
            if (v->type == Type::kText && e.cast_type != Type::kText && !v->is_null) {
                v = Value::of_unknown(v->text);  // an explicit cast parses text
            }
            return coerce(*v, e.cast_type, e.pos);
        }
    }
    RL_PANIC("unknown expression kind");
}

std::optional<Value> Executor::eval_binary(const Expr& e, const Engine::Table* table, RowRef row) {
    std::optional<Value> l = eval(*e.args[0], table, row);
    if (!l) {
        return std::nullopt;
    }
    std::optional<Value> r = eval(*e.args[1], table, row);
    if (!r) {
        return std::nullopt;
    }
    if (e.op == BinaryOp::kAnd) {
        for (const Value* v : {&*l, &*r}) {
            if (!v->is_null && v->type != Type::kBool) {
                fail("42804",
                     fmt::format("argument of AND must be type boolean, not type {}",
                                 type_name(v->type)),
                     e.pos);
                return std::nullopt;
            }
        }
        // Three-valued logic: false wins over NULL.
        if ((!l->is_null && !l->boolean) || (!r->is_null && !r->boolean)) {
            return Value::of_bool(false);
        }
        return l->is_null || r->is_null ? Value::null(Type::kBool) : Value::of_bool(true);
    }
    const std::optional<Type> type = common_type(*l, *r);
    if (!type) {
        fail("42883",
             fmt::format("operator does not exist: {} {} {}", type_name(l->type), to_string(e.op),
                         type_name(r->type)),
             e.pos);
        return std::nullopt;
    }
    const bool arithmetic = e.op == BinaryOp::kAdd || e.op == BinaryOp::kSub;
    if (arithmetic) {
        return eval_arithmetic(e, *l, *r, *type == Type::kText ? Type::kInt4 : *type);
    }
    if (l->is_null || r->is_null) {
        return Value::null(Type::kBool);
    }
    std::optional<Value> a = coerce(*l, *type, e.pos);
    std::optional<Value> b = a ? coerce(*r, *type, e.pos) : std::nullopt;
    if (!b) {
        return std::nullopt;
    }
    const std::optional<std::strong_ordering> order = compare(*a, *b);
    RL_ASSERT(order.has_value());  // same type after coercion
    switch (e.op) {
        case BinaryOp::kEq:
            return Value::of_bool(*order == 0);
        case BinaryOp::kNe:
            return Value::of_bool(*order != 0);
        case BinaryOp::kLt:
            return Value::of_bool(*order < 0);
        case BinaryOp::kLe:
            return Value::of_bool(*order <= 0);
        case BinaryOp::kGt:
            return Value::of_bool(*order > 0);
        case BinaryOp::kGe:
            return Value::of_bool(*order >= 0);
        default:
            RL_PANIC("not a comparison");
    }
}

std::optional<Value> Executor::eval_arithmetic(const Expr& e,
                                               const Value& l,
                                               const Value& r,
                                               Type type) {
    if (!is_integer(type)) {
        fail("42883",
             fmt::format("operator does not exist: {} {} {}", type_name(l.type), to_string(e.op),
                         type_name(r.type)),
             e.pos);
        return std::nullopt;
    }
    if (l.is_null || r.is_null) {
        return Value::null(type);
    }
    std::optional<Value> a = coerce(l, type, e.pos);
    std::optional<Value> b = a ? coerce(r, type, e.pos) : std::nullopt;
    if (!b) {
        return std::nullopt;
    }
    int64_t out = 0;
    const bool overflow = e.op == BinaryOp::kAdd
                              ? __builtin_add_overflow(a->integer, b->integer, &out)
                              : __builtin_sub_overflow(a->integer, b->integer, &out);
    if (overflow || (type == Type::kInt4 && (out < std::numeric_limits<int32_t>::min() ||
                                             out > std::numeric_limits<int32_t>::max()))) {
        fail("22003", type == Type::kInt4 ? "integer out of range" : "bigint out of range", e.pos);
        return std::nullopt;
    }
    return type == Type::kInt4 ? Value::of_int4(static_cast<int32_t>(out)) : Value::of_int8(out);
}

}  // namespace raftlock::statemachine::sql
