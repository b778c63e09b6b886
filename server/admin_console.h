#pragma once

// The web console on the admin HTTP port (docs/operations.md, "Web console"): the page and its
// script and style (console/, built in), and the read-only JSON it polls:
//   GET /api/cluster                 the members as this node sees them (Replica)
//   GET /api/locks?prefix=P&limit=N  locks with holders, waiters in order, lock-delay
//   GET /api/lock?name=X             one lock
//   GET /api/sessions?limit=N        sessions, soonest to expire first
//   GET /api/nodes?path=/a&limit=N   a node of the tree and its children
//   GET /api/history                 per-second chart samples (ConsoleHistory)
//   GET /api/events?after=S&wait_ms=W  the live feed (ConsoleFeed): a long-poll of at most
//                                      kEventsWaitMsMax when nothing is newer than S
//   GET /api/actions                 whether actions are on, and whether they need a login
// and, with --console-actions on (else 403), the actions, as POSTs with the header
// X-Raftlock-Console (net/admin_http.h) and, when authentication is enabled, HTTP Basic
// credentials of a user holding root:
//   POST /api/actions/force-release?name=X&session=S&token=T   (ForceRelease; answers when applied)
//   POST /api/actions/expire-session?session=S                 (ExpireSession; on the leader)
//   POST /api/actions/transfer-leadership?to=N                 (answers once asked)
// Threads: the io_context's, which is the replica's loop thread.

#include <cstdint>

#include "net/admin_http.h"
#include "server/clock.h"
#include "server/replica.h"

namespace raftlock::server {

inline constexpr int64_t kEventsWaitMsMax = 25000;  // below a browser's or proxy's idle limits

// Adds the console's routes to `http` (before it starts). `replica` and `clock` must outlive it.
// `actions`: --console-actions.
void add_console_routes(net::AdminHttp& http, Replica& replica, const Clock& clock, bool actions);

}  // namespace raftlock::server
