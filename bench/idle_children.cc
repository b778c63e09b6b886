// Idle sessions held by child processes (bench/idle_sessions.h): each child is this program in
// --idle-hold mode, talking to the parent over its stdin (closed: stop) and stdout (one status
// line a second), so the parent reads the keepalive errors while the sessions live.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include "bench/child_process.h"
#include "bench/idle_sessions.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr auto kReportInterval = 1s;

class ChildIdleSessions final : public IdleSessions {
public:
    ~ChildIdleSessions() override {
        for (auto& child : children_) {
            child->close_stdin();
        }
        for (std::thread& t : readers_) {
            t.join();
        }
        for (auto& child : children_) {
            child->stop(false);
        }
    }

    Status open(const std::vector<std::string>& base_args,
                size_t count,
                size_t per_child,
                std::chrono::milliseconds timeout) {
        for (size_t opened = 0; opened < count; opened += per_child) {
            const size_t n = std::min(per_child, count - opened);
            std::vector<std::string> args = base_args;
            args.insert(args.end(), {"--idle-hold", std::to_string(n), "--idle-timeout-ms",
                                     std::to_string(timeout.count())});
            auto& child = children_.emplace_back(std::make_unique<ChildProcess>());
            if (Status s = child->start(args); !s.ok()) {
                return s;
            }
            errors_.push_back(0);
        }
        // Every child opens its share at once; wait for each to say so.
        for (size_t i = 0; i < children_.size(); ++i) {
            auto line = children_[i]->read_line(std::chrono::milliseconds(60'000 + count * 10));
            if (!line.ok()) {
                return line.error();
            }
            if (line->text.rfind("opened ", 0) != 0) {
                return "idle child: " + line->text;
            }
            opened_ += std::stoull(line->text.substr(7));
        }
        for (size_t i = 0; i < children_.size(); ++i) {
            readers_.emplace_back([this, i] { read_reports(i); });
        }
        return Done{};
    }

    size_t open_count() const override { return opened_; }
    uint64_t keepalive_errors() const override {
        std::lock_guard lock(mutex_);
        uint64_t sum = 0;
        for (uint64_t e : errors_) {
            sum += e;
        }
        return sum;
    }
    std::string first_error() const override {
        std::lock_guard lock(mutex_);
        return first_error_;
    }
    std::vector<int> client_pids() const override {
        std::vector<int> pids;
        for (const auto& child : children_) {
            pids.push_back(child->pid());
        }
        return pids;
    }

private:
    // "errors COUNT FIRST..." lines until the child exits.
    void read_reports(size_t i) {
        for (;;) {
            auto line = children_[i]->read_line(std::chrono::milliseconds(3'600'000));
            if (!line.ok()) {
                return;
            }
            if (line->text.rfind("errors ", 0) != 0) {
                continue;
            }
            const std::string rest = line->text.substr(7);
            const size_t space = rest.find(' ');
            std::lock_guard lock(mutex_);
            errors_[i] = std::stoull(rest.substr(0, space));
            if (first_error_.empty() && space != std::string::npos) {
                first_error_ = rest.substr(space + 1);
            }
        }
    }

    std::vector<std::unique_ptr<ChildProcess>> children_;
    std::vector<std::thread> readers_;
    size_t opened_ = 0;
    mutable std::mutex mutex_;
    std::vector<uint64_t> errors_;  // per child, under mutex_
    std::string first_error_;       // under mutex_
};

}  // namespace

Result<std::unique_ptr<IdleSessions>, std::string> open_idle_in_children(
    const std::string& system,
    const std::string& endpoints,
    size_t count,
    size_t per_child,
    std::chrono::milliseconds timeout) {
    auto sessions = std::make_unique<ChildIdleSessions>();
    if (Status s = sessions->open({"--system", system, "--endpoints", endpoints}, count, per_child,
                                  timeout);
        !s.ok()) {
        return s.error();
    }
    return std::unique_ptr<IdleSessions>(std::move(sessions));
}

int run_idle_hold(Driver& driver, size_t count, std::chrono::milliseconds timeout) {
    auto sessions = driver.open_idle(count, timeout);
    if (!sessions.ok()) {
        fmt::print("error {}\n", sessions.error());
        std::fflush(stdout);
        return 1;
    }
    fmt::print("opened {}\n", (*sessions)->open_count());
    std::fflush(stdout);
    // Until the parent closes our stdin (or dies: PR_SET_PDEATHSIG).
    for (;;) {
        pollfd p{STDIN_FILENO, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(kReportInterval.count() * 1000));
        if (ready > 0) {
            char byte;
            if (::read(STDIN_FILENO, &byte, 1) <= 0) {
                break;
            }
        }
        const std::string first = (*sessions)->first_error();
        fmt::print("errors {} {}\n", (*sessions)->keepalive_errors(),
                   first.substr(0, first.find('\n')));
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace raftlock::bench
