#include "bench/peers_control.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>
#include <sys/wait.h>

namespace raftlock::bench {

namespace {

// Single-quotes `word` for /bin/sh.
std::string shell_quote(const std::string& word) {
    std::string out = "'";
    for (char c : word) {
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return out + "'";
}

}  // namespace

Result<Text, std::string> PeersControl::run(const std::string& command, int node) const {
    if (!configured()) {
        return std::string(
            "needs --peers SCRIPT and --peer-system NAME (bench/compare.sh gives them)");
    }
    std::string line = fmt::format("{} {} {}", shell_quote(script_), command, shell_quote(system_));
    if (node > 0) {
        line += fmt::format(" {}", node);
    }
    std::FILE* pipe = ::popen(line.c_str(), "r");
    if (pipe == nullptr) {
        return "cannot run " + line;
    }
    Text out;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) {
        out.text.append(buffer, n);
    }
    const int status = ::pclose(pipe);
    if (status != 0) {
        return fmt::format("'{}' failed (exit status {}; its messages are above)", line,
                           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return out;
}

Result<int, std::string> PeersControl::leader() const {
    return leader_by("leader");
}

Result<int, std::string> PeersControl::leader_now() const {
    return leader_by("leader-now");
}

Result<int, std::string> PeersControl::leader_by(const std::string& command) const {
    auto r = run(command, 0);
    if (!r.ok()) {
        return r.error();
    }
    const int node = std::atoi(r->text.c_str());
    if (node < 1) {
        return "no leader node in '" + r->text + "'";
    }
    return node;
}

Status PeersControl::kill_node(int node) const {
    auto r = run("kill-node", node);
    if (!r.ok()) {
        return r.error();
    }
    return Done{};
}

Status PeersControl::start_node(int node) const {
    auto r = run("start-node", node);
    if (!r.ok()) {
        return r.error();
    }
    return Done{};
}

Result<std::vector<int>, std::string> PeersControl::pids() const {
    auto r = run("pids", 0);
    if (!r.ok()) {
        return r.error();
    }
    std::istringstream in(r->text);
    std::vector<int> out;
    for (int pid; in >> pid;) {
        out.push_back(pid);
    }
    if (out.empty()) {
        return std::string("peers.sh pids listed no process");
    }
    return out;
}

}  // namespace raftlock::bench
