#include "server/replica.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/assert.h"
#include "base/rng.h"
#include "net/raft_codec.h"
#include "raft/conf_change.h"
#include "raft/raft.h"
#include "raft/text.h"
#include "server/negative_controls.h"
#include "statemachine/codec.h"

namespace raftlock::server {

namespace sm = statemachine;

namespace {

// What one round of the loop applies at most (one Ready's committed entries): with the per-entry
// budgets (a script 100,000 instructions, about 5 ms; a 10,000-row INSERT, about 70 ms per
// 250 KB) a round stays within a few hundred milliseconds, well inside an election timeout.
// Measured with 1,000 pipelined scripts on three nodes sharing two cores: at 64 entries a turn
// took up to 1 s and the cluster held elections; at 16, 0.1-0.5 s.
constexpr uint64_t kCommittedEntriesPerReady = 16;
constexpr uint64_t kCommittedBytesPerReady = 1 << 20;

sm::Config state_machine_config(const ServerConfig& config) {
    sm::Config c;
    c.session_timeout_ms_min = config.session_timeout_ms_min;
    c.session_timeout_ms_max = config.session_timeout_ms_max;
    return c;
}

}  // namespace

Replica::Replica(const ServerConfig& config,
                 std::unique_ptr<storage::LogStore> storage,
                 std::unique_ptr<StorageExecutor> executor,
                 PeerSink& peers,
                 ClientSink& clients,
                 Post post,
                 const Clock& clock,
                 Metrics& metrics,
                 uint64_t seed)
    : config_(config),
      clock_(clock),
      metrics_(metrics),
      peers_(peers),
      clients_(clients),
      post_(std::move(post)),
      storage_(std::move(storage)),
      sm_(state_machine_config(config)),
      worker_(std::move(executor)) {
    RL_ASSERT(storage_ != nullptr);
    RL_ASSERT(worker_ != nullptr);
    Rng rng(seed);
    bootstrap_if_new();
    const raft::InitialState init = storage_->initial_state();
    if (init.snapshot_meta.index > 0) {
        raft::StorageResult<raft::Snapshot> snap = storage_->snapshot();
        RL_ASSERT_MSG(snap.ok(), "the store verified its snapshot on open but cannot read it");
        const sm::ErrorCode rc = sm_.restore(snap->data);
        RL_ASSERT_MSG(rc == sm::ErrorCode::kOk, "the stored snapshot does not restore");
        snapshot_index_ = init.snapshot_meta.index;
        applied_index_ = snapshot_index_;
        applied_conf_ = init.snapshot_meta.conf_state;
    }
    raft::Config rc;
    rc.id = config.node_id;
    rc.election_tick = static_cast<int>(config.election_timeout_ms / config.tick_ms);
    rc.heartbeat_tick = static_cast<int>(config.heartbeat_interval_ms / config.tick_ms);
    rc.seed = rng.next();
    rc.applied = applied_index_;
    // This node proposes only as leader (decision 0003: followers forward writes themselves, and
    // the leader alone stamps cluster time and expires sessions). soft_ lags the core by one
    // Ready, so a deposed leader may still call propose(); with forwarding the core would pass
    // its stale session expiries on to the new leader, which would commit them (found by
    // jepsen/run, lock workload under pauses: a live session expired, two holders at once).
    rc.disable_proposal_forwarding = true;
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
    rc.disable_proposal_forwarding =
        !negative_controls::on(negative_controls::Control::kProposalForwarding);
#endif
    rc.peer_input = peer_input_limits_;
    rc.max_committed_entries_per_ready = kCommittedEntriesPerReady;
    rc.max_committed_size_per_ready_bytes = kCommittedBytesPerReady;
    raw_ = std::make_unique<raft::RawNode>(rc, *storage_);
    raft::ReadyHost& host = *this;
    loop_ = std::make_unique<raft::ReadyLoop>(*raw_, host, config.max_writes_in_flight);
    replayed_through_ = init.hard_state.commit;
    // Nonces tell this node's OpenSession entries apart from every other node's: the id in the
    // top byte, a random start below (a restarted node must not reuse its predecessor's).
    next_nonce_ = (config.node_id << 56) | (rng.next() >> 8);
    redis_origin_ = rng.next() | 1;
    spdlog::info("node {} of cluster {} started: term {}, log {}..{}, snapshot at {}",
                 config.node_id, config.cluster_id, init.hard_state.term, storage_->first_index(),
                 storage_->last_index(), snapshot_index_);
}

Replica::~Replica() {
    worker_.reset();  // finish the disk work before the store closes
}

// A new data directory gets the founding configuration: every founding member writes the same
// entry 1 (raft/conf_change.h), so all logs agree from the start.
void Replica::bootstrap_if_new() {
    const raft::InitialState init = storage_->initial_state();
    if (storage_->last_index() > 0 || !init.hard_state.empty()) {
        return;
    }
    if (config_.join_existing) {
        spdlog::info("node {} starts empty and waits to be added (raftlock member add {} ADDRESS)",
                     config_.node_id, config_.node_id);
        return;
    }
    raft::ConfState conf;
    for (const Member& m : config_.members) {
        conf.voters.push_back(m.id);
        conf.addresses[m.id] = to_string(m.raft);
    }
    std::sort(conf.voters.begin(), conf.voters.end());
    storage_->bootstrap(raft::make_bootstrap(conf));
    spdlog::info("bootstrapped a new cluster with voters {}", fmt::join(conf.voters, ","));
}

void Replica::tick() {
    ++ticks_;
    raw_->tick();
    if (is_leader()) {
        expire_sessions();
        maybe_propose_noop();
        maybe_bootstrap_root();
    }
    expire_requests();
    check_redis_waits();
    enforce_login_deadline();
    sql_keepalives();
    note_console_tick();
    queue_commit_write();
    schedule_flush();
}

void Replica::schedule_flush() {
    if (flush_scheduled_) {
        return;
    }
    flush_scheduled_ = true;
    post_([this] { flush(); });
}

// Once per loop turn: everything that arrived since the last turn goes out together (one ReadIndex
// for all reads, one ForwardKeepAlive, one Ready for all proposals).
void Replica::flush() {
    flush_scheduled_ = false;
    if (raw_->raft().role() != raft::Role::kLeader) {
        // The keepalives were recorded while soft_ still said leader, but the core has stepped
        // down: a round confirmed through another leader would acknowledge them without that
        // leader having recorded them.
        refuse_keepalives(next_batch_);
    }
    if (!next_batch_.empty()) {
        const uint64_t round = ++next_tag_;
        next_batch_.asked_ms = clock_.steady_ms();
        next_batch_.deadline_ms = next_batch_.asked_ms + config_.request_timeout_ms;
        next_batch_.term = raw_->term();
        reads_in_flight_.emplace(round, std::move(next_batch_));
        next_batch_ = ReadBatch{};
        raw_->read_index(read_context(round));
        ++metrics_.read_index_requests_total;
    }
    flush_keepalive_forwards();
    drive();
}

// One Ready's committed entries per round of the loop (at most kCommittedEntriesPerReady): the
// Ready loop defers the next Ready behind everything posted meanwhile, so every peer message does
// not apply its own slice before a tick or the admin port gets a turn (raft/ready_loop.h).
void Replica::drive() {
    loop_->drive();
    // Also when no Ready was taken (one is being written): a configuration entry this leader
    // just appended changes the peer list before any Ready carries it.
    refresh_peers();
}

void Replica::persist(std::shared_ptr<const raft::Ready> ready, bool sync, Callback done) {
    queue_write(std::move(ready), sync, std::move(done));
}

void Replica::persist_commit(const raft::HardState& hard_state) {
    // The commit index need not be durable before anything is applied or answered: it is
    // recomputed from a quorum after a restart, and a node that restarts with an older one only
    // applies less until the leader tells it more. So this write waits for the next storage job
    // or the next tick, and one storage wake-up per commit (two per write on every node: the
    // entries, then their commit) becomes one. A newer commit replaces an unwritten older one.
    RL_ASSERT(!commit_to_write_ || commit_to_write_->commit <= hard_state.commit);
    commit_to_write_ = hard_state;
}

void Replica::queue_write(std::shared_ptr<const raft::Ready> ready, bool sync, Callback done) {
    queue_storage_job(StorageJob{std::move(ready), sync, {}}, std::move(done));
}

// On a tick, so a commit written nowhere else reaches the disk within one tick.
void Replica::queue_commit_write() {
    if (!commit_to_write_) {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(storage_jobs_mutex_);
        move_commit_to_jobs();
    }
    submit_storage_task({}, /*on_loop=*/false);
}

void Replica::queue_storage_job(StorageJob job, Callback done) {
    const bool on_loop = write_on_loop(job);
    {
        std::lock_guard<std::mutex> lock(storage_jobs_mutex_);
        // A commit not yet written goes first: it covers only entries written before it, and a
        // snapshot this job saves (at the applied index) is covered by it.
        move_commit_to_jobs();
        storage_jobs_.push_back(std::move(job));
    }
    submit_storage_task(std::move(done), on_loop);
}

// A follower's write is on the critical path of every commit: the leader waits for its
// acknowledgement, which leaves only after the sync. Handed to the storage thread, that costs two
// thread wake-ups (loop -> storage thread -> loop) before the acknowledgement is sent; written on
// the loop thread itself, none (docs/decisions/0023-follower-writes-on-the-loop.md). Only when
// nothing is queued or being written (the order of writes and of their completions stays that of
// one queue), and never on the leader: its loop takes every client's request and sends every
// AppendEntries, and blocking it for a sync costs all of them (measured, docs/performance.md).
// A snapshot installed from the leader can be large: it stays on the storage thread.
bool Replica::write_on_loop(const StorageJob& job) const {
    return config_.follower_writes_on_loop && storage_tasks_pending_ == 0 && !is_leader() &&
           job.ready != nullptr && !job.ready->snapshot && !job.other;
}

void Replica::submit_storage_task(Callback done, bool on_loop) {
    if (!config_.follower_writes_on_loop) {
        // Nothing asks for the count: no wrapper to allocate, and no completion to post (a wake-up
        // of the loop) for a task that has none, such as each tick's commit-only write.
        worker_->submit([this] { run_storage_jobs(); }, std::move(done));
        return;
    }
    ++storage_tasks_pending_;
    Callback counted = [this, done = std::move(done)] {
        RL_ASSERT(storage_tasks_pending_ > 0);
        --storage_tasks_pending_;
        if (done) {
            done();
        }
    };
    if (on_loop) {
        RL_ASSERT(storage_tasks_pending_ == 1);
        storage_writes_on_loop_.fetch_add(1, std::memory_order_relaxed);
        worker_->run_on_loop([this] { run_storage_jobs(); }, std::move(counted));
        return;
    }
    // One worker task per job, so every `done` is posted in order, after its job; the first task
    // to run does every job queued by then (run_storage_jobs), the later ones find theirs done.
    worker_->submit([this] { run_storage_jobs(); }, std::move(counted));
}

void Replica::move_commit_to_jobs() {
    if (!commit_to_write_) {
        return;
    }
    auto commit_only = std::make_shared<raft::Ready>();
    commit_only->hard_state = *commit_to_write_;
    commit_to_write_.reset();
    storage_jobs_.push_back(StorageJob{std::move(commit_only), false, {}});
}

void Replica::run_storage_jobs() {
    std::deque<StorageJob> jobs;
    {
        std::lock_guard<std::mutex> lock(storage_jobs_mutex_);
        jobs.swap(storage_jobs_);
    }
    if (!jobs.empty()) {
        storage_turns_.fetch_add(1, std::memory_order_relaxed);
    }
    // Consecutive writes share one sync at their end (group commit across Readies: one log,
    // synced as a whole); any other job (a snapshot save) runs in its place in the order.
    size_t i = 0;
    while (i < jobs.size()) {
        if (jobs[i].other) {
            jobs[i].other();
            ++i;
            continue;
        }
        size_t end = i;
        bool sync = false;
        while (end < jobs.size() && !jobs[end].other) {
            sync = sync || jobs[end].sync;
            ++end;
        }
        const int64_t start_us = clock_.steady_us();
        for (size_t k = i; k < end; ++k) {
            storage_->persist(*jobs[k].ready, sync && k + 1 == end);
        }
        storage_writes_.fetch_add(end - i, std::memory_order_relaxed);
        if (sync) {
            metrics_.fsync_latency.record_us(static_cast<uint64_t>(clock_.steady_us() - start_us));
            storage_syncs_.fetch_add(1, std::memory_order_relaxed);
        }
        i = end;
    }
}

void Replica::serve_reads(std::vector<raft::ReadState>& read_states) {
    for (raft::ReadState& rs : read_states) {
        const std::optional<uint64_t> round = read_round(rs.context);
        auto it = round ? reads_in_flight_.find(*round) : reads_in_flight_.end();
        if (it == reads_in_flight_.end()) {
            continue;  // answered already (a duplicate after a resubmission) or timed out
        }
        RL_ASSERT(!reads_confirmed_.contains(*round));
        reads_confirmed_.emplace(*round, std::make_pair(rs.index, std::move(it->second)));
        reads_in_flight_.erase(it);
    }
    serve_confirmed_reads();
}

std::string Replica::read_context(uint64_t round) {
    return fmt::format("r{}", round);
}

std::optional<uint64_t> Replica::read_round(std::string_view context) {
    uint64_t round = 0;
    const char* end = context.data() + context.size();
    if (context.size() < 2 || context[0] != 'r' ||
        std::from_chars(context.data() + 1, end, round) != std::from_chars_result{end, {}}) {
        return std::nullopt;  // not one of this node's rounds
    }
    return round;
}

void Replica::ask_lost_reads_again(int64_t now_ms) {
    if (soft_.leader == raft::kNoNode) {
        return;  // asked again when one is known (resubmit_after_leader_change)
    }
    for (auto& [round, batch] : reads_in_flight_) {
        if (now_ms - batch.asked_ms < int64_t{config_.election_timeout_ms}) {
            continue;
        }
        // Keepalives are confirmed only by a round of the leadership that recorded them: this
        // node's, in the same term (a term has one leader, so it never lost it meanwhile).
        const bool holds_keepalives = !batch.keepalives.empty() || !batch.forwarded.empty();
        if (holds_keepalives && !(is_leader() && raw_->term() == batch.term)) {
            continue;
        }
        batch.asked_ms = now_ms;
        raw_->read_index(read_context(round));
        ++metrics_.read_index_retries_total;
    }
}

void Replica::serve_confirmed_reads() {
    while (!reads_confirmed_.empty()) {
        auto it = reads_confirmed_.begin();
#ifdef RAFTLOCK_SERVER_NEGATIVE_CONTROLS
        if (negative_controls::on(negative_controls::Control::kReadsOutOfOrder)) {
            // Any confirmed batch as soon as its own index is applied, whatever is older (the
            // rule before 2026-12-01).
            it = std::find_if(reads_confirmed_.begin(), reads_confirmed_.end(),
                              [&](const auto& e) { return e.second.first <= applied_index_; });
            if (it == reads_confirmed_.end()) {
                return;
            }
            ReadBatch ready = std::move(it->second.second);
            reads_confirmed_.erase(it);
            serve_batch(ready);
            continue;
        }
#endif
        // An older round still in flight goes first: a connection's reads in it were sent before
        // its reads here, and must not see a later state than they do. That round is confirmed,
        // or times out (tick), or is dropped with a leader change (it held only keepalives), and
        // each of those runs this again.
        auto& [index, batch] = it->second;
        const bool older_in_flight =
            !reads_in_flight_.empty() && reads_in_flight_.begin()->first < it->first;
        if (index > applied_index_ || older_in_flight) {
            return;
        }
        ReadBatch ready = std::move(batch);
        reads_confirmed_.erase(it);
        serve_batch(ready);
    }
}

void Replica::defer(Callback fn) {
    post_(std::move(fn));
}

void Replica::after_ready() {
    maybe_snapshot();
    // Applied entries may have committed a removal: its node is no longer a peer.
    refresh_peers();
}

void Replica::send(std::vector<raft::Message>& messages) {
    for (raft::Message& m : messages) {
        proto::PeerFrame frame;
        net::to_proto(m, *frame.mutable_raft());
        peers_.send(m.to, frame);
    }
}

void Replica::on_soft_state(const raft::SoftState& soft) {
    const raft::SoftState before = soft_;
    soft_ = soft;
    note_console_role(before);
    if (soft.role == raft::Role::kCandidate && before.role != raft::Role::kCandidate) {
        ++metrics_.elections_total;
        spdlog::info("election: node {} campaigns in term {}", config_.node_id,
                     raw_->status().hard_state.term);
    }
    if (soft.role == raft::Role::kLeader && before.role != raft::Role::kLeader) {
        // A new leader gives every session a full timeout (no session dies of a failover), and
        // continues cluster time from the last applied entry with its own monotonic clock. Not
        // from its own stamps of an earlier term: cut off while it led, it stamped writes nobody
        // committed with time the cluster never had, and continuing from those would make TTLs
        // expire early by as much as the failover took.
        std::vector<std::pair<uint64_t, int64_t>> sessions;
        for (const sm::SessionInfo& s : sm_.sessions()) {
            sessions.emplace_back(s.id, s.timeout_ms);
        }
        tracker_.reset(sessions, clock_.steady_ms());
        const int64_t base_ms = sm_.now_ms() > 0 ? sm_.now_ms() : clock_.wall_ms();
        time_offset_ms_ = base_ms - clock_.steady_ms();
        last_stamp_ms_ = base_ms;
        last_noop_ms_ = 0;
    } else if (before.role == raft::Role::kLeader && soft.role != raft::Role::kLeader) {
        tracker_.clear();
        spdlog::info("node {} is no longer the leader", config_.node_id);
    }
    if (soft.leader != raft::kNoNode && !publications_from_) {
        publications_from_ = std::max(replayed_through_, raw_->status().hard_state.commit) + 1;
    }
    if (soft.leader != before.leader) {
        ++metrics_.leader_changes_total;
        if (soft.leader == raft::kNoNode) {
            spdlog::info("leader lost (term {})", raw_->status().hard_state.term);
        } else {
            spdlog::info("leader is node {} (term {}){}", soft.leader,
                         raw_->status().hard_state.term,
                         soft.leader == config_.node_id ? ": this node" : "");
            // Not from inside the Ready being handled: on the next loop turn.
            post_([this] {
                resubmit_after_leader_change();
                settle_transfers(clock_.steady_ms());
                schedule_flush();
            });
        }
    }
}

int64_t Replica::cluster_now_ms() {
    last_stamp_ms_ = std::max(last_stamp_ms_, clock_.steady_ms() + time_offset_ms_);
    return last_stamp_ms_;
}

void Replica::maybe_snapshot() {
    if (applied_index_ < snapshot_index_ + config_.snapshot_every_entries) {
        return;
    }
    const raft::Index index = applied_index_;
    const raft::Index compact_to =
        index > config_.compaction_lag_entries ? index - config_.compaction_lag_entries : 0;
    auto data = std::make_shared<std::string>(sm_.snapshot());
    const size_t bytes = data->size();
    const raft::ConfState conf = applied_conf_;
    snapshot_index_ = index;
    ++metrics_.snapshots_created_total;
    // In the storage jobs' order: after every write started before it (the commit index that
    // covers `index` among them), before every write started after. A write started before it
    // may install a newer snapshot from the leader (taken while this node's entries were still
    // being applied): this one is obsolete then, and dropped.
    auto saved = std::make_shared<bool>(false);
    queue_storage_job(
        StorageJob{nullptr, false,
                   [this, index, compact_to, conf, data, saved] {
                       if (storage_->initial_state().snapshot_meta.index >= index) {
                           return;
                       }
                       storage_->save_snapshot(index, conf, std::move(*data), compact_to);
                       *saved = true;
                   }},
        [index, compact_to, bytes, saved] {
            if (*saved) {
                spdlog::info("snapshot at index {} written ({} bytes); log compacted to {}", index,
                             bytes, compact_to);
            } else {
                spdlog::info("snapshot at index {} dropped: a newer one was installed", index);
            }
        });
}

void Replica::expire_sessions() {
    const int64_t retry_ms = std::max<int64_t>(2 * config_.election_timeout_ms, 1000);
    for (uint64_t session : tracker_.take_expired(clock_.steady_ms(), retry_ms, 1000)) {
        const SessionTracker::Entry* e = tracker_.find(session);
        spdlog::info("session {} expired (no keepalive for {} ms): proposing its end", session,
                     e ? e->timeout_ms : 0);
        sm::Command c;
        c.op = sm::ExpireSession{session};
        if (propose_command(std::move(c))) {
            ++metrics_.sessions_expired_total;
        }
    }
}

// Wait deadlines, lock-delays and TTLs fire at the first entry whose cluster time reaches them; on
// an idle cluster the leader proposes a Noop to carry the time.
void Replica::maybe_propose_noop() {
    const std::optional<sm::TimeMs> next = sm_.next_timer_ms();
    if (!next || cluster_now_ms() < *next) {
        return;
    }
    const int64_t now_ms = clock_.steady_ms();
    if (now_ms - last_noop_ms_ < 2 * static_cast<int64_t>(config_.tick_ms)) {
        return;
    }
    last_noop_ms_ = now_ms;
    sm::Command c;
    c.op = sm::Noop{};
    propose_command(std::move(c));
}

void Replica::expire_requests() {
    const int64_t now_ms = clock_.steady_ms();
    expire_member_change(now_ms);
    settle_transfers(now_ms);
    for (auto it = pending_writes_.begin(); it != pending_writes_.end();) {
        if (it->second.deadline_ms > now_ms) {
            ++it;
            continue;
        }
        const ClientRef client{it->second.conn, it->second.request_id};
        forward_tags_.erase(it->second.forward_tag);
        it = pending_writes_.erase(it);
        respond_error(client, proto::TIMEOUT);
    }
    for (auto it = reads_in_flight_.begin(); it != reads_in_flight_.end();) {
        if (it->second.deadline_ms > now_ms) {
            ++it;
            continue;
        }
        ReadBatch batch = std::move(it->second);
        it = reads_in_flight_.erase(it);
        for (const auto& [client, request] : batch.reads) {
            respond_error(client, proto::TIMEOUT, "no leader confirmed the read in time; retry");
        }
        for (const auto& [client, session] : batch.keepalives) {
            respond_error(client, proto::TIMEOUT);
        }
        for (const auto& [client, argv] : batch.redis_reads) {
            respond_error(client, proto::TIMEOUT, "no leader confirmed the read in time; retry");
        }
        for (const auto& [client, statement] : batch.sql_reads) {
            // A read applies nothing: unlike a timed-out write, its retry is always safe.
            respond_error(client, proto::UNAVAILABLE, "no leader confirmed the read in time");
        }
    }
    serve_confirmed_reads();  // (what waited for a round that timed out)
    ask_lost_reads_again(now_ms);
    for (auto it = keepalive_forwards_.begin(); it != keepalive_forwards_.end();) {
        if (it->second.deadline_ms > now_ms) {
            ++it;
            continue;
        }
        for (const auto& [client, session] : it->second.clients) {
            respond_error(client, proto::TIMEOUT, "the leader did not answer the keepalive");
        }
        it = keepalive_forwards_.erase(it);
    }
}

void Replica::shut_down() {
    shutting_down_ = true;
    if (member_change_) {
        member_change_error(member_change_->origin, proto::SHUTTING_DOWN,
                            "shutting down before the membership change was committed; it may "
                            "still be");
        member_change_.reset();
    }
    for (auto& [tag, forward] : member_forwards_) {
        respond_error(forward.client, proto::SHUTTING_DOWN,
                      "shutting down before the leader answered the membership change; it may "
                      "still be made");
    }
    member_forwards_.clear();
    for (auto& [key, pending] : pending_writes_) {
        respond_error(ClientRef{pending.conn, pending.request_id}, proto::SHUTTING_DOWN);
    }
    pending_writes_.clear();
    forward_tags_.clear();
    for (auto& [key, waiting] : waiting_) {
        respond_error(ClientRef{waiting.conn, waiting.request_id}, proto::SHUTTING_DOWN);
    }
    waiting_.clear();
    for (auto& [key, client] : sql_waits_) {
        respond_error(client, proto::SHUTTING_DOWN);
    }
    sql_waits_.clear();
}

}  // namespace raftlock::server
