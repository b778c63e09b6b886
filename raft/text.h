#pragma once

// Stable, compact text forms of the core's types, for logs, golden interaction tests and simulator
// traces. Changing a format changes golden files: do it on purpose.
//
//   entry    3/18 "data"            (term/index, data quoted, truncated to 40 bytes)
//            3/19 conf{+v4 => v1,2,3,4}
//   message  1->2 MsgApp term=3 log=2/17 commit=18 entries=[3/18 "x"]
//   hard     term=3 vote=1 commit=18

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "raft/raw_node.h"
#include "raft/types.h"

namespace raftlock::raft {

std::string_view to_string(MessageType type);
std::string_view to_string(Role role);
std::string_view to_string(ProgressState state);
std::string to_string(const Entry& entry);
std::string to_string(const HardState& hs);
std::string to_string(const ConfState& cs);
std::string to_string(const ConfChange& cc);
std::string to_string(const SnapshotMetadata& meta);
std::string to_string(const Message& message);
std::string to_string(const ReadState& rs);
std::string to_string(const SoftState& ss);
// Multi-line forms, one item per line, each line prefixed by `indent`.
std::string to_string(const Ready& ready, std::string_view indent = "");
std::string to_string(const NodeStatus& status, std::string_view indent = "");
// A printable form of arbitrary bytes: printable ASCII as is, the rest as \xNN; longer than
// `max_bytes` is cut and marked with the total length.
std::string quote_bytes(std::string_view bytes, size_t max_bytes = 40);

}  // namespace raftlock::raft

#define RAFTLOCK_TEXT_FORMATTER(Type)                                                           \
    template <>                                                                                 \
    struct fmt::formatter<Type> : fmt::formatter<std::string_view> {                            \
        auto format(const Type& value, fmt::format_context& ctx) const {                        \
            return fmt::formatter<std::string_view>::format(::raftlock::raft::to_string(value), \
                                                            ctx);                               \
        }                                                                                       \
    }

RAFTLOCK_TEXT_FORMATTER(raftlock::raft::MessageType);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::Role);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::ProgressState);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::Entry);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::HardState);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::ConfState);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::ConfChange);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::SnapshotMetadata);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::Message);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::ReadState);
RAFTLOCK_TEXT_FORMATTER(raftlock::raft::SoftState);
