#pragma once

// Real raftlockd processes on loopback for the integration tests: free ports picked at start, a
// scratch data directory per node, the nodes' logs kept beside it (printed when a test fails), and
// the faults the tests need: kill -9, restart, SIGSTOP/SIGCONT.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace raftlock::integration {

struct NodePorts {
    uint16_t raft = 0;
    uint16_t client = 0;
    uint16_t admin = 0;
    uint16_t redis = 0;  // reserved for every node; served when a flag says "{redis}"
    uint16_t pg = 0;     // and "{pg}"
};

// GET http://127.0.0.1:port/path; empty when the connection fails.
std::optional<std::string> http_get(uint16_t port,
                                    const std::string& path,
                                    std::string* status_line = nullptr);

// Runs a program, returns its exit status (or 128 + signal); stdout in `out` when given.
int run_program(const std::vector<std::string>& argv,
                std::string* out = nullptr,
                const std::map<std::string, std::string>& env = {});
pid_t spawn_program(const std::vector<std::string>& argv,
                    const std::string& stdout_path,
                    const std::map<std::string, std::string>& env = {});
// Waits up to timeout_ms for the process; its status (exit code or 128 + signal) or -1.
int wait_program(pid_t pid, int timeout_ms);

class ProcessCluster {
public:
    // Every node gets extra_flags; "{redis}" in one stands for 127.0.0.1:<the node's redis port>
    // (so {"--redis-listen", "{redis}"} gives each node its own Redis port), "{pg}" likewise.
    // `launcher`, when given, runs each node: {"/usr/bin/prlimit", "--nofile=2048", "--"}.
    explicit ProcessCluster(size_t size = 3,
                            std::vector<std::string> extra_flags = {},
                            std::vector<std::string> launcher = {});
    ~ProcessCluster();  // SIGKILLs what runs, removes the directories (kept when
                        // RAFTLOCK_KEEP_DATA)
    ProcessCluster(const ProcessCluster&) = delete;
    ProcessCluster& operator=(const ProcessCluster&) = delete;

    void start(uint64_t node);
    // A new node (the next id) started empty with --initial-cluster-state existing, waiting to
    // be added with a membership change; returns its id.
    uint64_t add_node();
    // Waits for a node to exit by itself (a removed node does); its status, or -1 on timeout.
    int wait_exit(uint64_t node, int timeout_ms);
    void kill(uint64_t node);  // SIGKILL and reap
    void stop(uint64_t node);  // SIGTERM and reap (clean shutdown)
    void pause(uint64_t node);
    void resume(uint64_t node);
    bool running(uint64_t node) const;

    // The leader every running node agrees on, within timeout_ms; 0 when none.
    uint64_t wait_for_leader(int timeout_ms = 15000);
    // The /status JSON field of a node ("role", "term", "leader", "applied", ...), as text.
    std::optional<std::string> status_field(uint64_t node, const std::string& field);

    const NodePorts& ports(uint64_t node) const { return nodes_.at(node).ports; }
    std::string client_endpoint(uint64_t node) const;
    std::string endpoints() const;  // "127.0.0.1:p1,127.0.0.1:p2,..."
    std::vector<uint64_t> ids() const;
    std::string log_of(uint64_t node) const;
    std::string dir() const { return root_; }

private:
    struct Node {
        NodePorts ports;
        std::string data_dir;
        pid_t pid = -1;
        bool joined = false;  // added after the start: --initial-cluster-state existing
    };
    std::vector<std::string> argv_for(uint64_t node) const;
    // When no leader came: whether each node still runs, and the end of its log.
    void warn_no_leader() const;

    std::string root_;
    std::vector<std::string> extra_flags_;
    std::vector<std::string> launcher_;
    std::map<uint64_t, Node> nodes_;
};

// Paths of the programs under test (set by CMake).
std::string raftlockd_path();
std::string raftlock_path();

}  // namespace raftlock::integration
