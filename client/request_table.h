#pragma once

// The requests a client has in flight, keyed by request_id (the multiplexing key of the client
// protocol). Pure bookkeeping, used only on the client's network thread; the network code decides
// when to send and what a response means (client/retry_policy.h).
//
// Ids are assigned in submission order and requests are (re)sent in id order, so a session's
// writes reach a node in seq order after a reconnect too.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "client/error.h"
#include "client/retry_policy.h"
#include "client/safe_until.h"
#include "proto/client.pb.h"

namespace raftlock::client {

// Called exactly once with the response (any code) or a client-side error.
using Completion = std::function<void(ClientResult<proto::Response>)>;

struct PendingRequest {
    proto::Request request;  // request_id is assigned by RequestTable::add
    RequestClass request_class = RequestClass::kRead;
    SteadyTime deadline{};
    SteadyTime first_sent{};  // the epoch until the first send
    uint32_t sends = 0;
    uint32_t retries_here = 0;  // kRetryHere answers so far (backoff exponent)
    bool on_wire = false;       // sent on the current connection, not yet answered
    uint64_t failed_rounds_at_submit = 0;
    // The last retryable answer (UNAVAILABLE, TIMEOUT, ...), reported if the deadline passes.
    std::optional<Error> last_error;
    Completion done;
};

class RequestTable {
public:
    explicit RequestTable(size_t requests_max) : requests_max_(requests_max) {}

    bool full() const { return pending_.size() >= requests_max_; }
    size_t size() const { return pending_.size(); }

    // Precondition: !full(). Returns the assigned request id (> 0, never reused).
    uint64_t add(PendingRequest pending);
    // Null when no request has this id (answered, expired, or never sent by us).
    PendingRequest* find(uint64_t request_id);
    std::optional<PendingRequest> take(uint64_t request_id);

    // Requests to send on a fresh connection: not on the wire, not pinned, ascending id.
    std::vector<uint64_t> unsent_ids() const;
    // The connection broke: nothing of ours is on the wire any more.
    void mark_all_off_wire();

    std::optional<SteadyTime> earliest_deadline() const;
    // Removes and returns every request whose deadline is <= now, ascending id.
    std::vector<PendingRequest> take_expired(SteadyTime now);
    // Removes and returns everything (shutdown).
    std::vector<PendingRequest> take_all();

private:
    size_t requests_max_;
    uint64_t next_id_ = 1;
    std::map<uint64_t, PendingRequest> pending_;
};

}  // namespace raftlock::client
