#include "tests/hostile/probes.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <unistd.h>

#include "proto/client.pb.h"

namespace raftlock::hostile {

bool session_opens(integration::RawConnection& conn, uint64_t request_id) {
    proto::Request open;
    open.set_request_id(request_id);
    open.mutable_open_session()->set_timeout_ms(5000);
    conn.send(open);
    const std::optional<proto::Response> r = conn.response(request_id, kAnswerDeadlineMs);
    return r.has_value() && r->code() == proto::OK;
}

bool write_answers(integration::ProcessCluster& c, uint64_t node, uint64_t request_id) {
    integration::RawConnection conn(c.ports(node).client);
    return session_opens(conn, request_id);
}

WriteProbe::WriteProbe(integration::ProcessCluster& c, std::vector<uint64_t> nodes, int period_ms)
    : c_(c),
      nodes_(std::move(nodes)),
      period_(period_ms),
      next_(std::chrono::steady_clock::now()) {}

void WriteProbe::poll() {
    if (std::chrono::steady_clock::now() < next_) {
        return;
    }
    const uint64_t id = next_id_++;
    const auto start = std::chrono::steady_clock::now();
    late_ += write_answers(c_, nodes_[id % nodes_.size()], id) ? 0 : 1;
    slowest_ms_ =
        std::max<int64_t>(slowest_ms_, std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count());
    next_ = std::chrono::steady_clock::now() + period_;
}

uint64_t term_of(integration::ProcessCluster& c, uint64_t node) {
    const std::optional<std::string> term = c.status_field(node, "term");
    return term ? std::stoull(*term) : 0;
}

uint64_t settled_term(integration::ProcessCluster& c, uint64_t leader) {
    if (!write_answers(c, leader, 999'999)) {
        return 0;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < end) {
        const uint64_t term = term_of(c, leader);
        bool agreed = term > 0;
        for (uint64_t id : c.ids()) {
            agreed = agreed && term_of(c, id) == term;
        }
        if (agreed) {
            return term;
        }
        ::usleep(50 * 1000);
    }
    return 0;
}

int64_t metric(integration::ProcessCluster& c, uint64_t node, const std::string& series) {
    const std::optional<std::string> body = integration::http_get(c.ports(node).admin, "/metrics");
    const size_t at = body ? body->find("\n" + series + " ") : std::string::npos;
    if (at == std::string::npos) {
        return -1;
    }
    return std::stoll(body->substr(at + series.size() + 2));
}

pid_t node_pid(const integration::ProcessCluster& c, uint64_t node) {
    const std::string flag = "127.0.0.1:" + std::to_string(c.ports(node).client);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::ifstream in(entry.path() / "cmdline");
        const std::string cmdline((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
        if (cmdline.find("raftlockd") != std::string::npos &&
            cmdline.find(flag) != std::string::npos) {
            return static_cast<pid_t>(std::stol(entry.path().filename().string()));
        }
    }
    return -1;
}

}  // namespace raftlock::hostile
