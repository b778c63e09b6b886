#include "tests/sim/cluster.h"

#include <algorithm>

#include "base/assert.h"
#include "raft/conf_change.h"
#include "raft/raft.h"
#include "raft/text.h"
#include "statemachine/text.h"

namespace raftlock::sim {

namespace {

// One tick of a node with a perfect clock. Timeouts are in ticks (Config), so this only sets
// the scale of network delays and downtimes relative to elections.
constexpr uint64_t kTickUs = 10'000;
// After the heal, a leader must be elected and a new command committed within this many ticks
// (thirty election timeouts: generous, so only a real liveness bug trips it).
constexpr uint64_t kLivenessTicks = 300;
// Then every member must apply everything committed so far within this many ticks of the last
// progress any of them made, and within kSettleTicksMax in all.
constexpr uint64_t kSettleTicks = 200;
constexpr uint64_t kSettleTicksMax = 3000;
constexpr uint32_t kClients = 3;
constexpr uint32_t kLockClients = 3;
// Each node's clock reads simulated time plus up to this much, so leaders stamp lock commands
// with clocks that disagree (the state machine's cluster time is the maximum seen).
constexpr uint64_t kClockOffsetMsMax = 200;
// A run that schedules this many events is in a feedback loop; stop it as a failure.
constexpr uint64_t kMaxEventsPerRun = 20'000'000;
// The Rng stream of the storage faults (faults.h pick_storage_faults).
constexpr uint64_t kStorageFaultStream = 16;
// The Rng streams of the broken peer: its weight (pick_hostile_peer_fault) and its messages.
constexpr uint64_t kHostileWeightStream = 17;
constexpr uint64_t kHostileMessageStream = 18;

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
    Rng rng(seed ^ (stream * 0xd1b54a32d192ed03ULL));
    return rng.next();
}

NodeParams pick_node_params(Rng& rng, BreakControl control) {
    NodeParams p;
    raft::Config& c = p.raft;
    c.election_tick = 10;
    const int heartbeats[] = {1, 1, 2, 3};
    c.heartbeat_tick = rng.pick(heartbeats);
    c.pre_vote = rng.chance(4, 5);
    c.check_quorum = rng.chance(4, 5);
    if (!c.pre_vote && !c.check_quorum) {
        // Without either, a removed server that never learns of its removal starts elections
        // forever and the cluster never settles (thesis §4.2.3; the core's leader stickiness
        // comes with CheckQuorum, as in etcd). No liveness is promised there, so no run uses it.
        c.pre_vote = true;
    }
    const uint64_t msg_sizes[] = {64, 256, 4096, 1 << 20};
    c.max_size_per_msg_bytes = rng.pick(msg_sizes);
    const uint32_t inflights[] = {1, 4, 32, 256};
    c.max_inflight_msgs = rng.pick(inflights);
    const uint64_t ready_sizes[] = {128, 64 << 20};
    c.max_committed_size_per_ready_bytes = rng.pick(ready_sizes);
    const uint64_t uncommitted[] = {0, 2048, 256 << 20};
    c.max_uncommitted_entries_bytes = rng.pick(uncommitted);
    const uint64_t chunks[] = {16, 64, 1024, 1 << 20};
    c.snapshot_chunk_bytes = rng.pick(chunks);
    const uint32_t every[] = {0, 5, 20, 50};
    p.snapshot_every_entries = rng.pick(every);
    const uint32_t lags[] = {0, 3, 10, 30};
    p.compaction_lag_entries = rng.pick(lags);
    const uint32_t writes_in_flight[] = {1, 2, 4, 8};
    p.max_writes_in_flight = rng.pick(writes_in_flight);
#ifdef RAFTLOCK_NEGATIVE_CONTROLS
    c.negative_controls.reply_vote_before_persist = control == BreakControl::kVoteBeforePersist;
    c.negative_controls.commit_earlier_terms_by_counting =
        control == BreakControl::kCommitEarlierTerms;
    c.negative_controls.skip_log_up_to_date_check = control == BreakControl::kNoLogCheck;
    p.lock_config.negative_control_double_grant = control == BreakControl::kLockDoubleGrant;
#else
    RL_ASSERT_MSG(control == BreakControl::kNone, "negative controls need the unsafe build");
#endif
    return p;
}

}  // namespace

SimResult run_simulation(const SimOptions& options) {
    Cluster cluster(options);
    return cluster.run();
}

Cluster::Cluster(const SimOptions& options)
    : options_(options),
      trace_(options.trace, stdout, options.trace_capture),
      checker_(trace_),
      nemesis_rng_(derive_seed(options.seed, 1)),
      hostile_rng_(derive_seed(options.seed, kHostileMessageStream)),
      lock_checker_(checker_) {
    if (options_.steps == 0) {
        options_.steps = kDefaultSteps;
    }
    Rng setup(derive_seed(options.seed, 0));
    founders_ = options.nodes != 0 ? options.nodes : (setup.chance(1, 2) ? 3 : 5);
    RL_ASSERT(founders_ == 3 || founders_ == 5);
    max_node_ = founders_ + 1;
    faults_ = pick_fault_profile(setup);
    Rng storage_faults(derive_seed(options.seed, kStorageFaultStream));
    pick_storage_faults(storage_faults, faults_);
    Rng hostile_weight(derive_seed(options.seed, kHostileWeightStream));
    pick_hostile_peer_fault(hostile_weight, faults_);
    network_ = std::make_unique<Network>(derive_seed(options.seed, 2), max_node_);
    network_->set_profile(pick_network_profile(setup));
    ClusterAccess& access = *this;
    workload_ = std::make_unique<Workload>(derive_seed(options.seed, 3), kClients, access, checker_,
                                           trace_);
    LockAccess& lock_access = *this;
    lock_workload_ = std::make_unique<LockWorkload>(derive_seed(options.seed, 4), kLockClients,
                                                    lock_access, trace_);
    setup_nodes(setup);
}

Cluster::~Cluster() = default;

void Cluster::setup_nodes(Rng& rng) {
    const NodeParams params = pick_node_params(rng, options_.break_control);
    const raft::Config& c = params.raft;
    peer_input_limits_ = c.peer_input;
    trace_.log("seed {}: {} founding voters + 1 spare, {} fault-phase ticks", options_.seed,
               founders_, options_.steps);
    trace_.log(
        "raft: heartbeat={} election={} pre_vote={} check_quorum={} msg={}B inflight={} "
        "ready={}B uncommitted={}B chunk={}B; snapshot every {} entries, lag {}",
        c.heartbeat_tick, c.election_tick, c.pre_vote, c.check_quorum, c.max_size_per_msg_bytes,
        c.max_inflight_msgs, c.max_committed_size_per_ready_bytes, c.max_uncommitted_entries_bytes,
        c.snapshot_chunk_bytes, params.snapshot_every_entries, params.compaction_lag_entries);
    trace_.log("faults: {}", faults_.describe());
    trace_.log("network: {}", network_->profile().describe());
    raft::ConfState conf;
    for (raft::NodeId id = 1; id <= founders_; ++id) {
        conf.voters.push_back(id);
    }
    const raft::Bootstrap boot = raft::make_bootstrap(conf);
    checker_.on_bootstrap(boot.entry);
    NodeEnv& env = *this;
    Rng clocks(derive_seed(options_.seed, 5));
    for (raft::NodeId id = 1; id <= max_node_; ++id) {
        leader_sessions_.emplace_back();
        clock_offset_ms_.push_back(static_cast<int64_t>(clocks.uniform(kClockOffsetMsMax + 1)));
        nodes_.push_back(std::make_unique<SimNode>(id, params, derive_seed(options_.seed, 100 + id),
                                                   env, checker_, trace_));
        const uint32_t drift = faults_.clock_drift_per_mille;
        const uint64_t rate = 1000 - drift + rng.uniform(2 * drift + 1);
        tick_interval_us_.push_back(kTickUs * rate / 1000);
        next_downtime_us_.push_back(0);
        paused_until_us_.push_back(0);
        trace_.log("n{}: tick every {}us, clock +{}ms{}", id, tick_interval_us_.back(),
                   clock_offset_ms_.back(), id <= founders_ ? "" : " (spare, not a member)");
        if (id <= founders_) {
            node(id).bootstrap(boot);
        }
    }
    for (raft::NodeId id = 1; id <= max_node_; ++id) {
        // No crashes before the first event, and every disk is intact.
        RL_ASSERT(node(id).start(raft_seed(id, 1)) == StartResult::kStarted);
        queue_.schedule(rng.uniform(tick_interval_us_[id - 1]),
                        Event{.kind = EventKind::kTick, .node = id});
    }
}

SimResult Cluster::run() {
    faults_end_us_ = options_.steps * kTickUs;
    workload_->start();
    lock_workload_->start();
    schedule_nemesis();
    while (!finished()) {
        const Event event = queue_.pop();
        trace_.set_time(event.time_us);
        ++events_;
        handle(event);
    }
    final_checks();
    if (options_.history_capture != nullptr) {
        *options_.history_capture = workload_->history_jsonl();
    }
    if (options_.lock_history_capture != nullptr) {
        *options_.lock_history_capture = lock_workload_->history_jsonl();
    }
    SimResult r;
    r.ok = !checker_.failed();
    r.violation = r.ok ? "" : checker_.violation();
    r.nodes = founders_;
    r.steps = options_.steps;
    r.events = events_;
    r.sim_time_us = queue_.now_us();
    r.crashes = crashes_;
    r.leader_terms = checker_.terms_with_leader();
    r.committed = checker_.committed_index();
    r.ops_ok = workload_->stats().ok;
    r.ops_fail = workload_->stats().fail;
    r.ops_info = workload_->stats().info;
    r.lock_ops_ok = lock_workload_->stats().ok;
    r.lock_ops_fail = lock_workload_->stats().fail;
    r.lock_ops_info = lock_workload_->stats().info;
    r.lock_grants = lock_checker_.grants();
    r.lock_hand_offs = lock_checker_.hand_offs();
    r.session_expiries = lock_checker_.expiries();
    if (phase_ == Phase::kSettle) {
        r.liveness_ticks = (settle_start_us_ - heal_start_us_) / kTickUs;
    }
    for (const auto& n : nodes_) {
        r.snapshots_installed += n->snapshots_installed();
    }
    r.conf_changes = checker_.conf_changes_committed();
    r.hostile_dropped = hostile_dropped_;
    return r;
}

bool Cluster::finished() {
    if (checker_.failed()) {
        return true;
    }
    RL_ASSERT(!queue_.empty());  // every node's clock keeps ticking
    if (events_ >= kMaxEventsPerRun) {
        checker_.fail(fmt::format("runaway: {} events without finishing", events_));
        return true;
    }
    if (phase_ == Phase::kFaults && queue_.next_time_us() >= faults_end_us_) {
        begin_heal();
    }
    if (phase_ == Phase::kSettle) {
        return settled();
    }
    if (phase_ == Phase::kHeal) {
        if (workload_->committed_since_heal()) {
            trace_.log("liveness: a new command committed {} ticks after the heal",
                       (queue_.now_us() - heal_start_us_) / kTickUs);
            phase_ = Phase::kSettle;
            settle_start_us_ = queue_.now_us();
            settle_index_ = checker_.committed_index();
            settle_deadline_us_ = queue_.now_us() + kSettleTicks * kTickUs;
            return settled();
        }
        if (queue_.next_time_us() >= heal_deadline_us_) {
            SimNode* leader = find_leader();
            checker_.fail(fmt::format(
                "liveness: no new command committed within {} ticks after faults stopped "
                "(leader: {}, commit index {})",
                kLivenessTicks, leader ? fmt::format("n{}", leader->id()) : "none",
                checker_.committed_index()));
            return true;
        }
    }
    return false;
}

bool Cluster::settled() {
    // Every member of the leader's configuration catches up, by log or by snapshot.
    SimNode* leader = find_leader();
    raft::NodeId lagging = raft::kNoNode;
    if (leader != nullptr) {
        const raft::ConfState& conf = leader->raw().raft().conf_state();
        for (const auto& n : nodes_) {
            const bool member = raft::is_voter(conf, n->id()) || raft::is_learner(conf, n->id());
            // A node that refused to start on a corrupt disk never catches up; the others are
            // a majority of any configuration (act_corrupt_disk).
            if (member && !n->refused() && n->app().applied() < settle_index_) {
                lagging = n->id();
                break;
            }
        }
        if (lagging == raft::kNoNode) {
            trace_.log("settled: every member applied up to {}", settle_index_);
            return true;
        }
        extend_settle_deadline(conf);
    }
    if (queue_.next_time_us() < settle_deadline_us_) {
        return false;
    }
    checker_.fail(fmt::format(
        "liveness: {} within {} ticks of the members' last progress (at most {} ticks after the "
        "first commit after the heal)",
        leader == nullptr ? "no leader"
                          : fmt::format("member n{} did not apply up to {} (it is at {})", lagging,
                                        settle_index_, node(lagging).app().applied()),
        kSettleTicks, kSettleTicksMax));
    return true;
}

void Cluster::extend_settle_deadline(const raft::ConfState& conf) {
    // A member far behind (a long log, small messages, one in flight, no snapshots) catches up
    // slowly but steadily; only one that stops making progress is left behind.
    uint64_t progress = 0;
    for (const auto& n : nodes_) {
        if (raft::is_voter(conf, n->id()) || raft::is_learner(conf, n->id())) {
            progress += std::min(n->app().applied(), settle_index_);
        }
    }
    if (progress > settle_progress_) {
        settle_progress_ = progress;
        settle_deadline_us_ = std::min(queue_.now_us() + kSettleTicks * kTickUs,
                                       settle_start_us_ + kSettleTicksMax * kTickUs);
    }
}

void Cluster::handle(const Event& event) {
    switch (event.kind) {
        case EventKind::kTick: {
            SimNode& n = node(event.node);
            queue_.schedule(queue_.now_us() + tick_interval_us_[event.node - 1], event);
            if (n.up() && !paused(n.id())) {
                trace_.log("n{} tick", n.id());
                if (!n.tick()) {
                    on_node_crashed(n);
                } else {
                    lead_sessions(n);
                }
            }
            break;
        }
        case EventKind::kDeliver:
            deliver(queue_.take_message(event.arg));
            break;
        case EventKind::kRestart:
            if (!node(event.node).up()) {
                restart(node(event.node));
            }
            break;
        case EventKind::kClient:
            workload_->on_wake(event.arg, event.token);
            break;
        case EventKind::kLockClient:
            lock_workload_->on_wake(event.arg);
            break;
        case EventKind::kNemesis:
            if (phase_ == Phase::kFaults) {
                nemesis_step(static_cast<NemesisAction>(event.arg), event.repeat);
                if (event.token == 0) {
                    schedule_nemesis();  // the regular cadence (follow-ups carry token 1)
                }
            }
            break;
    }
}

void Cluster::deliver(raft::Message message) {
    SimNode& to = node(message.to);
    if (!network_->link_up(message.from, message.to)) {
        trace_.log("drop (partitioned) {}", message);
        return;
    }
    if (!to.up()) {
        trace_.log("drop (n{} down) {}", to.id(), message);
        return;
    }
    if (paused(to.id())) {
        // The kernel buffers it; the process reads it when it runs again.
        trace_.log("hold until {} (n{} paused) {}", paused_until_us_[to.id() - 1], to.id(),
                   message);
        queue_.schedule_delivery(paused_until_us_[to.id() - 1], std::move(message));
        return;
    }
    trace_.log("deliver {}", message);
    const raft::NodeId from = message.from;
    const raft::MessageType type = message.type;
    raft::MessageCheck check;
    const bool alive = to.step(std::move(message), &check);
    if (!check.ok()) {
        // The peer-input checks must never refuse what a correct node sends, or they would cost
        // liveness (or worse) for nothing.
        checker_.fail(fmt::format("n{} dropped a correct message {} from n{} as {}: {}", to.id(),
                                  raft::to_string(type), from, raft::to_string(check.fault),
                                  check.reason));
    }
    if (!alive) {
        on_node_crashed(to);
    }
}

void Cluster::on_node_crashed(SimNode& n) {
    ++crashes_;
    paused_until_us_[n.id() - 1] = 0;
    const uint64_t downtime = next_downtime_us_[n.id() - 1];
    queue_.schedule(queue_.now_us() + downtime, Event{.kind = EventKind::kRestart, .node = n.id()});
}

void Cluster::restart(SimNode& n) {
    if (n.refused()) {
        return;  // its disk is corrupt: down for good
    }
    switch (n.start(raft_seed(n.id(), n.incarnation() + 1))) {
        case StartResult::kStarted:
            break;
        case StartResult::kCrashed:
            on_node_crashed(n);
            break;
        case StartResult::kRefused:
            trace_.log("n{} stays down for the rest of the run", n.id());
            break;
    }
}

void Cluster::begin_heal() {
    phase_ = Phase::kHeal;
    heal_start_us_ = queue_.now_us();
    heal_deadline_us_ = heal_start_us_ + kLivenessTicks * kTickUs;
    trace_.log("HEAL: faults stop; network healed and calm; crashed nodes restart");
    network_->heal();
    network_->set_profile(calm_network_profile());
    std::fill(paused_until_us_.begin(), paused_until_us_.end(), 0);
    for (auto& n : nodes_) {
        if (!n->up()) {
            restart(*n);
        }
    }
    workload_->begin_heal();
}

void Cluster::final_checks() {
    if (checker_.failed()) {
        return;
    }
    checker_.check_corruption_detected();
    for (auto& n : nodes_) {
        if (n->refused()) {
            continue;
        }
        const Result<raft::MemoryStorage, storage::StorageError> durable = n->disk().read_durable();
        if (!durable.ok()) {
            checker_.fail(fmt::format("node {}'s disk fails verification at the end: {}", n->id(),
                                      durable.error().message));
            continue;
        }
        checker_.audit_log(n->id(), *durable);
    }
    workload_->finish();
}

SimNode& Cluster::node(raft::NodeId id) {
    RL_ASSERT(id >= 1 && id <= nodes_.size());
    return *nodes_[id - 1];
}

SimNode* Cluster::find_leader() {
    SimNode* best = nullptr;
    for (auto& n : nodes_) {
        if (!n->up() || paused(n->id()) || n->raw().raft().role() != raft::Role::kLeader) {
            continue;
        }
        if (best == nullptr || n->raw().raft().term() > best->raw().raft().term()) {
            best = n.get();
        }
    }
    return best;
}

std::vector<raft::NodeId> Cluster::up_nodes() const {
    std::vector<raft::NodeId> out;
    for (const auto& n : nodes_) {
        if (n->up() && !paused(n->id())) {
            out.push_back(n->id());
        }
    }
    return out;
}

uint64_t Cluster::raft_seed(raft::NodeId id, uint32_t incarnation) const {
    return derive_seed(options_.seed, 1000 * id + incarnation);
}

void Cluster::send(raft::NodeId from, std::vector<raft::Message>&& messages) {
    for (raft::Message& m : messages) {
        RL_ASSERT(m.from == from);
        const Fate fate = network_->route(m);
        if (fate.copies == 0) {
            trace_.log("drop (lost) {}", m);
            continue;
        }
        for (uint32_t i = 0; i < fate.copies; ++i) {
            trace_.log("send +{}us{} {}", fate.delays_us[i], i > 0 ? " (duplicate)" : "", m);
            raft::Message copy = i + 1 < fate.copies ? m : std::move(m);
            queue_.schedule_delivery(queue_.now_us() + fate.delays_us[i], std::move(copy));
        }
    }
}

void Cluster::on_command_applied(raft::NodeId id,
                                 const raft::Entry& entry,
                                 const ApplyOutcome& outcome,
                                 const SimApp& app) {
    if (outcome.command) {
        workload_->on_command_applied(id, outcome, entry.index);
    }
    if (outcome.lock && lock_checker_.on_applied(id, entry, *outcome.lock, app)) {
        if (trace_.enabled()) {
            trace_.log("lock result {}", statemachine::to_string(*outcome.lock));
        }
        lock_workload_->on_result(*outcome.lock);
    }
}

void Cluster::on_read_served(raft::NodeId id,
                             const std::string& context,
                             raft::Index read_index,
                             const SimApp& app) {
    workload_->on_read_served(id, context, read_index, app);
}

raft::NodeId Cluster::pick_node(Rng& rng) {
    const std::vector<raft::NodeId> up = up_nodes();
    if (up.empty()) {
        return raft::kNoNode;
    }
    if (rng.chance(7, 10)) {
        std::vector<raft::NodeId> leaders;
        for (raft::NodeId id : up) {
            if (node(id).raw().raft().role() == raft::Role::kLeader) {
                leaders.push_back(id);
            }
        }
        if (!leaders.empty()) {
            return leaders[rng.uniform(leaders.size())];
        }
    }
    return up[rng.uniform(up.size())];
}

raft::Status Cluster::propose(raft::NodeId id, std::string data) {
    SimNode& n = node(id);
    if (!n.up()) {
        return raft::Status(raft::ErrorCode::kProposalDropped, "node is down");
    }
    trace_.log("n{} propose {}", id, raft::quote_bytes(data));
    raft::Status status;
    if (!n.propose(std::move(data), &status)) {
        on_node_crashed(n);
    }
    return status;
}

void Cluster::read_index(raft::NodeId id, std::string context) {
    SimNode& n = node(id);
    if (!n.up()) {
        return;
    }
    trace_.log("n{} read-index {}", id, raft::quote_bytes(context));
    if (!n.read_index(std::move(context))) {
        on_node_crashed(n);
    }
}

void Cluster::wake_client(uint32_t client, uint64_t at_us, uint64_t token) {
    queue_.schedule(at_us, Event{.kind = EventKind::kClient, .arg = client, .token = token});
}

}  // namespace raftlock::sim

namespace raftlock::sim {

int64_t Cluster::node_clock_ms(raft::NodeId id) const {
    return static_cast<int64_t>(queue_.now_us() / 1000) + clock_offset_ms_[id - 1];
}

raft::Status Cluster::propose_lock(raft::NodeId id, statemachine::Command command) {
    command.time_ms = node_clock_ms(id);
    if (trace_.enabled() && node(id).up()) {
        trace_.log("n{} lock command {}", id, statemachine::to_string(command));
    }
    return propose(id, wrap_lock_command(command));
}

void Cluster::keepalive(raft::NodeId id, statemachine::SessionId session) {
    SimNode& n = node(id);
    if (!n.up() || paused(id) || n.raw().raft().role() != raft::Role::kLeader) {
        return;  // only the leader tracks liveness; the client tries again soon
    }
    leader_sessions_[id - 1].keepalive(n.incarnation(), n.raw().raft().term(), session,
                                       node_clock_ms(id));
}

void Cluster::wake_lock_client(uint32_t client, uint64_t at_us) {
    queue_.schedule(at_us, Event{.kind = EventKind::kLockClient, .arg = client});
}

void Cluster::lead_sessions(SimNode& n) {
    if (n.raw().raft().role() != raft::Role::kLeader) {
        return;
    }
    const int64_t now_ms = node_clock_ms(n.id());
    std::vector<statemachine::Command> commands = leader_sessions_[n.id() - 1].on_leader_tick(
        n.incarnation(), n.raw().raft().term(), n.app().locks(), now_ms);
    for (statemachine::Command& c : commands) {
        if (!n.up()) {
            return;  // crashed while proposing the previous one
        }
        (void)propose_lock(n.id(), std::move(c));
    }
}

}  // namespace raftlock::sim
