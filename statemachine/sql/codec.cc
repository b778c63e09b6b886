// Binary forms of the SQL mode's values, requests and results (codec.h).

#include "statemachine/sql/codec.h"

#include <cstdint>

namespace raftlock::statemachine::sql {

namespace {

constexpr size_t kTextBytesMax = kStatementBytesMax;
constexpr uint8_t kTxStatusMax = static_cast<uint8_t>(TxStatus::kFailed);

// Every value takes at least two bytes, so a count beyond half the input is malformed.
size_t read_count(Reader& r, size_t count_max) {
    const size_t n = r.varint_in(0, count_max);
    if (n > r.remaining()) {
        r.fail();
        return 0;
    }
    return n;
}

}  // namespace

void write_value(Writer& w, const Value& v) {
    w.u8(static_cast<uint8_t>(v.type));
    w.u8(v.is_null ? 1 : 0);
    if (v.is_null) {
        return;
    }
    switch (v.type) {
        case Type::kBool:
            w.u8(v.boolean ? 1 : 0);
            break;
        case Type::kInt4:
        case Type::kInt8:
        case Type::kTimestamptz:
            w.svarint(v.integer);
            break;
        case Type::kText:
        case Type::kUnknown:
            w.bytes(v.text);
            break;
    }
}

bool read_value(Reader& r, Value& v) {
    v.type = static_cast<Type>(r.varint_in(0, kTypeMax) & 0xFF);
    v.is_null = r.boolean();
    if (!r.ok() || v.is_null) {
        return r.ok();
    }
    switch (v.type) {
        case Type::kBool:
            v.boolean = r.boolean();
            break;
        case Type::kInt4:
            v.integer = r.svarint_in(INT32_MIN, INT32_MAX);
            break;
        case Type::kInt8:
        case Type::kTimestamptz:
            v.integer = r.svarint();
            break;
        case Type::kText:
        case Type::kUnknown:
            v.text = r.bytes(kTextBytesMax);
            break;
    }
    return r.ok();
}

void write_values(Writer& w, const std::vector<Value>& values) {
    w.varint(values.size());
    for (const Value& v : values) {
        write_value(w, v);
    }
}

bool read_values(Reader& r, std::vector<Value>& values, size_t count_max) {
    values.resize(read_count(r, count_max));
    for (Value& v : values) {
        if (!read_value(r, v)) {
            return false;
        }
    }
    return r.ok();
}

void write_request(Writer& w, const StatementRequest& request) {
    w.bytes(request.text);
    write_values(w, request.params);
    w.svarint(request.lock_timeout_ms);
}

bool read_request(Reader& r, StatementRequest& request) {
    request.text = r.bytes(kStatementBytesMax);
    if (!read_values(r, request.params, kParamsMax)) {
        return false;
    }
    request.lock_timeout_ms = r.svarint_in(0, kLockWaitMsMax);
    return r.ok();
}

void write_rows_max(Writer& w, const StatementRequest& request) {
    w.varint(request.rows_max);
}

bool read_rows_max(Reader& r, StatementRequest& request) {
    request.rows_max = r.varint_in(0, kRowsTouchedMax);
    return r.ok();
}

void write_optional_value(Writer& w, const std::optional<Value>& v) {
    w.u8(v ? 1 : 0);
    if (v) {
        write_value(w, *v);
    }
}

bool read_optional_value(Reader& r, std::optional<Value>& v) {
    if (!r.boolean()) {
        return r.ok();
    }
    Value value;
    if (!read_value(r, value)) {
        return false;
    }
    v = std::move(value);
    return true;
}

bool valid_request(const StatementRequest& request) {
    return request.text.size() <= kStatementBytesMax && request.params.size() <= kParamsMax &&
           request.lock_timeout_ms >= 0 && request.lock_timeout_ms <= kLockWaitMsMax &&
           request.rows_max <= kRowsTouchedMax;
}

namespace {

void write_error(Writer& w, const SqlError& e) {
    w.bytes(e.sqlstate);
    w.bytes(e.message);
    w.bytes(e.detail);
    w.bytes(e.hint);
    w.varint(e.pos);
}

bool read_error(Reader& r, SqlError& e) {
    e.sqlstate = r.bytes(5);
    e.message = r.bytes(kTextBytesMax);
    e.detail = r.bytes(kTextBytesMax);
    e.hint = r.bytes(kTextBytesMax);
    e.pos = static_cast<uint32_t>(r.varint_in(0, kStatementBytesMax));
    return r.ok();
}

}  // namespace

void write_result(Writer& w, const StatementResult& result) {
    w.u8(result.error ? 1 : 0);
    if (result.error) {
        write_error(w, *result.error);
    }
    w.u8(result.returns_rows ? 1 : 0);
    w.varint(result.columns.size());
    for (const ResultColumn& c : result.columns) {
        w.bytes(c.name);
        w.u8(static_cast<uint8_t>(c.type));
    }
    w.varint(result.rows.size());
    for (const std::vector<Value>& row : result.rows) {
        write_values(w, row);
    }
    w.bytes(result.tag);
    w.varint(result.notices.size());
    for (const Notice& n : result.notices) {
        w.bytes(n.severity);
        w.bytes(n.sqlstate);
        w.bytes(n.message);
    }
    w.u8(static_cast<uint8_t>(result.tx_status));
}

bool read_result(Reader& r, StatementResult& result) {
    if (r.boolean()) {
        result.error.emplace();
        if (!read_error(r, *result.error)) {
            return false;
        }
    }
    result.returns_rows = r.boolean();
    result.columns.resize(read_count(r, kColumnsPerTableMax * 16));
    for (ResultColumn& c : result.columns) {
        c.name = r.bytes(kTextBytesMax);
        c.type = static_cast<Type>(r.varint_in(0, kTypeMax) & 0xFF);
    }
    result.rows.resize(read_count(r, kResultRowsMax));
    for (std::vector<Value>& row : result.rows) {
        if (!read_values(r, row, result.columns.size())) {
            return false;
        }
    }
    result.tag = r.bytes(256);
    result.notices.resize(read_count(r, 1024));
    for (Notice& n : result.notices) {
        n.severity = r.bytes(16);
        n.sqlstate = r.bytes(5);
        n.message = r.bytes(kTextBytesMax);
    }
    result.tx_status = static_cast<TxStatus>(r.varint_in(0, kTxStatusMax) & 0xFF);
    return r.ok();
}

}  // namespace raftlock::statemachine::sql
