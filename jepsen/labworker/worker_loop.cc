#include "jepsen/labworker/worker_loop.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::labworker {

namespace {

using namespace std::chrono_literals;

constexpr auto kBackoffMin = 50ms;
constexpr auto kBackoffMax = 100ms;

std::string_view outcome_name(Outcome outcome) {
    switch (outcome) {
        case Outcome::kOk:
            return "ok";
        case Outcome::kFail:
            return "fail";
        case Outcome::kInfo:
            return "info";
    }
    RL_PANIC("unknown Outcome");
}

}  // namespace

WorkerLoop::WorkerLoop(const WorkerOptions& options,
                       ResourceClient& resource,
                       LabSession& session,
                       Recipe& recipe,
                       Wakeup& wakeup)
    : options_(options),
      resource_(resource),
      session_(session),
      recipe_(recipe),
      wakeup_(wakeup),
      rng_(options.seed),
      process_(options.worker) {
    RL_ASSERT(options_.worker >= 1);
    RL_ASSERT(options_.worker <= options_.workers);
}

bool WorkerLoop::running() const {
    return !wakeup_.stop_requested() && SteadyClock::now() < deadline_;
}

void WorkerLoop::run() {
    deadline_ = SteadyClock::now() + options_.run_time;
    while (running()) {
        round();
    }
    session_.abandon();  // its locks and ephemeral nodes go now, not a TTL later
}

void WorkerLoop::round() {
    if (session_.lost()) {
        session_.abandon();  // told it lost the session: a new one, as a user would
    }
    auto opened = session_.ensure();
    if (!opened.ok()) {
        fmt::print(stderr, "worker {}: cannot open a session: {}\n", options_.worker,
                   client::to_string(opened.error()));
        backoff();
        return;
    }
    send_invoke("acquire", nullptr, 0);
    const StepResult acquired = recipe_.acquire(session_);
    if (acquired.outcome != Outcome::kOk) {
        send_event(acquired.outcome, "acquire", nullptr, 0, acquired.error);
        settle(acquired);
        backoff();
        return;
    }
    const Held held{++grants_, acquired.token};
    ++totals_.grants;
    send_event(Outcome::kOk, "acquire", held.token, held.grant, "");
    session_.hold(held.grant);
    critical_section(held);
    release(held);
}

// The protected work: read-modify-write with a pause between. No safe-until check before the
// accesses, as typical user code has none: what stops a stale holder is the resource's check of
// the token (fenced families), or nothing.
void WorkerLoop::critical_section(const Held& held) {
    auto read =
        access({{"op", "read"}, {"grant", held.grant}, {"token", token_for_resource(held)}});
    if (!read) {
        return;
    }
    const auto value = read->find("value");
    if (value == read->end() || !value->is_number_integer()) {
        fmt::print(stderr, "worker {}: a read reply without an integer value: {}\n",
                   options_.worker, read->dump());
        return;
    }
    if (!wakeup_.sleep_for(options_.work)) {
        return;  // stopping: give the lock back at once, the write is not worth the wait
    }
    auto wrote = access({{"op", "write"},
                         {"grant", held.grant},
                         {"token", token_for_resource(held)},
                         {"value", value->get<int64_t>() + 1}});
    if (wrote) {
        ++totals_.sections;
    }
}

void WorkerLoop::release(const Held& held) {
    send_invoke("release", held.token, held.grant);
    const StepResult released = recipe_.release(session_);
    session_.unhold();
    send_event(released.outcome, "release", held.token, held.grant, released.error);
    if (released.outcome != Outcome::kOk) {
        settle(released);
        backoff();
    }
}

void WorkerLoop::settle(const StepResult& result) {
    RL_ASSERT(result.outcome != Outcome::kOk);
    if (result.outcome == Outcome::kInfo) {
        ++totals_.infos;
        process_ += options_.workers;  // this process may hold something forever, in theory
        RL_ASSERT(result.abandon_session);
    } else {
        ++totals_.fails;
    }
    fmt::print(stderr, "worker {}: {} ({}){}\n", options_.worker, outcome_name(result.outcome),
               result.error, result.abandon_session ? ", new session" : "");
    if (result.abandon_session) {
        session_.abandon();
    }
}

void WorkerLoop::backoff() {
    std::uniform_int_distribution<int64_t> pause(kBackoffMin.count(), kBackoffMax.count());
    (void)wakeup_.sleep_for(std::chrono::milliseconds(pause(rng_)));
}

nlohmann::json WorkerLoop::token_for_resource(const Held& held) const {
    // The unfenced families hold the same tokens but do not show them to the resource.
    return is_fenced(options_.family) ? nlohmann::json(held.token) : nlohmann::json(nullptr);
}

void WorkerLoop::send_invoke(std::string_view f, const nlohmann::json& value, uint64_t grant) {
    nlohmann::json request = {{"op", "event"}, {"process", process_},  {"type", "invoke"},
                              {"f", f},        {"key", options_.lock}, {"value", value}};
    if (grant != 0) {
        request["grant"] = grant;
    }
    send(request);
}

void WorkerLoop::send_event(Outcome outcome,
                            std::string_view f,
                            const nlohmann::json& value,
                            uint64_t grant,
                            const std::string& error) {
    // The contract: an acquire ok and every release event name their grant.
    if (outcome == Outcome::kOk || f == "release") {
        RL_ASSERT(grant != 0);
    }
    nlohmann::json request = {
        {"op", "event"}, {"process", process_},  {"type", outcome_name(outcome)},
        {"f", f},        {"key", options_.lock}, {"value", value}};
    if (grant != 0) {
        request["grant"] = grant;
    }
    if (!error.empty()) {
        request["error"] = error;
    }
    send(request);
}

void WorkerLoop::send(const nlohmann::json& request) {
    (void)access(request);
}

std::optional<nlohmann::json> WorkerLoop::access(nlohmann::json request) {
    request["worker"] = options_.worker;
    std::string error;
    auto reply = resource_.call(request, &error);
    if (!reply) {
        ++totals_.resource_errors;
        fmt::print(stderr, "worker {}: resource {}: {}\n", options_.worker,
                   request["op"].get<std::string>(), error);
        return std::nullopt;
    }
    if (reply->contains("error")) {
        ++totals_.resource_errors;
        fmt::print(stderr, "worker {}: resource refused {}: {}\n", options_.worker, request.dump(),
                   reply->dump());
        return std::nullopt;
    }
    if (reply->value("ok", true) == false) {
        ++totals_.refused;
        return std::nullopt;
    }
    return reply;
}

}  // namespace raftlock::labworker
