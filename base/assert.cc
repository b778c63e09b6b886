#include "base/assert.h"

#include <cstdio>
#include <cstdlib>

namespace raftlock {

void assert_fail(const char* expr, const char* file, int line, const char* message) {
    std::fprintf(stderr, "raftlock: invariant broken at %s:%d: %s %s\n", file, line, expr, message);
    std::fflush(stderr);
    std::abort();
}

}  // namespace raftlock
