#pragma once

// The Ready loop (DESIGN §2): the one place that turns a RawNode's Readies into effects, in the
// order the core's contract demands (raw_node.h), for the server (server::Replica) and for both
// simulators alike:
//
//   1. send ready.early_messages       (they promise nothing about this node's disk)
//   2. persist snapshot, entries, hard state; synced when ready.must_sync
//   3. send ready.messages             (they promise what step 2 made durable)
//   4. apply the snapshot and the committed entries, serve the read states
//   5. advance(ready)
//
// Step 2 is asynchronous: the host starts the write and calls back when it is durable (a server's
// storage thread; a simulator's seeded queue or its disk at once). The loop is pipelined: while
// writes are in flight (up to `max_in_flight` Readies) it keeps taking Readies, so the next
// batch's early messages (the leader's AppendEntries) leave and its write is queued while the
// last one syncs, and the host may merge queued writes into one sync (group commit). Writes
// complete in the order they were started, and Readies finish (steps 3 to 5) in that order: a
// Ready's messages promise its own state and everything before it. With `max_in_flight` 1 the
// loop waits for each write, and what arrives meanwhile goes into the next, bigger Ready.
// A Ready that only moves the commit index needs no durability before its messages or applies
// (a restarted node learns the commit index again from the leader): its write is queued behind
// the others, and it finishes at once, or right after the Readies in flight before it.
//
// A Ready that applied entries ends the loop's turn: the next one waits for a deferred drive(),
// behind whatever the host queued meanwhile, so a long replay or a burst of costly entries never
// keeps ticks and clients from their turn.
//
// The loop is pure: no threads, clocks or I/O. Between the steps it asks the host whether to go
// on, which is how the core simulator crashes a node at the interesting points; a server always
// says yes.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "raft/raw_node.h"
#include "raft/types.h"

namespace raftlock::raft {

// The points between the steps above at which a host may stop the loop.
enum class ReadyStage : uint8_t {
    kEarlySent,  // early messages are out; nothing of this Ready is persisted yet
    kPersisted,  // this Ready's state is written (synced if must_sync); messages not sent yet
    kSent,       // messages are out; nothing of this Ready is applied yet
    kApplied,    // applied and read states served; advance() not called yet
};

class ReadyHost {
public:
    using Callback = std::function<void()>;
    virtual ~ReadyHost() = default;

    // Hands messages to the transport. Sending may fail silently (the network loses messages).
    virtual void send(std::vector<Message>& messages) = 0;
    // Writes the snapshot (if any), then the entries, then the hard state (if any), in that order,
    // after every write started before, so a torn write never leaves a hard state whose commit
    // index points past the stored log. Calls `done` once all of it is durable when `sync` is
    // true (written, when not), either before returning or later from the host's loop, never from
    // another thread; not at all if the node is gone. A failed write is fatal to the host.
    virtual void persist(std::shared_ptr<const Ready> ready, bool sync, Callback done) = 0;
    // Writes a hard state that only moved the commit index, after every write started before; no
    // one waits for it and it need not be synced.
    virtual void persist_commit(const HardState& hard_state) = 0;
    // The application state becomes the snapshot's (a follower caught up by InstallSnapshot).
    virtual void apply_snapshot(const Snapshot& snapshot) = 0;
    // Committed entries, in log order, contiguous with what was applied before.
    virtual void apply_entries(const std::vector<Entry>& entries) = 0;
    // Read points: a read may be served once the application has applied up to its index.
    virtual void serve_reads(std::vector<ReadState>& read_states) = 0;
    // Runs `fn` on a later turn of the host's loop, behind what is queued there.
    virtual void defer(Callback fn) = 0;

    // Called first with every Ready, before anything of it is done (logs, simulator traces).
    virtual void on_ready(const Ready& ready) { (void)ready; }
    // Role or leader changed (clients' leader hints, metrics, session bookkeeping).
    virtual void on_soft_state(const SoftState& soft_state) { (void)soft_state; }
    // Before each Ready is taken from the node, and after each is advanced (a server refreshes
    // its peer list: a configuration entry or snapshot may have added or removed a member).
    virtual void before_ready() {}
    virtual void after_ready() {}
    // Asked after each stage. False stops the loop right there, without advance(): the node is
    // gone (a simulated crash) and the host must discard the RawNode and this loop.
    virtual bool proceed(ReadyStage stage) {
        (void)stage;
        return true;
    }
};

class ReadyLoop {
public:
    // Both must outlive the loop; a host that completes writes later must not call `done` after
    // destroying the loop. At most `max_in_flight` (>= 1) Readies wait for their writes at once.
    ReadyLoop(RawNode& node, ReadyHost& host, size_t max_in_flight = 1);
    ReadyLoop(const ReadyLoop&) = delete;
    ReadyLoop& operator=(const ReadyLoop&) = delete;

    // Handles the node's Readies until it has none, `max_in_flight` are being persisted, or one
    // applied entries (a deferred drive() goes on). Call it after every input to the node.
    void drive();

    // Readies taken but not finished: their writes (or those of Readies before them) are in
    // flight, and their messages, applies and advance() wait.
    size_t in_flight() const { return in_flight_.size(); }
    bool persisting() const { return !in_flight_.empty(); }
    size_t max_in_flight() const { return max_in_flight_; }
    // A drive() is deferred, for the Readies after one that applied entries.
    bool drive_deferred() const { return drive_deferred_; }
    // The host stopped the loop (proceed() said no); it must not be driven again.
    bool stopped() const { return stopped_; }
    uint64_t readies_handled() const { return readies_handled_; }

private:
    struct InFlight {
        std::shared_ptr<Ready> ready;
        bool durable = false;      // its write completed (or it needs none)
        bool commit_only = false;  // no write of its own to wait for
    };

    // Takes the next Ready and starts its write; false when there is none to take now.
    bool take_next();
    void on_persisted(const Ready* ready);
    // Steps 3 to 5 of a Ready whose state is durable. Returns whether it applied anything.
    bool finish(Ready& ready);
    bool proceed(ReadyStage stage);
    void defer_drive();

    RawNode& node_;
    ReadyHost& host_;
    size_t max_in_flight_;
    std::deque<InFlight> in_flight_;  // in the order taken, which is the order writes complete
    bool drive_deferred_ = false;
    bool driving_ = false;  // inside drive(): a write completed inline must not drive again
    bool stopped_ = false;
    uint64_t readies_handled_ = 0;
};

}  // namespace raftlock::raft
