#pragma once

// The engine's statement executor (internal to statemachine/sql/): runs one parsed statement for
// one session against the engine's tables and lock table, and says whether it finished or must
// wait. Split by concern: executor.cc (dispatch, transactions, locks), eval.cc (expressions and
// functions), dml.cc (SELECT, INSERT, UPDATE, DELETE), ddl.cc (CREATE/DROP TABLE).
//
// Stopping: an evaluation that fails or must wait records why in the executor (error_ or wait_)
// and returns nullopt/false; every caller returns at once, so nothing after the stopping point
// runs. The engine then discards the statement's pending writes.

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "statemachine/sql/ast.h"
#include "statemachine/sql/engine.h"

namespace raftlock::statemachine::sql {

struct LockFunction;  // functions.cc

// A row a statement is looking at: its id (0 for a row being inserted) and values.
struct RowRef {
    Engine::RowId id = 0;
    const Engine::Row* row = nullptr;
};

class Executor {
public:
    // `engine` is null for a read-only run (Engine::query): lock functions and writes are then
    // unreachable (the caller checked is_read_only).
    Executor(Engine* engine,
             const Engine& view,
             SessionId session,
             uint64_t ticket,
             const Engine::Session& state,
             const StatementRequest& request,
             TimeMs now_ms,
             std::vector<Value> calls_done);

    // Runs the statement: true when it finished (result() or error()), false when it waits
    // (wait()).
    bool run(const Statement& statement);

    const StatementResult& result() const { return result_; }
    const std::optional<SqlError>& error() const { return error_; }
    // The statement's writes, to merge into the transaction's write set when it succeeded.
    const Engine::WriteLayer& pending_writes() const { return pending_; }
    size_t pending_write_count() const { return pending_count_; }
    // Why it waits (valid when run() returned false without an error).
    const Engine::Wait& wait() const { return wait_; }
    bool waiting() const { return waiting_; }

    // --- used by the split-out parts (eval.cc, dml.cc, ddl.cc) ---
    std::optional<Value> eval(const Expr& expr, const Engine::Table* table, RowRef row);
    // WHERE: true, false or NULL (treated as false); nullopt when evaluation stopped.
    std::optional<bool> eval_condition(const Expr* where, const Engine::Table& table, RowRef row);
    Type infer_type(const Expr& expr, const Engine::Table* table) const;
    // Names every column and function the expression uses, before any row is looked at (as
    // PostgreSQL's analysis does): false, with 42703 or 42883, when one does not exist.
    bool check_names(const Expr& expr, const Engine::Table* table);
    bool check_names(const std::vector<SelectItem>& items, const Engine::Table* table);
    std::string column_name(const SelectItem& item) const;
    std::optional<Value> coerce(const Value& v, Type type, uint32_t pos);
    std::optional<Value> to_column(const Value& v, const Engine::Column& column, uint32_t pos);

    bool fail(std::string sqlstate, std::string message, uint32_t pos = 0, std::string detail = {});
    void notice(std::string severity, std::string sqlstate, std::string message);
    // Takes a lock for the running statement: true when held. False when the statement stops:
    // with an error (busy under NOWAIT is the caller's to word), or waiting (the lock table queued
    // it). `busy` (optional) is set instead of failing when !wait and the lock is unavailable.
    // `deadline_ms` 0 with `use_lock_timeout`: the session's lock_timeout, if any.
    bool lock(const LockKey& key,
              LockStrength strength,
              LockScope scope,
              bool wait,
              bool* busy = nullptr,
              TimeMs deadline_ms = 0,
              bool use_lock_timeout = true);
    // Grants and timeouts that this statement's releases caused for other sessions.
    void absorb(const LockEvents& events);
    const LockEvents& lock_events() const { return lock_events_; }
    // A lock function's turn: the replayed result when the statement already evaluated it
    // before waiting, else nullopt (evaluate it now and record it with record_call).
    std::optional<Value> replay_call();
    void record_call(const Value& v) { calls_.push_back(v); }
    // Marks the running lock function as the wait's: on grant it returns `granted`, on timeout
    // `on_timeout` (none: the statement fails with 55P03).
    void set_function_wait(Value granted, std::optional<Value> on_timeout);

    const Engine::Table* find_table(const std::string& name, uint32_t pos);
    // Calls `visit` with each row of `table` as this session sees it (committed rows overlaid
    // with the transaction's and this statement's writes), in row-id order, until it returns
    // false. Streams: the cost is that of the rows visited.
    void for_each_visible_row(const std::string& name,
                              const Engine::Table& table,
                              const std::function<bool(RowRef)>& visit) const;
    // Row `id` as this session sees it; nullopt when it does not exist or was deleted.
    std::optional<RowRef> visible_row(const std::string& name,
                                      const Engine::Table& table,
                                      Engine::RowId id) const;
    // Charges `cost` (kRowLookCost, kRowWriteCost) to the statement's row budget
    // (request.rows_max): false, with 54000, once the budget is spent.
    [[nodiscard]] bool touch_row(uint64_t cost = kRowLookCost);
    // Writes the row into the statement's pending writes (touch_row(kRowWriteCost)): false when
    // the budget stopped the statement.
    [[nodiscard]] bool write_row(const std::string& table,
                                 Engine::RowId id,
                                 std::optional<Engine::Row> row);
    // Checks `row`'s unique values before it is written as row `self` (`before`: its previous
    // image, for an update): true with *conflict_column set when another visible row has one of
    // them (SQLSTATE 23505 or ON CONFLICT DO NOTHING for the caller); false when the statement
    // stops.
    bool unique_conflicts(const std::string& name,
                          const Engine::Table& table,
                          const Engine::Row& row,
                          Engine::RowId self,
                          const Engine::Row* before,
                          std::optional<size_t>* conflict_column);
    std::optional<Engine::RowId> visible_holder(const std::string& name,
                                                const Engine::Table& table,
                                                size_t column,
                                                const Value& v) const;
    Engine::RowId allocate_row_id();
    TimeMs transaction_start_ms() const;
    SessionId session() const { return session_; }
    StatementResult& mutable_result() { return result_; }
    bool read_only() const { return engine_ == nullptr; }
    const std::vector<Value>& params() const { return request_.params; }
    Engine* engine() { return engine_; }

private:
    std::optional<Value> eval_binary(const Expr& e, const Engine::Table* table, RowRef row);
    std::optional<Value> eval_arithmetic(const Expr& e, const Value& l, const Value& r, Type type);
    std::optional<Value> call_function(const Expr& e, const Engine::Table* table, RowRef row);
    std::optional<Value> call_advisory(const Expr& e, std::vector<Value> args);
    std::optional<Value> call_named(const Expr& e, std::vector<Value> args);
    std::optional<Value> advisory_call(const LockFunction& f, const LockKey& key);
    std::optional<Value> get_lock(const Expr& e, const LockKey& key, const Value& timeout);
    bool run_transaction(const Transaction& op);
    bool run_set(const SetVar& op);
    bool run_show(const Show& op);

    Engine* engine_;
    const Engine& view_;
    SessionId session_;
    uint64_t ticket_;
    const Engine::Session& state_;
    const StatementRequest& request_;
    TimeMs now_ms_;
    std::vector<Value> replay_;  // calls_done of the previous run
    size_t replay_next_ = 0;
    std::vector<Value> calls_;  // this run's lock-function results, in order

    StatementResult result_;
    std::optional<SqlError> error_;
    Engine::WriteLayer pending_;
    size_t pending_count_ = 0;
    uint64_t row_budget_spent_ = 0;
    Engine::Wait wait_;
    bool waiting_ = false;
    LockEvents lock_events_;
};

// The result columns of a select list or RETURNING list; `*` stands for every column (dml.cc).
std::vector<ResultColumn> describe_columns(const Executor& x,
                                           const std::vector<SelectItem>& items,
                                           const Engine::Table* table);

// Statement runners (dml.cc, ddl.cc).
bool run_select(Executor& x, const Select& op);
bool run_insert(Executor& x, const Insert& op);
bool run_update(Executor& x, const Update& op);
bool run_delete(Executor& x, const Delete& op);
bool run_create_table(Executor& x, const CreateTable& op);
bool run_drop_table(Executor& x, const DropTable& op);

// True for the functions that take, release or inspect locks (pg_advisory_*, get_lock, ...):
// a statement that calls one is not read-only.
bool is_lock_function(std::string_view name);
// True when `e` calls a lock function anywhere in it.
bool calls_lock_function(const Expr& e);
// Lock functions and the others the SQL mode has (now(), version(), count(*), ...).
bool is_known_function(std::string_view name);

// The key of a value in a unique index and in a unique-key lock's name: type-tagged bytes, so
// that equal values of one column type give equal keys.
std::string value_key(const Value& v);
std::string row_lock_name(const std::string& table, Engine::RowId id);
std::string unique_lock_name(const std::string& table, size_t column, const Value& v);

}  // namespace raftlock::statemachine::sql
