#include "statemachine/codec.h"

#include <set>
#include <type_traits>

#include "statemachine/sql/codec.h"

namespace raftlock::statemachine {

namespace {

constexpr size_t kSequentialSuffixBytes = 10;
constexpr TimeMs kOpenTimeoutMsMax = 24LL * 3600 * 1000;
constexpr int64_t kTimeMsMax = int64_t{1} << 52;

bool valid_version(int32_t version) {
    return version >= -1;
}

bool valid_create(const Create& op) {
    if (!valid_acl(op.acl)) {
        return false;
    }
    std::string full = op.path;
    if (is_sequential(op.kind)) {
        full.append(kSequentialSuffixBytes, '0');
    }
    if (!valid_path(full) || full == "/" || op.data.size() > kDataBytesMax) {
        return false;
    }
    if (is_ttl(op.kind)) {
        return op.ttl_ms > 0 && op.ttl_ms <= kTtlMsMax;
    }
    return op.ttl_ms == 0;
}

bool valid_multi_op(const MultiOp& op) {
    return std::visit(
        [](const auto& o) -> bool {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, Create>) {
                return valid_create(o);
            } else if constexpr (std::is_same_v<T, SetData>) {
                return valid_path(o.path) && valid_version(o.version) &&
                       o.data.size() <= kDataBytesMax;
            } else if constexpr (std::is_same_v<T, Delete>) {
                return valid_path(o.path) && o.path != "/" && valid_version(o.version);
            } else {
                return valid_path(o.path) && valid_version(o.version);
            }
        },
        op);
}

bool valid_lock_name(std::string_view name) {
    return !name.empty() && name.size() <= kLockNameBytesMax;
}

bool valid_lock_spec(LockMode mode, uint32_t permits) {
    if (mode == LockMode::kSemaphore) {
        return permits >= 1 && permits <= kSemaphorePermitsMax;
    }
    return permits == 1;
}

bool valid_acquire(const Acquire& op) {
    return valid_lock_name(op.name) && op.owner_tag.size() <= kOwnerTagBytesMax &&
           valid_lock_spec(op.mode, op.permits) && op.wait_ms >= 0 && op.wait_ms <= kWaitMsMax &&
           op.lock_delay_ms >= 0 && op.lock_delay_ms <= kLockDelayMsMax;
}

bool valid_acquire_many(const AcquireMany& op) {
    if (op.locks.empty() || op.locks.size() > kMultiLockMax) {
        return false;
    }
    if (op.owner_tag.size() > kOwnerTagBytesMax || op.lock_delay_ms < 0 ||
        op.lock_delay_ms > kLockDelayMsMax || op.wait_ms < 0 || op.wait_ms > kWaitMsMax) {
        return false;
    }
    std::set<std::string_view> names;
    for (const LockSpec& spec : op.locks) {
        if (!valid_lock_name(spec.name) || !valid_lock_spec(spec.mode, spec.permits)) {
            return false;
        }
        if (!names.insert(spec.name).second) {
            return false;
        }
    }
    return true;
}

bool valid_redis(const RedisCommand& op) {
    if (op.origin == 0 || op.argv.empty() || op.argv.size() > kRedisArgsMax ||
        op.script_instructions_max > kScriptInstructionsMax) {
        return false;
    }
    size_t bytes = 0;
    for (const std::string& arg : op.argv) {
        bytes += arg.size();
    }
    return bytes <= kRedisCommandBytesMax;
}

bool valid_redis_transaction(const RedisTransaction& op) {
    const redis::Transaction& t = op.transaction;
    if (op.origin == 0 || op.script_instructions_max == 0 ||
        op.script_instructions_max > kScriptInstructionsMax ||
        t.watched.size() > kRedisWatchedKeysMax) {
        return false;
    }
    size_t args = 0;
    size_t bytes = 0;
    for (const redis::WatchedKey& w : t.watched) {
        bytes += w.key.size();
    }
    for (const redis::Argv& argv : t.commands) {
        if (argv.empty()) {
            return false;
        }
        args += argv.size();
        for (const std::string& arg : argv) {
            bytes += arg.size();
        }
    }
    return args <= kRedisArgsMax && bytes <= kRedisCommandBytesMax;
}

// Which ops belong to a session (need client_id and seq) and which come from the leader (or, for
// Redis commands, from a server's at-most-once sequence).
bool needs_session(const Op& op) {
    return !std::holds_alternative<OpenSession>(op) && !std::holds_alternative<ExpireSession>(op) &&
           !std::holds_alternative<Noop>(op) && !std::holds_alternative<RedisCommand>(op) &&
           !std::holds_alternative<RedisTransaction>(op) &&
           !std::holds_alternative<SqlCancel>(op) && !std::holds_alternative<AttachSession>(op) &&
           !std::holds_alternative<UserChange>(op) && !std::holds_alternative<RoleChange>(op) &&
           !std::holds_alternative<AuthEnable>(op) && !std::holds_alternative<AuthBootstrap>(op) &&
           !std::holds_alternative<ForceRelease>(op);
}

bool valid_user_change(const UserChange& o) {
    if (!valid_auth_name(o.name) || !valid_credentials(o.credentials)) {
        return false;
    }
    const bool with_credentials =
        o.action == UserAction::kAdd || o.action == UserAction::kSetPassword;
    const bool with_role =
        o.action == UserAction::kGrantRole || o.action == UserAction::kRevokeRole;
    return (with_credentials || o.credentials == Credentials{}) &&
           (with_role ? valid_auth_name(o.role) : o.role.empty());
}

bool valid_role_change(const RoleChange& o) {
    if (!valid_auth_name(o.name)) {
        return false;
    }
    if (o.action == RoleAction::kGrant || o.action == RoleAction::kRevoke) {
        return valid_permission(o.permission);
    }
    return o.permission == Permission{};
}

bool valid_op(const Op& op) {
    return std::visit(
        [](const auto& o) -> bool {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, OpenSession>) {
                return o.timeout_ms > 0 && o.timeout_ms <= kOpenTimeoutMsMax;
            } else if constexpr (std::is_same_v<T, ExpireSession>) {
                return o.session != kNoSession;
            } else if constexpr (std::is_same_v<T, Create>) {
                return valid_create(o);
            } else if constexpr (std::is_same_v<T, Delete> || std::is_same_v<T, SetData>) {
                return valid_multi_op(MultiOp{o});
            } else if constexpr (std::is_same_v<T, Multi>) {
                if (o.ops.empty() || o.ops.size() > kMultiOpsMax) {
                    return false;
                }
                for (const MultiOp& sub : o.ops) {
                    if (!valid_multi_op(sub)) {
                        return false;
                    }
                }
                return true;
            } else if constexpr (std::is_same_v<T, Acquire>) {
                return valid_acquire(o);
            } else if constexpr (std::is_same_v<T, Release>) {
                return valid_lock_name(o.name) && o.owner_tag.size() <= kOwnerTagBytesMax &&
                       o.token > 0;
            } else if constexpr (std::is_same_v<T, Cancel>) {
                return valid_lock_name(o.name) && o.owner_tag.size() <= kOwnerTagBytesMax;
            } else if constexpr (std::is_same_v<T, ForceRelease>) {
                return valid_lock_name(o.name) && o.session != kNoSession && o.token > 0;
            } else if constexpr (std::is_same_v<T, AcquireMany>) {
                return valid_acquire_many(o);
            } else if constexpr (std::is_same_v<T, RedisCommand>) {
                return valid_redis(o);
            } else if constexpr (std::is_same_v<T, RedisTransaction>) {
                return valid_redis_transaction(o);
            } else if constexpr (std::is_same_v<T, SqlStatement>) {
                return sql::valid_request(o.request);
            } else if constexpr (std::is_same_v<T, SqlCancel>) {
                return o.session != kNoSession;
            } else if constexpr (std::is_same_v<T, AttachSession>) {
                return o.session != kNoSession && o.first_seq > kAttachSeqGap;
            } else if constexpr (std::is_same_v<T, SetAcl>) {
                return valid_path(o.path) && valid_version(o.version) && valid_acl(o.acl);
            } else if constexpr (std::is_same_v<T, UserChange>) {
                return valid_user_change(o);
            } else if constexpr (std::is_same_v<T, RoleChange>) {
                return valid_role_change(o);
            } else if constexpr (std::is_same_v<T, AuthBootstrap>) {
                return valid_credentials(o.root) && o.root.has_password();
            } else {
                return true;  // KeepAlive, CloseSession, Noop carry no fields
            }
        },
        op);
}

}  // namespace

bool valid_path(std::string_view path) {
    if (path.empty() || path.size() > kPathBytesMax || path[0] != '/') {
        return false;
    }
    if (path.size() == 1) {
        return true;
    }
    if (path.back() == '/') {
        return false;
    }
    size_t depth = 0;
    size_t start = 1;
    while (start <= path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos) {
            end = path.size();
        }
        std::string_view part = path.substr(start, end - start);
        if (part.empty() || part == "." || part == ".." ||
            part.find('\0') != std::string_view::npos) {
            return false;
        }
        if (++depth > kPathDepthMax) {
            return false;
        }
        start = end + 1;
    }
    return true;
}

bool carries_nonce(const Op& op) {
    return std::holds_alternative<OpenSession>(op) || std::holds_alternative<SqlCancel>(op) ||
           std::holds_alternative<AttachSession>(op) || std::holds_alternative<UserChange>(op) ||
           std::holds_alternative<RoleChange>(op) || std::holds_alternative<AuthEnable>(op) ||
           std::holds_alternative<ForceRelease>(op);
}

bool leader_only(const Op& op) {
    return std::holds_alternative<ExpireSession>(op) || std::holds_alternative<Noop>(op) ||
           std::holds_alternative<AuthBootstrap>(op);
}

ErrorCode validate_command(const Command& c) {
    if (c.time_ms < 0 || c.time_ms > kTimeMsMax) {
        return ErrorCode::kBadArguments;
    }
    if (needs_session(c.op)) {
        // Exactly-once needs a sequence; the acknowledged prefix must precede it.
        if (c.client_id == kNoSession || c.seq == 0 || c.ack_seq >= c.seq) {
            return ErrorCode::kBadArguments;
        }
    } else if (c.client_id != kNoSession || c.ack_seq != 0 || c.fence) {
        return ErrorCode::kBadArguments;
    } else if (std::holds_alternative<RedisCommand>(c.op) ||
               std::holds_alternative<RedisTransaction>(c.op)) {
        if (c.seq == 0) {
            return ErrorCode::kBadArguments;  // the keyspace's at-most-once needs it
        }
    } else if (c.seq != 0 && !carries_nonce(c.op)) {
        return ErrorCode::kBadArguments;
    }
    if (!c.user.empty() && !valid_auth_name(c.user)) {
        return ErrorCode::kBadArguments;
    }
    if (c.fence && (!valid_lock_name(c.fence->lock) || c.fence->token == 0)) {
        return ErrorCode::kBadArguments;
    }
    if (c.caller && !valid_caller(*c.caller)) {
        return ErrorCode::kBadArguments;
    }
    return valid_op(c.op) ? ErrorCode::kOk : ErrorCode::kBadArguments;
}

namespace {

void write_op_fields(Writer& w, const OpenSession& o) {
    w.svarint(o.timeout_ms);
}
void write_op_fields(Writer&, const KeepAlive&) {}
void write_op_fields(Writer&, const CloseSession&) {}
void write_op_fields(Writer& w, const ExpireSession& o) {
    w.varint(o.session);
}
void write_op_fields(Writer&, const Noop&) {}
}  // namespace

void write_acl(Writer& w, const Acl& acl) {
    w.varint(acl.size());
    for (const AclEntry& e : acl) {
        w.u8(e.perms);
        w.bytes(e.id.scheme);
        w.bytes(e.id.id);
    }
}
namespace {

void write_op_fields(Writer& w, const Create& o) {
    w.bytes(o.path);
    w.bytes(o.data);
    w.u8(static_cast<uint8_t>(o.kind));
    w.svarint(o.ttl_ms);
    write_acl(w, o.acl);
}
void write_op_fields(Writer& w, const SetAcl& o) {
    w.bytes(o.path);
    write_acl(w, o.acl);
    w.svarint(o.version);
}
void write_op_fields(Writer& w, const Delete& o) {
    w.bytes(o.path);
    w.svarint(o.version);
}
void write_op_fields(Writer& w, const SetData& o) {
    w.bytes(o.path);
    w.bytes(o.data);
    w.svarint(o.version);
}
void write_op_fields(Writer& w, const Check& o) {
    w.bytes(o.path);
    w.svarint(o.version);
}
void write_op_fields(Writer& w, const Multi& o) {
    w.varint(o.ops.size());
    for (const MultiOp& sub : o.ops) {
        w.u8(static_cast<uint8_t>(std::visit(
            [](const auto& s) { return multi_op_tag<std::decay_t<decltype(s)>>(); }, sub)));
        std::visit([&w](const auto& s) { write_op_fields(w, s); }, sub);
    }
}
void write_op_fields(Writer& w, const Acquire& o) {
    w.bytes(o.name);
    w.bytes(o.owner_tag);
    w.u8(static_cast<uint8_t>(o.mode));
    w.varint(o.permits);
    w.svarint(o.wait_ms);
    w.svarint(o.lock_delay_ms);
}
void write_op_fields(Writer& w, const Release& o) {
    w.bytes(o.name);
    w.bytes(o.owner_tag);
    w.varint(o.token);
}
void write_op_fields(Writer& w, const Cancel& o) {
    w.bytes(o.name);
    w.bytes(o.owner_tag);
}
void write_op_fields(Writer& w, const ForceRelease& o) {
    w.bytes(o.name);
    w.varint(o.session);
    w.varint(o.token);
}
void write_op_fields(Writer& w, const AcquireMany& o) {
    w.varint(o.locks.size());
    for (const LockSpec& spec : o.locks) {
        w.bytes(spec.name);
        w.u8(static_cast<uint8_t>(spec.mode));
        w.varint(spec.permits);
    }
    w.bytes(o.owner_tag);
    w.svarint(o.lock_delay_ms);
    w.svarint(o.wait_ms);  // version 9 on
}
void write_op_fields(Writer& w, const RedisCommand& o) {
    w.varint(o.origin);
    w.varint(o.script_instructions_max);  // 0: unstamped (only entries decoded from version 1)
    w.varint(o.argv.size());
    for (const std::string& arg : o.argv) {
        w.bytes(arg);
    }
}

void write_op_fields(Writer& w, const RedisTransaction& o) {
    w.varint(o.origin);
    w.varint(o.script_instructions_max);
    w.varint(o.transaction.watched.size());
    for (const redis::WatchedKey& watched : o.transaction.watched) {
        w.bytes(watched.key);
        w.varint(watched.index);
    }
    w.varint(o.transaction.commands.size());
    for (const redis::Argv& argv : o.transaction.commands) {
        w.varint(argv.size());
        for (const std::string& arg : argv) {
            w.bytes(arg);
        }
    }
}

void write_op_fields(Writer& w, const SqlStatement& o) {
    sql::write_request(w, o.request);
    sql::write_rows_max(w, o.request);  // 0: no budget (only entries decoded from version 1)
}
void write_op_fields(Writer& w, const SqlCancel& o) {
    w.varint(o.session);
}
void write_op_fields(Writer& w, const AttachSession& o) {
    w.varint(o.session);
    w.varint(o.first_seq);
}
void write_credentials(Writer& w, const Credentials& o) {
    w.bytes(o.salt);
    w.varint(o.iterations);
    w.bytes(o.stored_key);
    w.bytes(o.server_key);
}
void write_op_fields(Writer& w, const UserChange& o) {
    w.u8(static_cast<uint8_t>(o.action));
    w.bytes(o.name);
    write_credentials(w, o.credentials);
    w.bytes(o.role);
}
void write_op_fields(Writer& w, const RoleChange& o) {
    w.u8(static_cast<uint8_t>(o.action));
    w.bytes(o.name);
    w.u8(static_cast<uint8_t>(o.permission.access));
    w.u8(static_cast<uint8_t>(o.permission.space));
    w.bytes(o.permission.prefix);
}
void write_op_fields(Writer& w, const AuthEnable& o) {
    w.u8(o.enabled ? 1 : 0);
}
void write_op_fields(Writer& w, const AuthBootstrap& o) {
    write_credentials(w, o.root);
}

int32_t read_version(Reader& r) {
    return static_cast<int32_t>(r.svarint_in(-1, INT32_MAX));
}

// Scheme names are short ("world", "digest", "ip", "super"); longer ones are refused by valid_acl.
constexpr size_t kAclSchemeBytesMax = 16;

}  // namespace

Acl read_acl(Reader& r) {
    Acl acl;
    const uint64_t n = r.varint_in(0, kAclEntriesMax);
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        AclEntry e;
        e.perms = r.u8();
        e.id.scheme = r.bytes(kAclSchemeBytesMax);
        e.id.id = r.bytes(kAclIdBytesMax);
        acl.push_back(std::move(e));
    }
    return acl;
}

namespace {

// Versions before 3 carry no ACL: a node created by one is open.
Create read_create(Reader& r, uint8_t version) {
    Create o;
    o.path = r.bytes(kPathBytesMax);
    o.data = r.bytes(kDataBytesMax);
    o.kind = static_cast<NodeKind>(r.varint_in(0, kNodeKindMax));
    o.ttl_ms = r.svarint_in(0, kTtlMsMax);
    if (version >= kCommandFormatVersionV3) {
        o.acl = read_acl(r);
    }
    return o;
}

SetAcl read_set_acl(Reader& r) {
    SetAcl o;
    o.path = r.bytes(kPathBytesMax);
    o.acl = read_acl(r);
    o.version = read_version(r);
    return o;
}

Delete read_delete(Reader& r) {
    Delete o;
    o.path = r.bytes(kPathBytesMax);
    o.version = read_version(r);
    return o;
}

SetData read_set_data(Reader& r) {
    SetData o;
    o.path = r.bytes(kPathBytesMax);
    o.data = r.bytes(kDataBytesMax);
    o.version = read_version(r);
    return o;
}

Check read_check(Reader& r) {
    Check o;
    o.path = r.bytes(kPathBytesMax);
    o.version = read_version(r);
    return o;
}

MultiOp read_multi_op(Reader& r, uint8_t version) {
    const uint8_t tag = r.u8();
    // Version 1 tagged a sub-op with its index in MultiOp, one less than its tag now.
    switch (version == kCommandFormatVersionV1 ? tag + 1 : tag) {
        case static_cast<uint8_t>(MultiOpTag::kCreate):
            return read_create(r, version);
        case static_cast<uint8_t>(MultiOpTag::kDelete):
            return read_delete(r);
        case static_cast<uint8_t>(MultiOpTag::kSetData):
            return read_set_data(r);
        case static_cast<uint8_t>(MultiOpTag::kCheck):
            return read_check(r);
        default:
            r.fail();
            return Check{};
    }
}

Multi read_multi(Reader& r, uint8_t version, bool containers_at_end) {
    Multi o;
    o.containers_at_end = containers_at_end;
    uint64_t n = r.varint_in(1, kMultiOpsMax);
    // Each sub-op takes at least two bytes, so a hostile count cannot make us loop or allocate for
    // long before the reader runs dry.
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        o.ops.push_back(read_multi_op(r, version));
    }
    return o;
}

Acquire read_acquire(Reader& r) {
    Acquire o;
    o.name = r.bytes(kLockNameBytesMax);
    o.owner_tag = r.bytes(kOwnerTagBytesMax);
    o.mode = static_cast<LockMode>(r.varint_in(0, kLockModeMax));
    o.permits = static_cast<uint32_t>(r.varint_in(1, kSemaphorePermitsMax));
    o.wait_ms = r.svarint_in(0, kWaitMsMax);
    o.lock_delay_ms = r.svarint_in(0, kLockDelayMsMax);
    return o;
}

Release read_release(Reader& r) {
    Release o;
    o.name = r.bytes(kLockNameBytesMax);
    o.owner_tag = r.bytes(kOwnerTagBytesMax);
    o.token = r.varint();
    return o;
}

ForceRelease read_force_release(Reader& r) {
    ForceRelease o;
    o.name = r.bytes(kLockNameBytesMax);
    o.session = r.varint();
    o.token = r.varint();
    return o;
}

Cancel read_cancel(Reader& r) {
    Cancel o;
    o.name = r.bytes(kLockNameBytesMax);
    o.owner_tag = r.bytes(kOwnerTagBytesMax);
    return o;
}

AcquireMany read_acquire_many(Reader& r, uint8_t version) {
    AcquireMany o;
    uint64_t n = r.varint_in(1, kMultiLockMax);
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        LockSpec spec;
        spec.name = r.bytes(kLockNameBytesMax);
        spec.mode = static_cast<LockMode>(r.varint_in(0, kLockModeMax));
        spec.permits = static_cast<uint32_t>(r.varint_in(1, kSemaphorePermitsMax));
        o.locks.push_back(std::move(spec));
    }
    o.owner_tag = r.bytes(kOwnerTagBytesMax);
    o.lock_delay_ms = r.svarint_in(0, kLockDelayMsMax);
    if (version >= kCommandFormatVersionV9) {
        o.wait_ms = r.svarint_in(0, kWaitMsMax);
    }
    return o;
}

// How an entry carries a budget (a script's instructions, a statement's rows): not at all
// (version 1, tags 13 and 14), as a positive number (version 1, tags 16 and 17), or always, 0
// meaning none (version 2).
enum class BudgetField : uint8_t { kAbsent, kPositive, kPresent };

uint64_t read_budget(Reader& r, BudgetField field, uint64_t max) {
    switch (field) {
        case BudgetField::kAbsent:
            return 0;
        case BudgetField::kPositive:
            return r.varint_in(1, max);
        case BudgetField::kPresent:
            return r.varint_in(0, max);
    }
    RL_PANIC("not a budget field");
}

RedisCommand read_redis(Reader& r, BudgetField budget) {
    RedisCommand o;
    o.origin = r.varint();
    o.script_instructions_max = read_budget(r, budget, kScriptInstructionsMax);
    const uint64_t n = r.varint_in(1, kRedisArgsMax);
    // Each argument takes at least its length byte: a hostile count runs the reader dry first.
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        o.argv.push_back(r.bytes(kRedisCommandBytesMax));
    }
    return o;
}

RedisTransaction read_redis_transaction(Reader& r) {
    RedisTransaction o;
    o.origin = r.varint();
    o.script_instructions_max = r.varint_in(1, kScriptInstructionsMax);
    // Every item takes at least a byte: hostile counts run the reader dry before memory does.
    const uint64_t watched = r.varint_in(0, kRedisWatchedKeysMax);
    for (uint64_t i = 0; i < watched && r.ok(); i++) {
        redis::WatchedKey w;
        w.key = r.bytes(kRedisCommandBytesMax);
        w.index = r.varint();
        o.transaction.watched.push_back(std::move(w));
    }
    const uint64_t commands = r.varint_in(0, kRedisArgsMax);
    for (uint64_t i = 0; i < commands && r.ok(); i++) {
        redis::Argv argv;
        const uint64_t n = r.varint_in(1, kRedisArgsMax);
        for (uint64_t k = 0; k < n && r.ok(); k++) {
            argv.push_back(r.bytes(kRedisCommandBytesMax));
        }
        o.transaction.commands.push_back(std::move(argv));
    }
    return o;
}

SqlStatement read_sql(Reader& r, BudgetField budget) {
    SqlStatement o;
    if (!sql::read_request(r, o.request)) {
        r.fail();
    }
    o.request.rows_max = read_budget(r, budget, sql::kRowsTouchedMax);
    return o;
}

Credentials read_credentials(Reader& r) {
    Credentials o;
    o.salt = r.bytes(kCredentialSaltBytesMax);
    o.iterations = static_cast<uint32_t>(r.varint_in(0, kCredentialIterationsMax));
    o.stored_key = r.bytes(kCredentialKeyBytes);
    o.server_key = r.bytes(kCredentialKeyBytes);
    return o;
}

UserChange read_user_change(Reader& r) {
    UserChange o;
    o.action = static_cast<UserAction>(r.varint_in(1, kUserActionMax));
    o.name = r.bytes(kAuthNameBytesMax);
    o.credentials = read_credentials(r);
    o.role = r.bytes(kAuthNameBytesMax);
    return o;
}

RoleChange read_role_change(Reader& r) {
    RoleChange o;
    o.action = static_cast<RoleAction>(r.varint_in(1, kRoleActionMax));
    o.name = r.bytes(kAuthNameBytesMax);
    o.permission.access = static_cast<Access>(r.varint_in(1, kAccessMax));
    o.permission.space = static_cast<Space>(r.varint_in(1, kSpaceMax));
    o.permission.prefix = r.bytes(kPermissionPrefixBytesMax);
    return o;
}

// Version 1 tagged an op with its index in Op, and used 16 and 17 for a RedisCommand and a
// SqlStatement carrying a budget. Read only: entries written before version 2 stay on disk.
Op read_op_v1(Reader& r, uint8_t tag) {
    switch (tag) {
        case 0:
            return OpenSession{r.svarint_in(1, kOpenTimeoutMsMax)};
        case 1:
            return KeepAlive{};
        case 2:
            return CloseSession{};
        case 3:
            return ExpireSession{r.varint()};
        case 4:
            return Noop{};
        case 5:
            return read_create(r, kCommandFormatVersionV1);
        case 6:
            return read_delete(r);
        case 7:
            return read_set_data(r);
        case 8:
            return read_multi(r, kCommandFormatVersionV1, false);
        case 9:
            return read_acquire(r);
        case 10:
            return read_release(r);
        case 11:
            return read_cancel(r);
        case 12:
            return read_acquire_many(r, kCommandFormatVersionV1);
        case 13:
            return read_redis(r, BudgetField::kAbsent);
        case 14:
            return read_sql(r, BudgetField::kAbsent);
        case 15:
            return SqlCancel{r.varint()};
        case 16:
            return read_redis(r, BudgetField::kPositive);
        case 17:
            return read_sql(r, BudgetField::kPositive);
        default:
            r.fail();
            return Noop{};
    }
}

Op read_op(Reader& r, uint8_t tag, uint8_t version) {
    switch (static_cast<OpTag>(tag)) {
        case OpTag::kOpenSession:
            return OpenSession{r.svarint_in(1, kOpenTimeoutMsMax)};
        case OpTag::kKeepAlive:
            return KeepAlive{};
        case OpTag::kCloseSession:
            return CloseSession{};
        case OpTag::kExpireSession:
            return ExpireSession{r.varint()};
        case OpTag::kNoop:
            return Noop{};
        case OpTag::kCreate:
            return read_create(r, version);
        case OpTag::kDelete:
            return read_delete(r);
        case OpTag::kSetData:
            return read_set_data(r);
        case OpTag::kMulti:
            return read_multi(r, version, false);
        case OpTag::kMultiContainersAtEnd:
            return read_multi(r, version, true);
        case OpTag::kAcquire:
            return read_acquire(r);
        case OpTag::kRelease:
            return read_release(r);
        case OpTag::kCancel:
            return read_cancel(r);
        case OpTag::kAcquireMany:
            return read_acquire_many(r, version);
        case OpTag::kRedisCommand:
            return read_redis(r, BudgetField::kPresent);
        case OpTag::kSqlStatement:
            return read_sql(r, BudgetField::kPresent);
        case OpTag::kSqlCancel:
            return SqlCancel{r.varint()};
        case OpTag::kAttachSession: {
            AttachSession o;
            o.session = r.varint();
            o.first_seq = r.varint();
            return o;
        }
        case OpTag::kSetAcl:
            if (version >= kCommandFormatVersionV3) {
                return read_set_acl(r);
            }
            break;
        case OpTag::kUserChange:
            if (version >= kCommandFormatVersionV4) {
                return read_user_change(r);
            }
            break;
        case OpTag::kRoleChange:
            if (version >= kCommandFormatVersionV4) {
                return read_role_change(r);
            }
            break;
        case OpTag::kAuthEnable:
            if (version >= kCommandFormatVersionV4) {
                return AuthEnable{r.boolean()};
            }
            break;
        case OpTag::kAuthBootstrap:
            if (version >= kCommandFormatVersionV4) {
                return AuthBootstrap{read_credentials(r)};
            }
            break;
        case OpTag::kForceRelease:
            if (version >= kCommandFormatVersionV5) {
                return read_force_release(r);
            }
            break;
        case OpTag::kRedisTransaction:
            if (version >= kCommandFormatVersionV8) {
                return read_redis_transaction(r);
            }
            break;
    }
    r.fail();  // not a tag of this version
    return Noop{};
}

// One tag per op type, but two for Multi: its container rule is part of what the entry means.
OpTag tag_of(const Op& op) {
    if (const auto* multi = std::get_if<Multi>(&op); multi != nullptr && multi->containers_at_end) {
        return OpTag::kMultiContainersAtEnd;
    }
    return std::visit([](const auto& o) { return op_tag<std::decay_t<decltype(o)>>(); }, op);
}

}  // namespace

Result<std::string, ErrorCode> encode_command(const Command& c) {
    if (validate_command(c) != ErrorCode::kOk) {
        return ErrorCode::kBadArguments;
    }
    std::string out;
    Writer w(&out);
    w.u8(kCommandFormatVersion);
    w.varint(c.client_id);
    w.varint(c.seq);
    w.varint(c.ack_seq);
    w.svarint(c.time_ms);
    w.u8(c.fence ? 1 : 0);
    if (c.fence) {
        w.bytes(c.fence->lock);
        w.varint(c.fence->token);
    }
    w.u8(c.caller ? 1 : 0);
    if (c.caller) {
        w.varint(c.caller->size());
        for (const AclId& id : *c.caller) {
            w.bytes(id.scheme);
            w.bytes(id.id);
        }
    }
    w.bytes(c.user);
    w.u8(static_cast<uint8_t>(tag_of(c.op)));
    std::visit([&w](const auto& o) { write_op_fields(w, o); }, c.op);
    return out;
}

Result<Command, ErrorCode> decode_command(std::string_view bytes) {
    Reader r(bytes);
    const uint8_t version = r.u8();
    if (version < kCommandFormatVersionV1 || version > kCommandFormatVersion) {
        return ErrorCode::kMalformedCommand;
    }
    Command c;
    c.client_id = r.varint();
    c.seq = r.varint();
    c.ack_seq = r.varint();
    c.time_ms = r.svarint();
    if (r.boolean()) {
        Fence fence;
        fence.lock = r.bytes(kLockNameBytesMax);
        fence.token = r.varint();
        c.fence = std::move(fence);
    }
    if (version >= kCommandFormatVersionV3 && r.boolean()) {
        Caller caller;
        const uint64_t n = r.varint_in(0, kCallerIdsMax);
        for (uint64_t i = 0; i < n && r.ok(); i++) {
            AclId id;
            id.scheme = r.bytes(kAclSchemeBytesMax);
            id.id = r.bytes(kAclIdBytesMax);
            caller.push_back(std::move(id));
        }
        c.caller = std::move(caller);
    }
    if (version >= kCommandFormatVersionV4) {
        c.user = r.bytes(kAuthNameBytesMax);
    }
    uint8_t tag = r.u8();
    if (!r.ok()) {
        return ErrorCode::kMalformedCommand;
    }
    c.op = version == kCommandFormatVersionV1 ? read_op_v1(r, tag) : read_op(r, tag, version);
    // The same rules as before encoding: a command that decodes must also make sense.
    if (!r.ok() || !r.at_end() || validate_command(c) != ErrorCode::kOk) {
        return ErrorCode::kMalformedCommand;
    }
    return c;
}

void write_stat(Writer& w, const Stat& s) {
    w.varint(s.czxid);
    w.varint(s.mzxid);
    w.varint(s.pzxid);
    w.svarint(s.ctime);
    w.svarint(s.mtime);
    w.svarint(s.version);
    w.svarint(s.cversion);
    w.varint(s.ephemeral_owner);
    w.svarint(s.num_children);
    w.svarint(s.data_length);
    w.svarint(s.aversion);
}

Stat read_stat(Reader& r, bool with_aversion) {
    Stat s;
    s.czxid = r.varint();
    s.mzxid = r.varint();
    s.pzxid = r.varint();
    s.ctime = r.svarint();
    s.mtime = r.svarint();
    s.version = static_cast<int32_t>(r.svarint_in(INT32_MIN, INT32_MAX));
    s.cversion = static_cast<int32_t>(r.svarint_in(INT32_MIN, INT32_MAX));
    s.ephemeral_owner = r.varint();
    s.num_children = static_cast<int32_t>(r.svarint_in(0, INT32_MAX));
    s.data_length = static_cast<int32_t>(r.svarint_in(0, kDataBytesMax));
    if (with_aversion) {
        s.aversion = static_cast<int32_t>(r.svarint_in(0, INT32_MAX));
    }
    return s;
}

void write_response(Writer& w, const Response& resp) {
    w.u8(static_cast<uint8_t>(resp.code));
    w.varint(resp.session);
    w.bytes(resp.path);
    write_stat(w, resp.stat);
    w.u8(static_cast<uint8_t>(resp.lock));
    w.varint(resp.token);
    w.varint(resp.hold_count);
    w.varint(resp.results.size());
    for (const SubResult& sub : resp.results) {
        w.u8(static_cast<uint8_t>(sub.code));
        w.bytes(sub.path);
        write_stat(w, sub.stat);
    }
    w.u8(resp.sql_waiting ? 1 : 0);
    sql::write_result(w, resp.sql);
    w.bytes(resp.message);
}

Response read_response(Reader& r, bool with_sql, bool with_aversion, bool with_message) {
    Response resp;
    resp.code = static_cast<ErrorCode>(r.varint_in(0, kErrorCodeMax));
    resp.session = r.varint();
    resp.path = r.bytes(kPathBytesMax);
    resp.stat = read_stat(r, with_aversion);
    resp.lock = static_cast<LockOutcome>(r.varint_in(0, kLockOutcomeMax));
    resp.token = r.varint();
    resp.hold_count = static_cast<uint32_t>(r.varint_in(0, UINT32_MAX));
    uint64_t n = r.varint_in(0, kMultiOpsMax);
    for (uint64_t i = 0; i < n && r.ok(); i++) {
        SubResult sub;
        sub.code = static_cast<ErrorCode>(r.varint_in(0, kErrorCodeMax));
        sub.path = r.bytes(kPathBytesMax);
        sub.stat = read_stat(r, with_aversion);
        resp.results.push_back(std::move(sub));
    }
    if (with_sql) {
        resp.sql_waiting = r.boolean();
        if (!sql::read_result(r, resp.sql)) {
            r.fail();
        }
    }
    if (with_message) {
        resp.message = r.bytes(kResponseMessageBytesMax);
    }
    return resp;
}

}  // namespace raftlock::statemachine
