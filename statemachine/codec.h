#pragma once

// The binary form of commands on the Raft log, and of replies inside snapshots.
//
// Command format, version 9 (all integers LEB128 varints, signed ones zig-zag; strings are a varint
// length then the bytes):
//   u8 version=9 | client_id | seq | ack_seq | time_ms (signed) | u8 has_fence [lock, token]
//   | u8 has_caller [count, (scheme, id)*] | user | u8 op tag (OpTag) | op fields in declaration
//   order (command.h)
// A Multi is a count then, per sub-op, a u8 tag (MultiOpTag) and its fields. An ACL is a count
// then (u8 perms, scheme, id)*. A RedisCommand's fields are origin, script budget (0: none
// stamped), argv; a SqlStatement's are the request (sql/codec.h), then its row budget (0: none).
// A RedisTransaction's (version 8 on) are origin, script budget (1..), the watched keys as a count
// then (key, index)*, and the commands as a count then per command an argv (count, arguments).
//
// Credentials are (salt, iterations, stored_key, server_key); a permission is (u8 access, u8 space,
// prefix).
//
// Older versions still decode, so that logs written by earlier servers replay; encoding always
// writes version 9. Version 8 (until 2026-12-02) has version 9's layout except AcquireMany, which
// ends before its wait_ms (always 0 then: a multi-lock never queued); a server from before
// version 9 stops at the first version 9 entry. Version 7 (until 2026-11-30) has version 8's layout
// without the RedisTransaction op (tag 33), and MULTI, EXEC, DISCARD, WATCH and UNWATCH are unknown
// commands in its entries; a server from before version 8 stops at the first version 8 entry.
// Version 6 (until 2026-11-30) has version 7's layout; what differs is, again, the set of Redis
// commands: PUBLISH is an unknown command in a version 6 entry, and a server from before version 7
// stops at the first version 7 entry. Version 5 (until 2026-11-30) has version 6's layout; what
// differs is the set of Redis commands a RedisCommand may run (redis::CommandSpec::since_format):
// lists, sets and sorted sets are unknown commands in a version 5 entry, as they were to the
// servers that applied it, and a server from before version 6 stops at the first version 6 entry
// instead of answering them "unknown command" while its peers apply them. Version 4 (until
// 2026-11-29) has version 5's layout; what differs is how a session's request applies
// (StateMachine::apply_session_request): from version 5 a seq more than kSeqAheadMax beyond the
// session's highest is refused and not remembered, where version 4 remembered it (and let its
// ack_seq discard every reply below). ForceRelease (tag 17) came later within version 5: a server
// from before it stops at such an entry (server/replica_apply.cc) rather than skip it, as at any op
// it does not know. Version 3 (until 2026-11-29) had no user and no user, role or auth ops. Version
// 2 (until 2026-11-29) had no caller, no ACL in a Create (the node is open) and no SetAcl. Version
// 1 (until 2026-11) tagged an op with its index in the Op variant (a sub-op with its index in
// MultiOp), with 16 and 17 for a RedisCommand and a SqlStatement carrying a budget.
//
// Bytes come from the log and, before that, from the network: decode_command never reads out of
// bounds, never allocates more than the input justifies, rejects trailing bytes, unknown tags and
// out-of-range enums, and validates the decoded command with the same rules as encode_command.

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "base/byte_io.h"
#include "base/result.h"
#include "statemachine/command.h"
#include "statemachine/output.h"
#include "statemachine/redis/commands.h"

namespace raftlock::statemachine {

inline constexpr uint8_t kCommandFormatVersionV9 = 9;  // AcquireMany's wait
inline constexpr uint8_t kCommandFormatVersion = kCommandFormatVersionV9;
inline constexpr uint8_t kCommandFormatVersionV8 = 8;  // decoded, never written
inline constexpr uint8_t kCommandFormatVersionV7 = 7;  // decoded, never written
inline constexpr uint8_t kCommandFormatVersionV6 = 6;  // decoded, never written
inline constexpr uint8_t kCommandFormatVersionV5 = 5;  // decoded, never written
inline constexpr uint8_t kCommandFormatVersionV4 = 4;  // decoded, never written
inline constexpr uint8_t kCommandFormatVersionV3 = 3;  // decoded, never written
inline constexpr uint8_t kCommandFormatVersionV2 = 2;  // decoded, never written
inline constexpr uint8_t kCommandFormatVersionV1 = 1;  // decoded, never written

static_assert(redis::kRedisFormatCollections == kCommandFormatVersionV6);
static_assert(redis::kRedisFormatPubSub == kCommandFormatVersionV7);
static_assert(redis::kRedisFormatTransactions == kCommandFormatVersionV8);
static_assert(redis::kRedisFormatNewest == kCommandFormatVersion);

// The op tags of version 2 on: numbers on disk, never reused or renumbered. Lock service ops in
// 1..31, Redis commands in 32..47, SQL in 48..63, users and permissions in 64..79.
enum class OpTag : uint8_t {
    kOpenSession = 1,
    kKeepAlive = 2,
    kCloseSession = 3,
    kExpireSession = 4,
    kNoop = 5,
    kCreate = 6,
    kDelete = 7,
    kSetData = 8,
    kMulti = 9,
    kAcquire = 10,
    kRelease = 11,
    kCancel = 12,
    kAcquireMany = 13,
    kAttachSession = 14,
    kMultiContainersAtEnd = 15,  // a Multi with containers_at_end (kMulti: without)
    kSetAcl = 16,                // version 3 on
    kForceRelease = 17,          // version 5 on
    kRedisCommand = 32,
    kRedisTransaction = 33,  // version 8 on
    kSqlStatement = 48,
    kSqlCancel = 49,
    kUserChange = 64,     // version 4 on
    kRoleChange = 65,     // version 4 on
    kAuthEnable = 66,     // version 4 on
    kAuthBootstrap = 67,  // version 4 on
};
enum class MultiOpTag : uint8_t { kCreate = 1, kDelete = 2, kSetData = 3, kCheck = 4 };

// The tag of each op type; an op type without one does not compile.
template <typename T>
constexpr OpTag op_tag() {
    if constexpr (std::is_same_v<T, OpenSession>) {
        return OpTag::kOpenSession;
    } else if constexpr (std::is_same_v<T, KeepAlive>) {
        return OpTag::kKeepAlive;
    } else if constexpr (std::is_same_v<T, CloseSession>) {
        return OpTag::kCloseSession;
    } else if constexpr (std::is_same_v<T, ExpireSession>) {
        return OpTag::kExpireSession;
    } else if constexpr (std::is_same_v<T, Noop>) {
        return OpTag::kNoop;
    } else if constexpr (std::is_same_v<T, Create>) {
        return OpTag::kCreate;
    } else if constexpr (std::is_same_v<T, Delete>) {
        return OpTag::kDelete;
    } else if constexpr (std::is_same_v<T, SetData>) {
        return OpTag::kSetData;
    } else if constexpr (std::is_same_v<T, Multi>) {
        return OpTag::kMulti;  // or kMultiContainersAtEnd: see tag_of()
    } else if constexpr (std::is_same_v<T, Acquire>) {
        return OpTag::kAcquire;
    } else if constexpr (std::is_same_v<T, Release>) {
        return OpTag::kRelease;
    } else if constexpr (std::is_same_v<T, Cancel>) {
        return OpTag::kCancel;
    } else if constexpr (std::is_same_v<T, AcquireMany>) {
        return OpTag::kAcquireMany;
    } else if constexpr (std::is_same_v<T, RedisCommand>) {
        return OpTag::kRedisCommand;
    } else if constexpr (std::is_same_v<T, RedisTransaction>) {
        return OpTag::kRedisTransaction;
    } else if constexpr (std::is_same_v<T, SqlStatement>) {
        return OpTag::kSqlStatement;
    } else if constexpr (std::is_same_v<T, AttachSession>) {
        return OpTag::kAttachSession;
    } else if constexpr (std::is_same_v<T, SetAcl>) {
        return OpTag::kSetAcl;
    } else if constexpr (std::is_same_v<T, UserChange>) {
        return OpTag::kUserChange;
    } else if constexpr (std::is_same_v<T, RoleChange>) {
        return OpTag::kRoleChange;
    } else if constexpr (std::is_same_v<T, AuthEnable>) {
        return OpTag::kAuthEnable;
    } else if constexpr (std::is_same_v<T, AuthBootstrap>) {
        return OpTag::kAuthBootstrap;
    } else if constexpr (std::is_same_v<T, ForceRelease>) {
        return OpTag::kForceRelease;
    } else {
        static_assert(std::is_same_v<T, SqlCancel>, "an op needs a tag of its own in OpTag");
        return OpTag::kSqlCancel;
    }
}

template <typename T>
constexpr MultiOpTag multi_op_tag() {
    if constexpr (std::is_same_v<T, Create>) {
        return MultiOpTag::kCreate;
    } else if constexpr (std::is_same_v<T, Delete>) {
        return MultiOpTag::kDelete;
    } else if constexpr (std::is_same_v<T, SetData>) {
        return MultiOpTag::kSetData;
    } else {
        static_assert(std::is_same_v<T, Check>, "a sub-op needs a tag of its own in MultiOpTag");
        return MultiOpTag::kCheck;
    }
}

// The numbers on disk, pinned: changing one breaks every log written with it.
static_assert(static_cast<uint8_t>(OpTag::kOpenSession) == 1);
static_assert(static_cast<uint8_t>(OpTag::kKeepAlive) == 2);
static_assert(static_cast<uint8_t>(OpTag::kCloseSession) == 3);
static_assert(static_cast<uint8_t>(OpTag::kExpireSession) == 4);
static_assert(static_cast<uint8_t>(OpTag::kNoop) == 5);
static_assert(static_cast<uint8_t>(OpTag::kCreate) == 6);
static_assert(static_cast<uint8_t>(OpTag::kDelete) == 7);
static_assert(static_cast<uint8_t>(OpTag::kSetData) == 8);
static_assert(static_cast<uint8_t>(OpTag::kMulti) == 9);
static_assert(static_cast<uint8_t>(OpTag::kAcquire) == 10);
static_assert(static_cast<uint8_t>(OpTag::kRelease) == 11);
static_assert(static_cast<uint8_t>(OpTag::kCancel) == 12);
static_assert(static_cast<uint8_t>(OpTag::kAcquireMany) == 13);
static_assert(static_cast<uint8_t>(OpTag::kAttachSession) == 14);
static_assert(static_cast<uint8_t>(OpTag::kMultiContainersAtEnd) == 15);
static_assert(static_cast<uint8_t>(OpTag::kSetAcl) == 16);
static_assert(static_cast<uint8_t>(OpTag::kForceRelease) == 17);
static_assert(static_cast<uint8_t>(OpTag::kRedisCommand) == 32);
static_assert(static_cast<uint8_t>(OpTag::kRedisTransaction) == 33);
static_assert(static_cast<uint8_t>(OpTag::kSqlStatement) == 48);
static_assert(static_cast<uint8_t>(OpTag::kSqlCancel) == 49);
static_assert(static_cast<uint8_t>(OpTag::kUserChange) == 64);
static_assert(static_cast<uint8_t>(OpTag::kRoleChange) == 65);
static_assert(static_cast<uint8_t>(OpTag::kAuthEnable) == 66);
static_assert(static_cast<uint8_t>(OpTag::kAuthBootstrap) == 67);
static_assert(static_cast<uint8_t>(UserAction::kAdd) == 1 &&
              static_cast<uint8_t>(UserAction::kRevokeRole) == 5);
static_assert(static_cast<uint8_t>(RoleAction::kAdd) == 1 &&
              static_cast<uint8_t>(RoleAction::kRevoke) == 4);
static_assert(static_cast<uint8_t>(Access::kRead) == 1 &&
              static_cast<uint8_t>(Access::kAdmin) == 3);
static_assert(static_cast<uint8_t>(Space::kLock) == 1 && static_cast<uint8_t>(Space::kSql) == 4);
static_assert(static_cast<uint8_t>(MultiOpTag::kCreate) == 1);
static_assert(static_cast<uint8_t>(MultiOpTag::kDelete) == 2);
static_assert(static_cast<uint8_t>(MultiOpTag::kSetData) == 3);
static_assert(static_cast<uint8_t>(MultiOpTag::kCheck) == 4);
static_assert(std::variant_size_v<Op> == 24,
              "a new op needs a tag (op_tag) and a reader (read_op)");

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
// SQL fields (`with_sql` false), before version 4 no aversion in a stat (`with_aversion` false),
// before version 5 no message.
void write_response(Writer& w, const Response& response);
Response read_response(Reader& r, bool with_sql, bool with_aversion, bool with_message);
void write_stat(Writer& w, const Stat& stat);
Stat read_stat(Reader& r, bool with_aversion);
// An ACL (count, then u8 perms, scheme, id per entry), in commands and snapshots; read_acl leaves
// validity to valid_acl.
void write_acl(Writer& w, const Acl& acl);
Acl read_acl(Reader& r);

}  // namespace raftlock::statemachine
