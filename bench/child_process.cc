#include "bench/child_process.h"

#include <csignal>

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace raftlock::bench {

Status ChildProcess::start(const std::vector<std::string>& args) {
    RL_ASSERT(pid_ < 0);
    int to_child[2];
    int from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0) {
        return std::string("pipe2 failed");
    }
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
        ::close(to_child[0]);
        ::close(to_child[1]);
        return std::string("pipe2 failed");
    }
    std::vector<std::string> argv_text = {"raftlock-bench"};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        return std::string("fork failed");
    }
    if (pid == 0) {
        ::dup2(to_child[0], STDIN_FILENO);
        ::dup2(from_child[1], STDOUT_FILENO);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::execv("/proc/self/exe", argv.data());
        ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    pid_ = pid;
    stdin_fd_ = to_child[1];
    stdout_fd_ = from_child[0];
    return Done{};
}

Result<Text, std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const size_t newline = buffer_.find('\n');
        if (newline != std::string::npos) {
            Text line{buffer_.substr(0, newline)};
            buffer_.erase(0, newline + 1);
            return line;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd p{stdout_fd_, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            return fmt::format("no answer from child process {} within {} ms", pid_,
                               timeout.count());
        }
        char chunk[512];
        const ssize_t n = ::read(stdout_fd_, chunk, sizeof chunk);
        if (n <= 0) {
            return fmt::format("child process {} exited (its messages are above)", pid_);
        }
        buffer_.append(chunk, static_cast<size_t>(n));
    }
}

void ChildProcess::close_stdin() {
    if (stdin_fd_ >= 0) {
        ::close(stdin_fd_);
        stdin_fd_ = -1;
    }
}

void ChildProcess::kill() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
    }
}

void ChildProcess::stop(bool kill_first) {
    close_stdin();
    if (pid_ > 0) {
        if (kill_first) {
            kill();
        }
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    if (stdout_fd_ >= 0) {
        ::close(stdout_fd_);
        stdout_fd_ = -1;
    }
}

}  // namespace raftlock::bench
