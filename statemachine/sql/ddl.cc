// CREATE TABLE and DROP TABLE of the SQL mode. Unlike PostgreSQL's, they take effect at once and
// are not part of the transaction (docs/sql-mode.md "Differences").

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/executor.h"

namespace raftlock::statemachine::sql {

namespace {

bool check_name(Executor& x, const std::string& name, uint32_t pos) {
    if (name.size() > kNameBytesMax) {
        return x.fail("42622",
                      fmt::format("identifier \"{}\" is longer than {} bytes", name, kNameBytesMax),
                      pos);
    }
    return true;
}

bool define_column(Executor& x, const ColumnDef& def, Engine::Column& column) {
    if (!check_name(x, def.name, def.pos)) {
        return false;
    }
    column.name = def.name;
    column.type = def.type;
    column.varchar_max = def.varchar_max;
    column.primary_key = def.primary_key;
    column.unique = def.unique || def.primary_key;
    column.not_null = def.not_null || def.primary_key;
    if (!def.default_value) {
        return true;
    }
    const Expr& e = **def.default_value;
    if (e.kind == Expr::Kind::kFunction && (e.name == "now" || e.name == "current_timestamp") &&
        e.args.empty()) {
        if (column.type != Type::kTimestamptz) {
            return x.fail("42804",
                          fmt::format("column \"{}\" is of type {} but default expression "
                                      "is of type timestamp with time zone",
                                      def.name, type_name(column.type)),
                          e.pos);
        }
        column.default_now = true;
        return true;
    }
    const bool constant =
        e.kind == Expr::Kind::kLiteral ||
        (e.kind == Expr::Kind::kNegate && e.args[0]->kind == Expr::Kind::kLiteral) ||
        (e.kind == Expr::Kind::kCast && e.args[0]->kind == Expr::Kind::kLiteral);
    if (!constant) {
        return x.fail("0A000", "a column default must be a constant or now() in the SQL mode",
                      e.pos);
    }
    std::optional<Value> v = x.eval(e, nullptr, {});
    std::optional<Value> typed = v ? x.to_column(*v, column, e.pos) : std::nullopt;
    if (!typed) {
        return false;
    }
    column.default_value = std::move(*typed);
    return true;
}

}  // namespace

bool run_create_table(Executor& x, const CreateTable& op) {
    RL_ASSERT(!x.read_only());
    auto& tables = x.engine()->tables_;
    x.mutable_result().tag = "CREATE TABLE";
    if (tables.contains(op.table)) {
        if (op.if_not_exists) {
            x.notice("NOTICE", "42P07",
                     fmt::format("relation \"{}\" already exists, skipping", op.table));
            return true;
        }
        return x.fail("42P07", fmt::format("relation \"{}\" already exists", op.table));
    }
    if (!check_name(x, op.table, 0)) {
        return false;
    }
    if (tables.size() >= kTablesMax) {
        return x.fail("54000", fmt::format("the SQL mode holds at most {} tables", kTablesMax));
    }
    if (op.columns.empty() || op.columns.size() > kColumnsPerTableMax) {
        return x.fail("54011", fmt::format("a table has 1 to {} columns in the SQL mode",
                                           kColumnsPerTableMax));
    }
    Engine::Table table;
    for (const ColumnDef& def : op.columns) {
        const bool duplicate =
            std::any_of(table.columns.begin(), table.columns.end(),
                        [&](const Engine::Column& c) { return c.name == def.name; });
        if (duplicate) {
            return x.fail("42701", fmt::format("column \"{}\" specified more than once", def.name),
                          def.pos);
        }
        if (def.primary_key && std::any_of(table.columns.begin(), table.columns.end(),
                                           [](const Engine::Column& c) { return c.primary_key; })) {
            return x.fail("42P16",
                          fmt::format("multiple primary keys for table \"{}\" are not "
                                      "allowed",
                                      op.table),
                          def.pos);
        }
        Engine::Column column;
        if (!define_column(x, def, column)) {
            return false;
        }
        if (column.unique) {
            table.unique[table.columns.size()];  // an empty index for the column
        }
        table.columns.push_back(std::move(column));
    }
    tables.emplace(op.table, std::move(table));
    return true;
}

bool run_drop_table(Executor& x, const DropTable& op) {
    RL_ASSERT(!x.read_only());
    Engine& engine = *x.engine();
    x.mutable_result().tag = "DROP TABLE";
    auto found = engine.tables_.find(op.table);
    if (found == engine.tables_.end()) {
        if (op.if_exists) {
            x.notice("NOTICE", "00000",
                     fmt::format("table \"{}\" does not exist, skipping", op.table));
            return true;
        }
        return x.fail("42P01", fmt::format("table \"{}\" does not exist", op.table));
    }
    // Writes still pending in a transaction would land in a later table of the same name.
    for (const auto& [session, state] : engine.sessions_) {
        if (state.tx.writes.touches(op.table)) {
            return x.fail("55006",
                          fmt::format("table \"{}\" has uncommitted writes in an open transaction"
                                      "{}",
                                      op.table, session == x.session() ? " (this one)" : ""));
        }
    }
    engine.tables_.erase(found);
    return true;
}

}  // namespace raftlock::statemachine::sql
