#pragma once

// The CPU time and resident memory of server processes, from /proc (Linux), for
// session.keepalive: what many idle sessions cost the servers.

#include <cstdint>
#include <string>
#include <vector>

#include "bench/driver.h"

namespace raftlock::bench {

struct ProcUsage {
    double cpu_s = 0;      // user + system time since the process started
    uint64_t rss_kib = 0;  // VmRSS now
};

// Summed over `pids`; an error names a process that is gone or a file that did not parse.
Result<ProcUsage, std::string> read_proc_usage(const std::vector<int>& pids);

}  // namespace raftlock::bench
