#pragma once

// Disk errors are fatal (DESIGN.md §3): a node that could not persist its state must stop instead
// of acting on state that exists only in memory. It restarts and recovers from what is on disk.

#include <string_view>

namespace raftlock::storage {

// Prints "raftlock storage: fatal disk error: <what>" and aborts through RL_PANIC.
[[noreturn]] void fatal_disk_error(std::string_view what);

// The same for a failed system call: appends strerror(errno_value).
[[noreturn]] void fatal_errno(std::string_view what, int errno_value);

}  // namespace raftlock::storage
