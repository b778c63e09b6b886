#pragma once

// The harness's client workloads (issue 6). Each worker thread is one Jepsen "process" at a time:
// it runs one operation after another through its own raftlock::client::Client and records each
// as invoke + ok / fail / info. After an `info` (outcome unknown) the worker continues as a new
// process, as in Jepsen, so no process ever has two operations open.
//
//   register  read / write / cas on the data of nodes /jepsen/k<i> (the checker's kv model);
//             cas is a linearizable get followed by set(version), so it happens only if nothing
//             changed the node in between
//   lock      acquire / fenced-write / release of one lock (the fenced mutex model): a holder
//             writes /jepsen/resource with its (lock, token) fence, then releases
//   sequential  ephemeral-sequential creates under /jepsen/seq (the sequential model: numbers
//             strictly increase in real time, no duplicates)
//   watch     odd workers hold persistent watches on /jepsen/k<i>; even workers write them
//             (get, then set with that version, so each change's predecessor is known); the
//             events must arrive per connection in zxid order, without gaps or duplicates
//   sessions  each worker opens a session, creates its ephemeral node /jepsen/eph/w<i>-<n>,
//             reads other sessions' nodes, maybe deletes its own, then closes the session or
//             abandons it to expiry (the sessions model: a node lives only in a live session)

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "client/endpoints.h"
#include "jepsen/client/history_recorder.h"
#include "net/tls.h"

namespace raftlock::jepsen {

struct WorkloadOptions {
    std::vector<client::Endpoint> endpoints;
    std::string workload;  // register | lock | sequential | sessions | watch
    uint32_t processes = 5;
    uint32_t keys = 3;
    double rate = 100;  // operations per second, over all workers
    uint64_t seed = 1;
    int64_t deadline_ns = 0;  // CLOCK_MONOTONIC: no operation starts after it
    uint32_t session_timeout_ms = 3000;
    uint32_t request_timeout_ms = 1500;
    std::string lock_name = "jepsen-lock";
    // Negative control: lock holders write without a fence and ignore safe-until, as a client of
    // a lock service without fencing would. Expect the checker to find stale writes.
    bool unfenced = false;
    // Which clients keep their connection on the leader (ClientOptions::prefer_leader): "on",
    // "off", or "mixed" (about half, by each client's seed), so that both the direct path and
    // the follower's forwarding path carry operations in every run; or "pinned": worker i talks
    // only to endpoint i mod N and never fails over, so every node keeps its clients through
    // every fault (what the stale-read negative control needs: a cut-off follower with readers).
    std::string leader_routing = "mixed";
    // --cacert: the cluster speaks TLS; every client trusts this CA (one context for all).
    std::shared_ptr<const net::TlsContext> tls;
    // Not empty: every client logs in as this user (a cluster with authentication on).
    std::string user;
    std::string password;
};

struct WorkloadTotals {
    std::atomic<uint64_t> ok{0};
    std::atomic<uint64_t> fail{0};
    std::atomic<uint64_t> info{0};
};

// What the workers of one run share: the ephemeral paths the sessions workload reads, and the
// watch workload's writes and deliveries. Made by main for the run and passed to every worker.
class SharedRun {
public:
    SharedRun();
    ~SharedRun();
    SharedRun(const SharedRun&) = delete;
    SharedRun& operator=(const SharedRun&) = delete;

    struct Parts;  // workloads.cc
    Parts& parts() { return *parts_; }

private:
    std::unique_ptr<Parts> parts_;
};

// Creates the nodes the workload needs (not recorded in the history). False when the cluster
// could not be reached in time.
bool prepare_workload(const WorkloadOptions& options, std::string& error);

// After every worker has returned: adds what only the whole run can tell (the watch events, whose
// predecessors are known once every write has answered). Returns the watch events added.
size_t finish_workload(SharedRun& shared, HistoryRecorder& history);

// One worker's whole run, until options.deadline_ns.
void run_worker(const WorkloadOptions& options,
                uint32_t worker,
                SharedRun& shared,
                HistoryRecorder& history,
                WorkloadTotals& totals);

}  // namespace raftlock::jepsen
