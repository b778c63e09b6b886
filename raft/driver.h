#pragma once

// The driver loop (DESIGN §2): the one place that turns a RawNode's Ready into effects, in the
// order the core's contract demands (raw_node.h):
//
//   1. send ready.early_messages       (they promise nothing about this node's disk)
//   2. persist snapshot, entries, hard state; synced when ready.must_sync
//   3. send ready.messages             (they promise what step 2 made durable)
//   4. apply the snapshot and the committed entries, serve the read states
//   5. advance(ready)
//
// It is pure: the embedder (the server, the simulator) implements DriverHost and does the I/O.
// Between the steps the driver asks the host whether to go on, which is how the simulator crashes
// a node at the interesting points; a server always says yes.

#include <cstdint>
#include <vector>

#include "raft/raw_node.h"
#include "raft/types.h"

namespace raftlock::raft {

// The points between the steps above at which a host may stop the driver.
enum class DriverStage : uint8_t {
    kEarlySent,  // early messages are out; nothing of this Ready is persisted yet
    kPersisted,  // this Ready's state is written (synced if must_sync); messages not sent yet
    kSent,       // messages are out; nothing of this Ready is applied yet
    kApplied,    // applied and read states served; advance() not called yet
};

class DriverHost {
public:
    virtual ~DriverHost() = default;

    // Hands messages to the transport. Sending may fail silently (the network loses messages).
    virtual void send(std::vector<Message>&& messages) = 0;
    // Writes the snapshot (if any), then the entries, then the hard state (if any), in that order,
    // so a torn write never leaves a hard state whose commit index points past the stored log.
    // When `sync` is true everything written so far must be durable before returning; otherwise
    // the write may sit in a cache (a crash may lose it). A failed write is fatal to the host.
    virtual void persist(const Ready& ready, bool sync) = 0;
    // The application state becomes the snapshot's (a follower caught up by InstallSnapshot).
    virtual void apply_snapshot(const Snapshot& snapshot) = 0;
    // Committed entries, in log order, contiguous with what was applied before.
    virtual void apply_entries(const std::vector<Entry>& entries) = 0;
    // Read points: a read may be served once the application has applied up to its index.
    virtual void serve_reads(const std::vector<ReadState>& read_states) = 0;
    // Called first with every Ready, before anything of it is done (logs, simulator traces).
    virtual void on_ready(const Ready& ready) { (void)ready; }
    // Role or leader changed (informational: clients' leader hints, metrics).
    virtual void on_soft_state(const SoftState& soft_state) { (void)soft_state; }
    // Asked after each stage. False stops the driver right there, without advance(): the node is
    // gone (a simulated crash) and the host must discard the RawNode and this Driver.
    virtual bool proceed(DriverStage stage) {
        (void)stage;
        return true;
    }
};

enum class DriveResult : uint8_t {
    kIdle,     // the node had no Ready
    kHandled,  // one or more Readies were handled completely
    kStopped,  // the host stopped the driver mid-Ready; the node must be discarded
};

class Driver {
public:
    // Both must outlive the driver.
    Driver(RawNode& node, DriverHost& host) : node_(node), host_(host) {}

    // Handles one Ready, if there is one.
    DriveResult handle_ready();
    // Handles Readies until the node has none, at most `max_readies` of them (a bound, so a
    // misbehaving core cannot spin the caller forever; the caller may call again).
    DriveResult run(uint32_t max_readies);

    bool stopped() const { return stopped_; }
    uint64_t readies_handled() const { return readies_handled_; }

private:
    bool handle(Ready& ready);

    RawNode& node_;
    DriverHost& host_;
    bool stopped_ = false;
    uint64_t readies_handled_ = 0;
};

}  // namespace raftlock::raft
