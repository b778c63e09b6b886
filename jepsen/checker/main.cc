// raftlock-check: decides whether recorded histories are linearizable. Exit status: 0 all
// linearizable, 1 some history is not (or failed a linear check), 2 some verdict is unknown
// (budget exhausted; never a pass), 3 bad input or usage. The worst status over the files wins,
// in the order 3, 1, 2, 0. See docs/jepsen.md.
#include <cstdio>
#include <string>
#include <vector>

#include "jepsen/checker/cli.h"

int main(int argc, char** argv) {
    using namespace raftlock::jepsen;
    std::vector<std::string> args(argv + 1, argv + argc);
    auto cli = parse_cli(args);
    if (!cli.ok()) {
        std::fprintf(stderr, "raftlock-check: %s\n%s", cli.error().c_str(), kUsage);
        return kExitBadInput;
    }
    return run(*cli);
}
