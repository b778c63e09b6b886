// The native-zk-recipe families: ZooKeeper's lock recipe ("Locks" in the ZooKeeper recipes) on
// raftlock's native node API (the zk-recipe families run the same recipe through kazoo and the
// ZooKeeper port: recipes_zk.py). Each contender creates an ephemeral-sequential child of
// /lab/<lock>; the lowest child holds the lock; every other contender watches only its immediate
// predecessor (no herd effect) and looks again when that one goes. The holder's child's czxid is
// its fencing token: children are created in sequence order, so a later holder always has a
// higher czxid.

#include <algorithm>
#include <atomic>
#include <memory>
#include <string_view>
#include <vector>

#include "base/assert.h"
#include "jepsen/labworker/recipe.h"

namespace raftlock::labworker {

namespace {

namespace rc = raftlock::client;

constexpr std::string_view kRoot = "/lab";
constexpr std::string_view kChildPrefix = "lock-";
constexpr size_t kSequenceDigits = 10;  // ZooKeeper's (and raftlock's) sequential suffix
// Each round of the wait either waits for a watch or sees the predecessor already gone; this many
// rounds within 2 × TTL would mean the recipe is spinning.
constexpr int kWaitRoundsMax = 10'000;

std::string_view base_name(std::string_view path) {
    const size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The sequence number of a child `lock-0000000042`; empty for a name that is not ours to order.
std::optional<uint64_t> sequence_of(std::string_view name) {
    if (!name.starts_with(kChildPrefix) || name.size() < kChildPrefix.size() + kSequenceDigits) {
        return std::nullopt;
    }
    const std::string_view digits = name.substr(name.size() - kSequenceDigits);
    if (digits.find_first_not_of("0123456789") != std::string_view::npos) {
        return std::nullopt;
    }
    return std::stoull(std::string(digits));
}

// Where our child stands among the contenders.
struct Position {
    bool present = false;     // false: our child is gone (its session ended)
    std::string predecessor;  // empty: ours is the lowest, the lock is ours
};

Position position_of(const std::vector<std::string>& children, std::string_view own) {
    std::vector<std::pair<uint64_t, std::string>> ordered;
    for (const std::string& child : children) {
        const std::string_view name = base_name(child);
        if (auto sequence = sequence_of(name)) {
            ordered.emplace_back(*sequence, std::string(name));
        }
    }
    std::sort(ordered.begin(), ordered.end());
    for (size_t i = 0; i < ordered.size(); ++i) {
        if (ordered[i].second == own) {
            return Position{true, i == 0 ? std::string() : ordered[i - 1].second};
        }
    }
    return Position{};
}

class ZkRecipe final : public Recipe {
public:
    ZkRecipe(const WorkerOptions& options, Wakeup& wakeup)
        : options_(options), wakeup_(wakeup), dir_(std::string(kRoot) + "/" + options.lock) {}

    StepResult acquire(LabSession& session) override;
    StepResult release(LabSession& session) override;

private:
    std::optional<rc::Error> ensure_parents(rc::Client& client);
    StepResult wait_until_lowest(LabSession& session, SteadyTime deadline);
    StepResult give_up(LabSession& session, StepResult why);

    const WorkerOptions& options_;
    Wakeup& wakeup_;
    const std::string dir_;            // /lab/<lock>: the contenders' parent
    rc::SessionId parents_made_ = 0;   // the session under which the parents were last checked
    std::optional<std::string> node_;  // our child's full path, from its create to release()
};

std::optional<rc::Error> ZkRecipe::ensure_parents(rc::Client& client) {
    for (const std::string& path : {std::string(kRoot), dir_}) {
        auto created = client.create(path, "");
        if (!created.ok() && created.error().code != rc::ErrorCode::kNodeExists) {
            return created.error();  // another worker making it first is fine, anything else not
        }
    }
    return std::nullopt;
}

StepResult ZkRecipe::acquire(LabSession& session) {
    RL_ASSERT(!node_.has_value());
    const SteadyTime deadline = SteadyClock::now() + options_.acquire_wait();
    rc::Client& client = session.client();
    if (parents_made_ != session.id()) {
        if (auto error = ensure_parents(client)) {
            return failed_step(*error);
        }
        parents_made_ = session.id();
    }
    auto created = client.create(dir_ + "/" + std::string(kChildPrefix), "",
                                 {.kind = rc::NodeKind::kEphemeralSequential});
    if (!created.ok()) {
        // Unknown: a child may exist that we do not know of. failed_step abandons the session
        // then, and its end deletes that child, which would otherwise block everyone after it.
        return failed_step(created.error());
    }
    RL_ASSERT(created->stat.czxid != 0);
    RL_ASSERT(sequence_of(base_name(created->path)).has_value());
    node_ = created->path;
    StepResult waited = wait_until_lowest(session, deadline);
    if (waited.outcome != Outcome::kOk) {
        return give_up(session, std::move(waited));
    }
    waited.token = created->stat.czxid;
    return waited;
}

StepResult ZkRecipe::wait_until_lowest(LabSession& session, SteadyTime deadline) {
    RL_ASSERT(node_.has_value());
    rc::Client& client = session.client();
    const std::string own(base_name(*node_));
    for (int round = 0; round < kWaitRoundsMax; ++round) {
        auto children = client.children(dir_);
        if (!children.ok()) {
            return failed_step(children.error());
        }
        const Position position = position_of(*children, own);
        if (!position.present) {
            return StepResult{
                .outcome = Outcome::kInfo, .error = "own_node_gone", .abandon_session = true};
        }
        if (position.predecessor.empty()) {
            return StepResult{};
        }
        // The predecessor only: when it goes, only we look again (no herd effect).
        auto fired = std::make_shared<std::atomic<bool>>(false);
        auto exists = client.exists(dir_ + "/" + position.predecessor,
                                    [fired, wakeup = &wakeup_](const rc::WatchEvent&) {
                                        fired->store(true);
                                        wakeup->notify();
                                    });
        if (!exists.ok()) {
            return failed_step(exists.error());
        }
        if (exists->has_value()) {
            wakeup_.wait_until(deadline, [&] { return fired->load() || session.lost(); });
        }
        if (wakeup_.stop_requested()) {
            return StepResult{.outcome = Outcome::kFail, .error = "stopped"};
        }
        if (session.lost()) {
            return StepResult{
                .outcome = Outcome::kInfo, .error = "session_lost", .abandon_session = true};
        }
        if (!fired->load() && exists->has_value()) {
            return StepResult{.outcome = Outcome::kFail, .error = "wait_timeout"};
        }
    }
    return StepResult{.outcome = Outcome::kFail, .error = "wait_rounds_exhausted"};
}

// Takes our child back after a failed wait. A failure stays kFail only when the child is
// certainly gone; otherwise the session's end must delete it (kInfo, abandon).
StepResult ZkRecipe::give_up(LabSession& session, StepResult why) {
    RL_ASSERT(node_.has_value());
    RL_ASSERT(why.outcome != Outcome::kOk);
    const std::string path = *node_;
    node_.reset();
    if (why.abandon_session) {
        return why;
    }
    auto removed = session.client().remove(path);
    if (removed.ok() || removed.error().code == rc::ErrorCode::kNoNode) {
        return why;
    }
    StepResult unknown = failed_step(removed.error());
    unknown.outcome = Outcome::kInfo;
    unknown.abandon_session = true;
    unknown.error = why.error + ", then delete: " + unknown.error;
    return unknown;
}

StepResult ZkRecipe::release(LabSession& session) {
    RL_ASSERT(node_.has_value());
    const std::string path = *node_;
    node_.reset();
    auto removed = session.client().remove(path);
    if (removed.ok()) {
        return StepResult{};
    }
    // kNoNode: the session ended and took the child with it, at a moment we do not know; any
    // other failure leaves the child to the session's end. Both: kInfo, and end the session.
    StepResult result = failed_step(removed.error());
    result.outcome = Outcome::kInfo;
    result.abandon_session = true;
    return result;
}

}  // namespace

std::unique_ptr<Recipe> make_zk_recipe(const WorkerOptions& options, Wakeup& wakeup) {
    return std::make_unique<ZkRecipe>(options, wakeup);
}

}  // namespace raftlock::labworker
