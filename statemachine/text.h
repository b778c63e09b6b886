#pragma once

// fmt formatters for the state machine's types, over their stable to_string forms (text.cc), so
// logs, goldens and simulator traces can write fmt::format("{}", apply_result).

#include <string_view>

#include <fmt/format.h>

#include "statemachine/command.h"
#include "statemachine/output.h"
#include "statemachine/state_machine.h"
#include "statemachine/types.h"
#include "statemachine/watches.h"

#define RAFTLOCK_SM_TEXT_FORMATTER(Type)                                 \
    template <>                                                          \
    struct fmt::formatter<Type> : fmt::formatter<std::string_view> {     \
        auto format(const Type& value, fmt::format_context& ctx) const { \
            return fmt::formatter<std::string_view>::format(             \
                ::raftlock::statemachine::to_string(value), ctx);        \
        }                                                                \
    }

RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::ErrorCode);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::NodeKind);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::LockMode);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::EventType);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::SessionEnd);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::LockOutcome);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::WatchKind);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::Stat);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::Command);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::Response);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::ApplyResult);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::LockInfo);
RAFTLOCK_SM_TEXT_FORMATTER(raftlock::statemachine::WatchEvent);
