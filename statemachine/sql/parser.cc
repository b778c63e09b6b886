#include "statemachine/sql/parser.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/lexer.h"

namespace raftlock::statemachine::sql {

namespace {

constexpr std::string_view kLimitExceeded = "54000";

// PostgreSQL 16's reserved keywords (kwlist.h, RESERVED_KEYWORD): never a column, table or
// function name unless quoted.
constexpr auto kReserved = std::to_array<std::string_view>({
    "all",          "analyse",
    "analyze",      "and",
    "any",          "array",
    "as",           "asc",
    "asymmetric",   "both",
    "case",         "cast",
    "check",        "collate",
    "column",       "constraint",
    "create",       "current_catalog",
    "current_date", "current_role",
    "current_time", "current_timestamp",
    "current_user", "default",
    "deferrable",   "desc",
    "distinct",     "do",
    "else",         "end",
    "except",       "false",
    "fetch",        "for",
    "foreign",      "from",
    "grant",        "group",
    "having",       "in",
    "initially",    "intersect",
    "into",         "lateral",
    "leading",      "limit",
    "localtime",    "localtimestamp",
    "not",          "null",
    "offset",       "on",
    "only",         "or",
    "order",        "placing",
    "primary",      "references",
    "returning",    "select",
    "session_user", "some",
    "symmetric",    "system_user",
    "table",        "then",
    "to",           "trailing",
    "true",         "union",
    "unique",       "user",
    "using",        "variadic",
    "when",         "where",
    "window",       "with",
});

// TYPE_FUNC_NAME_KEYWORD: function (and type) names, but not column or table names.
constexpr auto kTypeFuncName = std::to_array<std::string_view>({
    "authorization", "binary", "collation", "concurrently", "cross",   "current_schema",
    "freeze",        "full",   "ilike",     "inner",        "is",      "isnull",
    "join",          "left",   "like",      "natural",      "notnull", "outer",
    "overlaps",      "right",  "similar",   "tablesample",  "verbose",
});

constexpr bool sorted_words(const auto& words) {
    for (size_t i = 1; i < words.size(); ++i) {
        if (!(words[i - 1] < words[i])) {
            return false;
        }
    }
    return true;
}
static_assert(sorted_words(kReserved));
static_assert(sorted_words(kTypeFuncName));

bool is_reserved(std::string_view word) {
    return std::binary_search(kReserved.begin(), kReserved.end(), word);
}

bool is_type_func_name(std::string_view word) {
    return std::binary_search(kTypeFuncName.begin(), kTypeFuncName.end(), word);
}

// PostgreSQL's ColId: what can name a column or a table without quotes.
bool is_col_id(std::string_view word) {
    return !is_reserved(word) && !is_type_func_name(word);
}

bool is_comparison(std::string_view op) {
    return op == "=" || op == "<>" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

BinaryOp comparison_op(std::string_view op) {
    if (op == "=") {
        return BinaryOp::kEq;
    }
    if (op == "<>") {
        return BinaryOp::kNe;
    }
    if (op == "<") {
        return BinaryOp::kLt;
    }
    if (op == "<=") {
        return BinaryOp::kLe;
    }
    if (op == ">") {
        return BinaryOp::kGt;
    }
    RL_ASSERT(op == ">=");
    return BinaryOp::kGe;
}

// An integer SET value as PostgreSQL stores it: the int4's decimal form, or the digits as written
// when the value does not fit an int4 (it is then a numeric constant).
std::string set_integer_text(std::string_view digits, bool negative) {
    int64_t value = 0;
    for (char c : digits) {
        value = value * 10 + (c - '0');
        if (value > int64_t{std::numeric_limits<int32_t>::max()} + 1) {
            return fmt::format("{}{}", negative ? "-" : "", digits);
        }
    }
    if (negative) {
        value = -value;
    }
    if (value > std::numeric_limits<int32_t>::max()) {
        return std::string(digits);
    }
    return fmt::format("{}", value);
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'a' && c <= 'z') {
            c = static_cast<char>(c - 'a' + 'A');
        }
    }
    return out;
}

ExprPtr new_expr(Expr::Kind kind, uint32_t pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
}

// An expression under construction and the height of its tree. Parentheses count as a level
// although they leave no node, so the parser's own recursion is bounded by the same limit.
struct Node {
    ExprPtr expr;
    uint32_t height = 0;
    explicit operator bool() const { return expr != nullptr; }
};

// What the error helpers return: false for functions returning bool, an empty Node for those
// returning a Node, so that `return not_supported(...);` works in both.
struct Failed {
    operator bool() const { return false; }   // NOLINT: implicit on purpose
    operator Node() const { return Node{}; }  // NOLINT: implicit on purpose
};

struct TypeSpec {
    Type type = Type::kText;
    uint32_t varchar_max = 0;
};

enum class TypeUse : uint8_t { kColumn, kCast };

// PostgreSQL's limit on varchar(n) (MaxAttrSize), and on the columns of a table.
constexpr uint64_t kVarcharMax = 10485760;
constexpr size_t kColumnsMax = 1600;
// The deepest expressions any configuration may allow (see ParseLimits::depth_max).
constexpr uint32_t kDepthMaxCap = 1000;

class Parser {
public:
    Parser(std::string_view query, Lexed lexed, const ParseLimits& limits)
        : query_(query),
          tokens_(std::move(lexed.tokens)),
          lex_error_(std::move(lexed.error)),
          limits_(limits) {
        RL_ASSERT(!tokens_.empty());
        RL_ASSERT(tokens_.back().kind == TokenKind::kEnd ||
                  tokens_.back().kind == TokenKind::kError);
    }

    Result<std::vector<ParsedStatement>, SyntaxError> run();

private:
    // --- tokens ---------------------------------------------------------------------------
    const Token& peek(size_t ahead = 0) const {
        return tokens_[std::min(at_ + ahead, tokens_.size() - 1)];
    }
    const Token& next() {
        const Token& t = tokens_[at_];
        if (at_ + 1 < tokens_.size()) {
            ++at_;
        }
        return t;
    }
    static bool is_keyword(const Token& t, std::string_view word) {
        return t.kind == TokenKind::kIdent && t.text == word;
    }
    bool at_keyword(std::string_view word, size_t ahead = 0) const {
        return is_keyword(peek(ahead), word);
    }
    bool at_op(std::string_view op, size_t ahead = 0) const {
        const Token& t = peek(ahead);
        return t.kind == TokenKind::kOp && t.text == op;
    }
    bool accept_keyword(std::string_view word) {
        if (!at_keyword(word)) {
            return false;
        }
        next();
        return true;
    }
    bool accept_op(std::string_view op) {
        if (!at_op(op)) {
            return false;
        }
        next();
        return true;
    }
    bool expect_keyword(std::string_view word) {
        return accept_keyword(word) ? true : syntax_error(peek());
    }
    bool expect_op(std::string_view op) { return accept_op(op) ? true : syntax_error(peek()); }
    // A token that names a column or table: a quoted identifier or an unquoted ColId.
    static bool is_col_id_token(const Token& t) {
        return t.kind == TokenKind::kQuotedIdent ||
               (t.kind == TokenKind::kIdent && is_col_id(t.text));
    }
    static bool is_name_token(const Token& t) {
        return t.kind == TokenKind::kQuotedIdent || t.kind == TokenKind::kIdent;
    }

    // --- errors: the first one is kept ------------------------------------------------------
    Failed fail(std::string_view sqlstate, std::string message, uint32_t pos) {
        if (!error_) {
            error_ = SyntaxError{std::string(sqlstate), std::move(message), pos};
        }
        return Failed{};
    }
    Failed syntax_error(const Token& t);
    Failed not_supported(std::string_view what, const Token& at, std::string_view hint = {}) {
        return fail(kNotSupported,
                    hint.empty()
                        ? fmt::format("{} is not supported in the SQL mode", what)
                        : fmt::format("{} is not supported in the SQL mode; {}", what, hint),
                    at.pos);
    }
    Failed too_deep(const Token& at) {
        return fail(kLimitExceeded,
                    fmt::format("expressions nest deeper than {} levels, the limit of the SQL mode",
                                limits_.depth_max),
                    at.pos);
    }
    // Fails when a list that already holds `size` items may not take one more.
    bool list_has_room(size_t size, const Token& at) {
        if (size < limits_.list_items_max) {
            return true;
        }
        return fail(kLimitExceeded,
                    fmt::format("a list has more than {} items, the limit of the SQL mode",
                                limits_.list_items_max),
                    at.pos);
    }
    Failed unsupported_clause_or_syntax_error(const Token& t);

    // --- statements -------------------------------------------------------------------------
    bool parse_statement(Statement& out);
    bool parse_select(Statement& out);
    bool parse_from(Select& s);
    bool parse_select_tail(Select& s);
    bool parse_locking(Select& s);
    bool parse_order_by(std::vector<OrderTerm>& terms);
    bool parse_items(std::vector<SelectItem>& items);
    bool parse_alias(SelectItem& item, const Token& first);
    bool parse_insert(Statement& out);
    bool parse_insert_columns(Insert& ins, std::vector<uint32_t>& column_pos);
    bool parse_values(Insert& ins, const std::vector<uint32_t>& column_pos);
    bool parse_on_conflict(Insert& ins);
    bool parse_update(Statement& out);
    bool parse_assignments(Update& up);
    bool parse_delete(Statement& out);
    bool refuse_table_alias(bool bare_alias_possible);
    bool parse_where(ExprPtr& where, bool allow_current_of);
    bool parse_create(Statement& out);
    bool parse_column_def(CreateTable& table, bool& has_primary_key);
    bool parse_column_constraints(const CreateTable& table, ColumnDef& col, bool& has_primary_key);
    bool parse_default(ColumnDef& col, const CreateTable& table, const Token& keyword);
    bool parse_drop(Statement& out);
    bool parse_transaction(Statement& out);
    bool parse_transaction_modes();
    bool parse_and_chain();
    bool parse_set(Statement& out);
    bool parse_set_value(std::optional<std::string>& value);
    bool parse_reset(Statement& out);
    bool parse_show(Statement& out);
    bool parse_var_name(std::string& name);
    bool parse_table_name(std::string& table);

    // --- expressions --------------------------------------------------------------------------
    Node parse_expr(uint32_t level);
    Node parse_is(uint32_t level);
    Node parse_comparison(uint32_t level);
    bool refuse_predicate();
    Node parse_additive(uint32_t level);
    Node parse_unary(uint32_t level);
    Node parse_postfix(uint32_t level);
    Node parse_primary(uint32_t level);
    Node parse_paren(uint32_t level);
    Node parse_param();
    Node parse_keyword_expr(uint32_t level, bool& handled);
    Node parse_name_expr(uint32_t level);
    Node parse_typed_literal();
    Node parse_function(std::string name, const Token& name_token, uint32_t level);
    bool parse_function_args(std::vector<Node>& args, uint32_t level);
    Node parse_cast_function(uint32_t level);
    Node integer_literal(const Token& digits, bool negative, uint32_t pos);
    Node combine(ExprPtr e, std::vector<Node> children, const Token& at);
    Node binary(BinaryOp op, const Token& op_token, Node lhs, Node rhs);

    // --- types --------------------------------------------------------------------------------
    bool parse_type(TypeSpec& out, TypeUse use);
    bool parse_type_words(std::string& name, const Token& first);
    bool parse_varchar_length(TypeSpec& out, TypeUse use);

    std::string_view query_;
    std::vector<Token> tokens_;
    SyntaxError lex_error_;  // what a final kError token stands for
    const ParseLimits& limits_;
    size_t at_ = 0;
    uint32_t params_max_ = 0;  // of the statement being parsed
    std::optional<SyntaxError> error_;
};

// ---------------------------------------------------------------------------------------------
// Errors

// PostgreSQL's scanner_yyerror: the token as written, or "end of input"; a token that is itself a
// lexical error reports that error instead.
Failed Parser::syntax_error(const Token& t) {
    if (t.kind == TokenKind::kError) {
        return fail(lex_error_.sqlstate, lex_error_.message, lex_error_.pos);
    }
    if (t.kind == TokenKind::kEnd) {
        return fail(kSyntaxError, "syntax error at end of input", t.pos);
    }
    return fail(
        kSyntaxError,
        fmt::format("syntax error at or near \"{}\"", query_.substr(t.begin, t.end - t.begin)),
        t.pos);
}

// Clauses PostgreSQL has where a statement of the subset may end: named as unsupported rather
// than called a syntax error, since the query is valid SQL.
Failed Parser::unsupported_clause_or_syntax_error(const Token& t) {
    if (t.kind != TokenKind::kIdent) {
        return syntax_error(t);
    }
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 22> kClauses = {{
        {"group", "GROUP BY"},
        {"having", "HAVING"},
        {"window", "WINDOW"},
        {"union", "UNION"},
        {"intersect", "INTERSECT"},
        {"except", "EXCEPT"},
        {"offset", "OFFSET"},
        {"fetch", "FETCH"},
        {"into", "SELECT INTO"},
        {"join", "JOIN"},
        {"inner", "JOIN"},
        {"left", "JOIN"},
        {"right", "JOIN"},
        {"full", "JOIN"},
        {"cross", "JOIN"},
        {"natural", "JOIN"},
        {"tablesample", "TABLESAMPLE"},
        {"collate", "COLLATE"},
        {"with", "WITH"},
        {"inherits", "INHERITS"},
        {"partition", "PARTITION BY"},
        {"tablespace", "TABLESPACE"},
    }};
    for (const auto& [word, name] : kClauses) {
        if (t.text == word) {
            return not_supported(name, t);
        }
    }
    if (t.text == "or") {
        return not_supported("OR", t, "use AND");
    }
    if (t.text == "on" && at_keyword("commit", 1)) {
        return not_supported("ON COMMIT", t);
    }
    return syntax_error(t);
}

// ---------------------------------------------------------------------------------------------
// Statements

Result<std::vector<ParsedStatement>, SyntaxError> Parser::run() {
    std::vector<ParsedStatement> statements;
    for (;;) {
        while (accept_op(";")) {
        }
        const Token& first = peek();
        if (first.kind == TokenKind::kEnd) {
            return statements;
        }
        ParsedStatement parsed;
        parsed.pos = first.pos;
        params_max_ = 0;
        const bool ok =
            parse_statement(parsed.statement) && (at_op(";") || peek().kind == TokenKind::kEnd ||
                                                  unsupported_clause_or_syntax_error(peek()));
        if (!ok) {
            RL_ASSERT(error_.has_value());
            return *error_;
        }
        RL_ASSERT(!error_.has_value());
        RL_ASSERT(params_max_ <= limits_.params_max);
        parsed.params_max = params_max_;
        statements.push_back(std::move(parsed));
    }
}

bool Parser::parse_statement(Statement& out) {
    const Token& t = peek();
    if (at_op("(")) {
        return not_supported("a parenthesized query", t);
    }
    if (t.kind != TokenKind::kIdent) {
        return syntax_error(t);
    }
    const std::string& w = t.text;
    if (w == "select") {
        return parse_select(out);
    }
    if (w == "insert") {
        return parse_insert(out);
    }
    if (w == "update") {
        return parse_update(out);
    }
    if (w == "delete") {
        return parse_delete(out);
    }
    if (w == "create") {
        return parse_create(out);
    }
    if (w == "drop") {
        return parse_drop(out);
    }
    if (w == "begin" || w == "start" || w == "commit" || w == "end" || w == "rollback" ||
        w == "abort") {
        return parse_transaction(out);
    }
    if (w == "set") {
        return parse_set(out);
    }
    if (w == "reset") {
        return parse_reset(out);
    }
    if (w == "show") {
        return parse_show(out);
    }
    if (w == "lock") {
        return not_supported("LOCK", t, "use pg_advisory_lock() or SELECT ... FOR UPDATE");
    }
    static constexpr auto kStatements = std::to_array<std::string_view>({
        "alter",   "analyse",   "analyze",    "call",     "checkpoint", "close",    "cluster",
        "comment", "copy",      "deallocate", "declare",  "discard",    "do",       "execute",
        "explain", "fetch",     "grant",      "import",   "listen",     "load",     "merge",
        "move",    "notify",    "prepare",    "reassign", "refresh",    "reindex",  "release",
        "revoke",  "savepoint", "security",   "table",    "truncate",   "unlisten", "vacuum",
        "values",  "with",
    });
    if (std::find(kStatements.begin(), kStatements.end(), w) != kStatements.end()) {
        return not_supported(upper(w), t);
    }
    return syntax_error(t);
}

bool Parser::parse_select(Statement& out) {
    Select s;
    next();  // SELECT
    if (at_keyword("distinct")) {
        return not_supported("DISTINCT", peek());
    }
    accept_keyword("all");
    const Token& t = peek();
    static constexpr std::array<std::string_view, 13> kAfterList = {
        "from",  "where", "group", "having", "order",     "limit",  "offset",
        "fetch", "for",   "into",  "union",  "intersect", "except",
    };
    if (t.kind == TokenKind::kEnd || at_op(";") ||
        (t.kind == TokenKind::kIdent &&
         std::find(kAfterList.begin(), kAfterList.end(), t.text) != kAfterList.end())) {
        return not_supported("SELECT without a select list", t);
    }
    if (!parse_items(s.items)) {
        return false;
    }
    if (at_keyword("into")) {
        return not_supported("SELECT INTO", peek());
    }
    if (at_keyword("from") && !parse_from(s)) {
        return false;
    }
    if (!parse_where(s.where, false) || !parse_select_tail(s)) {
        return false;
    }
    out = std::move(s);
    return true;
}

bool Parser::parse_from(Select& s) {
    next();  // FROM
    if (at_op("(")) {
        return not_supported("a subquery in FROM", peek());
    }
    if (at_keyword("lateral")) {
        return not_supported("LATERAL", peek());
    }
    accept_keyword("only");
    if (!parse_table_name(s.table)) {
        return false;
    }
    if (at_op("(")) {
        return not_supported("a function in FROM", peek());
    }
    if (at_op(",")) {
        return not_supported("selecting from several tables", peek());
    }
    return refuse_table_alias(true);
}

// GROUP BY ... HAVING ... are refused; ORDER BY, then LIMIT and the locking clause in either
// order, as PostgreSQL's grammar allows.
bool Parser::parse_select_tail(Select& s) {
    for (std::string_view word : {"group", "having", "window", "union", "intersect", "except"}) {
        if (at_keyword(word)) {
            return unsupported_clause_or_syntax_error(peek());
        }
    }
    if (accept_keyword("order") && (!expect_keyword("by") || !parse_order_by(s.order_by))) {
        return false;
    }
    bool has_limit = false;
    for (;;) {
        if (at_keyword("limit")) {
            if (has_limit) {
                return fail(kSyntaxError, "multiple LIMIT clauses not allowed", peek().pos);
            }
            has_limit = true;
            next();
            if (accept_keyword("all")) {
                continue;
            }
            Node limit = parse_expr(1);
            if (!limit) {
                return false;
            }
            if (at_op(",")) {
                return not_supported("LIMIT #,#", peek(), "use LIMIT alone");
            }
            s.limit = std::move(limit.expr);
        } else if (at_keyword("for")) {
            if (s.lock != RowLockMode::kNone) {
                return not_supported("more than one locking clause", peek());
            }
            if (!parse_locking(s)) {
                return false;
            }
        } else if (at_keyword("offset") || at_keyword("fetch")) {
            return unsupported_clause_or_syntax_error(peek());
        } else {
            return true;
        }
    }
}

bool Parser::parse_locking(Select& s) {
    const Token& for_token = next();
    if (accept_keyword("update")) {
        s.lock = RowLockMode::kForUpdate;
    } else if (accept_keyword("share")) {
        s.lock = RowLockMode::kForShare;
    } else if (at_keyword("no") && at_keyword("key", 1)) {
        return not_supported("FOR NO KEY UPDATE", for_token);
    } else if (at_keyword("key") && at_keyword("share", 1)) {
        return not_supported("FOR KEY SHARE", for_token);
    } else if (at_keyword("read") && at_keyword("only", 1)) {
        return not_supported("FOR READ ONLY", for_token);
    } else {
        return syntax_error(peek());
    }
    if (at_keyword("of")) {
        return not_supported("FOR UPDATE OF or FOR SHARE OF", peek(), "lock the FROM table");
    }
    if (accept_keyword("nowait")) {
        s.lock_wait = RowLockWait::kNowait;
    } else if (at_keyword("skip")) {
        next();
        if (!expect_keyword("locked")) {
            return false;
        }
        s.lock_wait = RowLockWait::kSkipLocked;
    }
    return true;
}

bool Parser::parse_order_by(std::vector<OrderTerm>& terms) {
    for (;;) {
        const Token& first = peek();
        Node e = parse_expr(1);
        if (!e) {
            return false;
        }
        // PostgreSQL reads a constant here as an output column's position (an integer) or refuses
        // it; evaluating it as an expression would order by nothing.
        if (e.expr->kind == Expr::Kind::kLiteral) {
            const Type type = e.expr->literal.type;
            if (type == Type::kInt4 || type == Type::kInt8) {
                return not_supported("ORDER BY a select-list position", first,
                                     "order by the column's name");
            }
            return fail(kSyntaxError, "non-integer constant in ORDER BY", first.pos);
        }
        OrderTerm term{std::move(e.expr), false};
        if (accept_keyword("desc")) {
            term.descending = true;
        } else {
            accept_keyword("asc");
        }
        if (at_keyword("using")) {
            return not_supported("ORDER BY ... USING", peek());
        }
        if (at_keyword("nulls")) {
            return not_supported("NULLS FIRST or NULLS LAST", peek());
        }
        if (!list_has_room(terms.size(), first)) {
            return false;
        }
        terms.push_back(std::move(term));
        if (!accept_op(",")) {
            return true;
        }
    }
}

// A select list or RETURNING list: `*` alone, or expressions with optional aliases.
bool Parser::parse_items(std::vector<SelectItem>& items) {
    if (at_op("*")) {
        const Token& star = next();
        if (at_op(",")) {
            return not_supported("* together with other items", star);
        }
        items.push_back(SelectItem{new_expr(Expr::Kind::kStar, star.pos), {}});
        return true;
    }
    for (;;) {
        const Token& first = peek();
        if (at_op("*")) {
            return not_supported("* together with other items", first);
        }
        Node e = parse_expr(1);
        if (!e) {
            return false;
        }
        SelectItem item{std::move(e.expr), {}};
        if (!parse_alias(item, first) || !list_has_room(items.size(), first)) {
            return false;
        }
        items.push_back(std::move(item));
        if (!accept_op(",")) {
            return true;
        }
    }
}

// `AS label` takes any word, even a reserved one (PostgreSQL's ColLabel); a bare alias only a
// word that can name a column.
bool Parser::parse_alias(SelectItem& item, const Token& first) {
    if (accept_keyword("as")) {
        if (!is_name_token(peek())) {
            return syntax_error(peek());
        }
        item.alias = next().text;
    } else if (is_col_id_token(peek())) {
        item.alias = next().text;
    } else if (is_keyword(first, "current_timestamp") && item.expr->kind == Expr::Kind::kFunction &&
               item.expr->pos == first.pos) {
        item.alias = "current_timestamp";  // PostgreSQL's column name, not now()'s
    }
    return true;
}

bool Parser::parse_insert(Statement& out) {
    Insert ins;
    next();  // INSERT
    if (!expect_keyword("into") || !parse_table_name(ins.table)) {
        return false;
    }
    if (at_keyword("as")) {
        return not_supported("a table alias", peek());
    }
    std::vector<uint32_t> column_pos;
    if (at_op("(") && !parse_insert_columns(ins, column_pos)) {
        return false;
    }
    if (at_keyword("overriding")) {
        return not_supported("OVERRIDING", peek());
    }
    if (at_keyword("default") && at_keyword("values", 1)) {
        return not_supported("DEFAULT VALUES", peek(), "name the columns and give VALUES");
    }
    if (at_keyword("select") || at_keyword("with") || at_op("(")) {
        return not_supported("INSERT ... SELECT", peek(), "use VALUES");
    }
    if (!expect_keyword("values") || !parse_values(ins, column_pos)) {
        return false;
    }
    if (at_keyword("on") && !parse_on_conflict(ins)) {
        return false;
    }
    if (accept_keyword("returning") && !parse_items(ins.returning)) {
        return false;
    }
    out = std::move(ins);
    return true;
}

bool Parser::parse_insert_columns(Insert& ins, std::vector<uint32_t>& column_pos) {
    next();                      // (
    std::set<std::string> seen;  // a set, so that a long list costs n log n, not n^2
    for (;;) {
        const Token& t = peek();
        if (!is_col_id_token(t)) {
            return syntax_error(t);
        }
        next();
        if (at_op(".") || at_op("[")) {
            return not_supported("assigning to a field or an element of a column", peek());
        }
        if (!seen.insert(t.text).second) {
            return fail("42701", fmt::format("column \"{}\" specified more than once", t.text),
                        t.pos);
        }
        if (!list_has_room(ins.columns.size(), t)) {
            return false;
        }
        ins.columns.push_back(t.text);
        column_pos.push_back(t.pos);
        if (!accept_op(",")) {
            return expect_op(")");
        }
    }
}

// VALUES (...), (...): PostgreSQL's checks of row lengths (transformInsertStmt) are made here,
// row by row, at the positions PostgreSQL reports.
bool Parser::parse_values(Insert& ins, const std::vector<uint32_t>& column_pos) {
    for (;;) {
        const Token& open = peek();
        if (!expect_op("(")) {
            return false;
        }
        std::vector<ExprPtr> row;
        for (;;) {
            const Token& first = peek();
            if (at_keyword("default")) {
                return not_supported("DEFAULT in VALUES", first, "leave the column out");
            }
            Node e = parse_expr(1);
            if (!e || !list_has_room(row.size(), first)) {
                return false;
            }
            row.push_back(std::move(e.expr));
            if (!accept_op(",")) {
                break;
            }
        }
        if (!expect_op(")")) {
            return false;
        }
        if (!ins.rows.empty() && row.size() != ins.rows.front().size()) {
            return fail(kSyntaxError, "VALUES lists must all be the same length", row[0]->pos);
        }
        if (!column_pos.empty() && row.size() > column_pos.size()) {
            return fail(kSyntaxError, "INSERT has more expressions than target columns",
                        row[column_pos.size()]->pos);
        }
        if (!column_pos.empty() && row.size() < column_pos.size()) {
            return fail(kSyntaxError, "INSERT has more target columns than expressions",
                        column_pos[row.size()]);
        }
        if (!list_has_room(ins.rows.size(), open)) {
            return false;
        }
        ins.rows.push_back(std::move(row));
        if (!accept_op(",")) {
            return true;
        }
    }
}

bool Parser::parse_on_conflict(Insert& ins) {
    next();  // ON
    if (!expect_keyword("conflict")) {
        return false;
    }
    if (at_op("(") || at_keyword("on")) {
        return not_supported("ON CONFLICT with a conflict target", peek(),
                             "use ON CONFLICT DO NOTHING");
    }
    if (!expect_keyword("do")) {
        return false;
    }
    if (at_keyword("update")) {
        return not_supported("ON CONFLICT DO UPDATE", peek());
    }
    if (!expect_keyword("nothing")) {
        return false;
    }
    ins.on_conflict_do_nothing = true;
    return true;
}

bool Parser::parse_update(Statement& out) {
    Update up;
    next();  // UPDATE
    accept_keyword("only");
    if (!parse_table_name(up.table) || !refuse_table_alias(!at_keyword("set"))) {
        return false;
    }
    if (!expect_keyword("set") || !parse_assignments(up)) {
        return false;
    }
    if (at_keyword("from")) {
        return not_supported("UPDATE ... FROM", peek());
    }
    if (!parse_where(up.where, true)) {
        return false;
    }
    if (accept_keyword("returning") && !parse_items(up.returning)) {
        return false;
    }
    out = std::move(up);
    return true;
}

bool Parser::parse_assignments(Update& up) {
    std::set<std::string> seen;
    for (;;) {
        const Token& t = peek();
        if (at_op("(")) {
            return not_supported("assigning several columns at once", t);
        }
        if (!is_col_id_token(t)) {
            return syntax_error(t);
        }
        next();
        if (at_op(".") || at_op("[")) {
            return not_supported("assigning to a field or an element of a column", peek());
        }
        if (!seen.insert(t.text).second) {
            return fail(kSyntaxError,
                        fmt::format("multiple assignments to same column \"{}\"", t.text), t.pos);
        }
        if (!expect_op("=")) {
            return false;
        }
        if (at_keyword("default")) {
            return not_supported("SET column = DEFAULT", peek());
        }
        Node value = parse_expr(1);
        if (!value || !list_has_room(up.assignments.size(), t)) {
            return false;
        }
        up.assignments.push_back(Assignment{t.text, t.pos, std::move(value.expr)});
        if (!accept_op(",")) {
            return true;
        }
    }
}

bool Parser::parse_delete(Statement& out) {
    Delete del;
    next();  // DELETE
    if (!expect_keyword("from")) {
        return false;
    }
    accept_keyword("only");
    if (!parse_table_name(del.table) || !refuse_table_alias(true)) {
        return false;
    }
    if (at_keyword("using")) {
        return not_supported("DELETE ... USING", peek());
    }
    if (!parse_where(del.where, true)) {
        return false;
    }
    if (accept_keyword("returning") && !parse_items(del.returning)) {
        return false;
    }
    out = std::move(del);
    return true;
}

// The subset names rows by their table only, so an alias (t AS x, or t x) is refused.
bool Parser::refuse_table_alias(bool bare_alias_possible) {
    const Token& t = peek();
    if (at_keyword("as") || (bare_alias_possible && is_col_id_token(t))) {
        return not_supported("a table alias", t);
    }
    return true;
}

bool Parser::parse_where(ExprPtr& where, bool allow_current_of) {
    if (!accept_keyword("where")) {
        return true;
    }
    if (allow_current_of && at_keyword("current") && at_keyword("of", 1)) {
        return not_supported("WHERE CURRENT OF", peek());
    }
    Node cond = parse_expr(1);
    if (!cond) {
        return false;
    }
    where = std::move(cond.expr);
    return true;
}

bool Parser::parse_create(Statement& out) {
    CreateTable table;
    const Token& create = next();
    if (!at_keyword("table")) {
        const Token& t = peek();
        if (t.kind != TokenKind::kIdent) {
            return syntax_error(t);
        }
        if ((t.text == "unique" || t.text == "or" || t.text == "temp" || t.text == "temporary") &&
            peek(1).kind == TokenKind::kIdent) {
            return not_supported(fmt::format("CREATE {} {}", upper(t.text), upper(peek(1).text)),
                                 create);
        }
        return not_supported(fmt::format("CREATE {}", upper(t.text)), create);
    }
    next();  // TABLE
    if (accept_keyword("if")) {
        if (!expect_keyword("not") || !expect_keyword("exists")) {
            return false;
        }
        table.if_not_exists = true;
    }
    if (!parse_table_name(table.table)) {
        return false;
    }
    if (at_keyword("as") || at_keyword("of") || at_keyword("partition")) {
        return not_supported(fmt::format("CREATE TABLE ... {}", upper(peek().text)), peek());
    }
    if (!expect_op("(")) {
        return false;
    }
    if (at_op(")")) {
        return not_supported("a table without columns", peek());
    }
    bool has_primary_key = false;
    do {
        if (!parse_column_def(table, has_primary_key)) {
            return false;
        }
    } while (accept_op(","));
    if (!expect_op(")")) {
        return false;
    }
    out = std::move(table);
    return true;
}

bool Parser::parse_column_def(CreateTable& table, bool& has_primary_key) {
    const Token& t = peek();
    static constexpr std::array<std::string_view, 6> kTableConstraints = {
        "check", "constraint", "foreign", "like", "primary", "unique",
    };
    if (t.kind == TokenKind::kIdent && std::find(kTableConstraints.begin(), kTableConstraints.end(),
                                                 t.text) != kTableConstraints.end()) {
        return not_supported("a table constraint", t,
                             "declare PRIMARY KEY or UNIQUE on the column itself");
    }
    if (!is_col_id_token(t)) {
        return syntax_error(t);
    }
    next();
    for (const ColumnDef& c : table.columns) {
        if (c.name == t.text) {
            return fail("42701", fmt::format("column \"{}\" specified more than once", t.text),
                        t.pos);
        }
    }
    if (!list_has_room(table.columns.size(), t)) {
        return false;
    }
    if (table.columns.size() >= kColumnsMax) {
        return fail("54011", fmt::format("tables can have at most {} columns", kColumnsMax), t.pos);
    }
    ColumnDef col;
    col.name = t.text;
    col.pos = t.pos;
    TypeSpec type;
    if (!parse_type(type, TypeUse::kColumn)) {
        return false;
    }
    col.type = type.type;
    col.varchar_max = type.varchar_max;
    if (!parse_column_constraints(table, col, has_primary_key)) {
        return false;
    }
    table.columns.push_back(std::move(col));
    return true;
}

bool Parser::parse_column_constraints(const CreateTable& table,
                                      ColumnDef& col,
                                      bool& has_primary_key) {
    const auto conflict = [&](const Token& at) {
        return fail(kSyntaxError,
                    fmt::format("conflicting NULL/NOT NULL declarations for column \"{}\" of "
                                "table \"{}\"",
                                col.name, table.table),
                    at.pos);
    };
    bool explicit_null = false;
    for (;;) {
        const Token& k = peek();
        if (accept_keyword("primary")) {
            if (!expect_keyword("key")) {
                return false;
            }
            if (has_primary_key) {
                return fail("42P16",
                            fmt::format("multiple primary keys for table \"{}\" are not allowed",
                                        table.table),
                            k.pos);
            }
            if (explicit_null) {
                return conflict(k);
            }
            has_primary_key = true;
            col.primary_key = true;
        } else if (accept_keyword("unique")) {
            if (at_keyword("nulls")) {
                return not_supported("UNIQUE NULLS [NOT] DISTINCT", peek());
            }
            col.unique = true;
        } else if (at_keyword("not") && at_keyword("null", 1)) {
            next();
            next();
            if (explicit_null) {
                return conflict(k);
            }
            col.not_null = true;
        } else if (accept_keyword("null")) {
            if (col.not_null || col.primary_key) {
                return conflict(k);
            }
            explicit_null = true;
        } else if (at_keyword("default")) {
            if (!parse_default(col, table, next())) {
                return false;
            }
        } else if (k.kind == TokenKind::kIdent &&
                   (k.text == "constraint" || k.text == "check" || k.text == "references" ||
                    k.text == "generated" || k.text == "collate" || k.text == "deferrable" ||
                    k.text == "initially" || (k.text == "not" && at_keyword("deferrable", 1)))) {
            return not_supported(upper(k.text) + " in a column definition", k);
        } else {
            return true;
        }
    }
}

// DEFAULT takes PostgreSQL's b_expr (no AND, no IS, so that `DEFAULT 0 NOT NULL` reads as a
// default and a constraint); the subset allows a constant or now(), possibly cast.
bool Parser::parse_default(ColumnDef& col, const CreateTable& table, const Token& keyword) {
    const Token& first = peek();
    if (col.default_value.has_value()) {
        return fail(kSyntaxError,
                    fmt::format("multiple default values specified for column \"{}\" of table "
                                "\"{}\"",
                                col.name, table.table),
                    keyword.pos);
    }
    Node value = parse_additive(1);
    if (!value) {
        return false;
    }
    const Expr* e = value.expr.get();
    while (e->kind == Expr::Kind::kCast || e->kind == Expr::Kind::kNegate) {
        e = e->args[0].get();
    }
    const bool constant = e->kind == Expr::Kind::kLiteral ||
                          (e->kind == Expr::Kind::kFunction && e->name == "now" && e->args.empty());
    if (!constant) {
        return not_supported("a DEFAULT other than a constant or now()", first);
    }
    col.default_value = std::move(value.expr);
    return true;
}

bool Parser::parse_drop(Statement& out) {
    DropTable drop;
    const Token& drop_token = next();
    if (!at_keyword("table")) {
        const Token& t = peek();
        if (t.kind != TokenKind::kIdent) {
            return syntax_error(t);
        }
        return not_supported(fmt::format("DROP {}", upper(t.text)), drop_token);
    }
    next();  // TABLE
    if (at_keyword("if")) {
        next();
        if (!expect_keyword("exists")) {
            return false;
        }
        drop.if_exists = true;
    }
    if (!parse_table_name(drop.table)) {
        return false;
    }
    if (at_op(",")) {
        return not_supported("dropping several tables in one statement", peek());
    }
    // Nothing can depend on a table of the SQL mode, so CASCADE drops what RESTRICT does.
    if (!accept_keyword("cascade")) {
        accept_keyword("restrict");
    }
    out = std::move(drop);
    return true;
}

bool Parser::parse_transaction(Statement& out) {
    const Token& verb = next();
    Transaction tx;
    if (verb.text == "begin" || verb.text == "start") {
        if (verb.text == "start" && !expect_keyword("transaction")) {
            return false;
        }
        if (verb.text == "begin" && !accept_keyword("work")) {
            accept_keyword("transaction");
        }
        if (!parse_transaction_modes()) {
            return false;
        }
        tx.verb = TransactionVerb::kBegin;
    } else {
        if ((verb.text == "commit" || verb.text == "rollback") && at_keyword("prepared")) {
            return not_supported(fmt::format("{} PREPARED", upper(verb.text)), verb);
        }
        if (!accept_keyword("work")) {
            accept_keyword("transaction");
        }
        const bool commit = verb.text == "commit" || verb.text == "end";
        if (!commit && at_keyword("to")) {
            return not_supported("a savepoint", peek());
        }
        if (!parse_and_chain()) {
            return false;
        }
        tx.verb = commit ? TransactionVerb::kCommit : TransactionVerb::kRollback;
    }
    out = tx;
    return true;
}

// BEGIN's modes: the subset runs every transaction READ COMMITTED and READ WRITE, so those are
// accepted, and any other mode is refused rather than silently weakened.
bool Parser::parse_transaction_modes() {
    for (bool first = true;; first = false) {
        const bool comma = !first && accept_op(",");  // modes are separated by commas or spaces
        const Token& t = peek();
        if (accept_keyword("isolation")) {
            if (!expect_keyword("level")) {
                return false;
            }
            const Token& level = peek();
            if (at_keyword("read") && at_keyword("committed", 1)) {
                next();
                next();
                continue;
            }
            if (at_keyword("serializable")) {
                return not_supported("isolation level SERIALIZABLE", level, "use READ COMMITTED");
            }
            if ((at_keyword("repeatable") || at_keyword("read")) &&
                peek(1).kind == TokenKind::kIdent) {
                return not_supported(
                    fmt::format("isolation level {} {}", upper(level.text), upper(peek(1).text)),
                    level, "use READ COMMITTED");
            }
            return syntax_error(level);
        }
        if (at_keyword("read") && at_keyword("write", 1)) {
            next();
            next();
        } else if (at_keyword("read") && at_keyword("only", 1)) {
            return not_supported("a READ ONLY transaction", t);
        } else if (at_keyword("deferrable") || (at_keyword("not") && at_keyword("deferrable", 1))) {
            return not_supported("DEFERRABLE", t);
        } else {
            return comma ? syntax_error(t) : true;
        }
    }
}

bool Parser::parse_and_chain() {
    if (!accept_keyword("and")) {
        return true;
    }
    if (at_keyword("chain")) {
        return not_supported("AND CHAIN", peek());
    }
    return expect_keyword("no") && expect_keyword("chain");
}

bool Parser::parse_set(Statement& out) {
    next();  // SET
    if (at_keyword("local")) {
        return not_supported("SET LOCAL", peek());
    }
    if (at_keyword("session") &&
        (at_keyword("authorization", 1) || at_keyword("characteristics", 1))) {
        return not_supported("SET SESSION " + upper(peek(1).text), peek());
    }
    accept_keyword("session");
    for (std::string_view word : {"transaction", "role", "constraints"}) {
        if (at_keyword(word)) {
            return not_supported("SET " + upper(word), peek());
        }
    }
    SetVar set;
    if (at_keyword("time") && at_keyword("zone", 1)) {
        next();
        next();
        set.name = "timezone";
        if (!accept_keyword("local") && !parse_set_value(set.value)) {
            return false;
        }
    } else if (at_keyword("names") || at_keyword("schema")) {
        set.name = next().text == "names" ? "client_encoding" : "search_path";
        if (!parse_set_value(set.value)) {
            return false;
        }
    } else {
        if (!parse_var_name(set.name)) {
            return false;
        }
        if (at_keyword("from") && at_keyword("current", 1)) {
            return not_supported("SET ... FROM CURRENT", peek());
        }
        if (!accept_keyword("to") && !expect_op("=")) {
            return false;
        }
        if (!parse_set_value(set.value)) {
            return false;
        }
    }
    out = std::move(set);
    return true;
}

// One value: a string, a name, a number (signed), or DEFAULT (nullopt). PostgreSQL keeps an
// integer as its value ("007" is "7") and any other number as written.
bool Parser::parse_set_value(std::optional<std::string>& value) {
    if (accept_keyword("default")) {
        value.reset();
        return true;
    }
    const bool negative = at_op("-");
    const bool signed_number = negative || at_op("+");
    if (signed_number) {
        next();
    }
    const Token& t = peek();
    if (t.kind == TokenKind::kInteger) {
        value = set_integer_text(t.text, negative);
    } else if (t.kind == TokenKind::kNumeric) {
        value = (negative ? "-" : "") + t.text;
    } else if (signed_number) {
        return syntax_error(t);
    } else if (t.kind == TokenKind::kString || t.kind == TokenKind::kQuotedIdent ||
               (t.kind == TokenKind::kIdent && (!is_reserved(t.text) || t.text == "true" ||
                                                t.text == "false" || t.text == "on"))) {
        value = t.text;
    } else {
        return syntax_error(t);
    }
    next();
    if (at_op(",")) {
        return not_supported("SET with a list of values", peek());
    }
    return true;
}

bool Parser::parse_reset(Statement& out) {
    next();  // RESET
    SetVar set;
    if (accept_keyword("all")) {
        set.name = "all";
    } else if (at_keyword("time") && at_keyword("zone", 1)) {
        next();
        next();
        set.name = "timezone";
    } else if (at_keyword("session") || at_keyword("role") || at_keyword("transaction")) {
        return not_supported("RESET " + upper(peek().text), peek());
    } else if (!parse_var_name(set.name)) {
        return false;
    }
    out = std::move(set);
    return true;
}

bool Parser::parse_show(Statement& out) {
    next();  // SHOW
    Show show;
    if (accept_keyword("all")) {
        show.name = "all";
    } else if (at_keyword("time") && at_keyword("zone", 1)) {
        next();
        next();
        show.name = "timezone";
    } else if (at_keyword("transaction") && at_keyword("isolation", 1)) {
        next();
        next();
        if (!expect_keyword("level")) {
            return false;
        }
        show.name = "transaction_isolation";
    } else if (at_keyword("session") && at_keyword("authorization", 1)) {
        next();
        next();
        show.name = "session_authorization";
    } else if (!parse_var_name(show.name)) {
        return false;
    }
    out = std::move(show);
    return true;
}

// A configuration parameter's name: ColId ('.' ColId)*, lower-cased (names are case-insensitive).
bool Parser::parse_var_name(std::string& name) {
    for (;;) {
        const Token& t = peek();
        if (!is_col_id_token(t)) {
            return syntax_error(t);
        }
        next();
        for (char c : t.text) {
            name.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
        }
        if (!at_op(".")) {
            return true;
        }
        name.push_back('.');
        next();
    }
}

// A table: t, or public.t (the only schema of the SQL mode).
bool Parser::parse_table_name(std::string& table) {
    const Token& t = peek();
    if (!is_col_id_token(t)) {
        return syntax_error(t);
    }
    next();
    if (!at_op(".")) {
        table = t.text;
        return true;
    }
    next();
    const Token& name = peek();
    if (!is_name_token(name)) {
        return syntax_error(name);
    }
    next();
    if (at_op(".")) {
        return not_supported("a cross-database reference", t);
    }
    if (t.text != "public") {
        return not_supported(fmt::format("schema \"{}\"", t.text), t,
                             "the tables of the SQL mode are in schema \"public\"");
    }
    table = name.text;
    return true;
}

// ---------------------------------------------------------------------------------------------
// Expressions

Node Parser::combine(ExprPtr e, std::vector<Node> children, const Token& at) {
    uint32_t height = 0;
    for (Node& child : children) {
        RL_ASSERT(child.expr != nullptr);
        height = std::max(height, child.height);
        e->args.push_back(std::move(child.expr));
    }
    if (height + 1 > limits_.depth_max) {
        return too_deep(at);
    }
    return Node{std::move(e), height + 1};
}

Node Parser::binary(BinaryOp op, const Token& op_token, Node lhs, Node rhs) {
    ExprPtr e = new_expr(Expr::Kind::kBinary, op_token.pos);
    e->op = op;
    std::vector<Node> children;
    children.push_back(std::move(lhs));
    children.push_back(std::move(rhs));
    return combine(std::move(e), std::move(children), op_token);
}

Node Parser::parse_expr(uint32_t level) {
    if (level > limits_.depth_max) {
        return too_deep(peek());
    }
    Node lhs = parse_is(level);
    while (lhs && at_keyword("and")) {
        const Token& op = next();
        Node rhs = parse_is(level);
        if (!rhs) {
            return Node{};
        }
        lhs = binary(BinaryOp::kAnd, op, std::move(lhs), std::move(rhs));
    }
    if (lhs && at_keyword("or")) {
        return not_supported("OR", peek(), "use AND");
    }
    return lhs;
}

// IS [NOT] NULL, ISNULL, NOTNULL: below the comparisons, as in PostgreSQL 9.5 and later.
Node Parser::parse_is(uint32_t level) {
    Node operand = parse_comparison(level);
    while (operand && (at_keyword("is") || at_keyword("isnull") || at_keyword("notnull"))) {
        const Token& is = next();
        bool negated = is.text == "notnull";
        if (is.text == "is") {
            negated = accept_keyword("not");
            if (!accept_keyword("null")) {
                const Token& t = peek();
                static constexpr std::array<std::string_view, 11> kTests = {
                    "true", "false", "unknown", "distinct", "document", "normalized",
                    "json", "nfc",   "nfd",     "nfkc",     "nfkd",
                };
                if (t.kind == TokenKind::kIdent &&
                    std::find(kTests.begin(), kTests.end(), t.text) != kTests.end()) {
                    return not_supported(
                        fmt::format("IS {}{}{}", negated ? "NOT " : "", upper(t.text),
                                    t.text == "distinct" ? " FROM" : ""),
                        is);
                }
                return syntax_error(t);
            }
        }
        ExprPtr e = new_expr(Expr::Kind::kIsNull, is.pos);
        e->negated = negated;
        std::vector<Node> children;
        children.push_back(std::move(operand));
        operand = combine(std::move(e), std::move(children), is);
    }
    return operand;
}

// Comparisons do not associate: `a = b = c` is a syntax error at the second operator.
Node Parser::parse_comparison(uint32_t level) {
    Node lhs = parse_additive(level);
    if (!lhs || !refuse_predicate()) {
        return Node{};
    }
    if (peek().kind != TokenKind::kOp || !is_comparison(peek().text)) {
        return lhs;
    }
    const Token& op = next();
    Node rhs = parse_additive(level);
    if (!rhs || !refuse_predicate()) {
        return Node{};
    }
    if (peek().kind == TokenKind::kOp && is_comparison(peek().text)) {
        return syntax_error(peek());
    }
    return binary(comparison_op(op.text), op, std::move(lhs), std::move(rhs));
}

// Operators and predicates that may follow an operand in PostgreSQL but not in the subset.
bool Parser::refuse_predicate() {
    const Token& t = peek();
    if (t.kind == TokenKind::kOp) {
        const bool operator_chars =
            t.text.find_first_not_of("~!@#^&|`?+-*/%<>=") == std::string::npos;
        if (operator_chars && !is_comparison(t.text) && t.text != "+" && t.text != "-") {
            return not_supported(fmt::format("the operator {}", t.text), t);
        }
        return true;
    }
    if (t.kind != TokenKind::kIdent) {
        return true;
    }
    for (std::string_view word : {"like", "ilike", "similar", "between", "in", "overlaps"}) {
        if (t.text == word) {
            return not_supported(upper(word), t);
        }
        if (t.text == "not" && at_keyword(word, 1)) {
            return not_supported("NOT " + upper(word), t);
        }
    }
    if (t.text == "at" && (at_keyword("time", 1) || at_keyword("local", 1))) {
        return not_supported("AT TIME ZONE", t);
    }
    if (t.text == "collate") {
        return not_supported("COLLATE", t);
    }
    return true;
}

Node Parser::parse_additive(uint32_t level) {
    Node lhs = parse_unary(level);
    while (lhs && (at_op("+") || at_op("-"))) {
        const Token& op = next();
        Node rhs = parse_unary(level);
        if (!rhs) {
            return Node{};
        }
        lhs = binary(op.text == "+" ? BinaryOp::kAdd : BinaryOp::kSub, op, std::move(lhs),
                     std::move(rhs));
    }
    return lhs;
}

// Unary minus. Minus signs directly before an integer constant fold into it, as PostgreSQL's
// doNegate folds them (but not before a cast: `-1::int` is -(1::int)).
Node Parser::parse_unary(uint32_t level) {
    if (level > limits_.depth_max) {
        return too_deep(peek());
    }
    if (at_op("+")) {
        return not_supported("the unary operator +", peek());
    }
    if (!at_op("-")) {
        return parse_postfix(level);
    }
    size_t minus_signs = 0;
    while (at_op("-", minus_signs)) {
        ++minus_signs;
    }
    if (peek(minus_signs).kind == TokenKind::kInteger && !at_op("::", minus_signs + 1) &&
        !at_op("[", minus_signs + 1)) {
        const uint32_t pos = peek().pos;
        for (size_t i = 0; i < minus_signs; ++i) {
            next();
        }
        return integer_literal(next(), minus_signs % 2 == 1, pos);
    }
    const Token& minus = next();
    Node operand = parse_unary(level + 1);
    if (!operand) {
        return Node{};
    }
    std::vector<Node> children;
    children.push_back(std::move(operand));
    return combine(new_expr(Expr::Kind::kNegate, minus.pos), std::move(children), minus);
}

// An integer constant: int4 when its value fits, else int8, as PostgreSQL types them.
Node Parser::integer_literal(const Token& digits, bool negative, uint32_t pos) {
    RL_ASSERT(digits.kind == TokenKind::kInteger);
    constexpr uint64_t kMagnitudeMax = uint64_t{1} << 63;  // |INT64_MIN|
    uint64_t magnitude = 0;
    bool fits = true;
    for (char c : digits.text) {
        const auto d = static_cast<uint64_t>(c - '0');
        if (magnitude > (kMagnitudeMax - d) / 10) {
            fits = false;
            break;
        }
        magnitude = magnitude * 10 + d;
    }
    if (!fits || (!negative && magnitude == kMagnitudeMax)) {
        return fail("22003",
                    fmt::format("value \"{}{}\" is out of range for type bigint",
                                negative ? "-" : "", digits.text),
                    pos);
    }
    // Negated in unsigned arithmetic, so that 2^63 becomes INT64_MIN without overflow.
    const auto value = static_cast<int64_t>(negative ? ~magnitude + 1 : magnitude);
    ExprPtr e = new_expr(Expr::Kind::kLiteral, pos);
    if (value >= std::numeric_limits<int32_t>::min() &&
        value <= std::numeric_limits<int32_t>::max()) {
        e->literal = Value::of_int4(static_cast<int32_t>(value));
    } else {
        e->literal = Value::of_int8(value);
    }
    return Node{std::move(e), 1};
}

// Postfix forms that bind tighter than unary minus: casts (::), and refused subscripts.
Node Parser::parse_postfix(uint32_t level) {
    Node operand = parse_primary(level);
    while (operand) {
        if (at_op("[")) {
            return not_supported("an array subscript", peek());
        }
        if (!at_op("::")) {
            return operand;
        }
        const Token& cast = next();
        TypeSpec type;
        if (!parse_type(type, TypeUse::kCast)) {
            return Node{};
        }
        ExprPtr e = new_expr(Expr::Kind::kCast, cast.pos);
        e->cast_type = type.type;
        std::vector<Node> children;
        children.push_back(std::move(operand));
        operand = combine(std::move(e), std::move(children), cast);
    }
    return operand;
}

Node Parser::parse_primary(uint32_t level) {
    const Token& t = peek();
    switch (t.kind) {
        case TokenKind::kInteger:
            return integer_literal(next(), false, t.pos);
        case TokenKind::kNumeric:
            return not_supported("a numeric constant", t,
                                 "the SQL mode has no numeric type; use integers");
        case TokenKind::kString: {
            next();
            ExprPtr e = new_expr(Expr::Kind::kLiteral, t.pos);
            e->literal = Value::of_unknown(t.text);
            return Node{std::move(e), 1};
        }
        case TokenKind::kParam:
            return parse_param();
        case TokenKind::kIdent:
        case TokenKind::kQuotedIdent:
            return parse_name_expr(level);
        case TokenKind::kOp:
            if (t.text == "(") {
                return parse_paren(level);
            }
            if (t.text != "*" && !is_comparison(t.text) &&
                t.text.find_first_not_of("~!@#^&|`?+-*/%<>=") == std::string::npos) {
                return not_supported(fmt::format("the prefix operator {}", t.text), t);
            }
            return syntax_error(t);
        case TokenKind::kEnd:
        case TokenKind::kError:
            return syntax_error(t);
    }
    RL_PANIC("unknown TokenKind");
}

Node Parser::parse_param() {
    const Token& t = next();
    if (t.param == 0) {
        return fail("42P02", "there is no parameter $0", t.pos);
    }
    if (t.param > limits_.params_max) {
        return fail(kLimitExceeded,
                    fmt::format("parameter {} is beyond ${}, the limit of the SQL mode",
                                query_.substr(t.begin, t.end - t.begin), limits_.params_max),
                    t.pos);
    }
    params_max_ = std::max(params_max_, t.param);
    ExprPtr e = new_expr(Expr::Kind::kParam, t.pos);
    e->param = t.param;
    return Node{std::move(e), 1};
}

Node Parser::parse_paren(uint32_t level) {
    next();  // (
    if (at_keyword("select") || at_keyword("values") || at_keyword("with") || at_keyword("table")) {
        return not_supported("a subquery", peek());
    }
    Node inner = parse_expr(level + 1);
    if (!inner) {
        return Node{};
    }
    if (at_op(",")) {
        return not_supported("a row constructor", peek());
    }
    const Token& close = peek();
    if (!expect_op(")")) {
        return Node{};
    }
    if (inner.height + 1 > limits_.depth_max) {
        return too_deep(close);
    }
    ++inner.height;
    return inner;
}

// Keywords that start an expression: constants, CAST, the SQL value functions, and constructs
// the subset refuses. Sets `handled` when the keyword was one of them.
Node Parser::parse_keyword_expr(uint32_t level, bool& handled) {
    const Token& t = peek();
    const std::string& w = t.text;
    const bool call = at_op("(", 1);
    handled = true;
    if (w == "true" || w == "false" || w == "null") {
        next();
        ExprPtr e = new_expr(Expr::Kind::kLiteral, t.pos);
        e->literal = w == "null" ? Value::null() : Value::of_bool(w == "true");
        return Node{std::move(e), 1};
    }
    if (w == "cast") {
        return parse_cast_function(level);
    }
    if (w == "current_timestamp") {
        if (call) {
            return not_supported("CURRENT_TIMESTAMP with a precision", t);
        }
        next();
        ExprPtr e = new_expr(Expr::Kind::kFunction, t.pos);
        e->name = "now";
        return Node{std::move(e), 1};
    }
    static constexpr std::array<std::string_view, 13> kRefused = {
        "array",          "case",         "current_catalog", "current_date",
        "current_role",   "current_time", "current_user",    "localtime",
        "localtimestamp", "not",          "session_user",    "system_user",
        "user",
    };
    if (std::find(kRefused.begin(), kRefused.end(), w) != kRefused.end()) {
        return not_supported(upper(w), t, w == "not" ? "compare with = or <>" : "");
    }
    if ((w == "exists" || w == "row" || w == "any" || w == "some" || w == "all") && call) {
        return not_supported(upper(w), t);
    }
    if (w == "current_schema" && !call) {
        return not_supported("CURRENT_SCHEMA", t);
    }
    if (w == "interval" && peek(1).kind == TokenKind::kString) {
        return not_supported("type interval", t);
    }
    handled = false;
    return Node{};
}

// An expression that starts with a name: a keyword form, a typed constant (`timestamptz '...'`),
// a function call (`f(...)`, `pg_catalog.f(...)`) or a column (`c`, `t.c`, `public.t.c`).
Node Parser::parse_name_expr(uint32_t level) {
    const Token& first = peek();
    if (first.kind == TokenKind::kIdent) {
        bool handled = false;
        Node keyword = parse_keyword_expr(level, handled);
        if (handled) {
            return keyword;
        }
        static constexpr std::array<std::string_view, 6> kTypeWords = {
            "char", "character", "double", "national", "time", "timestamp",
        };
        const bool type_words =
            std::find(kTypeWords.begin(), kTypeWords.end(), first.text) != kTypeWords.end() &&
            peek(1).kind == TokenKind::kIdent &&
            (at_keyword("with", 1) || at_keyword("without", 1) || at_keyword("varying", 1) ||
             at_keyword("precision", 1));
        if (type_words) {
            return parse_typed_literal();
        }
        if (is_reserved(first.text)) {
            return syntax_error(first);
        }
    }
    if (peek(1).kind == TokenKind::kString) {
        return parse_typed_literal();
    }
    std::vector<const Token*> parts{&next()};
    while (at_op(".")) {
        next();
        if (at_op("*")) {
            return not_supported("table.*", peek(), "use *");
        }
        if (!is_name_token(peek())) {
            return syntax_error(peek());
        }
        parts.push_back(&next());
        if (parts.size() > 3) {
            return not_supported("a name of more than three parts", first);
        }
    }
    if (at_op("(")) {
        if (parts.size() == 2 && parts[0]->text == "pg_catalog") {
            return parse_function(parts[1]->text, *parts[1], level);
        }
        if (parts.size() > 1) {
            return not_supported(fmt::format("a function outside pg_catalog ({}.{})",
                                             parts[0]->text, parts[1]->text),
                                 first);
        }
        return parse_function(first.text, first, level);
    }
    if (first.kind == TokenKind::kIdent && is_type_func_name(first.text)) {
        return syntax_error(first);
    }
    if (parts.size() == 3) {
        if (parts[0]->text != "public") {
            return not_supported(fmt::format("schema \"{}\"", parts[0]->text), first,
                                 "the tables of the SQL mode are in schema \"public\"");
        }
        parts.erase(parts.begin());
    }
    ExprPtr e = new_expr(Expr::Kind::kColumn, first.pos);
    e->name = parts.back()->text;
    if (parts.size() == 2) {
        e->qualifier = parts[0]->text;
    }
    return Node{std::move(e), 1};
}

// type 'string': PostgreSQL's typed constant, the string cast to the type.
Node Parser::parse_typed_literal() {
    const Token& first = peek();
    TypeSpec type;
    if (!parse_type(type, TypeUse::kCast)) {
        return Node{};
    }
    const Token& s = peek();
    if (s.kind != TokenKind::kString) {
        return syntax_error(s);
    }
    next();
    ExprPtr lit = new_expr(Expr::Kind::kLiteral, s.pos);
    lit->literal = Value::of_unknown(s.text);
    ExprPtr cast = new_expr(Expr::Kind::kCast, first.pos);
    cast->cast_type = type.type;
    cast->args.push_back(std::move(lit));
    return Node{std::move(cast), 2};
}

Node Parser::parse_function(std::string name, const Token& name_token, uint32_t level) {
    next();  // (
    std::vector<Node> args;
    if (at_op("*") && at_op(")", 1)) {
        args.push_back(Node{new_expr(Expr::Kind::kStar, next().pos), 1});
    } else if (!at_op(")") && !parse_function_args(args, level)) {
        return Node{};
    }
    if (!expect_op(")")) {
        return Node{};
    }
    if (at_keyword("within") && at_keyword("group", 1)) {
        return not_supported("WITHIN GROUP", peek());
    }
    if (at_keyword("filter") && at_op("(", 1)) {
        return not_supported("FILTER", peek());
    }
    if (at_keyword("over")) {
        return not_supported("a window function (OVER)", peek());
    }
    ExprPtr e = new_expr(Expr::Kind::kFunction, name_token.pos);
    e->name = std::move(name);
    return combine(std::move(e), std::move(args), name_token);
}

bool Parser::parse_function_args(std::vector<Node>& args, uint32_t level) {
    for (std::string_view word : {"distinct", "all", "variadic"}) {
        if (at_keyword(word)) {
            return not_supported(upper(word) + " in function arguments", peek());
        }
    }
    for (;;) {
        const Token& first = peek();
        if (is_name_token(first) && (at_op("=>", 1) || at_op(":=", 1))) {
            return not_supported("a named function argument", first);
        }
        Node arg = parse_expr(level + 1);
        if (!arg || !list_has_room(args.size(), first)) {
            return false;
        }
        args.push_back(std::move(arg));
        if (at_keyword("order")) {
            return not_supported("ORDER BY in function arguments", peek());
        }
        if (!accept_op(",")) {
            return true;
        }
    }
}

Node Parser::parse_cast_function(uint32_t level) {
    const Token& cast = next();  // CAST
    if (!expect_op("(")) {
        return Node{};
    }
    Node operand = parse_expr(level + 1);
    TypeSpec type;
    if (!operand || !expect_keyword("as") || !parse_type(type, TypeUse::kCast) || !expect_op(")")) {
        return Node{};
    }
    ExprPtr e = new_expr(Expr::Kind::kCast, cast.pos);
    e->cast_type = type.type;
    std::vector<Node> children;
    children.push_back(std::move(operand));
    return combine(std::move(e), std::move(children), cast);
}

// ---------------------------------------------------------------------------------------------
// Types

bool Parser::parse_type(TypeSpec& out, TypeUse use) {
    const Token& first = peek();
    if (at_keyword("pg_catalog") && at_op(".", 1)) {
        next();
        next();
    }
    const Token& t = peek();
    std::string name;
    if (t.kind == TokenKind::kQuotedIdent) {
        // A quoted name is a pg_type name, never one of SQL's spellings ("integer" is no type).
        name = next().text;
        if (name == "int" || name == "integer" || name == "bigint" || name == "boolean") {
            return not_supported(fmt::format("type \"{}\"", name), first);
        }
    } else if (t.kind == TokenKind::kIdent && !is_reserved(t.text)) {
        next();
        if (!parse_type_words(name, t)) {
            return false;
        }
    } else {
        return syntax_error(t);
    }
    if (name == "text") {
        out = TypeSpec{Type::kText, 0};
    } else if (name == "varchar") {
        out = TypeSpec{Type::kText, 0};
        if (at_op("(") && !parse_varchar_length(out, use)) {
            return false;
        }
    } else if (name == "int" || name == "integer" || name == "int4") {
        out = TypeSpec{Type::kInt4, 0};
    } else if (name == "bigint" || name == "int8") {
        out = TypeSpec{Type::kInt8, 0};
    } else if (name == "boolean" || name == "bool") {
        out = TypeSpec{Type::kBool, 0};
    } else if (name == "timestamptz" || name == "timestamp with time zone") {
        out = TypeSpec{Type::kTimestamptz, 0};
        if (at_op("(")) {
            return not_supported("a timestamp precision", peek());
        }
    } else {
        return not_supported(fmt::format("type \"{}\"", name), first,
                             name.starts_with("timestamp") ? "use timestamptz" : "");
    }
    if (at_op("[") || at_keyword("array")) {
        return not_supported("an array type", peek());
    }
    return true;
}

// SQL's multi-word type names, spelled as PostgreSQL's format_type spells them.
bool Parser::parse_type_words(std::string& name, const Token& first) {
    name = first.text;
    if ((name == "character" || name == "char") && accept_keyword("varying")) {
        name = "varchar";
    } else if (name == "double" && accept_keyword("precision")) {
        name = "double precision";
    } else if (name == "timestamp" || name == "time") {
        if (at_op("(")) {
            return not_supported(fmt::format("a {} precision", name), peek());
        }
        if (at_keyword("with") || at_keyword("without")) {
            const bool with = next().text == "with";
            if (!expect_keyword("time") || !expect_keyword("zone")) {
                return false;
            }
            name += with ? " with time zone" : " without time zone";
        } else {
            name += " without time zone";
        }
    }
    return true;
}

// varchar(n): a column keeps n; a cast to varchar(n) truncates in PostgreSQL, which the subset's
// casts cannot express, so it is refused there.
bool Parser::parse_varchar_length(TypeSpec& out, TypeUse use) {
    const Token& open = next();  // (
    const Token& n = peek();
    if (n.kind != TokenKind::kInteger) {
        return syntax_error(n);
    }
    next();
    if (!expect_op(")")) {
        return false;
    }
    if (use == TypeUse::kCast) {
        return not_supported("a cast to varchar(n)", open, "cast to text");
    }
    uint64_t length = 0;
    for (char c : n.text) {
        length = std::min<uint64_t>(length * 10 + static_cast<uint64_t>(c - '0'), kVarcharMax + 1);
    }
    if (length == 0) {
        return fail("22023", "length for type varchar must be at least 1", n.pos);
    }
    if (length > kVarcharMax) {
        return fail("22023", fmt::format("length for type varchar cannot exceed {}", kVarcharMax),
                    n.pos);
    }
    out.varchar_max = static_cast<uint32_t>(length);
    return true;
}

}  // namespace

Result<std::vector<ParsedStatement>, SyntaxError> parse(std::string_view query,
                                                        const ParseLimits& limits) {
    if (query.size() > limits.query_bytes_max) {
        return SyntaxError{std::string(kLimitExceeded),
                           fmt::format("the query is {} bytes, more than {}, the limit of the SQL "
                                       "mode",
                                       query.size(), limits.query_bytes_max),
                           0};
    }
    // The tree walkers (to_string, the engine's evaluator, destructors) recurse once per level.
    RL_ASSERT(limits.depth_max <= kDepthMaxCap);
    if (auto bad = check_encoding(query)) {
        return *bad;
    }
    return Parser(query, lex(query, limits.tokens_max), limits).run();
}

}  // namespace raftlock::statemachine::sql
