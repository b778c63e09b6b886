#pragma once

// Binary forms of the SQL mode's values, statement requests and results: inside SqlStatement
// commands on the log (statemachine/codec.cc), saved results and the engine's snapshot. Integers
// are LEB128 varints (signed: zig-zag), strings a varint length then bytes (base/byte_io.h).
//
// Readers never read out of bounds, bound every count by the remaining input and the engine's
// limits, and return false on malformed input.

#include "base/byte_io.h"
#include "statemachine/sql/engine.h"
#include "statemachine/sql/value.h"

namespace raftlock::statemachine::sql {

void write_value(Writer& w, const Value& v);
bool read_value(Reader& r, Value& v);
void write_values(Writer& w, const std::vector<Value>& values);
bool read_values(Reader& r, std::vector<Value>& values, size_t count_max);
void write_optional_value(Writer& w, const std::optional<Value>& v);
bool read_optional_value(Reader& r, std::optional<Value>& v);

// The text, parameters and lock timeout; the row budget travels separately (write_rows_max),
// so that requests written before budgets existed still read.
void write_request(Writer& w, const StatementRequest& request);
bool read_request(Reader& r, StatementRequest& request);
void write_rows_max(Writer& w, const StatementRequest& request);
bool read_rows_max(Reader& r, StatementRequest& request);
// kOk-style check of a request's documented ranges (engine.h limits), for validate_command.
bool valid_request(const StatementRequest& request);

void write_result(Writer& w, const StatementResult& result);
bool read_result(Reader& r, StatementResult& result);

}  // namespace raftlock::statemachine::sql
