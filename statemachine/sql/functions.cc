// The SQL mode's functions: time and version, and the lock functions — PostgreSQL's advisory
// locks ("Advisory Lock Functions" in the PostgreSQL manual) and MySQL's named locks (GET_LOCK and
// friends, "Locking Functions" in the MySQL manual), over the engine's lock table.
//
// A lock function's result is recorded (record_call) so that a statement that runs again after a
// wait replays it instead of taking the lock a second time (executor.h).

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/executor.h"

namespace raftlock::statemachine::sql {

namespace {

constexpr std::string_view kVersion = "PostgreSQL 15.0 (raftlock SQL mode)";
constexpr LockSpace kNamedSpace[] = {LockSpace::kNamed};

// How a lock function uses the lock table.
enum class LockCall : uint8_t {
    kLock,       // waits for the lock; returns void
    kTryLock,    // returns true/false at once
    kUnlock,     // one count of a session-level hold; true/false
    kUnlockAll,  // every session-level advisory hold
};

}  // namespace

struct LockFunction {
    std::string_view name;
    LockCall call;
    LockStrength strength;
    LockScope scope;
};

namespace {

constexpr std::array<LockFunction, 11> kAdvisoryFunctions{{
    {"pg_advisory_lock", LockCall::kLock, LockStrength::kExclusive, LockScope::kSession},
    {"pg_advisory_lock_shared", LockCall::kLock, LockStrength::kShared, LockScope::kSession},
    {"pg_try_advisory_lock", LockCall::kTryLock, LockStrength::kExclusive, LockScope::kSession},
    {"pg_try_advisory_lock_shared", LockCall::kTryLock, LockStrength::kShared, LockScope::kSession},
    {"pg_advisory_unlock", LockCall::kUnlock, LockStrength::kExclusive, LockScope::kSession},
    {"pg_advisory_unlock_shared", LockCall::kUnlock, LockStrength::kShared, LockScope::kSession},
    {"pg_advisory_unlock_all", LockCall::kUnlockAll, LockStrength::kExclusive, LockScope::kSession},
    {"pg_advisory_xact_lock", LockCall::kLock, LockStrength::kExclusive, LockScope::kTransaction},
    {"pg_advisory_xact_lock_shared", LockCall::kLock, LockStrength::kShared,
     LockScope::kTransaction},
    {"pg_try_advisory_xact_lock", LockCall::kTryLock, LockStrength::kExclusive,
     LockScope::kTransaction},
    {"pg_try_advisory_xact_lock_shared", LockCall::kTryLock, LockStrength::kShared,
     LockScope::kTransaction},
}};

constexpr std::array<std::string_view, 5> kNamedFunctions{
    "get_lock", "release_lock", "is_free_lock", "is_used_lock", "release_all_locks"};

const LockFunction* advisory_function(std::string_view name) {
    for (const LockFunction& f : kAdvisoryFunctions) {
        if (f.name == name) {
            return &f;
        }
    }
    return nullptr;
}

Value void_value() {
    return Value::of_text("");  // a void function's text output, as psql prints it
}

std::string_view lock_type_name(LockStrength strength) {
    return strength == LockStrength::kExclusive ? "ExclusiveLock" : "ShareLock";
}

}  // namespace

bool is_known_function(std::string_view name) {
    static constexpr std::array<std::string_view, 9> kOthers{
        "now",     "current_timestamp", "transaction_timestamp", "statement_timestamp",
        "version", "clock_timestamp",   "pg_backend_pid",        "coalesce",
        "count"};
    return is_lock_function(name) ||
           std::find(kOthers.begin(), kOthers.end(), name) != kOthers.end();
}

bool Executor::check_names(const Expr& e, const Engine::Table* table) {
    if (e.kind == Expr::Kind::kColumn) {
        const bool found = table != nullptr &&
                           std::any_of(table->columns.begin(), table->columns.end(),
                                       [&](const Engine::Column& c) { return c.name == e.name; });
        if (!found) {
            return fail("42703", fmt::format("column \"{}\" does not exist", e.name), e.pos);
        }
    }
    if (e.kind == Expr::Kind::kFunction && !is_known_function(e.name)) {
        return fail("42883", fmt::format("function {}() does not exist in the SQL mode", e.name),
                    e.pos);
    }
    for (const ExprPtr& arg : e.args) {
        if (arg && !check_names(*arg, table)) {
            return false;
        }
    }
    return true;
}

bool Executor::check_names(const std::vector<SelectItem>& items, const Engine::Table* table) {
    for (const SelectItem& item : items) {
        if (!check_names(*item.expr, table)) {
            return false;
        }
    }
    return true;
}

bool is_lock_function(std::string_view name) {
    return advisory_function(name) != nullptr ||
           std::find(kNamedFunctions.begin(), kNamedFunctions.end(), name) != kNamedFunctions.end();
}

std::optional<Value> Executor::call_function(const Expr& e,
                                             const Engine::Table* table,
                                             RowRef row) {
    const std::string& name = e.name;
    if (name == "count") {
        fail("42803", "count() is only allowed alone in a select list", e.pos);
        return std::nullopt;
    }
    std::vector<Value> args;
    args.reserve(e.args.size());
    for (const ExprPtr& arg : e.args) {
        std::optional<Value> v = eval(*arg, table, row);
        if (!v) {
            return std::nullopt;
        }
        args.push_back(std::move(*v));
    }
    const auto arity = [&](size_t n) {
        if (args.size() == n) {
            return true;
        }
        fail("42883",
             fmt::format("function {} with {} arguments does not exist", name, args.size()), e.pos);
        return false;
    };
    if (name == "now" || name == "current_timestamp" || name == "transaction_timestamp") {
        return arity(0) ? std::optional(Value::of_timestamptz(transaction_start_ms() * 1000))
                        : std::nullopt;
    }
    if (name == "statement_timestamp" || name == "clock_timestamp") {
        return arity(0) ? std::optional(Value::of_timestamptz(now_ms_ * 1000)) : std::nullopt;
    }
    if (name == "version") {
        return arity(0) ? std::optional(Value::of_text(std::string(kVersion))) : std::nullopt;
    }
    if (name == "pg_backend_pid") {
        return arity(0) ? std::optional(Value::of_int4(backend_pid(session_))) : std::nullopt;
    }
    if (name == "coalesce") {
        for (const Value& v : args) {
            if (!v.is_null) {
                return v;
            }
        }
        return args.empty() ? Value::null() : args.back();
    }
    if (is_lock_function(name)) {
        RL_ASSERT(!read_only());  // query() runs only statements without lock functions
        if (std::optional<Value> replayed = replay_call()) {
            return replayed;
        }
        return name.starts_with("pg_") ? call_advisory(e, std::move(args))
                                       : call_named(e, std::move(args));
    }
    fail("42883", fmt::format("function {}() does not exist in the SQL mode", name), e.pos);
    return std::nullopt;
}

std::optional<Value> Executor::call_advisory(const Expr& e, std::vector<Value> args) {
    const LockFunction* f = advisory_function(e.name);
    RL_ASSERT(f != nullptr);  // is_lock_function
    if (f->call == LockCall::kUnlockAll) {
        if (!args.empty()) {
            fail("42883", "function pg_advisory_unlock_all() takes no arguments", e.pos);
            return std::nullopt;
        }
        LockEvents events;
        engine_->locks_.release_all(session_, LockScope::kSession, kAdvisoryLockSpaces, events);
        absorb(events);
        record_call(void_value());
        return void_value();
    }
    // Strict functions: a NULL argument gives NULL and takes no lock.
    for (const Value& v : args) {
        if (v.is_null) {
            record_call(Value::null());
            return Value::null();
        }
    }
    LockKey key;
    if (args.size() == 1) {
        std::optional<Value> k = coerce(args[0], Type::kInt8, e.pos);
        if (!k) {
            return std::nullopt;
        }
        key = advisory_key(k->integer);
    } else if (args.size() == 2) {
        std::optional<Value> k1 = coerce(args[0], Type::kInt4, e.pos);
        std::optional<Value> k2 = k1 ? coerce(args[1], Type::kInt4, e.pos) : std::nullopt;
        if (!k2) {
            return std::nullopt;
        }
        key =
            advisory_pair_key(static_cast<int32_t>(k1->integer), static_cast<int32_t>(k2->integer));
    } else {
        fail("42883",
             fmt::format("function {} with {} arguments does not exist", e.name, args.size()),
             e.pos);
        return std::nullopt;
    }
    return advisory_call(*f, key);
}

std::optional<Value> Executor::advisory_call(const LockFunction& f, const LockKey& key) {
    switch (f.call) {
        case LockCall::kLock:
            if (lock(key, f.strength, f.scope, true)) {
                record_call(void_value());
                return void_value();
            }
            if (waiting_) {
                set_function_wait(void_value(), std::nullopt);
            }
            return std::nullopt;
        case LockCall::kTryLock: {
            bool busy = false;
            if (lock(key, f.strength, f.scope, false, &busy)) {
                record_call(Value::of_bool(true));
                return Value::of_bool(true);
            }
            if (!busy) {
                return std::nullopt;
            }
            record_call(Value::of_bool(false));
            return Value::of_bool(false);
        }
        case LockCall::kUnlock: {
            LockEvents events;
            const bool released = engine_->locks_.release(session_, key, f.strength, events);
            absorb(events);
            if (!released) {
                notice("WARNING", "01000",
                       fmt::format("you don't own a lock of type {}", lock_type_name(f.strength)));
            }
            record_call(Value::of_bool(released));
            return Value::of_bool(released);
        }
        case LockCall::kUnlockAll:
            break;
    }
    RL_PANIC("unhandled advisory lock call");
}

// MySQL's named locks: exclusive, session-level, counted. GET_LOCK returns 1 (granted), 0 (timed
// out) or an error; RELEASE_LOCK 1 (released one count), 0 (held by another session) or NULL (not
// held at all); IS_FREE_LOCK 1/0; IS_USED_LOCK the holder's connection id or NULL;
// RELEASE_ALL_LOCKS() the number of counts released.
std::optional<Value> Executor::call_named(const Expr& e, std::vector<Value> args) {
    const std::string& name = e.name;
    if (name == "release_all_locks") {
        if (!args.empty()) {
            fail("42883", "function release_all_locks() takes no arguments", e.pos);
            return std::nullopt;
        }
        LockEvents events;
        const size_t released =
            engine_->locks_.release_all(session_, LockScope::kSession, kNamedSpace, events);
        absorb(events);
        const Value v = Value::of_int4(
            static_cast<int32_t>(std::min<size_t>(released, std::numeric_limits<int32_t>::max())));
        record_call(v);
        return v;
    }
    const size_t expected = name == "get_lock" ? 2 : 1;
    if (args.size() != expected) {
        fail("42883",
             fmt::format("function {} takes {} argument{}", name, expected,
                         expected == 1 ? "" : "s"),
             e.pos);
        return std::nullopt;
    }
    std::optional<Value> lock_name = coerce(args[0], Type::kText, e.pos);
    if (!lock_name) {
        return std::nullopt;
    }
    if (lock_name->is_null || lock_name->text.empty() ||
        lock_name->text.size() > kNamedLockBytesMax) {
        fail("22023",
             fmt::format("incorrect user-level lock name '{}': 1 to {} bytes",
                         lock_name->is_null ? "NULL" : lock_name->text, kNamedLockBytesMax),
             e.pos);
        return std::nullopt;
    }
    // Lock names are case-insensitive (MySQL and MariaDB compare them so): folded to lower case.
    const LockKey key{LockSpace::kNamed, ascii_lower(lock_name->text)};
    if (name == "get_lock") {
        return get_lock(e, key, args[1]);
    }
    Value v;
    if (name == "release_lock") {
        LockEvents events;
        if (engine_->locks_.release(session_, key, LockStrength::kExclusive, events)) {
            v = Value::of_int4(1);
        } else {
            v = engine_->locks_.is_free(key) ? Value::null(Type::kInt4) : Value::of_int4(0);
        }
        absorb(events);
    } else if (name == "is_free_lock") {
        v = Value::of_int4(engine_->locks_.is_free(key) ? 1 : 0);
    } else {  // is_used_lock
        const std::vector<SessionId> holders = engine_->locks_.holders(key);
        v = holders.empty() ? Value::null(Type::kInt8)
                            : Value::of_int8(backend_pid(holders.front()));
    }
    record_call(v);
    return v;
}

std::optional<Value> Executor::get_lock(const Expr& e, const LockKey& key, const Value& timeout) {
    std::optional<Value> seconds = coerce(timeout, Type::kInt8, e.pos);
    if (!seconds) {
        return std::nullopt;
    }
    // MySQL: a negative timeout waits for ever; 0 only tries. lock_timeout does not apply.
    const bool wait = seconds->is_null || seconds->integer != 0;
    TimeMs deadline_ms = 0;
    if (!seconds->is_null && seconds->integer > 0) {
        deadline_ms = now_ms_ + std::min<TimeMs>(seconds->integer, kLockWaitMsMax / 1000) * 1000;
    }
    bool busy = false;
    if (lock(key, LockStrength::kExclusive, LockScope::kSession, wait, &busy, deadline_ms,
             /*use_lock_timeout=*/false)) {
        record_call(Value::of_int4(1));
        return Value::of_int4(1);
    }
    if (busy) {
        record_call(Value::of_int4(0));
        return Value::of_int4(0);
    }
    if (waiting_) {
        set_function_wait(Value::of_int4(1), Value::of_int4(0));
    }
    return std::nullopt;
}

int32_t backend_pid(SessionId session) {
    // PostgreSQL pids are positive int4s; session ids are Raft indexes, which stay far below 2^31
    // in practice. The pid is only a name for the connection (BackendKeyData, IS_USED_LOCK).
    return static_cast<int32_t>(session % std::numeric_limits<int32_t>::max());
}

}  // namespace raftlock::statemachine::sql
