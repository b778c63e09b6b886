// SELECT, INSERT, UPDATE and DELETE of the SQL mode (engine.h's contract). Rows are locked as they
// are found; a lock that must wait stops the statement, which runs again from the start once the
// lock is granted — so a statement never acts on a row another transaction is still changing.

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/executor.h"

namespace raftlock::statemachine::sql {

namespace {

bool is_count(const Expr& e) {
    return e.kind == Expr::Kind::kFunction && e.name == "count";
}

}  // namespace

std::vector<ResultColumn> describe_columns(const Executor& x,
                                           const std::vector<SelectItem>& items,
                                           const Engine::Table* table) {
    std::vector<ResultColumn> columns;
    for (const SelectItem& item : items) {
        if (item.expr->kind == Expr::Kind::kStar && table != nullptr) {
            for (const Engine::Column& c : table->columns) {
                columns.push_back({c.name, c.type});
            }
            continue;
        }
        columns.push_back({x.column_name(item), x.infer_type(*item.expr, table)});
    }
    return columns;
}

namespace {

// One output row of a select list; false when evaluation stopped.
bool project(Executor& x,
             const std::vector<SelectItem>& items,
             const Engine::Table* table,
             RowRef row,
             std::vector<Value>& out) {
    for (const SelectItem& item : items) {
        if (item.expr->kind == Expr::Kind::kStar) {
            if (table == nullptr) {
                return x.fail("42601", "SELECT * with no tables specified is not valid",
                              item.expr->pos);
            }
            out.insert(out.end(), row.row->begin(), row.row->end());
            continue;
        }
        std::optional<Value> v = x.eval(*item.expr, table, row);
        if (!v) {
            return false;
        }
        out.push_back(std::move(*v));
    }
    return true;
}

// A value's declared column type wins over an untyped literal's (SELECT 'a' is text).
void settle_types(std::vector<ResultColumn>& columns, std::vector<Value>& row) {
    for (size_t i = 0; i < row.size() && i < columns.size(); ++i) {
        if (row[i].type == Type::kUnknown) {
            row[i].type = columns[i].type;
        }
    }
}

bool add_row(Executor& x, std::vector<Value> row) {
    StatementResult& r = x.mutable_result();
    if (r.rows.size() >= kResultRowsMax) {
        return x.fail("54000", fmt::format("a result may have at most {} rows in the SQL mode",
                                           kResultRowsMax));
    }
    settle_types(r.columns, row);
    r.rows.push_back(std::move(row));
    return true;
}

std::optional<int64_t> eval_limit(Executor& x, const std::optional<ExprPtr>& limit) {
    if (!limit) {
        return INT64_MAX;
    }
    std::optional<Value> v = x.eval(**limit, nullptr, {});
    std::optional<Value> n = v ? x.coerce(*v, Type::kInt8, (*limit)->pos) : std::nullopt;
    if (!n) {
        return std::nullopt;
    }
    if (n->is_null) {
        return INT64_MAX;  // LIMIT NULL is no limit
    }
    if (n->integer < 0) {
        x.fail("2201W", "LIMIT must not be negative", (*limit)->pos);
        return std::nullopt;
    }
    return n->integer;
}

std::optional<size_t> find_column(Executor& x,
                                  const Engine::Table& table,
                                  const std::string& name,
                                  const std::string& relation,
                                  uint32_t pos) {
    for (size_t i = 0; i < table.columns.size(); ++i) {
        if (table.columns[i].name == name) {
            return i;
        }
    }
    x.fail("42703", fmt::format("column \"{}\" of relation \"{}\" does not exist", name, relation),
           pos);
    return std::nullopt;
}

// SQLSTATE 23505 in PostgreSQL's words; constraint names follow its defaults.
bool unique_violation(Executor& x,
                      const std::string& relation,
                      const Engine::Table& table,
                      size_t column,
                      const Engine::Row& row) {
    const Engine::Column& c = table.columns[column];
    const std::string constraint =
        c.primary_key ? relation + "_pkey" : relation + "_" + c.name + "_key";
    return x.fail("23505",
                  fmt::format("duplicate key value violates unique constraint \"{}\"", constraint),
                  0, fmt::format("Key ({})=({}) already exists.", c.name, *to_text(row[column])));
}

bool set_returning(Executor& x, const std::vector<SelectItem>& returning, const Engine::Table& t) {
    if (!returning.empty()) {
        x.mutable_result().returns_rows = true;
        x.mutable_result().columns = describe_columns(x, returning, &t);
    }
    return true;
}

bool emit_returning(Executor& x,
                    const std::vector<SelectItem>& returning,
                    const Engine::Table& table,
                    RowRef row) {
    if (returning.empty()) {
        return true;
    }
    std::vector<Value> out;
    return project(x, returning, &table, row, out) && add_row(x, std::move(out));
}

// `v` as a key of unique column `column`'s index, when `column = v` is true exactly for the row
// holding that key: v is of the column's type, an integer of the other width, or an untyped
// literal the column's type reads. Nullopt otherwise (the scan then decides, and words errors).
std::optional<Value> index_key(const Value& v, const Engine::Column& column) {
    if (v.is_null) {
        return std::nullopt;
    }
    if (v.type == column.type) {
        return v;
    }
    if (v.type == Type::kUnknown) {
        return column.type == Type::kText ? Value::of_text(v.text)
                                          : parse_text(column.type, v.text);
    }
    const bool integers = (v.type == Type::kInt4 || v.type == Type::kInt8) &&
                          (column.type == Type::kInt4 || column.type == Type::kInt8);
    if (!integers) {
        return std::nullopt;
    }
    if (column.type == Type::kInt4) {
        if (v.integer < INT32_MIN || v.integer > INT32_MAX) {
            return std::nullopt;
        }
        return Value::of_int4(static_cast<int32_t>(v.integer));
    }
    return Value::of_int8(v.integer);
}

// A term `c = literal` or `c = $n` (either way round) among the AND terms of `where`, with c a
// unique column: the column and the index key of the value.
std::optional<std::pair<size_t, Value>> pinned_unique(const Engine::Table& table,
                                                      const Expr& where,
                                                      const std::vector<Value>& params) {
    if (where.kind != Expr::Kind::kBinary) {
        return std::nullopt;
    }
    if (where.op == BinaryOp::kAnd) {
        auto left = pinned_unique(table, *where.args[0], params);
        return left ? left : pinned_unique(table, *where.args[1], params);
    }
    if (where.op != BinaryOp::kEq) {
        return std::nullopt;
    }
    for (const auto& [col, val] : {std::pair{0, 1}, std::pair{1, 0}}) {
        const Expr& c = *where.args[col];
        const Expr& v = *where.args[val];
        if (c.kind != Expr::Kind::kColumn) {
            continue;
        }
        const Value* value = nullptr;
        if (v.kind == Expr::Kind::kLiteral) {
            value = &v.literal;
        } else if (v.kind == Expr::Kind::kParam && v.param >= 1 && v.param <= params.size()) {
            value = &params[v.param - 1];
        }
        for (size_t i = 0; value != nullptr && i < table.columns.size(); ++i) {
            if (table.columns[i].name == c.name && table.unique.contains(i)) {
                if (std::optional<Value> key = index_key(*value, table.columns[i])) {
                    return std::pair{i, std::move(*key)};
                }
            }
        }
    }
    return std::nullopt;
}

// Rows of `table` matching `where`, in row order; false when evaluation stopped. Each row looked
// at is touched (the statement's row budget). A WHERE that pins a unique column to one value
// looks at the one row holding it, through the index (PostgreSQL, too, evaluates WHERE on the
// rows its plan reads, not on every row); a WHERE calling a lock function runs on every row, as
// the function's effects are part of the result.
bool matching_rows(Executor& x,
                   const std::string& name,
                   const Engine::Table& table,
                   const Expr* where,
                   std::vector<RowRef>& out) {
    bool stopped = false;
    const auto consider = [&](RowRef row) {
        std::optional<bool> match =
            x.touch_row() ? x.eval_condition(where, table, row) : std::nullopt;
        if (!match) {
            stopped = true;
            return false;
        }
        if (*match) {
            out.push_back(row);
        }
        return true;
    };
    if (where != nullptr && !calls_lock_function(*where)) {
        if (auto pinned = pinned_unique(table, *where, x.params())) {
            const std::optional<Engine::RowId> holder =
                x.visible_holder(name, table, pinned->first, pinned->second);
            if (holder) {
                const std::optional<RowRef> row = x.visible_row(name, table, *holder);
                RL_ASSERT_MSG(row.has_value(), "a unique index names a row that is not there");
                consider(*row);
            }
            return !stopped;
        }
    }
    x.for_each_visible_row(name, table, consider);
    return !stopped;
}

// An ORDER BY term that names an output column (SELECT v AS w ... ORDER BY w) sorts by that
// item's expression, as in PostgreSQL, where output names win over input columns.
const Expr& sort_key(const OrderTerm& term, const std::vector<SelectItem>& items) {
    if (term.expr->kind == Expr::Kind::kColumn && term.expr->qualifier.empty()) {
        for (const SelectItem& item : items) {
            if (!item.alias.empty() && item.alias == term.expr->name) {
                return *item.expr;
            }
        }
    }
    return *term.expr;
}

bool sort_rows(Executor& x,
               const Engine::Table& table,
               const std::vector<OrderTerm>& order_by,
               const std::vector<SelectItem>& items,
               std::vector<RowRef>& rows) {
    if (order_by.empty()) {
        return true;
    }
    std::vector<std::pair<std::vector<Value>, RowRef>> keyed;
    keyed.reserve(rows.size());
    for (const RowRef& row : rows) {
        std::vector<Value> keys;
        for (const OrderTerm& term : order_by) {
            std::optional<Value> v = x.eval(sort_key(term, items), &table, row);
            if (!v) {
                return false;
            }
            keys.push_back(std::move(*v));
        }
        keyed.emplace_back(std::move(keys), row);
    }
    // PostgreSQL's default: NULLs sort as if larger than every value (last ascending, first
    // descending). Values of one column share a type, so compare() always answers.
    const auto less = [&](const auto& a, const auto& b) {
        for (size_t i = 0; i < order_by.size(); ++i) {
            const Value& l = a.first[i];
            const Value& r = b.first[i];
            std::strong_ordering order = std::strong_ordering::equal;
            if (l.is_null || r.is_null) {
                order = l.is_null == r.is_null ? std::strong_ordering::equal
                        : l.is_null            ? std::strong_ordering::greater
                                               : std::strong_ordering::less;
            } else {
                order = compare(l, r).value_or(std::strong_ordering::equal);
            }
            if (order != 0) {
                return order_by[i].descending ? order > 0 : order < 0;
            }
        }
        return false;
    };
    std::stable_sort(keyed.begin(), keyed.end(), less);
    for (size_t i = 0; i < rows.size(); ++i) {
        rows[i] = keyed[i].second;
    }
    return true;
}

bool select_without_table(Executor& x, const Select& op) {
    StatementResult& r = x.mutable_result();
    r.returns_rows = true;
    r.columns = describe_columns(x, op.items, nullptr);
    const std::optional<int64_t> limit = eval_limit(x, op.limit);
    if (!limit) {
        return false;
    }
    if (op.where) {
        std::optional<Value> w = x.eval(*op.where, nullptr, {});
        if (!w) {
            return false;
        }
        if (w->is_null || w->type != Type::kBool || !w->boolean || *limit == 0) {
            r.tag = "SELECT 0";
            return true;
        }
    }
    std::vector<Value> row;
    if (std::all_of(op.items.begin(), op.items.end(),
                    [](const SelectItem& i) { return is_count(*i.expr); })) {
        row.assign(op.items.size(), Value::of_int8(1));
    } else if (!project(x, op.items, nullptr, {}, row)) {
        return false;
    }
    if (*limit == 0) {
        r.tag = "SELECT 0";
        return true;
    }
    r.tag = "SELECT 1";
    return add_row(x, std::move(row));
}

// FOR UPDATE / FOR SHARE: locks the rows in output order until `limit` of them are locked,
// skipping the busy ones under SKIP LOCKED.
bool lock_rows(Executor& x,
               const Select& op,
               const std::string& name,
               std::vector<RowRef>& rows,
               int64_t limit) {
    const LockStrength strength =
        op.lock == RowLockMode::kForUpdate ? LockStrength::kExclusive : LockStrength::kShared;
    std::vector<RowRef> locked;
    for (const RowRef& row : rows) {
        if (static_cast<int64_t>(locked.size()) >= limit) {
            break;
        }
        bool busy = false;
        const bool wait = op.lock_wait == RowLockWait::kWait;
        if (x.lock({LockSpace::kRow, row_lock_name(name, row.id)}, strength,
                   LockScope::kTransaction, wait, wait ? nullptr : &busy)) {
            locked.push_back(row);
            continue;
        }
        if (!busy) {
            return false;  // waits, or failed
        }
        if (op.lock_wait == RowLockWait::kNowait) {
            return x.fail("55P03",
                          fmt::format("could not obtain lock on row in relation \"{}\"", name));
        }
    }
    rows = std::move(locked);
    return true;
}

}  // namespace

// Every name the statement uses, before any row: a misspelt column is an error even on an empty
// table.
bool check_select_names(Executor& x, const Select& op, const Engine::Table* table) {
    if (!x.check_names(op.items, table) || (op.where && !x.check_names(*op.where, table))) {
        return false;
    }
    for (const OrderTerm& term : op.order_by) {
        if (!x.check_names(sort_key(term, op.items), table)) {
            return false;
        }
    }
    return true;
}

bool run_select(Executor& x, const Select& op) {
    if (op.table.empty()) {
        if (!check_select_names(x, op, nullptr)) {
            return false;
        }
        if (op.lock != RowLockMode::kNone) {
            return x.fail("42601", "FOR UPDATE and FOR SHARE need a FROM clause");
        }
        return select_without_table(x, op);
    }
    const Engine::Table* table = x.find_table(op.table, 0);
    if (table == nullptr || !check_select_names(x, op, table)) {
        return false;
    }
    const bool counting = std::any_of(op.items.begin(), op.items.end(),
                                      [](const SelectItem& i) { return is_count(*i.expr); });
    if (counting && !std::all_of(op.items.begin(), op.items.end(),
                                 [](const SelectItem& i) { return is_count(*i.expr); })) {
        return x.fail("0A000", "count(*) must be the only kind of item in the SQL mode");
    }
    if (counting && op.lock != RowLockMode::kNone) {
        return x.fail("0A000", "FOR UPDATE is not allowed with aggregate functions");
    }
    StatementResult& r = x.mutable_result();
    r.returns_rows = true;
    r.columns = describe_columns(x, op.items, table);
    std::vector<RowRef> rows;
    const std::optional<int64_t> limit = eval_limit(x, op.limit);
    if (!limit || !matching_rows(x, op.table, *table, op.where.get(), rows) ||
        !sort_rows(x, *table, op.order_by, op.items, rows)) {
        return false;
    }
    if (op.lock != RowLockMode::kNone && !lock_rows(x, op, op.table, rows, *limit)) {
        return false;
    }
    if (counting) {
        r.tag = "SELECT 1";
        return add_row(x, std::vector<Value>(op.items.size(),
                                             Value::of_int8(static_cast<int64_t>(rows.size()))));
    }
    size_t emitted = 0;
    for (const RowRef& row : rows) {
        if (static_cast<int64_t>(emitted) >= *limit) {
            break;
        }
        std::vector<Value> out;
        if (!project(x, op.items, table, row, out) || !add_row(x, std::move(out))) {
            return false;
        }
        ++emitted;
    }
    r.tag = fmt::format("SELECT {}", emitted);
    return true;
}

namespace {

// The row an INSERT builds from one VALUES list: defaults first, then the listed columns.
bool build_row(Executor& x,
               const Insert& op,
               const Engine::Table& table,
               const std::vector<size_t>& targets,
               const std::vector<ExprPtr>& values,
               Engine::Row& row) {
    if (values.size() > targets.size()) {
        return x.fail("42601", "INSERT has more expressions than target columns", values[0]->pos);
    }
    row.assign(table.columns.size(), Value::null());
    for (size_t i = 0; i < table.columns.size(); ++i) {
        const Engine::Column& c = table.columns[i];
        if (c.default_now) {
            row[i] = Value::of_timestamptz(x.transaction_start_ms() * 1000);
        } else if (c.default_value) {
            row[i] = *c.default_value;
        } else {
            row[i] = Value::null(c.type);
        }
    }
    std::vector<bool> given(table.columns.size(), false);
    for (size_t i = 0; i < values.size(); ++i) {
        std::optional<Value> v = x.eval(*values[i], nullptr, {});
        std::optional<Value> typed =
            v ? x.to_column(*v, table.columns[targets[i]], values[i]->pos) : std::nullopt;
        if (!typed) {
            return false;
        }
        row[targets[i]] = std::move(*typed);
        given[targets[i]] = true;
    }
    for (size_t i = 0; i < table.columns.size(); ++i) {
        if (!given[i] && row[i].is_null && table.columns[i].not_null) {
            return x.fail("23502",
                          fmt::format("null value in column \"{}\" of relation \"{}\" violates "
                                      "not-null constraint",
                                      table.columns[i].name, op.table));
        }
    }
    return true;
}

}  // namespace

bool run_insert(Executor& x, const Insert& op) {
    const Engine::Table* table = x.find_table(op.table, 0);
    if (table == nullptr) {
        return false;
    }
    std::vector<size_t> targets;
    if (op.columns.empty()) {
        for (size_t i = 0; i < table->columns.size(); ++i) {
            targets.push_back(i);
        }
    }
    for (const std::string& name : op.columns) {
        std::optional<size_t> i = find_column(x, *table, name, op.table, 0);
        if (!i) {
            return false;
        }
        if (std::find(targets.begin(), targets.end(), *i) != targets.end()) {
            return x.fail("42701", fmt::format("column \"{}\" specified more than once", name));
        }
        targets.push_back(*i);
    }
    for (const std::vector<ExprPtr>& values : op.rows) {
        for (const ExprPtr& v : values) {
            if (!x.check_names(*v, nullptr)) {
                return false;
            }
        }
    }
    if (!x.check_names(op.returning, table)) {
        return false;
    }
    set_returning(x, op.returning, *table);
    size_t inserted = 0;
    for (const std::vector<ExprPtr>& values : op.rows) {
        Engine::Row row;
        if (!build_row(x, op, *table, targets, values, row)) {
            return false;
        }
        const Engine::RowId id = x.allocate_row_id();
        std::optional<size_t> conflict;
        if (!x.unique_conflicts(op.table, *table, row, id, nullptr, &conflict)) {
            return false;
        }
        if (conflict) {
            if (op.on_conflict_do_nothing) {
                continue;
            }
            return unique_violation(x, op.table, *table, *conflict, row);
        }
        if (!x.write_row(op.table, id, row)) {
            return false;
        }
        ++inserted;
        if (!emit_returning(x, op.returning, *table, {id, &row})) {
            return false;
        }
    }
    x.mutable_result().tag = fmt::format("INSERT 0 {}", inserted);
    return true;
}

namespace {

// UPDATE's and DELETE's rows: the names its WHERE and RETURNING use checked, the RETURNING
// columns described, and the rows this session sees that match, in row order.
bool target_rows(Executor& x,
                 const std::string& name,
                 const Engine::Table& table,
                 const Expr* where,
                 const std::vector<SelectItem>& returning,
                 std::vector<RowRef>& rows) {
    if ((where != nullptr && !x.check_names(*where, &table)) || !x.check_names(returning, &table)) {
        return false;
    }
    set_returning(x, returning, table);
    return matching_rows(x, name, table, where, rows);
}

}  // namespace

bool run_update(Executor& x, const Update& op) {
    const Engine::Table* table = x.find_table(op.table, 0);
    if (table == nullptr) {
        return false;
    }
    std::vector<size_t> targets;
    for (const Assignment& a : op.assignments) {
        std::optional<size_t> i = find_column(x, *table, a.column, op.table, a.pos);
        if (!i) {
            return false;
        }
        // The parser refuses a column assigned twice (42601), so each target is new.
        RL_ASSERT(std::find(targets.begin(), targets.end(), *i) == targets.end());
        targets.push_back(*i);
        if (!x.check_names(*a.value, table)) {
            return false;
        }
    }
    std::vector<RowRef> rows;
    if (!target_rows(x, op.table, *table, op.where.get(), op.returning, rows)) {
        return false;
    }
    for (const RowRef& old : rows) {
        if (!x.lock({LockSpace::kRow, row_lock_name(op.table, old.id)}, LockStrength::kExclusive,
                    LockScope::kTransaction, true)) {
            return false;
        }
        Engine::Row row = *old.row;
        for (size_t i = 0; i < targets.size(); ++i) {
            const Assignment& a = op.assignments[i];
            std::optional<Value> v = x.eval(*a.value, table, old);
            std::optional<Value> typed =
                v ? x.to_column(*v, table->columns[targets[i]], a.pos) : std::nullopt;
            if (!typed) {
                return false;
            }
            row[targets[i]] = std::move(*typed);
        }
        std::optional<size_t> conflict;
        if (!x.unique_conflicts(op.table, *table, row, old.id, old.row, &conflict)) {
            return false;
        }
        if (conflict) {
            return unique_violation(x, op.table, *table, *conflict, row);
        }
        if (!x.write_row(op.table, old.id, row)) {
            return false;
        }
        if (!emit_returning(x, op.returning, *table, {old.id, &row})) {
            return false;
        }
    }
    x.mutable_result().tag = fmt::format("UPDATE {}", rows.size());
    return true;
}

bool run_delete(Executor& x, const Delete& op) {
    const Engine::Table* table = x.find_table(op.table, 0);
    if (table == nullptr) {
        return false;
    }
    std::vector<RowRef> rows;
    if (!target_rows(x, op.table, *table, op.where.get(), op.returning, rows)) {
        return false;
    }
    for (const RowRef& row : rows) {
        if (!x.lock({LockSpace::kRow, row_lock_name(op.table, row.id)}, LockStrength::kExclusive,
                    LockScope::kTransaction, true)) {
            return false;
        }
        if (!emit_returning(x, op.returning, *table, row)) {
            return false;
        }
    }
    for (const RowRef& row : rows) {
        if (!x.write_row(op.table, row.id, std::nullopt)) {
            return false;
        }
    }
    x.mutable_result().tag = fmt::format("DELETE {}", rows.size());
    return true;
}

}  // namespace raftlock::statemachine::sql
