#pragma once

// This program started again as a child process (/proc/self/exe), for what must live in another
// process: lock.failover's holder, which is killed, and ZooKeeper's idle sessions beyond one
// process's descriptor limit. The child's stdin and stdout are pipes to the parent, and it is
// killed when the parent dies, so no child outlives a crashed run.

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>

#include "bench/driver.h"

namespace raftlock::bench {

class ChildProcess {
public:
    ChildProcess() = default;
    ~ChildProcess() { stop(true); }
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    // `args` without the program name.
    Status start(const std::vector<std::string>& args);
    // The next line the child wrote (without its newline), waiting at most `timeout`.
    Result<Text, std::string> read_line(std::chrono::milliseconds timeout);
    // Closes the child's stdin (a child that waits for its end then exits).
    void close_stdin();
    // SIGKILLs the child now.
    void kill();
    // Waits for the child to exit (SIGKILL first when `kill_first`) and closes the pipes.
    void stop(bool kill_first);
    pid_t pid() const { return pid_; }

private:
    pid_t pid_ = -1;
    int stdin_fd_ = -1;
    int stdout_fd_ = -1;
    std::string buffer_;
};

}  // namespace raftlock::bench
