// The native families: raftlock's own lock. acquire() queues on the server for at most
// 2 × TTL and answers with a lease whose token is the grant's zxid.

#include <fmt/format.h>

#include "base/assert.h"
#include "jepsen/labworker/recipe.h"

namespace raftlock::labworker {

namespace {

namespace rc = raftlock::client;

class NativeRecipe final : public Recipe {
public:
    explicit NativeRecipe(const WorkerOptions& options) : options_(options) {}

    StepResult acquire(LabSession& session) override {
        RL_ASSERT(!lease_.has_value());
        rc::AcquireOptions acquire{.wait = options_.acquire_wait(),
                                   .owner_tag = fmt::format("lab-w{}", options_.worker)};
        auto lease = session.client().acquire(options_.lock, acquire);
        if (!lease.ok()) {
            // kTimeout: the library cancelled the wait and released a grant that raced it, but
            // that release may itself have failed, so the lock's state is unknown (kInfo).
            return failed_step(lease.error());
        }
        RL_ASSERT(lease->token != 0);
        // A reentrant hold would mean this session kept a grant it was told it released.
        RL_ASSERT(lease->hold_count == 1);
        lease_ = *lease;
        return StepResult{.outcome = Outcome::kOk, .token = lease->token};
    }

    StepResult release(LabSession& session) override {
        RL_ASSERT(lease_.has_value());
        const rc::Lease lease = *lease_;
        lease_.reset();
        auto released = session.client().release(lease);
        if (released.ok()) {
            RL_ASSERT(*released == 0);  // hold_count was 1
            return StepResult{};
        }
        StepResult result = failed_step(released.error());
        // kNotLockHolder: the session lost the lock (expired) at some moment before; a release
        // that was not sent leaves it held until the session ends. Either way the worker no
        // longer knows when the lock was given back, and only ending the session settles it.
        result.outcome = Outcome::kInfo;
        result.abandon_session = true;
        return result;
    }

private:
    const WorkerOptions& options_;
    std::optional<rc::Lease> lease_;  // what the last ok acquire returned, until release()
};

}  // namespace

std::unique_ptr<Recipe> make_native_recipe(const WorkerOptions& options) {
    return std::make_unique<NativeRecipe>(options);
}

}  // namespace raftlock::labworker
