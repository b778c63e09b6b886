#include "storage/fatal.h"

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::storage {

void fatal_disk_error(std::string_view what) {
    const std::string message = fmt::format("raftlock storage: fatal disk error: {}", what);
    RL_PANIC(message.c_str());
}

void fatal_errno(std::string_view what, int errno_value) {
    fatal_disk_error(fmt::format("{}: {}", what, std::strerror(errno_value)));
}

}  // namespace raftlock::storage
