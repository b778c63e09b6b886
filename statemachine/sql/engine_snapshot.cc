// The SQL engine's part of the state machine snapshot, and its invariants (engine.h).
//
// Format (version 2): next_row_id; tables (name, columns, rows); sessions with an open
// transaction block or a waiting statement (transaction, write set, wait); the lock table.
// Version 1, without the waiting statement's row budget, still reads (the budget is then none).
// Unique indexes are derived: rebuilt on read, which refuses a snapshot whose rows break them.

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/codec.h"
#include "statemachine/sql/engine.h"
#include "statemachine/sql/executor.h"

namespace raftlock::statemachine::sql {

namespace {

constexpr uint8_t kFormatVersion = 2;
constexpr uint8_t kFormatVersionWithoutRowBudget = 1;

void write_column(Writer& w, const Engine::Column& c) {
    w.bytes(c.name);
    w.u8(static_cast<uint8_t>(c.type));
    w.varint(c.varchar_max);
    w.u8(static_cast<uint8_t>((c.primary_key ? 1 : 0) | (c.unique ? 2 : 0) | (c.not_null ? 4 : 0) |
                              (c.default_now ? 8 : 0) | (c.default_value ? 16 : 0)));
    if (c.default_value) {
        write_value(w, *c.default_value);
    }
}

bool read_column(Reader& r, Engine::Column& c) {
    c.name = r.bytes(kNameBytesMax);
    c.type = static_cast<Type>(r.varint_in(1, kTypeMax) & 0xFF);
    c.varchar_max = static_cast<uint32_t>(r.varint_in(0, UINT32_MAX));
    const uint64_t flags = r.varint_in(0, 31);
    c.primary_key = (flags & 1) != 0;
    c.unique = (flags & 2) != 0;
    c.not_null = (flags & 4) != 0;
    c.default_now = (flags & 8) != 0;
    if ((flags & 16) != 0) {
        Value v;
        if (!read_value(r, v)) {
            return false;
        }
        c.default_value = std::move(v);
    }
    return r.ok();
}

}  // namespace

void Engine::write(Writer& w) const {
    w.u8(kFormatVersion);
    w.varint(next_row_id_);
    w.varint(tables_.size());
    for (const auto& [name, table] : tables_) {
        w.bytes(name);
        w.varint(table.columns.size());
        for (const Column& c : table.columns) {
            write_column(w, c);
        }
        w.varint(table.rows.size());
        for (const auto& [id, row] : table.rows) {
            w.varint(id);
            write_values(w, row);
        }
    }
    w.varint(sessions_.size());
    for (const auto& [id, session] : sessions_) {
        w.varint(id);
        const TxState& tx = session.tx;
        w.u8(static_cast<uint8_t>((tx.in_block ? 1 : 0) | (tx.failed ? 2 : 0)));
        w.svarint(tx.start_ms);
        w.varint(tx.write_count);
        w.varint(tx.writes.rows().size());
        for (const auto& [table, rows] : tx.writes.rows()) {
            w.bytes(table);
            w.varint(rows.size());
            for (const auto& [row_id, image] : rows) {
                w.varint(row_id);
                w.u8(image ? 1 : 0);
                if (image) {
                    write_values(w, *image);
                }
            }
        }
        w.u8(session.wait ? 1 : 0);
        if (session.wait) {
            const Wait& wait = *session.wait;
            w.varint(wait.ticket);
            write_request(w, wait.request);
            write_values(w, wait.calls_done);
            write_optional_value(w, wait.timeout_value);
            write_optional_value(w, wait.granted_value);
            w.u8(wait.function_wait ? 1 : 0);
            w.svarint(wait.deadline_ms);
            write_rows_max(w, wait.request);
        }
    }
    locks_.write(w);
}

bool Engine::read(Reader& r) {
    RL_ASSERT(tables_.empty() && sessions_.empty());
    const uint8_t version = r.u8();
    if (version != kFormatVersion && version != kFormatVersionWithoutRowBudget) {
        return false;
    }
    next_row_id_ = r.varint();
    const size_t table_count = r.varint_in(0, kTablesMax);
    for (size_t t = 0; r.ok() && t < table_count; ++t) {
        if (!read_table(r)) {
            return false;
        }
    }
    const size_t session_count = r.varint_in(0, SIZE_MAX);
    for (size_t s = 0; r.ok() && s < session_count; ++s) {
        if (!read_session(r, version)) {
            return false;
        }
    }
    return r.ok() && locks_.read(r) && check_invariants().empty();
}

bool Engine::read_table(Reader& r) {
    std::string name = r.bytes(kNameBytesMax);
    Table table;
    const size_t column_count = r.varint_in(1, kColumnsPerTableMax);
    table.columns.resize(r.ok() ? column_count : 0);
    for (size_t i = 0; i < table.columns.size(); ++i) {
        if (!read_column(r, table.columns[i])) {
            return false;
        }
        if (table.columns[i].unique) {
            table.unique[i];
        }
    }
    const size_t row_count = r.varint_in(0, kRowsPerTableMax);
    for (size_t i = 0; r.ok() && i < row_count; ++i) {
        const RowId id = r.varint_in(1, next_row_id_ - 1);
        Row row;
        if (!read_values(r, row, table.columns.size()) || row.size() != table.columns.size() ||
            table.rows.contains(id)) {
            return false;
        }
        for (auto& [column, index] : table.unique) {
            if (!row[column].is_null && !index.emplace(value_key(row[column]), id).second) {
                return false;  // a snapshot whose rows break a unique index
            }
        }
        table.rows.emplace(id, std::move(row));
    }
    return r.ok() && tables_.emplace(std::move(name), std::move(table)).second;
}

bool Engine::read_session(Reader& r, uint8_t version) {
    const SessionId id = r.varint_in(1, UINT64_MAX);
    Session session;
    const uint64_t flags = r.varint_in(0, 3);
    session.tx.in_block = (flags & 1) != 0;
    session.tx.failed = (flags & 2) != 0;
    session.tx.start_ms = r.svarint();
    session.tx.write_count = r.varint_in(0, kWritesPerTransactionMax);
    const size_t tables = r.varint_in(0, kTablesMax);
    for (size_t t = 0; r.ok() && t < tables; ++t) {
        const std::string table = r.bytes(kNameBytesMax);
        const auto schema = tables_.find(table);
        const size_t count = r.varint_in(0, kWritesPerTransactionMax);
        for (size_t i = 0; r.ok() && i < count; ++i) {
            const RowId row_id = r.varint_in(1, next_row_id_ - 1);
            std::optional<Row> image;
            if (r.boolean()) {
                image.emplace();
                if (!read_values(r, *image, kColumnsPerTableMax)) {
                    return false;
                }
            }
            if (schema != tables_.end() && image &&
                image->size() != schema->second.columns.size()) {
                return false;  // its index would read columns the image lacks
            }
            session.tx.writes.put(table, schema == tables_.end() ? nullptr : &schema->second,
                                  row_id, std::move(image));
        }
    }
    if (r.boolean()) {
        Wait wait;
        wait.ticket = r.varint();
        if (!read_request(r, wait.request) || !read_values(r, wait.calls_done, SIZE_MAX) ||
            !read_optional_value(r, wait.timeout_value) ||
            !read_optional_value(r, wait.granted_value)) {
            return false;
        }
        wait.function_wait = r.boolean();
        wait.deadline_ms = r.svarint();
        if (version != kFormatVersionWithoutRowBudget && !read_rows_max(r, wait.request)) {
            return false;
        }
        session.wait = std::move(wait);
    }
    return r.ok() && sessions_.emplace(id, std::move(session)).second;
}

std::string Engine::check_invariants() const {
    for (const auto& [name, table] : tables_) {
        for (const auto& [id, row] : table.rows) {
            if (id >= next_row_id_ || row.size() != table.columns.size()) {
                return fmt::format("sql: table {} row {} has a bad id or shape", name, id);
            }
            for (size_t i = 0; i < row.size(); ++i) {
                const Column& c = table.columns[i];
                if ((row[i].is_null && c.not_null) || (!row[i].is_null && row[i].type != c.type)) {
                    return fmt::format("sql: table {} row {} column {} breaks its type", name, id,
                                       c.name);
                }
            }
        }
        for (const auto& [column, index] : table.unique) {
            size_t values = 0;
            for (const auto& [id, row] : table.rows) {
                if (row[column].is_null) {
                    continue;
                }
                ++values;
                auto hit = index.find(value_key(row[column]));
                if (hit == index.end() || hit->second != id) {
                    return fmt::format("sql: table {} unique index {} misses row {}", name, column,
                                       id);
                }
            }
            if (values != index.size()) {
                return fmt::format("sql: table {} unique index {} has stale keys", name, column);
            }
        }
    }
    for (const auto& [id, session] : sessions_) {
        if (!session.tx.in_block && !session.wait) {
            return fmt::format("sql: session {} is kept with no block and no wait", id);
        }
        if (!session.tx.in_block && !session.tx.writes.empty()) {
            return fmt::format("sql: session {} has writes outside a block", id);
        }
        if (std::string problem = session.tx.writes.check_index(); !problem.empty()) {
            return fmt::format("session {}: {}", id, problem);
        }
        if (session.wait.has_value() != locks_.waiting_for(id).has_value()) {
            return fmt::format("sql: session {} wait and lock table disagree", id);
        }
    }
    return locks_.check_invariants();
}

}  // namespace raftlock::statemachine::sql
