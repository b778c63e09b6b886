#include "client/types.h"

namespace raftlock::client {

std::string_view to_string(Access access) {
    switch (access) {
        case Access::kRead:
            return "read";
        case Access::kWrite:
            return "write";
        case Access::kAdmin:
            return "admin";
    }
    return "?";
}

std::string_view to_string(Space space) {
    switch (space) {
        case Space::kLock:
            return "lock";
        case Space::kNode:
            return "node";
        case Space::kRedis:
            return "redis";
        case Space::kSql:
            return "sql";
    }
    return "?";
}

std::optional<Access> parse_access(std::string_view word) {
    for (Access a : {Access::kRead, Access::kWrite, Access::kAdmin}) {
        if (word == to_string(a)) {
            return a;
        }
    }
    return std::nullopt;
}

std::optional<Space> parse_space(std::string_view word) {
    for (Space s : {Space::kLock, Space::kNode, Space::kRedis, Space::kSql}) {
        if (word == to_string(s)) {
            return s;
        }
    }
    return std::nullopt;
}

std::string_view to_string(NodeKind kind) {
    switch (kind) {
        case NodeKind::kPersistent:
            return "persistent";
        case NodeKind::kEphemeral:
            return "ephemeral";
        case NodeKind::kPersistentSequential:
            return "persistent_sequential";
        case NodeKind::kEphemeralSequential:
            return "ephemeral_sequential";
        case NodeKind::kContainer:
            return "container";
        case NodeKind::kTtl:
            return "ttl";
        case NodeKind::kTtlSequential:
            return "ttl_sequential";
    }
    return "unknown";
}

std::string_view to_string(LockMode mode) {
    switch (mode) {
        case LockMode::kExclusive:
            return "exclusive";
        case LockMode::kShared:
            return "shared";
        case LockMode::kSemaphore:
            return "semaphore";
    }
    return "unknown";
}

std::string_view to_string(EventType type) {
    switch (type) {
        case EventType::kNodeCreated:
            return "created";
        case EventType::kNodeDeleted:
            return "deleted";
        case EventType::kNodeDataChanged:
            return "data_changed";
        case EventType::kNodeChildrenChanged:
            return "children_changed";
    }
    return "unknown";
}

std::string_view to_string(SessionLoss loss) {
    switch (loss) {
        case SessionLoss::kSafeUntilPassed:
            return "safe_until_passed";
        case SessionLoss::kExpired:
            return "expired";
        case SessionLoss::kClosed:
            return "closed";
    }
    return "unknown";
}

}  // namespace raftlock::client
