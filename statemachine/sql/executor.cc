// The executor's dispatch and the services its statement runners share: errors, locks, replayed
// lock functions, the session's view of a table and its pending writes (executor.h).

#include "statemachine/sql/executor.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::statemachine::sql {

Executor::Executor(Engine* engine,
                   const Engine& view,
                   SessionId session,
                   uint64_t ticket,
                   const Engine::Session& state,
                   const StatementRequest& request,
                   TimeMs now_ms,
                   std::vector<Value> calls_done)
    : engine_(engine),
      view_(view),
      session_(session),
      ticket_(ticket),
      state_(state),
      request_(request),
      now_ms_(now_ms),
      replay_(std::move(calls_done)) {}

bool Executor::run(const Statement& statement) {
    return std::visit(
        [this](const auto& op) -> bool {
            using T = std::decay_t<decltype(op)>;
            if constexpr (std::is_same_v<T, Select>) {
                return run_select(*this, op);
            } else if constexpr (std::is_same_v<T, Insert>) {
                return run_insert(*this, op);
            } else if constexpr (std::is_same_v<T, Update>) {
                return run_update(*this, op);
            } else if constexpr (std::is_same_v<T, Delete>) {
                return run_delete(*this, op);
            } else if constexpr (std::is_same_v<T, CreateTable>) {
                return run_create_table(*this, op);
            } else if constexpr (std::is_same_v<T, DropTable>) {
                return run_drop_table(*this, op);
            } else if constexpr (std::is_same_v<T, Transaction>) {
                return fail("XX000", "raftlock: transaction control reached the executor");
            } else {
                // SET and SHOW are connection settings: the front end answers them itself.
                return fail("0A000", "SET and SHOW are answered by the connection, not replicated");
            }
        },
        statement);
}

bool Executor::fail(std::string sqlstate, std::string message, uint32_t pos, std::string detail) {
    RL_ASSERT(!error_ && !waiting_);
    error_ = SqlError{std::move(sqlstate), std::move(message), std::move(detail), {}, pos};
    return false;
}

void Executor::notice(std::string severity, std::string sqlstate, std::string message) {
    result_.notices.push_back({std::move(severity), std::move(sqlstate), std::move(message)});
}

bool Executor::lock(const LockKey& key,
                    LockStrength strength,
                    LockScope scope,
                    bool wait,
                    bool* busy,
                    TimeMs deadline_ms,
                    bool use_lock_timeout) {
    RL_ASSERT(engine_ != nullptr);
    if (wait && deadline_ms == 0 && use_lock_timeout && request_.lock_timeout_ms > 0) {
        deadline_ms = now_ms_ + std::min(request_.lock_timeout_ms, kLockWaitMsMax);
    }
    const LockRequest request{session_, key, strength, scope, ticket_, deadline_ms};
    switch (engine_->locks_.acquire(request, wait)) {
        case AcquireOutcome::kGranted:
            return true;
        case AcquireOutcome::kWaiting:
            waiting_ = true;
            wait_.deadline_ms = deadline_ms;
            wait_.calls_done = calls_;
            return false;
        case AcquireOutcome::kBusy:
            if (busy != nullptr) {
                *busy = true;
                return false;
            }
            return fail("55P03", "could not obtain lock on " + to_string(key));
        case AcquireOutcome::kDeadlock:
            return fail("40P01", "deadlock detected", 0,
                        "Process " + std::to_string(session_) + " waits for " + to_string(key) +
                            ", which a session waiting for it holds.");
        case AcquireOutcome::kLimit:
            return fail("53200", "out of lock table space: too many locks or waiters");
    }
    RL_PANIC("unknown lock outcome");
}

std::optional<Value> Executor::replay_call() {
    if (replay_next_ >= replay_.size()) {
        return std::nullopt;
    }
    Value v = replay_[replay_next_++];
    calls_.push_back(v);
    return v;
}

void Executor::absorb(const LockEvents& events) {
    lock_events_.grants.insert(lock_events_.grants.end(), events.grants.begin(),
                               events.grants.end());
    lock_events_.timeouts.insert(lock_events_.timeouts.end(), events.timeouts.begin(),
                                 events.timeouts.end());
}

void Executor::set_function_wait(Value granted, std::optional<Value> on_timeout) {
    RL_ASSERT(waiting_);
    wait_.function_wait = true;
    wait_.granted_value = std::move(granted);
    wait_.timeout_value = std::move(on_timeout);
}

const Engine::Table* Executor::find_table(const std::string& name, uint32_t pos) {
    auto found = view_.tables_.find(name);
    if (found == view_.tables_.end()) {
        fail("42P01", fmt::format("relation \"{}\" does not exist", name), pos);
        return nullptr;
    }
    return &found->second;
}

void Executor::for_each_visible_row(const std::string& name,
                                    const Engine::Table& table,
                                    const std::function<bool(RowRef)>& visit) const {
    // A merge by row id of three ordered layers; for an id in several, the later layer wins:
    // committed rows, then the transaction's writes, then this statement's.
    using Images = std::map<Engine::RowId, std::optional<Engine::Row>>;
    static const Images kNone;
    const auto layer = [&name](const Engine::WriteLayer& l) -> const Images& {
        auto found = l.rows().find(name);
        return found == l.rows().end() ? kNone : found->second;
    };
    const Images& tx = layer(state_.tx.writes);
    const Images& statement = layer(pending_);
    auto c = table.rows.begin();
    auto t = tx.begin();
    auto s = statement.begin();
    constexpr Engine::RowId kEnd = UINT64_MAX;
    for (;;) {
        const Engine::RowId id =
            std::min({c != table.rows.end() ? c->first : kEnd, t != tx.end() ? t->first : kEnd,
                      s != statement.end() ? s->first : kEnd});
        if (id == kEnd) {
            return;
        }
        const Engine::Row* row = nullptr;
        if (c != table.rows.end() && c->first == id) {
            row = &c->second;
            ++c;
        }
        for (auto* it : {&t, &s}) {
            const Images& images = it == &t ? tx : statement;
            if (*it != images.end() && (*it)->first == id) {
                row = (*it)->second ? &*(*it)->second : nullptr;
                ++*it;
            }
        }
        if (row != nullptr && !visit({id, row})) {
            return;
        }
    }
}

std::optional<RowRef> Executor::visible_row(const std::string& name,
                                            const Engine::Table& table,
                                            Engine::RowId id) const {
    for (const Engine::WriteLayer* layer : {&pending_, &state_.tx.writes}) {
        auto images = layer->rows().find(name);
        if (images == layer->rows().end()) {
            continue;
        }
        if (auto image = images->second.find(id); image != images->second.end()) {
            if (!image->second) {
                return std::nullopt;  // deleted
            }
            return RowRef{id, &*image->second};
        }
    }
    auto committed = table.rows.find(id);
    if (committed == table.rows.end()) {
        return std::nullopt;
    }
    return RowRef{id, &committed->second};
}

bool Executor::touch_row(uint64_t cost) {
    RL_ASSERT(cost == kRowLookCost || cost == kRowWriteCost);
    row_budget_spent_ += cost;
    if (request_.rows_max == 0 || row_budget_spent_ <= request_.rows_max) {
        return true;
    }
    return fail("54000", fmt::format("{} {}", kRowBudgetError, request_.rows_max), 0,
                fmt::format("A row the statement looks at costs {}, a row it writes {}. Split the "
                            "statement, or raise the servers' --sql-rows-max.",
                            kRowLookCost, kRowWriteCost));
}

bool Executor::write_row(const std::string& table,
                         Engine::RowId id,
                         std::optional<Engine::Row> row) {
    if (!touch_row(kRowWriteCost)) {
        return false;
    }
    const auto schema = view_.tables_.find(table);
    // A table created by this statement has no schema in the view yet, and no index.
    pending_.put(table, schema == view_.tables_.end() ? nullptr : &schema->second, id,
                 std::move(row));
    ++pending_count_;
    return true;
}

Engine::RowId Executor::allocate_row_id() {
    RL_ASSERT(engine_ != nullptr);
    return engine_->next_row_id_++;
}

TimeMs Executor::transaction_start_ms() const {
    return state_.tx.start_ms != 0 ? state_.tx.start_ms : now_ms_;
}

// A unique value of `row` (about to be written as row `self`; `before` is its previous image, if
// any) conflicts with a row this session sees, or waits. An uncommitted write of the value by
// another session is found by taking the value's key lock, which that session holds until it
// ends; a committed row with the value that another session has locked (it may be deleting it)
// makes the statement wait for that lock, and run again afterwards.
bool Executor::unique_conflicts(const std::string& name,
                                const Engine::Table& table,
                                const Engine::Row& row,
                                Engine::RowId self,
                                const Engine::Row* before,
                                std::optional<size_t>* conflict_column) {
    conflict_column->reset();
    for (const auto& [column, index] : table.unique) {
        const Value& v = row[column];
        if (v.is_null || (before != nullptr && (*before)[column] == v)) {
            continue;  // NULLs never collide (SQL's unique semantics); an unchanged value stays
        }
        if (!lock({LockSpace::kUniqueKey, unique_lock_name(name, column, v)},
                  LockStrength::kExclusive, LockScope::kTransaction, true)) {
            return false;
        }
        const std::optional<Engine::RowId> holder = visible_holder(name, table, column, v);
        if (!holder || *holder == self) {
            continue;
        }
        if (!lock({LockSpace::kRow, row_lock_name(name, *holder)}, LockStrength::kShared,
                  LockScope::kTransaction, true)) {
            return false;
        }
        *conflict_column = column;
        return true;
    }
    return true;
}

// The row this session sees with `v` in unique column `column`, if any: the committed index,
// unless the session's own writes changed that row, and the session's own writes.
std::optional<Engine::RowId> Executor::visible_holder(const std::string& name,
                                                      const Engine::Table& table,
                                                      size_t column,
                                                      const Value& v) const {
    const std::string key = value_key(v);
    std::optional<Engine::RowId> found;
    if (auto index = table.unique.find(column); index != table.unique.end()) {
        if (auto hit = index->second.find(key); hit != index->second.end()) {
            found = hit->second;
        }
    }
    // The transaction's earlier statements, then this statement's: each layer's index answers.
    found = state_.tx.writes.holder(name, column, key, found);
    found = pending_.holder(name, column, key, found);
    return found;
}

std::string row_lock_name(const std::string& table, Engine::RowId id) {
    return table + "/" + std::to_string(id);
}

std::string unique_lock_name(const std::string& table, size_t column, const Value& v) {
    std::string key = value_key(v);
    // Lock names are bounded (kLockKeyBytesMax); a long value locks by its hash instead. Two
    // values with one hash only make their writers wait for each other, never collide in the
    // index, which compares whole values.
    if (key.size() > 256) {
        uint64_t hash = 14695981039346656037ull;  // 64-bit FNV-1a: stable across builds
        for (unsigned char c : key) {
            hash = (hash ^ c) * 1099511628211ull;
        }
        key = fmt::format("h{:016x}/{}", hash, key.size());
    }
    return table + "/" + std::to_string(column) + "/" + key;
}

std::string value_key(const Value& v) {
    RL_ASSERT(!v.is_null);
    switch (v.type) {
        case Type::kBool:
            return v.boolean ? "b1" : "b0";
        // fmt, not "i" + std::to_string(...): GCC 12 at -O3 reports a false -Wrestrict in the
        // inlined string concatenation (GCC bug 105651), which breaks the Release build.
        case Type::kInt4:
        case Type::kInt8:
            return fmt::format("i{}", v.integer);
        case Type::kTimestamptz:
            return fmt::format("t{}", v.integer);
        case Type::kText:
        case Type::kUnknown:
            return "s" + v.text;
    }
    RL_PANIC("unknown SQL type");
}

}  // namespace raftlock::statemachine::sql
