#pragma once

// The SQL mode's engine (docs/sql-mode.md, decision 0006): tables, transactions, row locks,
// advisory and named locks, executed inside the replicated state machine.
//
// Contract:
// - Pure and deterministic, like the rest of the state machine: the same calls in the same order
//   give the same state and the same results on every replica. Time is cluster time, passed in.
// - A session is a raftlock session (one PostgreSQL connection); it runs one statement at a time.
//   A statement that needs a lock another session holds changes nothing and waits; its result
//   comes later, from the call that grants the lock, times the wait out, or cancels it
//   (EngineEvents::done). Row-lock statements then run again from the start against the rows as
//   they are (PostgreSQL re-checks an updated row the same way); lock functions already evaluated
//   in the statement are not evaluated twice.
// - READ COMMITTED without MVCC: a transaction's writes stay in its write set until COMMIT, when
//   they become visible at once; its own statements read through them. UPDATE, DELETE and
//   SELECT ... FOR UPDATE/SHARE lock rows until the transaction ends; an uncommitted write of a
//   unique value locks that value, so a second writer of it waits for the first's outcome.
// - Outside a transaction block each statement is a transaction of its own (autocommit).
//   Inside one, an error aborts the transaction at once (its writes are dropped and its locks
//   released) and leaves the block failed until ROLLBACK (or COMMIT, which then rolls back), as
//   PostgreSQL does.
// - Errors anyone can cause (bad SQL, a missing table, a unique violation, a deadlock) are
//   results with a SQLSTATE, never assertions.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_io.h"
#include "base/result.h"
#include "statemachine/sql/ast.h"
#include "statemachine/sql/lock_table.h"
#include "statemachine/sql/value.h"
#include "statemachine/types.h"

namespace raftlock::statemachine::sql {

inline constexpr size_t kTablesMax = 1000;
inline constexpr size_t kColumnsPerTableMax = 100;
inline constexpr size_t kRowsPerTableMax = 1'000'000;
inline constexpr size_t kWritesPerTransactionMax = 100'000;
inline constexpr size_t kResultRowsMax = 100'000;
inline constexpr size_t kStatementBytesMax = 1u << 20;
inline constexpr size_t kParamsMax = 10'000;
inline constexpr size_t kNameBytesMax = 63;       // PostgreSQL's NAMEDATALEN - 1
inline constexpr size_t kNamedLockBytesMax = 64;  // MySQL's limit on GET_LOCK names
inline constexpr TimeMs kLockWaitMsMax = 24LL * 3600 * 1000;
// The largest row budget a statement may carry (StatementRequest::rows_max).
inline constexpr uint64_t kRowsTouchedMax = 1'000'000'000;
// What a row costs a statement's row budget: looked at (a scan, a lookup) and written. Writing a
// row measured 40-90 times the cost of looking at one (4-9 us against 0.1 us, Release build).
inline constexpr uint64_t kRowLookCost = 1;
inline constexpr uint64_t kRowWriteCost = 10;
// SQLSTATE 54000 (program_limit_exceeded) with this message prefix: the statement spent its row
// budget.
inline constexpr std::string_view kRowBudgetError = "statement exceeds the row budget of";

struct SqlError {
    std::string sqlstate;  // five characters, e.g. "23505"
    std::string message;
    std::string detail;
    std::string hint;
    uint32_t pos = 0;  // 1-based position in the statement text; 0: none
    friend bool operator==(const SqlError&, const SqlError&) = default;
};

// A WARNING or NOTICE sent before the statement's result (e.g. pg_advisory_unlock of a lock the
// session does not hold).
struct Notice {
    std::string severity;  // "WARNING", "NOTICE"
    std::string sqlstate;
    std::string message;
    friend bool operator==(const Notice&, const Notice&) = default;
};

struct ResultColumn {
    std::string name;
    Type type = Type::kText;
    friend bool operator==(const ResultColumn&, const ResultColumn&) = default;
};

// The transaction state after a statement: ReadyForQuery's status byte.
enum class TxStatus : uint8_t { kIdle = 0, kInBlock, kFailed };  // 'I', 'T', 'E'

struct StatementResult {
    std::optional<SqlError> error;  // set: the statement failed (no rows, no tag)
    bool returns_rows = false;      // SELECT, RETURNING: a RowDescription precedes the rows
    std::vector<ResultColumn> columns;
    std::vector<std::vector<Value>> rows;
    std::string tag;  // "SELECT 1", "INSERT 0 1", "UPDATE 2", "BEGIN", "CREATE TABLE", ...
    std::vector<Notice> notices;
    TxStatus tx_status = TxStatus::kIdle;
    friend bool operator==(const StatementResult&, const StatementResult&) = default;
};

// One statement as the front end submits it (the replicated SqlStatement command).
struct StatementRequest {
    std::string text;            // exactly one statement; <= kStatementBytesMax
    std::vector<Value> params;   // $1, $2, ...: typed when sent in binary, kUnknown when text
    TimeMs lock_timeout_ms = 0;  // the session's lock_timeout; 0: wait without a deadline
    // The row budget (kRowLookCost per row looked at, kRowWriteCost per row written) past which
    // the statement fails with 54000, stamped by the node that takes the statement
    // (--sql-rows-max), so that every replica and every replay stops it at the same row.
    // 0: no budget (entries from before budgets, which ran without).
    uint64_t rows_max = 0;
    friend bool operator==(const StatementRequest&, const StatementRequest&) = default;
};

// A waiting statement of `session` that finished during another call.
struct StatementDone {
    SessionId session = kNoSession;
    uint64_t ticket = 0;
    StatementResult result;
    friend bool operator==(const StatementDone&, const StatementDone&) = default;
};

struct EngineEvents {
    std::vector<StatementDone> done;  // in the order they finished
};

// What a statement returns, from the schema alone (the extended protocol's Describe).
struct Description {
    // $1, $2, ...: the type a parameter is compared with or assigned to; kUnknown when the
    // statement does not say (the front end then reports text).
    std::vector<Type> params;
    bool returns_rows = false;
    std::vector<ResultColumn> columns;
    friend bool operator==(const Description&, const Description&) = default;
};

// True when the statement failed because it spent its row budget (StatementRequest::rows_max).
bool spent_row_budget(const StatementResult& result);

// True when the statement only reads: a SELECT without FOR UPDATE/SHARE that calls no lock
// function. Such a statement may be served by query() after ReadIndex instead of the log.
bool is_read_only(const Statement& statement);

// The process id a connection of `session` reports (BackendKeyData, pg_backend_pid(),
// IS_USED_LOCK): positive, derived from the session id.
int32_t backend_pid(SessionId session);

class Executor;
bool run_create_table(Executor& x, const CreateTable& op);
bool run_drop_table(Executor& x, const DropTable& op);

class Engine final {
public:
    // Runs `request` as statement `ticket` of `session` (tickets are unique per session) at cluster
    // time `now_ms`. Returns its result, or nullopt when it waits for a lock (see the contract).
    // A session that already has a waiting statement gets an error (one statement at a time).
    std::optional<StatementResult> execute(SessionId session,
                                           uint64_t ticket,
                                           const StatementRequest& request,
                                           TimeMs now_ms,
                                           EngineEvents& events);
    // Runs a read-only statement (is_read_only) against the current state, changing nothing.
    StatementResult query(SessionId session, const StatementRequest& request, TimeMs now_ms) const;

    // Describes one statement against the current schema, running nothing: the errors are those
    // of parsing and of naming a missing table or column.
    Result<Description, SqlError> describe(std::string_view statement) const;

    // The session's waiting statement, if any, ends with SQLSTATE 57014 (CancelRequest).
    void cancel(SessionId session, TimeMs now_ms, EngineEvents& events);
    // The session is gone: its transaction rolls back, its locks are released, its wait ends.
    void end_session(SessionId session, TimeMs now_ms, EngineEvents& events);
    // Waits whose deadline (lock_timeout, GET_LOCK's timeout) is <= now_ms end.
    void advance_time(TimeMs now_ms, EngineEvents& events);
    std::optional<TimeMs> next_deadline_ms() const;

    TxStatus tx_status(SessionId session) const;
    bool waiting(SessionId session) const;
    size_t table_count() const { return tables_.size(); }
    size_t session_count() const { return sessions_.size(); }

    // A deterministic, versioned serialisation (part of the state machine's snapshot).
    void write(Writer& w) const;
    // Reads into *this, which the caller created empty; false on malformed input.
    bool read(Reader& r);
    // Empty when every invariant holds.
    std::string check_invariants() const;

    // --- the engine's own state (public for the executor's helpers in this folder) ---
    using RowId = uint64_t;
    using Row = std::vector<Value>;  // one value per column, in column order, of the column's type
    struct Column {
        std::string name;
        Type type = Type::kText;
        uint32_t varchar_max = 0;
        bool primary_key = false;
        bool unique = false;  // primary keys are unique too
        bool not_null = false;
        std::optional<Value> default_value;
        bool default_now = false;  // DEFAULT now(): the transaction's start time
        friend bool operator==(const Column&, const Column&) = default;
    };
    struct Table {
        std::vector<Column> columns;
        std::map<RowId, Row> rows;  // committed rows; ids grow, so this is insertion order
        // Per unique column: the committed rows by their value's key (value_key()).
        std::map<size_t, std::map<std::string, RowId>> unique;
    };
    // A write set: per table, per row, the new image (nullopt: deleted).
    using WriteSet = std::map<std::string, std::map<RowId, std::optional<Row>>>;
    // Rows written and not yet committed (one statement's, or its transaction's so far), with the
    // unique values of their images indexed, so that a row's unique check costs a lookup rather
    // than a scan of every row written before it: the scan made a keyed INSERT quadratic, 25 s
    // for one 10,000-row statement after 80,000 rows in its transaction (issue 16, row 5).
    class WriteLayer {
    public:
        const WriteSet& rows() const { return rows_; }
        bool empty() const { return rows_.empty(); }
        bool touches(const std::string& table) const { return rows_.contains(table); }
        // Records the new image of row `id` of `table` (nullopt: deleted). `schema` names the
        // unique columns to index; nullptr for a table that has none yet.
        void put(const std::string& table, const Table* schema, RowId id, std::optional<Row> image);
        // The row holding unique value `key` in `column` once this layer lies over the rows
        // below, where `below` held it: this layer's last row whose image has the value, else
        // `below` unless this layer rewrote that row.
        std::optional<RowId> holder(const std::string& table,
                                    size_t column,
                                    const std::string& key,
                                    std::optional<RowId> below) const;
        // Empty when the index agrees with the rows (an O(rows) check).
        std::string check_index() const;

    private:
        void index(const std::string& table, RowId id, const Row& image, bool add);

        WriteSet rows_;
        // table -> unique column -> value_key -> ids whose image has that value.
        std::map<std::string, std::map<size_t, std::map<std::string, std::set<RowId>>>> unique_;
        // table -> the unique columns put() indexed it by.
        std::map<std::string, std::vector<size_t>> indexed_columns_;
    };
    struct TxState {
        bool in_block = false;  // BEGIN ... COMMIT/ROLLBACK; false: autocommit statement
        bool failed = false;    // an error inside the block: only ROLLBACK/COMMIT now
        TimeMs start_ms = 0;    // now() of the transaction
        WriteLayer writes;
        size_t write_count = 0;
    };
    // A statement waiting for a lock.
    struct Wait {
        uint64_t ticket = 0;
        StatementRequest request;
        // Results of the lock functions the statement has evaluated, in evaluation order: a run
        // after the grant replays them instead of locking twice.
        std::vector<Value> calls_done;
        // The value the waiting lock function returns on timeout (GET_LOCK: 0); none: the
        // statement fails with 55P03 (lock_timeout).
        std::optional<Value> timeout_value;
        std::optional<Value> granted_value;  // what the waiting lock function returns on grant
        bool function_wait = false;          // waits in a lock function, not for a row or key
        TimeMs deadline_ms = 0;              // 0: none
    };
    struct Session {
        TxState tx;
        std::optional<Wait> wait;
    };

private:
    friend class Executor;
    friend bool run_create_table(Executor& x, const CreateTable& op);
    friend bool run_drop_table(Executor& x, const DropTable& op);

    // A wait the lock table ended: granted, or timed out.
    struct LockWake {
        SessionId owner = kNoSession;
        uint64_t ticket = 0;
        bool granted = false;
    };

    static Result<ParsedStatement, StatementResult> parse_one(const StatementRequest& request);
    std::optional<StatementResult> run(SessionId session,
                                       uint64_t ticket,
                                       const StatementRequest& request,
                                       TimeMs now_ms,
                                       std::vector<Value> calls_done,
                                       std::deque<LockWake>& wakes);
    StatementResult finish(SessionId session, StatementResult result, std::deque<LockWake>& wakes);
    StatementResult control(SessionId session,
                            Session& state,
                            TransactionVerb verb,
                            TimeMs now_ms,
                            std::deque<LockWake>& wakes);
    void merge_writes(TxState& tx, const WriteLayer& writes, size_t count) const;
    void end_transaction(SessionId session,
                         Session& state,
                         bool commit,
                         std::deque<LockWake>& wakes);
    void apply_writes(const WriteSet& writes);
    static void unindex_row(Table& table, RowId id);
    static void index_row(Table& table, RowId id, const Row& row);
    static void queue_wakes(const LockEvents& events, std::deque<LockWake>& wakes);
    void wake(std::deque<LockWake> wakes, TimeMs now_ms, EngineEvents& events);
    void forget_if_idle(SessionId session);
    bool read_table(Reader& r);
    bool read_session(Reader& r, uint8_t version);

    std::map<std::string, Table> tables_;
    std::map<SessionId, Session> sessions_;
    LockTable locks_;
    RowId next_row_id_ = 1;  // global, so that a row lock's key never names two rows
};

}  // namespace raftlock::statemachine::sql
