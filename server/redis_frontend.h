#pragma once

// The Redis front end (docs/redis-mode.md): one RESP connection's protocol state (RESP2 or 3,
// authentication, name, subscriptions), the connection commands it answers itself (PING, ECHO,
// HELLO, AUTH, SELECT, CLIENT, COMMAND, INFO, QUIT, RESET, pub/sub's SUBSCRIBE, UNSUBSCRIBE,
// PSUBSCRIBE, PUNSUBSCRIBE, PUBSUB, and the transactions' MULTI, EXEC, DISCARD, WATCH, UNWATCH),
// the order of replies, and the delivery of published messages to this node's subscribers.
//
// Order: Redis runs a connection's commands one after another, so a reply must reflect every
// earlier command of the connection and none of the later ones. Reads go through ReadIndex and
// writes through the log, and the two can complete in either order; so consecutive commands of
// the same route are in flight together (pipelining), and a command of another route waits until
// they are all answered. Replies go out in command order whatever order they complete in.
//
// Pub/sub: a PUBLISH is a write; when this node applies it, the Replica calls publish(), which
// sends the message to every subscribed connection here at once, between replies. A subscription
// takes effect when its command runs, which is after every earlier command of the connection was
// answered, so a RESP2 client (which cannot tell a message from a reply) never reads a message
// before the reply to its SUBSCRIBE; in RESP2 a subscribed connection may then run only the pub/sub
// commands, PING, QUIT and RESET, as in Redis. RESP3 messages are push frames, and any command
// runs.
//
// Transactions (redis_transactions.cc): after MULTI, commands are checked and queued (QUEUED) until
// EXEC sends the queued keyspace commands and the watched keys to the backend as one entry; the
// connection commands among them (PING, ECHO, CLIENT, SUBSCRIBE, ...) run here when the reply
// comes back, each at its place in the EXEC reply, as Redis runs them. WATCH is a read served by
// the backend, which answers the applied index of the state it was served at; EXEC then aborts
// when the state machine finds a watched key changed after that index.
//
// No sockets: the runtime feeds it RESP commands (net::RespHandler) and it answers through
// RespOutput; keyspace commands go to a RedisBackend (the Replica) and come back via on_reply.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "net/resp_listener.h"
#include "server/redis_subscriptions.h"
#include "statemachine/redis/commands.h"
#include "statemachine/redis/value.h"

namespace raftlock::server {

namespace redis = statemachine::redis;

// Where the front end sends bytes (net::RespListener in the server).
class RespOutput {
public:
    virtual ~RespOutput() = default;
    virtual void send(net::ConnectionId id, std::string bytes) = 0;
    virtual void close(net::ConnectionId id) = 0;  // after what was sent is flushed
    virtual void pause_reading(net::ConnectionId id, bool paused) = 0;
    // False once the connection is closed or closing (say, for unread replies over the limit):
    // replies to it would be dropped, so the backend need not compute them.
    virtual bool is_open(net::ConnectionId /*id*/) const { return true; }
};

// Runs keyspace commands (the Replica): answers each with RedisFrontend::on_reply, exactly once,
// unless the connection closed first.
class RedisBackend {
public:
    virtual ~RedisBackend() = default;
    // argv passed redis::precheck; its route is kRead or kWrite. `user`: who the connection
    // logged in as (empty: nobody), whose permissions the command is checked against.
    virtual void redis_command(net::ConnectionId id,
                               uint64_t ticket,
                               redis::Argv&& argv,
                               const std::string& user) = 0;
    // WATCH: answered, once the node may serve reads (ReadIndex), with the applied index of the
    // state it served at, as an integer reply (or an error).
    virtual void redis_watch(net::ConnectionId id, uint64_t ticket, const std::string& user) = 0;
    // EXEC: the transaction's keyspace commands (each passed redis::precheck) and watched keys, as
    // one write; answered with the array of their replies, a null array when a watched key
    // changed, or an error.
    virtual void redis_transaction(net::ConnectionId id,
                                   uint64_t ticket,
                                   redis::Transaction&& transaction,
                                   const std::string& user) = 0;
    // WAIT numreplicas timeout_ms: answered with how many other nodes hold every write this node
    // has applied (so every earlier write of the connection), once at least `numreplicas` do or
    // when timeout_ms (0: none) passes, as an integer reply.
    virtual void redis_wait(net::ConnectionId id,
                            uint64_t ticket,
                            int64_t numreplicas,
                            int64_t timeout_ms) = 0;
    // The same count, now (WAIT inside MULTI does not block, as in Redis).
    virtual int64_t redis_replicas_holding() const = 0;
    virtual void redis_closed(net::ConnectionId id) = 0;
    // The replication section of INFO: "role:master" or "role:slave", and more fields.
    virtual std::string redis_replication_info() const = 0;
    virtual size_t redis_key_count() const = 0;
    // The cluster's users (docs/security.md): while they are enabled, a connection must log in
    // as one (AUTH user pass, HELLO AUTH) instead of giving --redis-password.
    virtual bool redis_users_enabled() const { return false; }
    // Whether `password` is `user`'s (counted as a login or a failed one).
    virtual bool redis_login(const std::string& /*user*/, const std::string& /*password*/) {
        return false;
    }
    // Why `user` may not read the Redis keyspace (a NOPERM error), or nullopt when it may: what
    // SUBSCRIBE, PSUBSCRIBE and PUBSUB need.
    virtual std::optional<std::string> redis_read_refusal(const std::string& /*user*/) const {
        return std::nullopt;
    }
};

struct RedisFrontendOptions {
    std::string password;  // empty: no AUTH needed
    // --tls-client-cert-user on: a client certificate's common name is its connection's user (as
    // Redis's tls-auth-clients-user CN).
    bool certificate_user = false;
    size_t pipeline_max = 10000;  // commands queued or in flight per connection before pausing
    // Channels and patterns one connection may subscribe to, and their bytes together: a client
    // cannot grow the node's memory without bound by subscribing.
    size_t subscriptions_max = 10000;
    size_t subscription_bytes_max = 1u << 20;
    uint64_t node_id = 0;
    // The keys one connection may watch at once, and their bytes together.
    size_t watched_keys_max = 10000;
    size_t watched_bytes_max = 1u << 20;
    std::string version = "7.0.0";  // what HELLO and INFO report (the Redis API level we follow)
};

class RedisFrontend final : public net::RespHandler {
public:
    RedisFrontend(RedisFrontendOptions options, RespOutput& output, RedisBackend& backend);

    // net::RespHandler
    void on_resp_open(net::ConnectionId id, const std::string& remote) override;
    // With options.certificate_user: logged in as the user the certificate names.
    void on_resp_certificate(net::ConnectionId id, const std::string& common_name) override;
    void on_resp_command(net::ConnectionId id, redis::Argv&& argv) override;
    void on_resp_close(net::ConnectionId id) override;

    // The backend's answer to redis_command(id, ticket, ...).
    void on_reply(net::ConnectionId id, uint64_t ticket, const redis::Value& value);

    size_t connection_count() const { return conns_.size(); }

    // Delivers a message published on `channel` to this node's subscribers (when the node applies
    // the PUBLISH); returns how many received it.
    size_t publish(const std::string& channel, const std::string& message);
    const RedisSubscriptions& subscriptions() const { return subscriptions_; }
    // Whether a reply to the connection would be sent: the backend skips work for one that is
    // gone (a pipelining client closed for not reading may have thousands of commands queued).
    bool awaits_reply(net::ConnectionId id) const {
        return conns_.contains(id) && output_.is_open(id);
    }

private:
    // How a command is run, which decides what it may run beside (see the header on order).
    enum class Step : uint8_t {
        kKeyspace,  // a read or a write: redis_command
        kLocal,     // answered here at once
        kWatch,     // WATCH: a read (redis_watch), alone like kWait
        kExec,      // EXEC of a transaction with something to send: a write (redis_transaction)
        kWait,      // WAIT: alone, after every earlier command and before any later (redis_wait)
    };
    struct Pending {
        redis::Argv argv;                  // moved to the backend when dispatched (kept for WATCH)
        std::optional<std::string> reply;  // encoded, once known
        bool dispatched = false;
        Step step = Step::kKeyspace;
        std::vector<redis::Argv> queued;  // EXEC: every queued command, to build its reply
    };
    // MULTI until EXEC or DISCARD: the commands queued, and whether one was refused (EXEC then
    // answers EXECABORT, as Redis does).
    struct Multi {
        std::vector<redis::Argv> queued;
        size_t args = 0;
        size_t bytes = 0;
        bool failed = false;
    };
    struct Conn {
        std::string remote;
        std::string name;
        int protocol = 2;
        bool authenticated = false;    // gave --redis-password (or none is needed)
        std::string user;              // logged in as a cluster user (AUTH user pass)
        std::string certificate_user;  // the client certificate's (--tls-client-cert-user)
        int failed_logins = 0;
        bool quitting = false;
        bool paused = false;
        bool dispatching = false;  // inside dispatch(): a synchronous reply must not recurse
        uint64_t client_id = 0;
        uint64_t first_ticket = 0;    // the ticket of pending.front()
        std::deque<Pending> pending;  // in command order
        size_t in_flight = 0;         // dispatched, not answered
        redis::Route in_flight_route = redis::Route::kRead;
        size_t next_dispatch = 0;  // index in pending of the first not dispatched
        std::optional<Multi> multi;
        // WATCH: each key and the applied index its first WATCH was served at, until EXEC,
        // DISCARD, UNWATCH or RESET.
        std::map<std::string, uint64_t> watched;
        size_t watched_bytes = 0;
    };

    void dispatch(net::ConnectionId id, Conn& c);
    // Transactions (redis_transactions.cc). Whether argv runs at once after MULTI instead of being
    // queued: EXEC, DISCARD, MULTI, WATCH, QUIT and RESET.
    static bool runs_inside_multi(const redis::Argv& argv);
    // Queues argv after MULTI: QUEUED, or an error (which fails the transaction).
    redis::Value queue(Conn& c, redis::Argv&& argv);
    // The Step of argv (which passed precheck) on connection c, and the route it takes (what it
    // may be in flight beside): its own for a keyspace command, a write for an EXEC to send,
    // kConnection (alone) otherwise.
    struct Dispatch {
        Step step;
        redis::Route route;
    };
    Dispatch dispatch_of(const Conn& c, const redis::Argv& argv) const;
    // MULTI, DISCARD, UNWATCH, and a WATCH or EXEC that need not reach the backend (an error, an
    // EXEC with nothing to send): the reply, encoded.
    std::string transaction_local(net::ConnectionId id, Conn& c, const redis::Argv& argv);
    // Starts an EXEC: the transaction to send, leaving the queued commands in `pending`.
    redis::Transaction take_transaction(Conn& c, Pending& pending);
    // EXEC's reply, encoded: the backend's answer with the connection commands' replies put in.
    std::string exec_reply(net::ConnectionId id,
                           Conn& c,
                           std::vector<redis::Argv>& queued,
                           const redis::Value& answer);
    // Records the keys of a WATCH served at `index`.
    void watch(Conn& c, const redis::Argv& argv, uint64_t index);
    // The error for a command a subscribed RESP2 connection may not run, if argv is one.
    std::optional<redis::Value> subscribed_refusal(net::ConnectionId id,
                                                   const Conn& c,
                                                   const redis::Argv& argv) const;
    // Answers a connection command.
    redis::Value run_local(net::ConnectionId id, Conn& c, const redis::Argv& argv);
    // (P)SUBSCRIBE and (P)UNSUBSCRIBE: one reply per channel or pattern, encoded.
    std::string run_subscription(net::ConnectionId id, Conn& c, const redis::Argv& argv);
    std::string subscribe(net::ConnectionId id,
                          const Conn& c,
                          RedisSubscriptions::Kind kind,
                          const redis::Argv& argv);
    std::string unsubscribe(net::ConnectionId id,
                            const Conn& c,
                            RedisSubscriptions::Kind kind,
                            const redis::Argv& argv);
    redis::Value pubsub(const Conn& c, const redis::Argv& argv) const;
    redis::Value reset(net::ConnectionId id, Conn& c);
    redis::Value hello(Conn& c, const redis::Argv& argv);
    // AUTH and HELLO AUTH: OK, or WRONGPASS (the third on a connection closes it).
    std::optional<redis::Value> log_in(Conn& c, const std::string& user, const std::string& pass);
    bool logged_in(const Conn& c) const;
    redis::Value client(Conn& c, const redis::Argv& argv);
    redis::Value command_info(const redis::Argv& argv) const;
    redis::Value info(const redis::Argv& argv) const;
    void complete(Conn& c, size_t index, const redis::Value& value);
    void flush(net::ConnectionId id, Conn& c);

    RedisFrontendOptions options_;
    RespOutput& output_;
    RedisBackend& backend_;
    std::map<net::ConnectionId, Conn> conns_;
    RedisSubscriptions subscriptions_;
    uint64_t next_client_id_ = 1;
};

}  // namespace raftlock::server
