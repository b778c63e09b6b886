#include "tests/sim/node.h"

#include <utility>

#include "base/assert.h"
#include "raft/raft.h"
#include "raft/text.h"

namespace raftlock::sim {

namespace {

// Readies per input: a node settles in a handful; the bound only stops a runaway core.
constexpr uint32_t kMaxReadiesPerInput = 1000;
// ReadStates waiting for the application to catch up; older ones are dropped (clients retry).
constexpr size_t kMaxPendingReads = 256;

bool grants_vote(const std::vector<raft::Message>& messages) {
    for (const raft::Message& m : messages) {
        if (m.type == raft::MessageType::kVoteResponse && !m.reject) {
            return true;
        }
    }
    return false;
}

}  // namespace

std::string_view to_string(raft::ReadyStage stage) {
    switch (stage) {
        case raft::ReadyStage::kEarlySent:
            return "early-sent";
        case raft::ReadyStage::kPersisted:
            return "persisted";
        case raft::ReadyStage::kSent:
            return "sent";
        case raft::ReadyStage::kApplied:
            return "applied";
    }
    return "unknown";
}

SimNode::SimNode(raft::NodeId id,
                 const NodeParams& params,
                 uint64_t disk_seed,
                 NodeEnv& env,
                 Checker& checker,
                 Trace& trace)
    : id_(id),
      params_(params),
      disk_rng_(disk_seed),
      write_rng_(disk_seed ^ 0x9e3779b97f4a7c15ULL),
      env_(env),
      checker_(checker),
      trace_(trace),
      app_(params.lock_config) {}

SimNode::~SimNode() = default;

void SimNode::bootstrap(const raft::Bootstrap& boot) {
    RL_ASSERT(!up());
    // The disk is empty before the bootstrap (and still closed).
    checker_.on_entries_written(id_, boot.hard_state.term, raft::MemoryStorage(), {boot.entry});
    disk_.bootstrap(boot);
    // The application applies the bootstrap entry too (Config::applied = 1), so its digest
    // matches a node that later receives the entry by replication.
    (void)app_.apply(boot.entry);
    checker_.on_applied(id_, boot.entry, app_.digest());
}

StartResult SimNode::start(uint64_t raft_seed) {
    RL_ASSERT(!up());
    RL_ASSERT(!refused_);
    ++incarnation_;
    const std::optional<storage::StorageError> error = disk_.open();
    checker_.on_disk_opened(id_, error ? std::optional(error->message) : std::nullopt);
    if (error) {
        // Never apply, serve or truncate what a checksum rejects: an operator's problem now.
        refused_ = true;
        trace_.log("n{} REFUSES TO START #{}: {}", id_, incarnation_, error->message);
        return StartResult::kRefused;
    }
    const raft::InitialState initial = disk_.initial_state();
    if (initial.snapshot_meta.index > 0) {
        raft::StorageResult<raft::Snapshot> snap = disk_.snapshot();
        RL_ASSERT(snap.ok());
        std::optional<SimApp> restored =
            SimApp::from_snapshot(snap->metadata.index, snap->data, params_.lock_config);
        RL_ASSERT_MSG(restored.has_value(), "stored snapshot does not decode");
        app_ = std::move(*restored);
        app_.set_conf(snap->metadata.conf_state);
        checker_.on_snapshot_restored(id_, app_.applied(), app_.digest());
    }
    checker_.audit_log(id_, disk_);  // just opened: exactly what is durable
    raft::Config config = params_.raft;
    config.id = id_;
    config.seed = raft_seed;
    config.applied = app_.applied();
    trace_.log("n{} start #{} from {} applied={} log=[{},{}]", id_, incarnation_,
               raft::to_string(initial.hard_state), config.applied, disk_.first_index(),
               disk_.last_index());
    raw_ = std::make_unique<raft::RawNode>(config, disk_);
    raft::ReadyHost& host = *this;
    loop_ = std::make_unique<raft::ReadyLoop>(*raw_, host, params_.max_writes_in_flight);
    checker_.observe(id_, *raw_);
    return drive() ? StartResult::kStarted : StartResult::kCrashed;
}

void SimNode::crash(std::string_view why) {
    RL_ASSERT(up());
    loop_.reset();
    deferred_.clear();
    queued_writes_.clear();  // never written: lost with the process
    raw_.reset();
    const storage::CrashLoss loss = disk_.crash(disk_rng_);
    app_ = SimApp(params_.lock_config);
    pending_reads_.clear();
    crash_mid_persist_ = false;
    write_failure_ = storage::WriteStatus::kOk;
    trace_.log("n{} CRASH {} (kept {} of {} unsynced writes)", id_, why, loss.kept_writes,
               loss.unsynced_writes);
}

std::optional<storage::Corruption> SimNode::corrupt_disk(Rng& rng) {
    RL_ASSERT(!up());
    return disk_.corrupt_record(rng);
}

bool SimNode::drive() {
    crashed_at_.reset();
    if (!queued_writes_.empty()) {
        // Half the time the disk has caught up with everything, else with a seeded prefix.
        const size_t queued = queued_writes_.size();
        complete_writes(write_rng_.chance(1, 2) ? queued : write_rng_.uniform(queued + 1));
        if (write_failure_ != storage::WriteStatus::kOk && !loop_->stopped()) {
            // A failed commit-only write: no completion stopped the loop, the node crashes here.
            crash(fmt::format("at a failed {} ({})", failed_write_,
                              storage::to_string(write_failure_)));
            return false;
        }
    }
    if (!loop_->stopped()) {
        loop_->drive();
    }
    // The Readies after one that applied entries, each on a deferred drive(): all before the
    // next input, up to a bound that only stops a runaway core (the rest waits for that input).
    for (uint32_t i = 0; i < kMaxReadiesPerInput && !deferred_.empty() && !loop_->stopped(); ++i) {
        Callback next = std::move(deferred_.front());
        deferred_.erase(deferred_.begin());
        next();
    }
    // The inline disk completes every write at once.
    RL_ASSERT(params_.max_writes_in_flight > 1 || !loop_->persisting());
    if (loop_->stopped()) {
        RL_ASSERT(crashed_at_.has_value());
        if (write_failure_ != storage::WriteStatus::kOk) {
            crash(fmt::format("at a failed {} ({})", failed_write_,
                              storage::to_string(write_failure_)));
        } else {
            crash(crash_mid_persist_ ? "mid-persist, before the sync"
                                     : fmt::format("at loop stage {}", to_string(*crashed_at_)));
        }
        return false;
    }
    checker_.observe(id_, *raw_);
    if (!maybe_snapshot()) {
        crash(
            fmt::format("at a failed {} ({})", failed_write_, storage::to_string(write_failure_)));
        return false;
    }
    return true;
}

bool SimNode::tick() {
    raw_->tick();
    return drive();
}

bool SimNode::step(raft::Message message, raft::MessageCheck* check) {
    *check = raw_->step(std::move(message));
    return drive();
}

raft::MessageCheck SimNode::step_hostile(raft::Message message) {
    RL_ASSERT(up());
    return raw_->step(std::move(message));
}

std::string SimNode::state_fingerprint() const {
    RL_ASSERT(up());
    return fmt::format("{}ready={}", raft::to_string(raw_->status()), raw_->has_ready());
}

bool SimNode::propose(std::string data, raft::Status* status) {
    *status = raw_->propose(std::move(data));
    return drive();
}

bool SimNode::read_index(std::string context) {
    raw_->read_index(std::move(context));
    return drive();
}

bool SimNode::propose_conf_change(const raft::ConfChange& change, raft::Status* status) {
    *status = raw_->propose_conf_change(change);
    return drive();
}

bool SimNode::transfer_leadership(raft::NodeId to) {
    raw_->transfer_leadership(to);
    return drive();
}

bool SimNode::campaign() {
    raw_->campaign();
    return drive();
}

bool SimNode::maybe_snapshot() {
    // A snapshot save waits for the queued writes, as the server's storage thread orders it
    // behind them: the commit index that covers what was applied may be among them.
    if (params_.snapshot_every_entries == 0 || !queued_writes_.empty()) {
        return true;
    }
    const raft::Index snapshot_index = disk_.initial_state().snapshot_meta.index;
    const raft::Index applied = app_.applied();
    if (applied < snapshot_index + params_.snapshot_every_entries) {
        return true;
    }
    const raft::Index lag = std::min<raft::Index>(params_.compaction_lag_entries, applied);
    trace_.log("n{} snapshot at {} (compact to {})", id_, applied, applied - lag);
    arm_write_fault();
    return write_ok(disk_.save_snapshot(applied, app_.conf(), app_.snapshot_data(), applied - lag),
                    "snapshot save");
}

void SimNode::arm_write_fault() {
    const storage::WriteStatus fault = env_.write_fault(id_);
    if (fault != storage::WriteStatus::kOk) {
        disk_.fail_next_write(fault);
    }
}

bool SimNode::write_ok(storage::WriteStatus status, std::string_view what) {
    if (status == storage::WriteStatus::kOk) {
        return true;
    }
    write_failure_ = status;
    failed_write_ = what;
    return false;
}

void SimNode::on_ready(const raft::Ready& ready) {
    ready_traits_ = ReadyTraits{grants_vote(ready.messages) || grants_vote(ready.early_messages)};
    if (trace_.enabled()) {
        trace_.log("n{} ready", id_);
        trace_.block(raft::to_string(ready, "             "));
    }
}

void SimNode::send(std::vector<raft::Message>& messages) {
    env_.send(id_, std::move(messages));
}

void SimNode::persist(std::shared_ptr<const raft::Ready> ready, bool sync, Callback done) {
    if (params_.max_writes_in_flight > 1) {
        queued_writes_.push_back(
            QueuedWrite{std::move(ready), sync, std::move(done), raw_->raft().term(), {}});
        return;
    }
    // After a failed write nothing more is written, and the completion's proceed() stops the loop:
    // the node crashes before any message of this Ready leaves.
    write_ready(*ready, sync, raw_->raft().term());
    done();
}

void SimNode::persist_commit(const raft::HardState& hard_state) {
    if (!queued_writes_.empty()) {
        // Behind the writes started before it: written first, it would be overwritten by their
        // older hard states.
        queued_writes_.push_back(QueuedWrite{nullptr, false, {}, 0, hard_state});
        return;
    }
    arm_write_fault();
    (void)write_ok(disk_.write_hard_state(hard_state), "hard state write");
}

void SimNode::complete_writes(size_t count) {
    RL_ASSERT(count <= queued_writes_.size());
    for (size_t i = 0; i < count && !loop_->stopped(); ++i) {
        QueuedWrite w = std::move(queued_writes_.front());
        queued_writes_.pop_front();
        if (w.commit_only) {
            arm_write_fault();
            if (!write_ok(disk_.write_hard_state(*w.commit_only), "hard state write")) {
                // No completion stops the loop for it: drive() crashes the node.
                return;
            }
            continue;
        }
        write_ready(*w.ready, w.sync, w.term);
        w.done();  // after a failed write, its proceed() stops the loop
    }
}

void SimNode::defer(Callback fn) {
    deferred_.push_back(std::move(fn));
}

void SimNode::write_ready(const raft::Ready& ready, bool sync, raft::Term term) {
    if (ready.snapshot) {
        checker_.on_snapshot_written(id_, ready.snapshot->metadata);
        arm_write_fault();
        if (!write_ok(disk_.write_snapshot(*ready.snapshot), "snapshot write")) {
            return;
        }
    }
    if (!ready.entries.empty()) {
        checker_.on_entries_written(id_, term, disk_, ready.entries);
        arm_write_fault();
        if (!write_ok(disk_.write_entries(ready.entries), "entries write")) {
            return;
        }
    }
    if (ready.hard_state) {
        arm_write_fault();
        if (!write_ok(disk_.write_hard_state(*ready.hard_state), "hard state write")) {
            return;
        }
    }
    if (!sync) {
        return;
    }
    if (env_.crash_mid_persist(id_, ready_traits_)) {
        crash_mid_persist_ = true;  // proceed() stops the loop; the writes stay unsynced
        return;
    }
    arm_write_fault();
    (void)write_ok(disk_.sync(), "sync");
}

void SimNode::apply_snapshot(const raft::Snapshot& snapshot) {
    std::optional<SimApp> restored =
        SimApp::from_snapshot(snapshot.metadata.index, snapshot.data, params_.lock_config);
    if (!restored) {
        checker_.fail(fmt::format("node {} received a snapshot that does not decode", id_));
        return;
    }
    app_ = std::move(*restored);
    app_.set_conf(snapshot.metadata.conf_state);
    ++snapshots_installed_;
    checker_.on_snapshot_restored(id_, app_.applied(), app_.digest());
    trace_.log("n{} restored snapshot {}", id_, raft::to_string(snapshot.metadata));
}

void SimNode::apply_entries(const std::vector<raft::Entry>& entries) {
    checker_.observe(id_, *raw_);  // the committed record must cover what is applied
    for (const raft::Entry& e : entries) {
        if (e.index != app_.applied() + 1) {
            checker_.fail(fmt::format("node {} was given entry {} to apply after {}", id_, e.index,
                                      app_.applied()));
            return;
        }
        const ApplyOutcome outcome = app_.apply(e);
        checker_.on_applied(id_, e, app_.digest());
        if (outcome.executed) {
            checker_.on_executed(id_, outcome.command->client, outcome.command->seq, e.index);
        }
        if (outcome.command || outcome.lock) {
            env_.on_command_applied(id_, e, outcome, app_);
        }
    }
    serve_ready_reads();
}

void SimNode::serve_reads(std::vector<raft::ReadState>& read_states) {
    for (const raft::ReadState& rs : read_states) {
        if (pending_reads_.size() >= kMaxPendingReads) {
            pending_reads_.erase(pending_reads_.begin());
        }
        pending_reads_.push_back(PendingRead{rs.index, rs.context});
    }
    serve_ready_reads();
}

void SimNode::serve_ready_reads() {
    // Each read waits for its own index: ReadStates from different leaders need not be ordered.
    std::vector<PendingRead> waiting;
    for (PendingRead& r : pending_reads_) {
        if (r.index <= app_.applied()) {
            env_.on_read_served(id_, r.context, r.index, app_);
        } else {
            waiting.push_back(std::move(r));
        }
    }
    pending_reads_ = std::move(waiting);
}

bool SimNode::proceed(raft::ReadyStage stage) {
    const bool failed = crash_mid_persist_ || write_failure_ != storage::WriteStatus::kOk;
    if (!failed && !env_.crash_at(id_, stage, ready_traits_)) {
        return true;
    }
    crashed_at_ = stage;
    return false;
}

}  // namespace raftlock::sim
