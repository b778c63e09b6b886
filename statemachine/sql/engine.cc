// The engine's entry points: running statements, transaction boundaries, waits and their ends
// (engine.h). Statement bodies are in the Executor (executor.cc, dml.cc, ddl.cc, eval.cc).

#include "statemachine/sql/engine.h"

#include <deque>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/executor.h"
#include "statemachine/sql/parser.h"

namespace raftlock::statemachine::sql {

namespace {

StatementResult error_result(std::string sqlstate, std::string message, uint32_t pos = 0) {
    StatementResult r;
    r.error = SqlError{std::move(sqlstate), std::move(message), {}, {}, pos};
    return r;
}

TxStatus status_of(const Engine::TxState& tx) {
    if (!tx.in_block) {
        return TxStatus::kIdle;
    }
    return tx.failed ? TxStatus::kFailed : TxStatus::kInBlock;
}

}  // namespace

bool spent_row_budget(const StatementResult& result) {
    return result.error && result.error->sqlstate == "54000" &&
           result.error->message.starts_with(kRowBudgetError);
}

bool calls_lock_function(const Expr& e) {
    if (e.kind == Expr::Kind::kFunction && is_lock_function(e.name)) {
        return true;
    }
    for (const ExprPtr& arg : e.args) {
        if (arg && calls_lock_function(*arg)) {
            return true;
        }
    }
    return false;
}

bool is_read_only(const Statement& statement) {
    const auto* select = std::get_if<Select>(&statement);
    if (select == nullptr || select->lock != RowLockMode::kNone) {
        return false;
    }
    for (const SelectItem& item : select->items) {
        if (calls_lock_function(*item.expr)) {
            return false;
        }
    }
    if (select->where && calls_lock_function(*select->where)) {
        return false;
    }
    for (const OrderTerm& term : select->order_by) {
        if (calls_lock_function(*term.expr)) {
            return false;
        }
    }
    return true;
}

std::optional<StatementResult> Engine::execute(SessionId session,
                                               uint64_t ticket,
                                               const StatementRequest& request,
                                               TimeMs now_ms,
                                               EngineEvents& events) {
    RL_ASSERT(session != kNoSession);
    auto found = sessions_.find(session);
    if (found != sessions_.end() && found->second.wait) {
        // The front end runs one statement at a time; a second one is a client (or server) bug.
        return error_result("55000", "another statement of this session is still running");
    }
    std::deque<LockWake> wakes;
    std::optional<StatementResult> result = run(session, ticket, request, now_ms, {}, wakes);
    wake(std::move(wakes), now_ms, events);
    return result;
}

std::optional<StatementResult> Engine::run(SessionId session,
                                           uint64_t ticket,
                                           const StatementRequest& request,
                                           TimeMs now_ms,
                                           std::vector<Value> calls_done,
                                           std::deque<LockWake>& wakes) {
    auto parsed = parse_one(request);
    if (!parsed.ok()) {
        return finish(session, parsed.error(), wakes);
    }
    const Statement& statement = parsed->statement;
    Session& state = sessions_[session];
    if (const auto* tx = std::get_if<Transaction>(&statement)) {
        return finish(session, control(session, state, tx->verb, now_ms, wakes), wakes);
    }
    if (state.tx.failed) {
        // Nothing left to roll back: finish() only keeps the block failed.
        return finish(session,
                      error_result("25P02",
                                   "current transaction is aborted, commands ignored until end of "
                                   "transaction block"),
                      wakes);
    }
    if (!state.tx.in_block && calls_done.empty()) {
        state.tx.start_ms = now_ms;  // an autocommit statement's now(); kept across its waits
    }
    Executor x(this, *this, session, ticket, state, request, now_ms, std::move(calls_done));
    const bool finished = x.run(statement);
    queue_wakes(x.lock_events(), wakes);
    if (!finished && x.waiting()) {
        state.wait = x.wait();
        state.wait->ticket = ticket;
        state.wait->request = request;
        return std::nullopt;
    }
    if (x.error()) {
        StatementResult failed;
        failed.error = x.error();
        failed.notices = x.result().notices;
        return finish(session, std::move(failed), wakes);
    }
    if (state.tx.write_count + x.pending_write_count() > kWritesPerTransactionMax) {
        return finish(session,
                      error_result("54000", fmt::format("a transaction may write at most {} rows",
                                                        kWritesPerTransactionMax)),
                      wakes);
    }
    merge_writes(state.tx, x.pending_writes(), x.pending_write_count());
    return finish(session, x.result(), wakes);
}

// Ends a statement: an error fails the transaction block (or rolls the autocommit statement
// back); success of an autocommit statement commits it. Fills in the transaction status.
StatementResult Engine::finish(SessionId session,
                               StatementResult result,
                               std::deque<LockWake>& wakes) {
    Session& state = sessions_[session];
    if (result.error) {
        // PostgreSQL aborts the transaction at the error: its writes and locks go at once, and
        // the block only waits for ROLLBACK (or COMMIT, which then rolls back).
        const bool in_block = state.tx.in_block;
        end_transaction(session, state, false, wakes);
        if (in_block) {
            state.tx.in_block = true;
            state.tx.failed = true;
        }
    } else if (!state.tx.in_block) {
        end_transaction(session, state, true, wakes);
    }
    result.tx_status = status_of(state.tx);
    forget_if_idle(session);
    return result;
}

StatementResult Engine::control(SessionId session,
                                Session& state,
                                TransactionVerb verb,
                                TimeMs now_ms,
                                std::deque<LockWake>& wakes) {
    StatementResult r;
    switch (verb) {
        case TransactionVerb::kBegin:
            r.tag = "BEGIN";
            if (state.tx.in_block) {
                r.notices.push_back(
                    {"WARNING", "25001", "there is already a transaction in progress"});
                break;
            }
            state.tx.in_block = true;
            state.tx.start_ms = now_ms;
            break;
        case TransactionVerb::kCommit:
        case TransactionVerb::kRollback: {
            const bool commit = verb == TransactionVerb::kCommit && !state.tx.failed;
            r.tag = commit ? "COMMIT" : "ROLLBACK";
            if (!state.tx.in_block) {
                r.notices.push_back({"WARNING", "25P01", "there is no transaction in progress"});
                break;
            }
            end_transaction(session, state, commit, wakes);
            break;
        }
    }
    return r;
}

void Engine::merge_writes(TxState& tx, const WriteLayer& writes, size_t count) const {
    for (const auto& [table, rows] : writes.rows()) {
        const auto schema = tables_.find(table);
        for (const auto& [id, row] : rows) {
            tx.writes.put(table, schema == tables_.end() ? nullptr : &schema->second, id, row);
        }
    }
    tx.write_count += count;
}

// Commits (applies the write set) or rolls back, then releases the transaction's locks.
void Engine::end_transaction(SessionId session,
                             Session& state,
                             bool commit,
                             std::deque<LockWake>& wakes) {
    if (commit) {
        apply_writes(state.tx.writes.rows());
    }
    state.tx = TxState{};
    LockEvents events;
    locks_.release_all(session, LockScope::kTransaction, kEveryLockSpace, events);
    queue_wakes(events, wakes);
}

// Removals first, then additions: a transaction that moves a unique value from one row to
// another never sees both in the index at once.
void Engine::apply_writes(const WriteSet& writes) {
    for (const auto& [name, rows] : writes) {
        auto table = tables_.find(name);
        if (table == tables_.end()) {
            continue;  // dropped meanwhile (only possible for the transaction's own drop)
        }
        for (const auto& [id, row] : rows) {
            unindex_row(table->second, id);
        }
    }
    for (const auto& [name, rows] : writes) {
        auto table = tables_.find(name);
        if (table == tables_.end()) {
            continue;
        }
        for (const auto& [id, row] : rows) {
            if (row) {
                index_row(table->second, id, *row);
            }
        }
    }
}

void Engine::unindex_row(Table& table, RowId id) {
    auto old = table.rows.find(id);
    if (old == table.rows.end()) {
        return;
    }
    for (auto& [column, index] : table.unique) {
        const Value& v = old->second[column];
        if (!v.is_null) {
            index.erase(value_key(v));
        }
    }
    table.rows.erase(old);
}

void Engine::index_row(Table& table, RowId id, const Row& row) {
    for (auto& [column, index] : table.unique) {
        const Value& v = row[column];
        if (!v.is_null) {
            const bool inserted = index.emplace(value_key(v), id).second;
            RL_ASSERT_MSG(inserted, "a committed write broke a unique index (its key lock failed)");
        }
    }
    table.rows.insert_or_assign(id, row);
}

void Engine::queue_wakes(const LockEvents& events, std::deque<LockWake>& wakes) {
    for (const LockGrant& g : events.grants) {
        wakes.push_back({g.owner, g.ticket, true});
    }
    for (const LockTimeout& t : events.timeouts) {
        wakes.push_back({t.owner, t.ticket, false});
    }
}

// Resumes the statements whose waits ended, in the order the lock table ended them. A resumed
// statement may release locks in turn (an autocommit statement commits), which queues more wakes:
// a worklist rather than recursion, so a long chain of hand-offs cannot overflow the stack.
void Engine::wake(std::deque<LockWake> wakes, TimeMs now_ms, EngineEvents& events) {
    while (!wakes.empty()) {
        const LockWake w = wakes.front();
        wakes.pop_front();
        auto found = sessions_.find(w.owner);
        RL_ASSERT(found != sessions_.end());
        RL_ASSERT(found->second.wait && found->second.wait->ticket == w.ticket);
        Wait wait = std::move(*found->second.wait);
        found->second.wait.reset();
        if (wait.function_wait) {
            if (w.granted) {
                RL_ASSERT(wait.granted_value.has_value());
                wait.calls_done.push_back(*wait.granted_value);
            } else if (wait.timeout_value) {
                wait.calls_done.push_back(*wait.timeout_value);
            }
        }
        std::optional<StatementResult> result;
        if (!w.granted && !(wait.function_wait && wait.timeout_value)) {
            result = finish(
                w.owner, error_result("55P03", "canceling statement due to lock timeout"), wakes);
        } else {
            result =
                run(w.owner, wait.ticket, wait.request, now_ms, std::move(wait.calls_done), wakes);
        }
        if (result) {
            events.done.push_back({w.owner, wait.ticket, std::move(*result)});
        }
    }
}

StatementResult Engine::query(SessionId session,
                              const StatementRequest& request,
                              TimeMs now_ms) const {
    auto parsed = parse_one(request);
    if (!parsed.ok()) {
        return parsed.error();
    }
    static const Session kNoState;
    auto found = sessions_.find(session);
    const Session& state = found == sessions_.end() ? kNoState : found->second;
    StatementResult r;
    if (!is_read_only(parsed->statement)) {
        r = error_result("XX000", "raftlock: a statement that writes or locks reached a read");
    } else if (state.tx.failed) {
        r = error_result("25P02",
                         "current transaction is aborted, commands ignored until end of "
                         "transaction block");
    } else {
        Executor x(nullptr, *this, session, 0, state, request, now_ms, {});
        const bool finished = x.run(parsed->statement);
        RL_ASSERT(finished || !x.waiting());  // a read never waits (it may fail)
        if (x.error()) {
            r.error = x.error();
        } else {
            r = x.result();
        }
    }
    // A failed read inside a block fails the block in PostgreSQL; a read changes nothing here, so
    // the front end sends the next statement through the log when it must record that (it does:
    // after an error inside a block every statement goes through the log until the block ends).
    r.tx_status = status_of(state.tx);
    return r;
}

void Engine::cancel(SessionId session, TimeMs now_ms, EngineEvents& events) {
    auto found = sessions_.find(session);
    if (found == sessions_.end() || !found->second.wait) {
        return;
    }
    LockEvents lock_events;
    const std::optional<uint64_t> ticket = locks_.cancel_wait(session, lock_events);
    RL_ASSERT(ticket && *ticket == found->second.wait->ticket);
    found->second.wait.reset();
    std::deque<LockWake> wakes;
    queue_wakes(lock_events, wakes);
    StatementResult r =
        finish(session, error_result("57014", "canceling statement due to user request"), wakes);
    events.done.push_back({session, *ticket, std::move(r)});
    wake(std::move(wakes), now_ms, events);
}

void Engine::end_session(SessionId session, TimeMs now_ms, EngineEvents& events) {
    LockEvents lock_events;
    locks_.end_owner(session, lock_events);
    sessions_.erase(session);  // its writes were never visible; its wait is gone with it
    std::deque<LockWake> wakes;
    queue_wakes(lock_events, wakes);
    wake(std::move(wakes), now_ms, events);
}

void Engine::advance_time(TimeMs now_ms, EngineEvents& events) {
    LockEvents lock_events;
    locks_.expire_waits(now_ms, lock_events);
    std::deque<LockWake> wakes;
    queue_wakes(lock_events, wakes);
    wake(std::move(wakes), now_ms, events);
}

Result<ParsedStatement, StatementResult> Engine::parse_one(const StatementRequest& request) {
    if (request.text.size() > kStatementBytesMax) {
        return error_result(
            "54000", fmt::format("a statement may have at most {} bytes", kStatementBytesMax));
    }
    if (request.params.size() > kParamsMax) {
        return error_result("54000",
                            fmt::format("a statement may have at most {} parameters", kParamsMax));
    }
    auto parsed = parse(request.text, ParseLimits{});
    if (!parsed.ok()) {
        const SyntaxError& e = parsed.error();
        return error_result(e.sqlstate, e.message, e.pos);
    }
    if (parsed->size() != 1) {
        return error_result("42601", "the SQL mode runs one statement per request");
    }
    ParsedStatement statement = std::move(parsed->front());
    if (statement.params_max > request.params.size()) {
        return error_result("08P01",
                            fmt::format("the statement uses ${} but {} parameters were bound",
                                        statement.params_max, request.params.size()));
    }
    return statement;
}

std::optional<TimeMs> Engine::next_deadline_ms() const {
    return locks_.next_deadline_ms();
}

TxStatus Engine::tx_status(SessionId session) const {
    auto found = sessions_.find(session);
    return found == sessions_.end() ? TxStatus::kIdle : status_of(found->second.tx);
}

bool Engine::waiting(SessionId session) const {
    auto found = sessions_.find(session);
    return found != sessions_.end() && found->second.wait.has_value();
}

// A session with no transaction block and no wait has no state of its own (its session-level
// locks live in the lock table): forgetting it keeps the snapshot to the sessions that matter.
void Engine::forget_if_idle(SessionId session) {
    auto found = sessions_.find(session);
    if (found != sessions_.end() && !found->second.tx.in_block && !found->second.wait) {
        RL_ASSERT(found->second.tx.writes.empty());
        sessions_.erase(found);
    }
}

}  // namespace raftlock::statemachine::sql
