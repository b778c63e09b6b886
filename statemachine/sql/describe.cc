// Engine::describe: what a statement will return and what its parameters are, from the schema
// alone — the extended protocol's Describe, answered without running the statement.

#include <fmt/format.h>

#include "statemachine/sql/executor.h"
#include "statemachine/sql/parser.h"

namespace raftlock::statemachine::sql {

namespace {

std::optional<Type> column_type(const Engine::Table* table, const std::string& name) {
    if (table == nullptr) {
        return std::nullopt;
    }
    for (const Engine::Column& c : table->columns) {
        if (c.name == name) {
            return c.type;
        }
    }
    return std::nullopt;
}

void note_param(const Expr& e, Type type, std::vector<Type>& params) {
    if (e.kind == Expr::Kind::kParam && e.param >= 1 && e.param <= params.size() &&
        params[e.param - 1] == Type::kUnknown) {
        params[e.param - 1] = type;
    }
}

// Parameters compared with a column take its type; an advisory lock's key is a bigint (one
// argument) or two integers.
void infer_params(const Expr& e, const Engine::Table* table, std::vector<Type>& params) {
    if (e.kind == Expr::Kind::kBinary && e.args.size() == 2) {
        for (int side = 0; side < 2; ++side) {
            const Expr& other = *e.args[1 - side];
            if (other.kind == Expr::Kind::kColumn) {
                if (std::optional<Type> t = column_type(table, other.name)) {
                    note_param(*e.args[side], *t, params);
                }
            }
        }
    }
    if (e.kind == Expr::Kind::kFunction && e.name.starts_with("pg_") && is_lock_function(e.name)) {
        for (const ExprPtr& arg : e.args) {
            note_param(*arg, e.args.size() == 1 ? Type::kInt8 : Type::kInt4, params);
        }
    }
    if (e.kind == Expr::Kind::kFunction && e.name == "get_lock" && e.args.size() == 2) {
        note_param(*e.args[0], Type::kText, params);
        note_param(*e.args[1], Type::kInt4, params);
    }
    for (const ExprPtr& arg : e.args) {
        if (arg) {
            infer_params(*arg, table, params);
        }
    }
}

const Engine::Table* table_named(const std::map<std::string, Engine::Table>& tables,
                                 const std::string& name) {
    auto found = tables.find(name);
    return found == tables.end() ? nullptr : &found->second;
}

}  // namespace

Result<Description, SqlError> Engine::describe(std::string_view statement) const {
    auto parsed = parse(statement, ParseLimits{});
    if (!parsed.ok()) {
        const SyntaxError& e = parsed.error();
        return SqlError{e.sqlstate, e.message, {}, {}, e.pos};
    }
    Description d;
    if (parsed->empty()) {
        return d;
    }
    if (parsed->size() != 1) {
        return SqlError{
            "42601", "cannot insert multiple commands into a prepared statement", {}, {}, 0};
    }
    const ParsedStatement& p = parsed->front();
    d.params.assign(p.params_max, Type::kUnknown);
    StatementRequest request{std::string(statement),
                             std::vector<Value>(p.params_max, Value::of_unknown("")), 0};
    static const Session kNoState;
    Executor x(nullptr, *this, kNoSession, 0, kNoState, request, 0, {});
    const auto missing = [](const std::string& name) {
        return SqlError{"42P01", fmt::format("relation \"{}\" does not exist", name), {}, {}, 0};
    };
    const auto rows_of = [&](const std::vector<SelectItem>& items, const Table* table) {
        d.returns_rows = !items.empty();
        d.columns = describe_columns(x, items, table);
        for (const SelectItem& item : items) {
            infer_params(*item.expr, table, d.params);
        }
    };
    if (const auto* op = std::get_if<Select>(&p.statement)) {
        const Table* table = table_named(tables_, op->table);
        if (!op->table.empty() && table == nullptr) {
            return missing(op->table);
        }
        rows_of(op->items, table);
        d.returns_rows = true;
        if (op->where) {
            infer_params(*op->where, table, d.params);
        }
    } else if (const auto* op = std::get_if<Insert>(&p.statement)) {
        const Table* table = table_named(tables_, op->table);
        if (table == nullptr) {
            return missing(op->table);
        }
        for (const auto& row : op->rows) {
            for (size_t i = 0; i < row.size(); ++i) {
                const std::string& column =
                    op->columns.empty()
                        ? (i < table->columns.size() ? table->columns[i].name : std::string())
                        : op->columns[std::min(i, op->columns.size() - 1)];
                if (std::optional<Type> t = column_type(table, column)) {
                    note_param(*row[i], *t, d.params);
                }
            }
        }
        rows_of(op->returning, table);
    } else if (const auto* op = std::get_if<Update>(&p.statement)) {
        const Table* table = table_named(tables_, op->table);
        if (table == nullptr) {
            return missing(op->table);
        }
        for (const Assignment& a : op->assignments) {
            if (std::optional<Type> t = column_type(table, a.column)) {
                note_param(*a.value, *t, d.params);
            }
            infer_params(*a.value, table, d.params);
        }
        if (op->where) {
            infer_params(*op->where, table, d.params);
        }
        rows_of(op->returning, table);
    } else if (const auto* op = std::get_if<Delete>(&p.statement)) {
        const Table* table = table_named(tables_, op->table);
        if (table == nullptr) {
            return missing(op->table);
        }
        if (op->where) {
            infer_params(*op->where, table, d.params);
        }
        rows_of(op->returning, table);
    }
    return d;
}

}  // namespace raftlock::statemachine::sql
