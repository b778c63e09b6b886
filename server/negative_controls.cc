#include "server/negative_controls.h"

#include <array>
#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

namespace raftlock::server::negative_controls {

namespace {

struct Switch {
    const char* name;
    const char* env;
    const char* warning;
};

constexpr std::array<Switch, 5> kSwitches = {{
    {"local-reads", "RAFTLOCK_UNSAFE_LOCAL_READS",
     "reads are served without ReadIndex and may be stale"},
    {"proposal-forwarding", "RAFTLOCK_UNSAFE_PROPOSAL_FORWARDING",
     "the core forwards proposals: a deposed leader's session expiries may commit"},
    {"keepalive-without-read-index", "RAFTLOCK_UNSAFE_KEEPALIVE_WITHOUT_READ_INDEX",
     "keepalives are acknowledged without confirming leadership"},
    {"forward-answered-early", "RAFTLOCK_UNSAFE_FORWARD_ANSWERED_EARLY",
     "forwarded writes are answered before they are applied"},
    {"reads-out-of-order", "RAFTLOCK_UNSAFE_READS_OUT_OF_ORDER",
     "confirmed reads are served out of the order they were asked"},
}};

std::array<bool, kSwitches.size()>& switches() {
    static std::array<bool, kSwitches.size()> state = [] {
        std::array<bool, kSwitches.size()> s{};
        for (size_t i = 0; i < kSwitches.size(); ++i) {
            const char* value = std::getenv(kSwitches[i].env);
            s[i] = value != nullptr && std::strcmp(value, "1") == 0;
            if (s[i]) {
                spdlog::warn("NEGATIVE CONTROL: {}", kSwitches[i].warning);
            }
        }
        return s;
    }();
    return state;
}

}  // namespace

bool on(Control control) {
    return switches().at(static_cast<size_t>(control));
}

void turn_on(Control control) {
    switches().at(static_cast<size_t>(control)) = true;
}

std::optional<Control> parse(std::string_view name) {
    for (size_t i = 0; i < kSwitches.size(); ++i) {
        if (name == kSwitches[i].name) {
            return static_cast<Control>(i);
        }
    }
    return std::nullopt;
}

}  // namespace raftlock::server::negative_controls
