// raftlock-lab-check: the lock lab's accounting of one cell (docs/lock-lab.md). Prints the
// metrics as one JSON object. Exit status: 0 valid cell, 1 invalid cell (the metrics are still
// printed, with the reasons), 3 bad input or usage.
#include <cstdio>
#include <string>
#include <vector>

#include "jepsen/checker/lab_cli.h"

int main(int argc, char** argv) {
    using namespace raftlock::jepsen;
    std::vector<std::string> args(argv + 1, argv + argc);
    auto options = parse_lab_cli(args);
    if (!options.ok()) {
        std::fprintf(stderr, "raftlock-lab-check: %s\n%s", options.error().c_str(), kLabUsage);
        return kLabExitBadInput;
    }
    std::string out;
    std::string err;
    int status = run_lab_check(*options, &out, &err);
    std::fputs(err.c_str(), stderr);
    std::fputs(out.c_str(), stdout);
    return status;
}
