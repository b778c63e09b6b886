#include "bench/proc_usage.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

namespace raftlock::bench {

namespace {

// utime and stime, fields 14 and 15 of /proc/PID/stat, counted after the command name's closing
// parenthesis (the name itself may hold spaces).
Result<double, std::string> cpu_seconds(int pid) {
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (stat.empty() || paren == std::string::npos) {
        return fmt::format("no /proc/{}/stat (is the process gone?)", pid);
    }
    std::istringstream fields(stat.substr(paren + 2));
    std::string field;
    uint64_t utime = 0, stime = 0;
    // After ")": field 3 (state) is the first; utime is field 14, stime 15.
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i == 14) {
            utime = std::stoull(field);
        } else if (i == 15) {
            stime = std::stoull(field);
        }
    }
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

Result<uint64_t, std::string> rss_kib(int pid) {
    std::ifstream in(fmt::format("/proc/{}/status", pid));
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return std::stoull(line.substr(6));
        }
    }
    return fmt::format("no VmRSS in /proc/{}/status (is the process gone?)", pid);
}

}  // namespace

Result<ProcUsage, std::string> read_proc_usage(const std::vector<int>& pids) {
    ProcUsage sum;
    for (int pid : pids) {
        auto cpu = cpu_seconds(pid);
        if (!cpu.ok()) {
            return cpu.error();
        }
        auto rss = rss_kib(pid);
        if (!rss.ok()) {
            return rss.error();
        }
        sum.cpu_s += *cpu;
        sum.rss_kib += *rss;
    }
    return sum;
}

}  // namespace raftlock::bench
