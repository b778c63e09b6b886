#pragma once

// raftlockd's configuration: command-line flags and an optional TOML file (--config FILE). A flag
// given on the command line overrides the file. Parsing uses CLI11 and toml++ (config.cc); every
// error names the flag or key, the bad value and what is expected, e.g.
//   "--member 2=127.0.0.1: expected ID=HOST:PORT (e.g. 2=127.0.0.1:7002)"
// The flag and key names are documented in docs/operations.md.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "statemachine/auth.h"

namespace raftlock::server {

struct Endpoint {
    std::string host;
    uint16_t port = 0;
    friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// "HOST:PORT" with a port in 1..65535. Hosts are names or IP addresses; an IPv6 address is written
// in brackets ("[::1]:7001") and stored without them, as resolvers and Asio expect.
std::optional<Endpoint> parse_endpoint(std::string_view text);
// The inverse of parse_endpoint.
std::string to_string(const Endpoint& endpoint);

// A member of the initial cluster: its id and the address of its Raft (peer) port.
struct Member {
    uint64_t id = 0;
    Endpoint raft;
    friend bool operator==(const Member&, const Member&) = default;
};

enum class LogLevel : uint8_t { kDebug, kInfo, kWarn, kError };

struct ServerConfig {
    // --- identity -------------------------------------------------------------------------------
    uint64_t node_id = 0;     // --id (required), > 0
    uint64_t cluster_id = 0;  // --cluster-id (required), > 0: a peer of another cluster is refused
    // --member ID=HOST:PORT, repeated (TOML: members = ["1=127.0.0.1:7001", ...]); must contain
    // node_id; ids distinct; 1..9 members. Used to bootstrap a new data directory and to find
    // peers.
    std::vector<Member> members;
    // --initial-cluster-state new|existing (as etcd's flag). new: an empty data directory is
    // bootstrapped with `members` as the founding voters. existing: it is not; the node waits for
    // the leader to replicate the log to it after `raftlock member add`, and `members` only says
    // where the current members are until it has their configuration. Ignored once the data
    // directory has a log.
    bool join_existing = false;

    // --- where to listen and store
    // ---------------------------------------------------------------- The Raft port is this node's
    // member address. Client and admin ports:
    Endpoint client_listen;  // --client-listen HOST:PORT (required)
    Endpoint admin_listen;   // --admin-listen HOST:PORT (required)
    Endpoint redis_listen;   // --redis-listen HOST:PORT: the RESP port (docs/redis-mode.md); off
                             // when not given
    std::string redis_password;  // --redis-password: AUTH required when not empty
    Endpoint pg_listen;       // --pg-listen HOST:PORT: the PostgreSQL port (docs/sql-mode.md); off
                              // when not given
    std::string pg_password;  // --pg-password: md5 authentication when not empty, else trust
    Endpoint zk_listen;       // --zk-listen HOST:PORT: the ZooKeeper port (docs/zookeeper-mode.md);
                              // off when not given
    bool zk_local_reads = false;  // --zk-reads local (default linearizable)
    // --zk-super-digest super:HASH: ZooKeeper's superDigest (docs/zookeeper-mode.md, "ACLs"); none
    // when not given
    std::string zk_super_digest;
    std::string data_dir;  // --data-dir (required); created when missing
    // --console-actions on: the admin port's web console may force-release locks, expire sessions
    // and transfer leadership (server/admin_console.h); off: it only reads
    bool console_actions = false;

    // --- TLS (net/tls.h, docs/security.md): every client port (native, Redis, PostgreSQL,
    // ZooKeeper) speaks only TLS when a certificate is given; SIGHUP reads the files again
    std::string tls_cert_file;  // --tls-cert-file: PEM certificate chain
    std::string tls_key_file;   // --tls-key-file: its PEM private key
    std::string tls_ca_file;    // --tls-ca-file: the CA client certificates must chain to
    bool tls_client_cert_required = false;  // --tls-client-auth require (default none)
    // --tls-client-cert-user on: a client certificate's common name is its connection's user, on
    // every port that has users (native, Redis, PostgreSQL), without a password. Needs
    // tls_client_cert_required.
    bool tls_client_cert_user = false;
    // Mutual TLS on the Raft port (net/peer_transport.h): all three or none. The certificate must
    // name this member as peer_tls_name (node-ID.cluster-CLUSTER).
    // --- users (statemachine/auth.h, docs/security.md) ---
    // --root-password-file: a file holding root's password. raftlockd reads it at start and keeps
    // only its SCRAM verifier (root_credentials); a leader proposes the root user from it while
    // the cluster has no user at all, which also enables authentication.
    std::string root_password_file;
    std::optional<statemachine::Credentials> root_credentials;
    std::string peer_tls_cert_file;  // --peer-tls-cert-file
    std::string peer_tls_key_file;   // --peer-tls-key-file
    std::string peer_tls_ca_file;    // --peer-tls-ca-file: the cluster CA

    // --- timing
    // -------------------------------------------------------------------------------------
    uint32_t tick_ms = 50;                    // --tick-ms, 1..1000
    uint32_t election_timeout_ms = 1000;      // --election-timeout-ms: >= 5 ticks, multiple of tick
    uint32_t heartbeat_interval_ms = 100;     // --heartbeat-interval-ms: >= 1 tick, < election / 3
    int64_t session_timeout_ms_min = 1000;    // --session-timeout-min-ms, >= 100
    int64_t session_timeout_ms_max = 600000;  // --session-timeout-max-ms, >= min
    // A write not applied within this answers TIMEOUT (outcome unknown; the client retries).
    uint32_t request_timeout_ms = 10000;  // --request-timeout-ms, >= 100
    // The session of a PostgreSQL connection: kept alive by its node every third of this; ends
    // (releasing its locks) this long after the node stops doing so (it died or was cut off).
    int64_t pg_session_timeout_ms = 10000;  // --pg-session-timeout-ms, within the session bounds

    // --- snapshots
    // ------------------------------------------------------------------------------------
    uint64_t snapshot_every_entries = 100000;  // --snapshot-every-entries, >= 100
    uint64_t compaction_lag_entries = 10000;   // --compaction-lag-entries: entries kept behind it

    // --- storage
    // ----------------------------------------------------------------------------------------
    // Raft batches (Readies) whose writes may be in flight at once, 1..64: the next batch's
    // AppendEntries leave and its write queues while the last one syncs, and queued writes share
    // one sync (raft/ready_loop.h). 1: each batch waits for the last one's sync.
    uint32_t max_writes_in_flight = 4;  // --max-writes-in-flight
    // A follower writes and syncs a batch on its loop thread when its storage thread has nothing
    // queued, so its acknowledgement leaves without two thread wake-ups (Replica::write_on_loop).
    // Off by default: the follower's loop then serves nothing else while its disk syncs
    // (docs/decisions/0023-follower-writes-on-the-loop.md).
    bool follower_writes_on_loop = false;  // --follower-writes-on-loop off|on
    // The engine of a new store: the journal of preallocated segments (default) or RocksDB. An
    // existing store opens with the engine that wrote it (storage/durable_store.h).
    bool storage_rocksdb = false;  // --storage-engine journal|rocksdb
    // The journal's segment size: each is zero-filled before use, the next prepared ahead.
    uint64_t journal_segment_bytes = 64ull << 20;  // --journal-segment-bytes, 1 MiB..1 GiB

    // --- limits
    // -----------------------------------------------------------------------------------------
    uint32_t client_frame_bytes_max = 4u << 20;           // --max-frame-bytes, >= 64 KiB
    uint32_t pending_requests_per_connection_max = 1024;  // --max-pending-requests, >= 1
    uint32_t watches_per_connection_max = 10000;          // --max-watches, 1..10000
    // Client connections over the native, Redis and PostgreSQL ports together; lowered at start to
    // what the open-file limit allows beside a reserve (server/open_files.h).
    uint32_t connections_max = 10000;             // --max-connections, >= 1
    uint32_t connections_per_address_max = 1024;  // --max-connections-per-address, >= 1
    // Reply bytes queued for one client connection (native, Redis or PostgreSQL port) that its
    // client has not read; a connection that would exceed it is closed (Redis's
    // client-output-buffer-limit). >= 8 MiB: two replies of the largest size always fit.
    uint64_t client_output_buffer_bytes_max = 32u << 20;  // --client-output-buffer-bytes-max
    // A client message (native frame, RESP command, PostgreSQL message) must arrive whole within
    // this time of its first byte, the first message within this time of the connect; bytes
    // trickling in do not restart it (a slowloris is closed). >= 100.
    uint32_t client_message_deadline_ms = 30000;  // --client-message-deadline-ms
    // Requests a second one client connection (native, Redis, PostgreSQL) may send on average,
    // with bursts of one second's worth; the excess is refused (TOO_MANY_REQUESTS, a Redis or SQL
    // error) and counted. >= 1.
    uint32_t requests_per_second_per_connection_max = 20000;  // --max-requests-per-second
    // While authentication is enabled, a native connection that has not logged in this long
    // after it opened is closed. >= 100.
    uint32_t login_deadline_ms = 10000;  // --login-deadline-ms
    // The instruction budget of one Redis script (EVAL, EVALSHA), stamped into its log entry so
    // that every replica stops it at the same instruction. A script applies on every replica
    // inside the Raft loop: 100,000 is about 5 ms for the costliest loop measured (allocating
    // strings), 0.3 ms for arithmetic. 1000..1,000,000,000.
    uint64_t script_instructions_max = 100000;  // --script-instructions-max
    static constexpr uint64_t kScriptInstructionsCeiling = 1'000'000'000;
    // The row budget of one SQL statement, stamped into its log entry like the script budget: a
    // row looked at costs 1, a row written 10 (statemachine/sql/engine.h). 100,000 is a scan of
    // 100,000 rows (about 11 ms, Release) or a 10,000-row INSERT (45-90 ms). 1000..10^9.
    uint64_t sql_rows_max = 100000;  // --sql-rows-max
    static constexpr uint64_t kSqlRowsCeiling = 1'000'000'000;

    // --- logging
    // ----------------------------------------------------------------------------------------
    LogLevel log_level = LogLevel::kInfo;  // --log-level debug|info|warn|error

    const Member& self() const;  // precondition: validated
};

// Parses argv (argv[0] is the program name). On --help / --version the error is empty and `help`
// holds the text to print, exit status 0; otherwise the error says what is wrong (exit status 2).
struct ConfigError {
    std::string message;
    std::string help;
};
Result<ServerConfig, ConfigError> parse_config(int argc, const char* const* argv);

// The checks parse_config applies after reading flags and file: "" when valid, else the first
// problem, worded as above.
std::string validate(const ServerConfig& config);

std::string_view to_string(LogLevel level);

}  // namespace raftlock::server
