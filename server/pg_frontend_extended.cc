// The PostgreSQL front end: the extended query protocol (Parse, Bind, Describe, Execute, Close,
// Sync), with the binary formats of parameters and results.

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "server/pg_frontend.h"

namespace raftlock::server {

namespace {

// Per connection: prepared statements (count and query bytes) and open portals. PostgreSQL has no
// such limits; every one of ours is held in memory for the connection's lifetime.
constexpr size_t kPreparedMax = 1000;
constexpr size_t kPreparedBytesMax = 16u << 20;
constexpr size_t kPortalsMax = 1000;

std::string missing_statement(const std::string& name) {
    return name.empty() ? std::string("unnamed prepared statement does not exist")
                        : fmt::format("prepared statement \"{}\" does not exist", name);
}

// The offset of the first byte of `s` that is not valid UTF-8 (PostgreSQL's rules: no overlong
// forms, no surrogates, nothing above U+10FFFF, and no NUL), or nullopt when all of it is.
std::optional<size_t> invalid_utf8_at(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<uint8_t>(s[i]);
        size_t len = 0;
        uint8_t lo = 0x80;
        uint8_t hi = 0xBF;  // the bounds of the second byte
        if (b >= 0x01 && b <= 0x7F) {
            len = 1;
        } else if (b >= 0xC2 && b <= 0xDF) {
            len = 2;
        } else if (b >= 0xE0 && b <= 0xEF) {
            len = 3;
            lo = b == 0xE0 ? 0xA0 : 0x80;
            hi = b == 0xED ? 0x9F : 0xBF;
        } else if (b >= 0xF0 && b <= 0xF4) {
            len = 4;
            lo = b == 0xF0 ? 0x90 : 0x80;
            hi = b == 0xF4 ? 0x8F : 0xBF;
        } else {
            return i;
        }
        if (i + len > s.size()) {
            return i;
        }
        for (size_t k = 1; k < len; ++k) {
            const auto c = static_cast<uint8_t>(s[i + k]);
            if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) {
                return i;
            }
        }
        i += len;
    }
    return std::nullopt;
}

std::optional<sql::SqlError> check_utf8(std::string_view s) {
    if (const std::optional<size_t> at = invalid_utf8_at(s)) {
        return sql::SqlError{"22021",
                             fmt::format("invalid byte sequence for encoding \"UTF8\": 0x{:02x}",
                                         static_cast<uint8_t>(s[*at]))};
    }
    return std::nullopt;
}

sql::Type type_of_oid(uint32_t oid) {
    switch (oid) {
        case net::kPgOidBool:
            return sql::Type::kBool;
        case net::kPgOidInt2:
        case net::kPgOidInt4:
            return sql::Type::kInt4;
        case net::kPgOidInt8:
            return sql::Type::kInt8;
        case net::kPgOidText:
        case net::kPgOidVarchar:
            return sql::Type::kText;
        case net::kPgOidTimestamptz:
            return sql::Type::kTimestamptz;
        default:
            return sql::Type::kUnknown;
    }
}

// A text-format parameter: typed when its declared type is one the SQL mode parses, else an
// untyped literal that the statement's context types, as PostgreSQL's "unknown".
Result<sql::Value, sql::SqlError> decode_text_param(const std::string& raw, uint32_t oid) {
    if (auto bad = check_utf8(raw)) {
        return *bad;
    }
    const bool typed = oid == net::kPgOidBool || oid == net::kPgOidInt2 || oid == net::kPgOidInt4 ||
                       oid == net::kPgOidInt8 || oid == net::kPgOidTimestamptz;
    if (!typed) {
        return sql::Value::of_unknown(raw);
    }
    const sql::Type type = type_of_oid(oid);
    const std::string_view name = oid == net::kPgOidInt2 ? "smallint" : sql::type_name(type);
    bool out_of_range = false;
    std::optional<sql::Value> value = sql::parse_text(type, raw, &out_of_range);
    const bool int2_overflow = value && oid == net::kPgOidInt2 &&
                               (value->integer < std::numeric_limits<int16_t>::min() ||
                                value->integer > std::numeric_limits<int16_t>::max());
    if (out_of_range || int2_overflow) {
        return sql::SqlError{"22003",
                             fmt::format("value \"{}\" is out of range for type {}", raw, name)};
    }
    if (!value) {
        return sql::SqlError{"22P02",
                             fmt::format("invalid input syntax for type {}: \"{}\"", name, raw)};
    }
    return *value;
}

template <typename T>
Result<sql::Value, sql::SqlError> from_binary(Result<T, net::PgValueError> decoded,
                                              sql::Value (*make)(T)) {
    if (!decoded.ok()) {
        return sql::SqlError{std::string(decoded.error().sqlstate()), decoded.error().message};
    }
    return make(decoded.value());
}

// A binary-format parameter, by its type: the declared one, or the one Describe infers.
Result<sql::Value, sql::SqlError> decode_binary_param(const std::string& raw,
                                                      uint32_t oid,
                                                      size_t number) {
    switch (oid) {
        case net::kPgOidBool:
            return from_binary<bool>(net::decode_binary_bool(raw), &sql::Value::of_bool);
        case net::kPgOidInt2:
            return from_binary<int16_t>(net::decode_binary_int2(raw),
                                        [](int16_t v) { return sql::Value::of_int4(v); });
        case net::kPgOidInt4:
            return from_binary<int32_t>(net::decode_binary_int4(raw), &sql::Value::of_int4);
        case net::kPgOidInt8:
            return from_binary<int64_t>(net::decode_binary_int8(raw), &sql::Value::of_int8);
        case net::kPgOidTimestamptz:
            return from_binary<int64_t>(net::decode_binary_timestamptz(raw),
                                        &sql::Value::of_timestamptz);
        case net::kPgOidText:
        case net::kPgOidVarchar:
        case net::kPgOidUnknown:
            if (auto bad = check_utf8(raw)) {
                return *bad;
            }
            return oid == net::kPgOidUnknown ? sql::Value::of_unknown(raw)
                                             : sql::Value::of_text(raw);
        case 0:
            return sql::SqlError{
                "08P01",
                fmt::format("could not determine the data type of binary parameter ${}", number),
                {},
                "Declare the parameter's type in the Parse message, or send it in text format."};
        default:
            return sql::SqlError{
                "08P01",
                fmt::format("binary format of parameter ${} (type oid {}) is not supported", number,
                            oid)};
    }
}

// A result value in binary format, as its column's type (PostgreSQL's send functions).
Result<std::string, sql::SqlError> encode_binary(const sql::Value& value, sql::Type column) {
    const bool integer = value.type == sql::Type::kInt4 || value.type == sql::Type::kInt8;
    switch (column) {
        case sql::Type::kBool:
            if (value.type == sql::Type::kBool) {
                return net::encode_binary_bool(value.boolean);
            }
            break;
        case sql::Type::kInt4:
            if (integer && value.integer >= std::numeric_limits<int32_t>::min() &&
                value.integer <= std::numeric_limits<int32_t>::max()) {
                return net::encode_binary_int4(static_cast<int32_t>(value.integer));
            }
            break;
        case sql::Type::kInt8:
            if (integer) {
                return net::encode_binary_int8(value.integer);
            }
            break;
        case sql::Type::kTimestamptz:
            if (value.type == sql::Type::kTimestamptz) {
                auto bytes = net::encode_binary_timestamptz(value.integer);
                if (!bytes.ok()) {
                    return sql::SqlError{std::string(bytes.error().sqlstate()),
                                         bytes.error().message};
                }
                return std::move(bytes.value());
            }
            break;
        case sql::Type::kText:
        case sql::Type::kUnknown:
            return sql::to_text(value).value();  // text is its bytes in either format
    }
    // The engine typed a value unlike its column: a bug there, but this client should not see
    // a crash for it.
    return sql::SqlError{"XX000", fmt::format("a {} value in a {} column",
                                              sql::type_name(value.type), sql::type_name(column))};
}

}  // namespace

void PgFrontend::extended_error(Conn& c, const sql::SqlError& error, uint32_t offset_chars) {
    emit_error(c, error, offset_chars);
    c.skip_until_sync = true;
}

void PgFrontend::erase_statement(Conn& c, const std::string& name) {
    auto it = c.statements.find(name);
    if (it != c.statements.end()) {
        RL_ASSERT(c.statements_bytes >= it->second->text_bytes);
        c.statements_bytes -= it->second->text_bytes;
        c.statements.erase(it);
    }
}

void PgFrontend::parse(Conn& c, net::PgParse&& m) {
    if (!m.statement.empty() && c.statements.contains(m.statement)) {
        extended_error(
            c, {"42P05", fmt::format("prepared statement \"{}\" already exists", m.statement)});
        return;
    }
    auto pieces = split(m.sql);
    if (!pieces.ok()) {
        extended_error(c, pieces.error());
        return;
    }
    if (pieces.value().size() > 1) {
        extended_error(c, {"42601", "cannot insert multiple commands into a prepared statement"});
        return;
    }
    const size_t replaced = c.statements.contains(m.statement) ? 1 : 0;
    if (c.statements.size() - replaced >= kPreparedMax) {
        extended_error(c, {"54000", fmt::format("too many prepared statements (at most {} per "
                                                "connection)",
                                                kPreparedMax)});
        return;
    }
    erase_statement(c, m.statement);  // the unnamed statement is replaced
    if (c.statements_bytes + m.sql.size() > kPreparedBytesMax) {
        extended_error(c, {"54000", fmt::format("prepared statements too large (at most {} bytes "
                                                "of query text per connection)",
                                                kPreparedBytesMax)});
        return;
    }
    auto prepared = std::make_shared<Prepared>();
    size_t params = m.param_type_oids.size();
    if (!pieces.value().empty()) {
        params = std::max<size_t>(params, pieces.value()[0].parsed.params_max);
        prepared->piece = std::move(pieces.value()[0]);
    }
    prepared->param_oids = std::move(m.param_type_oids);
    prepared->param_oids.resize(params, 0);
    prepared->text_bytes = m.sql.size();
    c.statements_bytes += prepared->text_bytes;
    c.statements.emplace(m.statement, std::move(prepared));
    net::encode_parse_complete(c.out);
}

Result<sql::Description, sql::SqlError> PgFrontend::describe_piece(const Conn& c,
                                                                   const Piece& piece) const {
    if (const auto* show_op = std::get_if<sql::Show>(&piece.parsed.statement)) {
        sql::StatementResult shown = show(c, show_op->name);
        if (shown.error) {
            return *shown.error;
        }
        return sql::Description{{}, true, std::move(shown.columns)};
    }
    if (std::holds_alternative<sql::SetVar>(piece.parsed.statement)) {
        return sql::Description{};
    }
    return backend_.sql_describe(piece.text);
}

Result<std::vector<sql::Value>, sql::SqlError> PgFrontend::bind_params(const Prepared& statement,
                                                                       const net::PgBind& m) const {
    std::vector<sql::Value> values;
    values.reserve(m.params.size());
    std::optional<std::vector<sql::Type>> inferred;  // asked for once, when a binary one needs it
    for (size_t i = 0; i < m.params.size(); ++i) {
        uint32_t oid = statement.param_oids[i];
        if (!m.params[i]) {
            values.push_back(sql::Value::null(type_of_oid(oid)));
            continue;
        }
        if (m.param_format(i) == net::PgFormat::kText) {
            auto value = decode_text_param(*m.params[i], oid);
            if (!value.ok()) {
                return value.error();
            }
            values.push_back(std::move(value.value()));
            continue;
        }
        if (oid == 0 && statement.piece) {
            if (!inferred) {
                auto d = backend_.sql_describe(statement.piece->text);
                inferred = d.ok() ? std::move(d.value().params) : std::vector<sql::Type>{};
            }
            if (i < inferred->size() && (*inferred)[i] != sql::Type::kUnknown) {
                oid = oid_of((*inferred)[i]);
            }
        }
        auto value = decode_binary_param(*m.params[i], oid, i + 1);
        if (!value.ok()) {
            return value.error();
        }
        values.push_back(std::move(value.value()));
    }
    return values;
}

void PgFrontend::bind(Conn& c, net::PgBind&& m) {
    auto it = c.statements.find(m.statement);
    if (it == c.statements.end()) {
        extended_error(c, {"26000", missing_statement(m.statement)});
        return;
    }
    const std::shared_ptr<const Prepared> statement = it->second;
    if (m.params.size() != statement->param_oids.size()) {
        extended_error(
            c, {"08P01", fmt::format("bind message supplies {} parameters, but prepared "
                                     "statement \"{}\" requires {}",
                                     m.params.size(), m.statement, statement->param_oids.size())});
        return;
    }
    if (!m.portal.empty() && c.portals.contains(m.portal)) {
        extended_error(c, {"42P03", fmt::format("portal \"{}\" already exists", m.portal)});
        return;
    }
    if (!c.portals.contains(m.portal) && c.portals.size() >= kPortalsMax) {
        extended_error(c, {"54000", fmt::format("too many open portals (at most {} per connection)",
                                                kPortalsMax)});
        return;
    }
    if (m.result_formats.size() > 1) {
        // Checked now, before anything runs: a format per column needs the column count.
        size_t columns = 0;
        if (statement->piece) {
            auto d = describe_piece(c, *statement->piece);
            if (!d.ok()) {
                extended_error(c, d.error(), statement->piece->offset_chars);
                return;
            }
            columns = d.value().returns_rows ? d.value().columns.size() : 0;
        }
        if (columns != m.result_formats.size()) {
            extended_error(c, {"08P01", fmt::format("bind message has {} result formats but query "
                                                    "has {} columns",
                                                    m.result_formats.size(), columns)});
            return;
        }
    }
    auto params = bind_params(*statement, m);
    if (!params.ok()) {
        extended_error(c, params.error());
        return;
    }
    c.portals.insert_or_assign(
        m.portal, Portal{statement, std::move(params.value()), std::move(m.result_formats)});
    net::encode_bind_complete(c.out);
}

void PgFrontend::describe(Conn& c, const net::PgDescribe& m) {
    if (m.target == net::PgTarget::kStatement) {
        describe_statement(c, m.name);
    } else {
        describe_portal(c, m.name);
    }
}

// ParameterDescription, then RowDescription (in text: the formats are not known yet) or NoData.
void PgFrontend::describe_statement(Conn& c, const std::string& name) {
    auto it = c.statements.find(name);
    if (it == c.statements.end()) {
        extended_error(c, {"26000", missing_statement(name)});
        return;
    }
    const Prepared& statement = *it->second;
    sql::Description d;
    if (statement.piece) {
        auto described = describe_piece(c, *statement.piece);
        if (!described.ok()) {
            extended_error(c, described.error(), statement.piece->offset_chars);
            return;
        }
        d = std::move(described.value());
    }
    std::vector<uint32_t> oids = statement.param_oids;
    for (size_t i = 0; i < oids.size(); ++i) {
        if (oids[i] == 0) {
            oids[i] = i < d.params.size() ? oid_of(d.params[i]) : net::kPgOidText;
        }
    }
    net::encode_parameter_description(oids, c.out);
    if (d.returns_rows) {
        net::encode_row_description(fields(d.columns, {}), c.out);
    } else {
        net::encode_no_data(c.out);
    }
}

// RowDescription in the portal's result formats, or NoData.
void PgFrontend::describe_portal(Conn& c, const std::string& name) {
    auto it = c.portals.find(name);
    if (it == c.portals.end()) {
        extended_error(c, {"34000", fmt::format("portal \"{}\" does not exist", name)});
        return;
    }
    const Portal& portal = it->second;
    sql::Description d;
    if (portal.result) {
        d.returns_rows = portal.result->returns_rows;
        d.columns = portal.result->columns;
    } else if (portal.statement->piece) {
        auto described = describe_piece(c, *portal.statement->piece);
        if (!described.ok()) {
            extended_error(c, described.error(), portal.statement->piece->offset_chars);
            return;
        }
        d = std::move(described.value());
    }
    if (!d.returns_rows) {
        net::encode_no_data(c.out);
        return;
    }
    const size_t formats = portal.result_formats.size();
    if (formats > 1 && formats != d.columns.size()) {
        // Bind checked the count; the schema changed since (another session's DDL).
        extended_error(c, {"08P01", fmt::format("bind message has {} result formats but query "
                                                "has {} columns",
                                                formats, d.columns.size())});
        return;
    }
    net::encode_row_description(fields(d.columns, portal.result_formats), c.out);
}

void PgFrontend::execute(uint64_t id, Conn& c, const net::PgExecute& m) {
    auto it = c.portals.find(m.portal);
    if (it == c.portals.end()) {
        extended_error(c, {"34000", fmt::format("portal \"{}\" does not exist", m.portal)});
        return;
    }
    Portal& portal = it->second;
    if (portal.result) {
        send_portal_rows(c, m.portal, portal, m.max_rows);  // the rest of a suspended portal
        return;
    }
    if (!portal.statement->piece) {
        net::encode_empty_query_response(c.out);
        return;
    }
    c.executing_portal = m.portal;
    c.executing_max_rows = m.max_rows;
    const Piece& piece = *portal.statement->piece;
    if (runs_locally(piece.parsed.statement)) {
        executed(c, run_local(c, piece.parsed.statement));
        return;
    }
    // The portal keeps its statement alive (it holds a reference) for as long as submit needs.
    submit(id, c, piece, std::move(portal.params));
}

// The result of the statement c.executing_portal ran.
void PgFrontend::executed(Conn& c, const sql::StatementResult& result) {
    auto it = c.portals.find(c.executing_portal);
    RL_ASSERT(it != c.portals.end());
    emit_notices(c, result);
    if (result.error) {
        RL_ASSERT(it->second.statement->piece);
        const uint32_t offset = it->second.statement->piece->offset_chars;
        c.portals.erase(it);
        extended_error(c, *result.error, offset);
        return;
    }
    const size_t formats = it->second.result_formats.size();
    if (formats > 1 && formats != result.columns.size()) {
        // Bind checked the count against Describe; the statement returned other columns.
        c.portals.erase(it);
        extended_error(c, {"08P01", fmt::format("bind message has {} result formats but query "
                                                "has {} columns",
                                                formats, result.columns.size())});
        return;
    }
    it->second.result = result;
    send_portal_rows(c, it->first, it->second, c.executing_max_rows);
}

// Sends up to max_rows (all when <= 0) of the portal's rows not yet sent, then PortalSuspended
// when some are left, else CommandComplete.
void PgFrontend::send_portal_rows(Conn& c,
                                  const std::string& name,
                                  Portal& portal,
                                  int32_t max_rows) {
    RL_ASSERT(portal.result);
    sql::StatementResult& result = *portal.result;
    const bool select = result.tag.starts_with("SELECT");
    if (portal.complete) {
        // PostgreSQL runs a statement's portal once; a SELECT's may be fetched from again, and
        // has no rows left.
        if (select) {
            net::encode_command_complete("SELECT 0", c.out);
        } else {
            extended_error(c, {"55000", fmt::format("portal \"{}\" cannot be run", name)});
        }
        return;
    }
    const size_t begin = portal.rows_sent;
    size_t end = result.rows.size();
    if (max_rows > 0) {
        end = std::min(end, begin + static_cast<size_t>(max_rows));
    }
    std::vector<std::optional<std::string>> values;
    for (size_t r = begin; r < end; ++r) {
        values.clear();
        for (size_t i = 0; i < result.rows[r].size(); ++i) {
            const sql::Value& value = result.rows[r][i];
            if (value.is_null) {
                values.push_back(std::nullopt);
            } else if (format_at(portal.result_formats, i) == net::PgFormat::kText) {
                values.push_back(sql::to_text(value));
            } else {
                RL_ASSERT(i < result.columns.size());
                auto bytes = encode_binary(value, result.columns[i].type);
                if (!bytes.ok()) {
                    extended_error(c, bytes.error());
                    return;
                }
                values.push_back(std::move(bytes.value()));
            }
        }
        net::encode_data_row(values, c.out);
    }
    portal.rows_sent = end;
    if (end < result.rows.size()) {
        net::encode_portal_suspended(c.out);
        return;
    }
    // A SELECT's count is of the rows this Execute returned, as PostgreSQL counts a fetch.
    net::encode_command_complete(select ? fmt::format("SELECT {}", end - begin) : result.tag,
                                 c.out);
    portal.complete = true;
    result.rows = {};  // sent: only the columns and the tag are needed from now on
}

void PgFrontend::close_target(Conn& c, const net::PgClose& m) {
    // Closing what does not exist is not an error (the protocol says so).
    if (m.target == net::PgTarget::kStatement) {
        erase_statement(c, m.name);
    } else {
        c.portals.erase(m.name);
    }
    net::encode_close_complete(c.out);
}

void PgFrontend::sync(Conn& c) {
    c.skip_until_sync = false;
    // Portals live until their transaction ends; outside a block that is now.
    if (c.tx_status == sql::TxStatus::kIdle) {
        c.portals.clear();
    }
    ready_for_query(c);
}

}  // namespace raftlock::server
