#include "statemachine/sql/ast.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::statemachine::sql {

namespace {

// Type names in the text forms: PostgreSQL's short internal names, one word each.
std::string_view short_type_name(Type type) {
    switch (type) {
        case Type::kUnknown:
            return "unknown";
        case Type::kBool:
            return "bool";
        case Type::kInt4:
            return "int4";
        case Type::kInt8:
            return "int8";
        case Type::kText:
            return "text";
        case Type::kTimestamptz:
            return "timestamptz";
    }
    RL_PANIC("unknown Type");
}

// A string in double quotes, with backslash escapes for quotes, backslashes and control bytes,
// so that any content reads back unambiguously and stays on one line.
std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(c);
        } else if (u < 0x20 || u == 0x7f) {
            out += fmt::format("\\x{:02x}", u);
        } else {
            out.push_back(c);
        }
    }
    out.push_back('"');
    return out;
}

// A name bare when it is a plain lower-case identifier, quoted otherwise (empty, upper case,
// spaces, ...), so that `from=""` means "no table" and `"a b"` is one name. Setting names may hold
// dots (`myapp.setting`), which in a column name would read as a qualifier.
std::string name_text(std::string_view name, bool dots = false) {
    bool plain = !name.empty() && !(name[0] >= '0' && name[0] <= '9') && name[0] != '$';
    for (char c : name) {
        plain = plain && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                          c == '$' || (dots && c == '.'));
    }
    return plain ? std::string(name) : quoted(name);
}

std::string literal_text(const Value& v) {
    if (v.is_null) {
        return v.type == Type::kUnknown ? "null" : fmt::format("null {}", short_type_name(v.type));
    }
    switch (v.type) {
        case Type::kBool:
            return v.boolean ? "bool true" : "bool false";
        case Type::kInt4:
        case Type::kInt8:
            return fmt::format("{} {}", short_type_name(v.type), v.integer);
        case Type::kText:
        case Type::kUnknown:
            return fmt::format("{} {}", short_type_name(v.type), quoted(v.text));
        case Type::kTimestamptz:
            return fmt::format("timestamptz {}", quoted(to_text(v).value()));
    }
    RL_PANIC("unknown Type");
}

const Expr& operand(const Expr& e, size_t i) {
    RL_ASSERT(i < e.args.size());
    RL_ASSERT(e.args[i] != nullptr);
    return *e.args[i];
}

std::string items_text(const std::vector<SelectItem>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) {
        RL_ASSERT(items[i].expr != nullptr);
        out += (i == 0 ? "" : ", ") + to_string(*items[i].expr);
        if (!items[i].alias.empty()) {
            out += " as " + name_text(items[i].alias);
        }
    }
    return out + "]";
}

std::string joined(const std::vector<ExprPtr>& exprs) {
    std::string out;
    for (size_t i = 0; i < exprs.size(); ++i) {
        RL_ASSERT(exprs[i] != nullptr);
        out += (i == 0 ? "" : ", ") + to_string(*exprs[i]);
    }
    return out;
}

std::string where_and_returning(const ExprPtr& where, const std::vector<SelectItem>& returning) {
    std::string out;
    if (where != nullptr) {
        out += " where " + to_string(*where);
    }
    if (!returning.empty()) {
        out += " returning " + items_text(returning);
    }
    return out;
}

std::string select_text(const Select& s) {
    std::string out =
        fmt::format("select items={} from={}", items_text(s.items), name_text(s.table));
    if (s.where != nullptr) {
        out += " where " + to_string(*s.where);
    }
    if (!s.order_by.empty()) {
        out += " order by [";
        for (size_t i = 0; i < s.order_by.size(); ++i) {
            RL_ASSERT(s.order_by[i].expr != nullptr);
            out += fmt::format("{}{} {}", i == 0 ? "" : ", ", to_string(*s.order_by[i].expr),
                               s.order_by[i].descending ? "desc" : "asc");
        }
        out += "]";
    }
    if (s.limit.has_value()) {
        RL_ASSERT(*s.limit != nullptr);
        out += " limit " + to_string(**s.limit);
    }
    if (s.lock != RowLockMode::kNone) {
        out += s.lock == RowLockMode::kForUpdate ? " for update" : " for share";
    }
    if (s.lock_wait != RowLockWait::kWait) {
        out += s.lock_wait == RowLockWait::kNowait ? " nowait" : " skip locked";
    }
    return out;
}

std::string insert_text(const Insert& ins) {
    std::string out = "insert into " + name_text(ins.table);
    if (!ins.columns.empty()) {
        out += " columns=[";
        for (size_t i = 0; i < ins.columns.size(); ++i) {
            out += (i == 0 ? "" : ", ") + name_text(ins.columns[i]);
        }
        out += "]";
    }
    out += " values=[";
    for (size_t i = 0; i < ins.rows.size(); ++i) {
        out += fmt::format("{}[{}]", i == 0 ? "" : ", ", joined(ins.rows[i]));
    }
    out += "]";
    if (ins.on_conflict_do_nothing) {
        out += " on conflict do nothing";
    }
    return out + where_and_returning(nullptr, ins.returning);
}

std::string update_text(const Update& up) {
    std::string out = fmt::format("update {} set [", name_text(up.table));
    for (size_t i = 0; i < up.assignments.size(); ++i) {
        const Assignment& a = up.assignments[i];
        RL_ASSERT(a.value != nullptr);
        out += fmt::format("{}{}={}", i == 0 ? "" : ", ", name_text(a.column), to_string(*a.value));
    }
    return out + "]" + where_and_returning(up.where, up.returning);
}

std::string column_text(const ColumnDef& c) {
    std::string out = name_text(c.name) + " ";
    if (c.type == Type::kText && c.varchar_max > 0) {
        out += fmt::format("varchar({})", c.varchar_max);
    } else {
        out += short_type_name(c.type);
    }
    if (c.primary_key) {
        out += " primary key";
    }
    if (c.unique) {
        out += " unique";
    }
    if (c.not_null) {
        out += " not null";
    }
    if (c.default_value.has_value()) {
        RL_ASSERT(*c.default_value != nullptr);
        out += " default " + to_string(**c.default_value);
    }
    return out;
}

std::string create_text(const CreateTable& t) {
    std::string out = fmt::format("create table{} {} [", t.if_not_exists ? " if not exists" : "",
                                  name_text(t.table));
    for (size_t i = 0; i < t.columns.size(); ++i) {
        out += (i == 0 ? "" : ", ") + column_text(t.columns[i]);
    }
    return out + "]";
}

}  // namespace

std::string to_string(const Expr& e) {
    switch (e.kind) {
        case Expr::Kind::kLiteral:
            return "lit " + literal_text(e.literal);
        case Expr::Kind::kParam:
            return fmt::format("${}", e.param);
        case Expr::Kind::kColumn:
            return e.qualifier.empty()
                       ? "col " + name_text(e.name)
                       : fmt::format("col {}.{}", name_text(e.qualifier), name_text(e.name));
        case Expr::Kind::kStar:
            return "*";
        case Expr::Kind::kFunction:
            return fmt::format("fn {}({})", name_text(e.name), joined(e.args));
        case Expr::Kind::kBinary:
            return fmt::format("({} {} {})", to_string(operand(e, 0)), to_string(e.op),
                               to_string(operand(e, 1)));
        case Expr::Kind::kNegate:
            return fmt::format("(- {})", to_string(operand(e, 0)));
        case Expr::Kind::kIsNull:
            return fmt::format("({} IS {}NULL)", to_string(operand(e, 0)), e.negated ? "NOT " : "");
        case Expr::Kind::kCast:
            return fmt::format("({}::{})", to_string(operand(e, 0)), short_type_name(e.cast_type));
    }
    RL_PANIC("unknown Expr::Kind");
}

std::string to_string(const Statement& statement) {
    if (const auto* s = std::get_if<Select>(&statement)) {
        return select_text(*s);
    }
    if (const auto* ins = std::get_if<Insert>(&statement)) {
        return insert_text(*ins);
    }
    if (const auto* up = std::get_if<Update>(&statement)) {
        return update_text(*up);
    }
    if (const auto* del = std::get_if<Delete>(&statement)) {
        return "delete from " + name_text(del->table) +
               where_and_returning(del->where, del->returning);
    }
    if (const auto* create = std::get_if<CreateTable>(&statement)) {
        return create_text(*create);
    }
    if (const auto* drop = std::get_if<DropTable>(&statement)) {
        return fmt::format("drop table{} {}", drop->if_exists ? " if exists" : "",
                           name_text(drop->table));
    }
    if (const auto* tx = std::get_if<Transaction>(&statement)) {
        switch (tx->verb) {
            case TransactionVerb::kBegin:
                return "begin";
            case TransactionVerb::kCommit:
                return "commit";
            case TransactionVerb::kRollback:
                return "rollback";
        }
        RL_PANIC("unknown TransactionVerb");
    }
    if (const auto* set = std::get_if<SetVar>(&statement)) {
        return fmt::format("set {}={}", name_text(set->name, true),
                           set->value.has_value() ? quoted(*set->value) : "default");
    }
    const auto* show = std::get_if<Show>(&statement);
    RL_ASSERT(show != nullptr);
    return "show " + name_text(show->name, true);
}

std::string_view to_string(BinaryOp op) {
    switch (op) {
        case BinaryOp::kEq:
            return "=";
        case BinaryOp::kNe:
            return "<>";
        case BinaryOp::kLt:
            return "<";
        case BinaryOp::kLe:
            return "<=";
        case BinaryOp::kGt:
            return ">";
        case BinaryOp::kGe:
            return ">=";
        case BinaryOp::kAdd:
            return "+";
        case BinaryOp::kSub:
            return "-";
        case BinaryOp::kAnd:
            return "AND";
    }
    RL_PANIC("unknown BinaryOp");
}

}  // namespace raftlock::statemachine::sql
