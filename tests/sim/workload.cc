#include "tests/sim/workload.h"

#include <charconv>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::sim {

namespace {

constexpr uint32_t kKeys = 3;
// Few values, so a cas often finds what it expects.
constexpr uint64_t kValues = 5;
constexpr uint32_t kMaxAttempts = 3;
// Long enough for an election and a commit round; shorter ones only add needless retries.
constexpr uint64_t kAttemptTimeoutUs = 400'000;
constexpr uint64_t kThinkTimeMaxUs = 20'000;
// When no node is up, or a proposal was refused: try again soon.
constexpr uint64_t kRetryDelayUs = 30'000;
constexpr size_t kMaxHistory = 1 << 20;

std::string read_context(uint32_t client, uint64_t seq, uint32_t attempt) {
    return fmt::format("r.{}.{}.{}", client, seq, attempt);
}

bool parse_read_context(const std::string& context, uint32_t* client, uint64_t* seq) {
    if (context.size() < 2 || context[0] != 'r' || context[1] != '.') {
        return false;
    }
    const char* p = context.data() + 2;
    const char* end = context.data() + context.size();
    auto r1 = std::from_chars(p, end, *client);
    if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != '.') {
        return false;
    }
    auto r2 = std::from_chars(r1.ptr + 1, end, *seq);
    return r2.ec == std::errc();
}

}  // namespace

std::string HistoryEvent::to_json(uint64_t index) const {
    std::string out = fmt::format(
        R"({{"index":{},"time_ns":{},"process":{},"type":"{}","f":"{}","key":"k{}","value":{})",
        index, time_us * 1000, process, type, f, key, value);
    if (!error.empty()) {
        out += fmt::format(R"(,"error":"{}")", error);
    }
    return out + "}";
}

std::string Workload::history_jsonl() const {
    std::string out;
    for (size_t i = 0; i < history_.size(); ++i) {
        out += history_[i].to_json(i);
        out += '\n';
    }
    return out;
}

Workload::Workload(
    uint64_t seed, uint32_t clients, ClusterAccess& cluster, Checker& checker, Trace& trace)
    : rng_(seed), cluster_(cluster), checker_(checker), trace_(trace), next_process_(clients) {
    for (uint32_t i = 0; i < clients; ++i) {
        clients_.push_back(Client{.id = i + 1, .process = i});
    }
}

void Workload::start() {
    for (Client& c : clients_) {
        wake_at(c, rng_.uniform(kThinkTimeMaxUs));
    }
}

void Workload::wake_at(Client& c, uint64_t delay_us) {
    ++c.token;
    cluster_.wake_client(c.id, cluster_.now_us() + delay_us, c.token);
}

void Workload::on_wake(uint32_t client, uint64_t token) {
    RL_ASSERT(client >= 1 && client <= clients_.size());
    Client& c = clients_[client - 1];
    if (token != c.token) {
        return;  // a timer of an operation that has completed since
    }
    if (!c.busy) {
        invoke(c);
        return;
    }
    if (c.attempts >= kMaxAttempts) {
        // Gave up. A command may still take effect later (info); a read certainly had no
        // effect (fail).
        complete(c, c.is_read ? "fail" : "info", c.is_read ? "null" : invoke_value(c));
        return;
    }
    attempt(c);
}

void Workload::invoke(Client& c) {
    c.busy = true;
    c.attempts = 0;
    c.maybe_proposed = false;
    ++c.seq;
    const uint64_t dice = rng_.uniform(10);
    c.is_read = dice < 3;
    c.command = Command{.client = c.id,
                        .seq = c.seq,
                        .kind = dice < 8 ? OpKind::kWrite : OpKind::kCas,
                        .key = static_cast<uint32_t>(rng_.uniform(kKeys)),
                        .value = static_cast<int64_t>(rng_.uniform(kValues)),
                        .expected = static_cast<int64_t>(rng_.uniform(kValues))};
    c.required_read_index = max_acked_index_;
    record(c, "invoke", invoke_value(c));
    attempt(c);
}

void Workload::attempt(Client& c) {
    ++c.attempts;
    c.node = cluster_.pick_node(rng_);
    if (c.node == raft::kNoNode) {
        wake_at(c, kRetryDelayUs);
        return;
    }
    if (c.is_read) {
        cluster_.read_index(c.node, read_context(c.id, c.seq, c.attempts));
        wake_at(c, kAttemptTimeoutUs);
        return;
    }
    raft::Status status = cluster_.propose(c.node, encode_command(c.command));
    if (status.ok()) {
        c.maybe_proposed = true;
        wake_at(c, kAttemptTimeoutUs);
        return;
    }
    if (!c.maybe_proposed) {
        complete(c, "fail", invoke_value(c));  // refused, and no earlier attempt reached a log
        return;
    }
    wake_at(c, kRetryDelayUs);
}

void Workload::on_command_applied(raft::NodeId node,
                                  const ApplyOutcome& outcome,
                                  raft::Index index) {
    if (heal_commit_index_ && index > *heal_commit_index_) {
        committed_since_heal_ = true;
    }
    const Command& cmd = *outcome.command;
    if (cmd.client < 1 || cmd.client > clients_.size()) {
        return;
    }
    Client& c = clients_[cmd.client - 1];
    if (!c.busy || c.is_read || c.command.seq != cmd.seq || c.node != node) {
        return;  // not the node this client waits on, or an old attempt
    }
    if (!outcome.executed && !outcome.duplicate) {
        return;
    }
    // Both results prove the command is committed at or below `index`.
    max_acked_index_ = std::max(max_acked_index_, index);
    acked_commands_.emplace_back(cmd.client, cmd.seq);
    complete(c, outcome.ok ? "ok" : "fail", invoke_value(c), outcome.ok ? "" : "mismatch");
}

void Workload::on_read_served(raft::NodeId node,
                              const std::string& context,
                              raft::Index read_index,
                              const SimApp& app) {
    uint32_t client = 0;
    uint64_t seq = 0;
    if (!parse_read_context(context, &client, &seq) || client < 1 || client > clients_.size()) {
        return;
    }
    Client& c = clients_[client - 1];
    if (!c.busy || !c.is_read || c.seq != seq) {
        return;  // a late answer to a read that already completed
    }
    if (read_index < c.required_read_index) {
        checker_.fail(fmt::format(
            "linearizability: read {} at node {} got read index {}, but a command at index {} "
            "was acknowledged before the read began",
            context, node, read_index, c.required_read_index));
    }
    RL_ASSERT(app.applied() >= read_index);
    const std::optional<int64_t> value = app.read(c.command.key);
    trace_.log("read {} at node {}: index={} applied={} value={}", context, node, read_index,
               app.applied(), value ? fmt::format("{}", *value) : "null");
    complete(c, "ok", value ? fmt::format("{}", *value) : "null");
}

void Workload::complete(Client& c,
                        const std::string& type,
                        const std::string& value,
                        const std::string& error) {
    record(c, type, value, error);
    if (type == "ok") {
        ++stats_.ok;
    } else if (type == "fail") {
        ++stats_.fail;
    } else {
        ++stats_.info;
        c.process = next_process_++;  // Jepsen: after an unknown outcome, a new process
    }
    c.busy = false;
    wake_at(c, rng_.uniform(kThinkTimeMaxUs));
}

std::string Workload::invoke_value(const Client& c) const {
    if (c.is_read) {
        return "null";
    }
    if (c.command.kind == OpKind::kCas) {
        return fmt::format("[{},{}]", c.command.expected, c.command.value);
    }
    return fmt::format("{}", c.command.value);
}

void Workload::record(const Client& c,
                      const std::string& type,
                      const std::string& value,
                      const std::string& error) {
    RL_ASSERT(history_.size() < kMaxHistory);
    const char* f = c.is_read ? "read" : (c.command.kind == OpKind::kCas ? "cas" : "write");
    history_.push_back(
        HistoryEvent{cluster_.now_us(), c.process, type, f, c.command.key, value, error});
    if (trace_.enabled()) {
        trace_.log("history {}", history_.back().to_json(history_.size() - 1));
    }
}

void Workload::begin_heal() {
    heal_commit_index_ = checker_.committed_index();
}

void Workload::finish() {
    for (const auto& [client, seq] : acked_commands_) {
        if (!checker_.executed(client, seq)) {
            checker_.fail(fmt::format(
                "exactly-once: command {}.{} was acknowledged but never took effect", client, seq));
            return;
        }
    }
}

}  // namespace raftlock::sim
