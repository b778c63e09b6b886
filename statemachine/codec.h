#pragma once

// The binary form of commands on the Raft log, and of replies inside snapshots.
//
// Command format, version 1 (all integers LEB128 varints, signed ones zig-zag; strings are a varint
// length then the bytes):
//   u8 version=1 | client_id | seq | ack_seq | time_ms (signed) | u8 has_fence [lock, token]
//   | u8 op tag (index in Op) | op fields in declaration order (command.h)
// A Multi is a count then, per sub-op, a u8 tag (index in MultiOp) and its fields.
//
// Bytes come from the log and, before that, from the network: decode_command never reads out of
// bounds, never allocates more than the input justifies, rejects trailing bytes, unknown tags and
// out-of-range enums, and validates the decoded command with the same rules as encode_command.

#include <string>
#include <string_view>

#include "raft/byte_io.h"
#include "raft/result.h"
#include "statemachine/command.h"
#include "statemachine/output.h"

namespace raftlock::statemachine {

inline constexpr uint8_t kCommandFormatVersion = 1;

// kOk when `command` obeys every documented range (command.h); else kBadArguments. Checks what does
// not depend on replicated state (the session timeout bounds of Config are checked at apply).
ErrorCode validate_command(const Command& command);
// ZooKeeper's path rules: absolute, no empty, "." or ".." components, no trailing slash (except the
// root), no NUL, at most kPathBytesMax bytes and kPathDepthMax components.
bool valid_path(std::string_view path);

// Fails with kBadArguments (nothing encoded) when validate_command does.
Result<std::string, ErrorCode> encode_command(const Command& command);
// Fails with kMalformedCommand on any malformed or invalid input.
Result<Command, ErrorCode> decode_command(std::string_view bytes);

// Replies inside snapshots (saved results for exactly-once). Snapshots before version 3 have no
// SQL fields (`with_sql` false).
void write_response(Writer& w, const Response& response);
Response read_response(Reader& r, bool with_sql);
void write_stat(Writer& w, const Stat& stat);
Stat read_stat(Reader& r);

}  // namespace raftlock::statemachine
