#pragma once

// The ZooKeeper front end (docs/zookeeper-mode.md): one ZooKeeper connection's protocol state,
// served as raftlock's own client requests. A ZooKeeper session is a raftlock session, and each
// ZooKeeper operation becomes the client protocol's request for it (proto::Request), which the
// Replica serves exactly as it serves the native port: writes through the log, exactly once by
// (session, seq); reads after a ReadIndex round; keepalives through the leader; one-shot and
// persistent watches on this node. Answers come back as the native port's ServerMessages and go
// out as jute replies.
//
// Connect: a ConnectRequest without a session opens one (OpenSession, the timeout clamped to the
// cluster's bounds); one with a session id and its password takes that session over
// (AttachSession, docs/decisions/0013-attaching-a-session.md), whose first seq numbers this
// connection's writes, and from then on the session's older connections have their late writes
// refused (ZooKeeper's SESSIONMOVED). The password names the session (derived from its id and the
// node's secret seed shared by the cluster), as ZooKeeper's does; it is not authentication
// (issue 18 brings that).
//
// Order: ZooKeeper answers a connection's requests in the order sent, and a read sees every write
// sent before it on the connection. Writes are answered when applied on this node and reads after
// a ReadIndex round, which can complete in either order: so consecutive requests of the same kind
// are in flight together, and one of the other kind waits until they are all answered (as the
// Redis front end does). Replies leave in request order. Watch events leave as they arrive: the
// Replica pushes an event when it applies the change, before it serves a read that sees it, so a
// client sees the event before the data that caused it.
//
// Auth and ACLs (docs/zookeeper-mode.md, "ACLs"; decision 0015): `addauth` adds ids to the
// connection (server/zk_auth.h), and every native request carries them as its Caller; the state
// machine checks writes against the nodes' ACLs when they apply, the Replica checks reads where it
// serves them. An `auth` ACL is expanded here, into the connection's digest ids.
//
// Failures ZooKeeper clients handle by reconnecting (no leader, a write whose outcome is unknown,
// the node shutting down) close the connection, as a ZooKeeper server that loses its leader
// does; the client then reconnects to another node and carries on with its session.
//
// No sockets: the runtime feeds it whole messages and answers through ZkOutput; the Replica is
// reached through net::ClientHandler and answers through on_server_message.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "net/client_listener.h"
#include "net/zk_codec.h"
#include "net/zk_listener.h"
#include "proto/client.pb.h"
#include "server/zk_auth.h"

namespace raftlock::server {

// Where the front end sends bytes (net::ZkListener in the server).
class ZkOutput {
public:
    virtual ~ZkOutput() = default;
    virtual void send(net::ConnectionId id, std::string bytes) = 0;
    virtual void close(net::ConnectionId id) = 0;  // after what was sent is flushed
    virtual void pause_reading(net::ConnectionId id, bool paused) = 0;
};

// What the `srvr` and `stat` four-letter words report (ZooKeeper's admin tools read `Mode:`).
struct ZkServerFacts {
    uint64_t node_id = 0;
    bool leader = false;
    uint64_t applied_index = 0;  // the zxid of the newest change this node applied
    uint64_t node_count = 0;
    uint64_t session_count = 0;  // in the cluster (replicated), not only on this node
    uint64_t ephemeral_count = 0;
    uint64_t watchers = 0;  // this node's connections with a watch
    uint64_t watched_paths = 0;
    uint64_t watches = 0;
};

struct ZkFrontendOptions {
    // The cluster's session timeout bounds (--session-timeout-min-ms/max): a client's requested
    // timeout is clamped into them, as ZooKeeper clamps to its minSessionTimeout/max.
    int32_t session_timeout_ms_min = 1000;
    int32_t session_timeout_ms_max = 600000;
    // Mixed into each session's password; the same on every node, so any node can check it.
    uint64_t password_seed = 0;
    // --zk-super-digest: `super:hash` (zk_digest_id of `super:PASSWORD`); a connection that proves
    // it with `addauth digest super:PASSWORD` is allowed everything, as ZooKeeper's
    // DigestAuthenticationProvider.superDigest. Empty: no super user.
    std::string super_digest;
    // Requests queued or in flight per connection before reading from it pauses.
    size_t pipeline_max = 1000;
    // --zk-reads local: reads are served from this node's applied state, as ZooKeeper serves
    // them (sequentially consistent; a connection still sees its own writes), and `sync` is a
    // ReadIndex round that the reads after it wait for. Off: every read is linearizable.
    bool local_reads = false;
    // For the four-letter words (null: `srvr` and `stat` are not answered).
    std::function<ZkServerFacts()> server_facts;
    // The monotonic clock (ms) that paces a session's keepalives. ZooKeeper counts every request
    // as a sign of its session's life, and its clients ping only when they have sent nothing for
    // a third of the timeout: a busy client never pings. So a request that finds the session's
    // last keepalive a third of its timeout old also sends one (docs/zookeeper-mode.md). Null:
    // only pings keep a session alive.
    std::function<int64_t()> steady_ms;
};

class ZkFrontend final : public net::ZkHandler {
public:
    ZkFrontend(ZkFrontendOptions options, ZkOutput& output, net::ClientHandler& backend);

    // From the listener: a connection, each whole message (its 4-byte length removed), its end.
    void on_zk_open(net::ConnectionId id, const std::string& remote) override;
    void on_zk_message(net::ConnectionId id, std::string_view payload) override;
    void on_zk_close(net::ConnectionId id) override;
    // ruok, isro, srvr, stat, mntr, conf, cons, envi and wchs, with the lines this server counts
    // (docs/zookeeper-mode.md). Others (dump, wchc, wchp, crst, srst, dirs) are not answered.
    std::optional<std::string> on_zk_four_letter_word(std::string_view word) override;

    // From the Replica (its ClientSink, for connections this front end opened).
    void on_server_message(net::ConnectionId id, const proto::ServerMessage& message);

    size_t connection_count() const { return conns_.size(); }

    // The password of `session`: 16 bytes that only a node of this cluster derives.
    std::string password_of(uint64_t session) const;

private:
    enum class Phase : uint8_t {
        kAwaitConnect,  // nothing received yet
        kConnecting,    // OpenSession or AttachSession sent
        kOpen,
        kClosing,  // a reply that ends the connection was sent; nothing more is read
    };
    // How a request travels (and so what it may be in flight beside). kBarrier goes alone: the
    // requests before it are answered before it is sent, those after it wait for its answer.
    enum class Route : uint8_t { kWrite, kRead, kBarrier, kNow };
    struct Pending {
        int32_t xid = 0;
        net::zk::OpCode type = net::zk::OpCode::kPing;
        Route route = Route::kNow;
        // The native requests, moved to the backend when dispatched (kNow: none): one, or a
        // multiRead's reads, each answered on its own and in its slot of `answers`.
        std::vector<proto::Request> requests;
        uint64_t first_request_id = 0;         // the first native request's, once dispatched
        std::vector<proto::Response> answers;  // multiRead only
        size_t answered = 0;
        std::vector<net::zk::OpCode> op_types;  // multi: each operation's, for its result
        std::string path;                       // sync: the path its reply names
        int32_t version = -1;                   // check: the version it expects
        uint64_t seq = 0;                       // writes
        bool dispatched = false;
        std::optional<std::string> reply;  // encoded, once known
        bool closes = false;               // the connection closes after this reply
    };
    struct Conn {
        std::string remote;
        ZkIdentity identity;   // grows with each addauth
        proto::Caller caller;  // the identity as its requests carry it
        Phase phase = Phase::kAwaitConnect;
        net::zk::ConnectRequest connect;
        uint64_t session = 0;
        int32_t timeout_ms = 0;
        uint64_t next_seq = 1;  // this connection's next write
        uint64_t next_request_id = 1;
        uint64_t connect_request_id = 0;
        int64_t last_zxid = 0;                  // the newest zxid sent to the client
        int64_t keepalive_sent_ms = 0;          // the last ping or keepalive sent for the session
        std::deque<Pending> pending;            // in request order
        std::set<uint64_t> writes_outstanding;  // seqs given out and not yet answered: ack_seq
        bool paused = false;
        // Inside dispatch(): a reply the backend gives synchronously only records its answer,
        // and dispatch() goes round again (`progressed`) instead of recursing.
        bool dispatching = false;
        bool progressed = false;
    };

    void handle_connect(net::ConnectionId id, Conn& c, std::string_view payload);
    void answer_connect(net::ConnectionId id, Conn& c, const proto::Response& response);
    void handle_request(net::ConnectionId id, Conn& c, net::zk::Request&& request);
    // A request other than a ping renews the session as a ping would: a native keepalive beside
    // it, at most one per third of the timeout. Its answer matches no Pending and is dropped
    // (an expiry reaches the connection as SessionEnded, no leader on the next request).
    void keep_session_alive(net::ConnectionId id, Conn& c, net::zk::OpCode type);
    // The native request for a ZooKeeper operation, or the error to answer it with at once.
    std::optional<net::zk::Err> translate(Conn& c, const net::zk::Request& in, Pending& out);
    void dispatch(net::ConnectionId id, Conn& c);
    void dispatch_pass(net::ConnectionId id, Conn& c);
    void complete(net::ConnectionId id, Conn& c, uint64_t request_id, const proto::Response& r);
    std::string format_reply(const Conn& c, const Pending& p, const proto::Response& r) const;
    std::string format_multi(const Conn& c, const Pending& p, const proto::Response& r) const;
    std::string format_multi_read(const Conn& c, const Pending& p) const;
    void flush(net::ConnectionId id, Conn& c);
    void fail_connection(net::ConnectionId id, Conn& c, const std::string& why);
    uint64_t ack_seq(const Conn& c) const;

    ZkFrontendOptions options_;
    ZkOutput& output_;
    net::ClientHandler& backend_;
    std::map<net::ConnectionId, Conn> conns_;
};

}  // namespace raftlock::server
