#include "server/negative_controls.h"

#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

namespace raftlock::server::negative_controls {

bool local_reads() {
    static const bool enabled = [] {
        const char* value = std::getenv("RAFTLOCK_UNSAFE_LOCAL_READS");
        const bool on = value != nullptr && std::strcmp(value, "1") == 0;
        if (on) {
            spdlog::warn("NEGATIVE CONTROL: reads are served without ReadIndex and may be stale");
        }
        return on;
    }();
    return enabled;
}

}  // namespace raftlock::server::negative_controls
