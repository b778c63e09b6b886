#pragma once

// Always-on invariant checks (TigerBeetle style): a broken invariant is a bug, and continuing with
// corrupt consensus state is worse than crashing. These never compile out, not even with NDEBUG.
// Expected failures (a peer, a user, a disk) use Status / Result instead.

namespace raftlock {

[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const char* message);

}  // namespace raftlock

#define RL_ASSERT(cond)                                             \
    do {                                                            \
        if (!(cond)) [[unlikely]] {                                 \
            ::raftlock::assert_fail(#cond, __FILE__, __LINE__, ""); \
        }                                                           \
    } while (0)

#define RL_ASSERT_MSG(cond, message)                                       \
    do {                                                                   \
        if (!(cond)) [[unlikely]] {                                        \
            ::raftlock::assert_fail(#cond, __FILE__, __LINE__, (message)); \
        }                                                                  \
    } while (0)

#define RL_PANIC(message) ::raftlock::assert_fail("panic", __FILE__, __LINE__, (message))
