#pragma once

// The SQL mode's syntax tree (docs/sql-mode.md "Grammar"): what parser.h produces from a query
// string and what the engine executes. Plain data with a stable text form (to_string), so parser
// tests compare trees as text.
//
// Positions are 1-based character offsets into the query string, as PostgreSQL reports them in an
// ErrorResponse's 'P' field; 0 means "no position".

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "statemachine/sql/value.h"

namespace raftlock::statemachine::sql {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// An operator of a binary expression. kAnd joins WHERE terms (the grammar has no OR).
enum class BinaryOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kAdd, kSub, kAnd };

struct Expr {
    enum class Kind : uint8_t {
        kLiteral,   // literal
        kParam,     // $param (1-based), bound at execution
        kColumn,    // name (lower-cased unless quoted); table qualifier in `qualifier`, if any
        kStar,      // `*` in a select list or count(*)
        kFunction,  // name(args): lower-cased name
        kBinary,    // lhs op rhs
        kNegate,    // -operand
        kIsNull,    // operand IS [NOT] NULL (negated: IS NOT NULL)
        kCast,      // operand::type or CAST(operand AS type)
    };
    Kind kind = Kind::kLiteral;
    uint32_t pos = 0;
    Value literal;                    // kLiteral
    uint32_t param = 0;               // kParam
    std::string name;                 // kColumn, kFunction
    std::string qualifier;            // kColumn: "t" in t.c
    BinaryOp op = BinaryOp::kEq;      // kBinary
    bool negated = false;             // kIsNull: IS NOT NULL
    Type cast_type = Type::kUnknown;  // kCast
    std::vector<ExprPtr> args;  // kFunction: arguments; kBinary: {lhs, rhs}; kNegate, kIsNull,
                                // kCast: {operand}
};

// --- statements --------------------------------------------------------------------------------

struct SelectItem {
    ExprPtr expr;
    std::string alias;  // AS alias; empty: the column name PostgreSQL would give ("?column?" ...)
};

struct OrderTerm {
    ExprPtr expr;
    bool descending = false;
};

enum class RowLockMode : uint8_t { kNone, kForUpdate, kForShare };
enum class RowLockWait : uint8_t { kWait, kNowait, kSkipLocked };

struct Select {
    std::vector<SelectItem> items;  // at least one
    std::string table;              // empty: no FROM (SELECT 1, SELECT pg_advisory_lock(1))
    ExprPtr where;                  // null: every row
    std::vector<OrderTerm> order_by;
    std::optional<ExprPtr> limit;  // LIMIT expr (a literal or a parameter)
    RowLockMode lock = RowLockMode::kNone;
    RowLockWait lock_wait = RowLockWait::kWait;
};

struct Insert {
    std::string table;
    std::vector<std::string> columns;        // empty: every column in table order
    std::vector<std::vector<ExprPtr>> rows;  // VALUES (...), (...): at least one
    bool on_conflict_do_nothing = false;
    std::vector<SelectItem> returning;  // empty: no RETURNING
};

struct Assignment {
    std::string column;
    uint32_t pos = 0;
    ExprPtr value;
};

struct Update {
    std::string table;
    std::vector<Assignment> assignments;  // at least one
    ExprPtr where;
    std::vector<SelectItem> returning;
};

struct Delete {
    std::string table;
    ExprPtr where;
    std::vector<SelectItem> returning;
};

struct ColumnDef {
    std::string name;
    uint32_t pos = 0;
    Type type = Type::kText;
    uint32_t varchar_max = 0;  // varchar(n): n; 0 for text and the other types
    bool primary_key = false;  // implies unique and not null
    bool unique = false;
    bool not_null = false;
    std::optional<ExprPtr> default_value;  // a literal or now()
};

struct CreateTable {
    std::string table;
    bool if_not_exists = false;
    std::vector<ColumnDef> columns;  // at least one, distinct names
};

struct DropTable {
    std::string table;
    bool if_exists = false;
};

enum class TransactionVerb : uint8_t { kBegin, kCommit, kRollback };

struct Transaction {
    TransactionVerb verb = TransactionVerb::kBegin;
};

// SET name = value / SET name TO value / SET SESSION name ...; RESET name is SET with no value.
struct SetVar {
    std::string name;                  // lower-cased
    std::optional<std::string> value;  // the literal's text (unquoted); nullopt: RESET / DEFAULT
};

struct Show {
    std::string name;  // lower-cased; "all" for SHOW ALL
};

using Statement =
    std::variant<Select, Insert, Update, Delete, CreateTable, DropTable, Transaction, SetVar, Show>;

// One statement of a query string, with the position where it starts.
struct ParsedStatement {
    Statement statement;
    uint32_t pos = 0;
    uint32_t params_max = 0;  // the highest $n used (the extended protocol's parameter count)
};

// Stable text forms for tests and logs, e.g.
//   select items=[fn pg_advisory_lock(lit int4 1)] from=""
std::string to_string(const Expr& expr);
std::string_view to_string(BinaryOp op);  // "=", "<>", "<", "<=", ">", ">=", "+", "-", "AND"
std::string to_string(const Statement& statement);

}  // namespace raftlock::statemachine::sql
