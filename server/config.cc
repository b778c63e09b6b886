// raftlockd's flags and TOML file (config.h). One table of fields drives everything: the CLI11
// options, the TOML keys, the help text and the range checks, so a flag and its key can never
// disagree. Values from both sources go through the same text parsers, and every error names where
// the bad value came from: "--tick-ms 0: ..." or "tick_ms = 0 in node1.toml: ...".

#include "server/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <toml++/toml.h>

namespace raftlock::server {
namespace {

constexpr std::string_view kVersion = "raftlockd 0.1.0";
constexpr size_t kMembersMax = 9;
constexpr uint32_t kElectionTicksMin = 5;

enum class Kind : uint8_t { kInteger, kText, kMembers };

// One setting: its flag (without "--"), its TOML key, how it is read and shown.
struct Field {
    std::string_view flag;
    std::string_view key;
    std::string_view value_name;  // in the help: "MS", "HOST:PORT"
    std::string_view group;
    std::string_view help;
    // A required field has an example value for the message that says it is missing.
    std::string_view example;
    Kind kind = Kind::kText;
    // kInteger: the accepted range [lo, hi], checked when the value is read and by validate().
    uint64_t lo = 0;
    uint64_t hi = 0;
    // Stores the text form of a value: "" when stored, else what was expected. For kMembers it
    // appends one member.
    std::function<std::string(ServerConfig&, std::string_view)> store;
    // The value as text (help defaults, messages); kMembers shows the ids.
    std::function<std::string(const ServerConfig&)> show;
    // kInteger: the value, nullopt when negative (a signed field set directly).
    std::function<std::optional<uint64_t>(const ServerConfig&)> number;
};

// ---- parsers of one value -----------------------------------------------------------------------

template <typename T>
std::optional<T> parse_integer(std::string_view text) {
    T value{};
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end) {
        return std::nullopt;
    }
    return value;
}

// "an integer in 1..1000", or "an integer >= 1" when the upper bound is a 64-bit maximum: printing
// that would only hide the lower bound.
std::string range_text(uint64_t lo, uint64_t hi) {
    if (hi >= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return fmt::format("an integer >= {}", lo);
    }
    return fmt::format("an integer in {}..{}", lo, hi);
}

std::string member_text(const Member& member) {
    return fmt::format("{}={}", member.id, to_string(member.raft));
}

std::string member_expectation(std::string_view text) {
    // The example reuses the id the user wrote when it is a small one, so it reads as a fix.
    uint64_t id = 2;
    const size_t eq = text.find('=');
    if (const auto parsed = parse_integer<uint64_t>(text.substr(0, eq));
        parsed && *parsed >= 1 && *parsed <= 99) {
        id = *parsed;
    }
    return fmt::format("expected ID=HOST:PORT (e.g. {}=127.0.0.1:{})", id, 7000 + id);
}

std::optional<Member> parse_member(std::string_view text) {
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos) {
        return std::nullopt;
    }
    const std::optional<uint64_t> id = parse_integer<uint64_t>(text.substr(0, eq));
    std::optional<Endpoint> raft = parse_endpoint(text.substr(eq + 1));
    if (!id || *id == 0 || !raft) {
        return std::nullopt;
    }
    return Member{*id, std::move(*raft)};
}

std::optional<LogLevel> parse_log_level(std::string_view text) {
    for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
        if (to_string(level) == text) {
            return level;
        }
    }
    return std::nullopt;
}

// ---- the fields ---------------------------------------------------------------------------------

template <typename T>
Field integer_field(Field field, T ServerConfig::*member, uint64_t lo, uint64_t hi) {
    field.kind = Kind::kInteger;
    field.lo = lo;
    field.hi = std::min<uint64_t>(hi, static_cast<uint64_t>(std::numeric_limits<T>::max()));
    field.store = [member, lo = field.lo, hi = field.hi](ServerConfig& c, std::string_view text) {
        const std::optional<uint64_t> value = parse_integer<uint64_t>(text);
        if (!value || *value < lo || *value > hi) {
            return "expected " + range_text(lo, hi);
        }
        c.*member = static_cast<T>(*value);
        return std::string();
    };
    field.show = [member](const ServerConfig& c) { return std::to_string(c.*member); };
    field.number = [member](const ServerConfig& c) -> std::optional<uint64_t> {
        if constexpr (std::is_signed_v<T>) {
            if (c.*member < 0) {
                return std::nullopt;
            }
        }
        return static_cast<uint64_t>(c.*member);
    };
    return field;
}

Field endpoint_field(Field field, Endpoint ServerConfig::*member) {
    field.store = [member](ServerConfig& c, std::string_view text) {
        std::optional<Endpoint> endpoint = parse_endpoint(text);
        if (!endpoint) {
            return std::string("expected HOST:PORT with a port in 1..65535 (e.g. 127.0.0.1:7101)");
        }
        c.*member = std::move(*endpoint);
        return std::string();
    };
    field.show = [member](const ServerConfig& c) {
        return (c.*member).host.empty() ? std::string() : to_string(c.*member);
    };
    return field;
}

Field members_field(Field field) {
    field.kind = Kind::kMembers;
    field.store = [](ServerConfig& c, std::string_view text) {
        std::optional<Member> member = parse_member(text);
        if (!member) {
            return member_expectation(text);
        }
        c.members.push_back(std::move(*member));
        return std::string();
    };
    field.show = [](const ServerConfig& c) {
        std::string ids;
        for (const Member& m : c.members) {
            ids += (ids.empty() ? "" : ", ") + std::to_string(m.id);
        }
        return ids;
    };
    return field;
}

Field data_dir_field(Field field) {
    field.store = [](ServerConfig& c, std::string_view text) {
        if (text.empty()) {
            return std::string("expected a directory path");
        }
        c.data_dir = text;
        return std::string();
    };
    field.show = [](const ServerConfig& c) { return c.data_dir; };
    return field;
}

Field text_field(Field field, std::string ServerConfig::*member) {
    field.store = [member](ServerConfig& c, std::string_view text) {
        c.*member = text;
        return std::string();
    };
    field.show = [member](const ServerConfig& c) { return c.*member; };
    return field;
}

// A flag of two words, `off` and `on`, stored as a bool.
Field two_word_field(Field field, bool ServerConfig::*member, const char* off, const char* on) {
    field.store = [member, off, on](ServerConfig& c, std::string_view text) {
        if (text != off && text != on) {
            return fmt::format("expected {} or {}", off, on);
        }
        c.*member = text == on;
        return std::string();
    };
    field.show = [member, off, on](const ServerConfig& c) {
        return std::string(c.*member ? on : off);
    };
    return field;
}

Field log_level_field(Field field) {
    field.store = [](ServerConfig& c, std::string_view text) {
        const std::optional<LogLevel> level = parse_log_level(text);
        if (!level) {
            return std::string("expected debug, info, warn or error");
        }
        c.log_level = *level;
        return std::string();
    };
    field.show = [](const ServerConfig& c) { return std::string(to_string(c.log_level)); };
    return field;
}

constexpr uint64_t kNoMax = std::numeric_limits<uint64_t>::max();

// The help strings stay short enough for one 100-column line of --help; docs/operations.md
// says more.
void add_identity_fields(std::vector<Field>& out) {
    out.push_back(integer_field({"id", "id", "ID", "Identity", "this node's id", "1"},
                                &ServerConfig::node_id, 1, kNoMax));
    out.push_back(integer_field({"cluster-id", "cluster_id", "ID", "Identity",
                                 "peers with another cluster id are refused", "1"},
                                &ServerConfig::cluster_id, 1, kNoMax));
    out.push_back(members_field({"member", "members", "ID=HOST:PORT", "Identity",
                                 "a member's Raft address; once per member", "1=127.0.0.1:7001"}));
    out.push_back(two_word_field({"initial-cluster-state", "initial_cluster_state", "new|existing",
                                  "Identity", "existing: join a running cluster (member add)"},
                                 &ServerConfig::join_existing, "new", "existing"));
    out.push_back(endpoint_field({"client-listen", "client_listen", "HOST:PORT", "Addresses",
                                  "client protocol address", "127.0.0.1:7101"},
                                 &ServerConfig::client_listen));
    out.push_back(endpoint_field({"admin-listen", "admin_listen", "HOST:PORT", "Addresses",
                                  "admin HTTP: /status, /metrics, /healthz", "127.0.0.1:7201"},
                                 &ServerConfig::admin_listen));
    out.push_back(two_word_field(
        {"console-actions", "console_actions", "off|on", "Addresses",
         "on: the admin port's web console may force-release a lock, expire a session and "
         "transfer leadership (root users only when authentication is on)"},
        &ServerConfig::console_actions, "off", "on"));
    out.push_back(endpoint_field({"redis-listen", "redis_listen", "HOST:PORT", "Addresses",
                                  "Redis (RESP) port; off when not given"},
                                 &ServerConfig::redis_listen));
    out.push_back(text_field({"redis-password", "redis_password", "TEXT", "Addresses",
                              "Redis clients must AUTH with it; none when not given"},
                             &ServerConfig::redis_password));
    out.push_back(endpoint_field({"pg-listen", "pg_listen", "HOST:PORT", "Addresses",
                                  "PostgreSQL wire-protocol port (SQL mode); off when not given"},
                                 &ServerConfig::pg_listen));
    out.push_back(text_field({"pg-password", "pg_password", "TEXT", "Addresses",
                              "PostgreSQL clients must give it (md5); trust when not given"},
                             &ServerConfig::pg_password));
    out.push_back(endpoint_field({"zk-listen", "zk_listen", "HOST:PORT", "Addresses",
                                  "ZooKeeper client-protocol port; off when not given"},
                                 &ServerConfig::zk_listen));
    out.push_back(two_word_field(
        {"zk-reads", "zk_reads", "linearizable|local", "Addresses",
         "the ZooKeeper port's reads: after a ReadIndex round, or from this node's state at once "
         "as ZooKeeper serves them (sync then waits for the leader's commit point)"},
        &ServerConfig::zk_local_reads, "linearizable", "local"));
    out.push_back(text_field({"zk-super-digest", "zk_super_digest", "super:HASH", "Addresses",
                              "the ZooKeeper port's super user: a connection that proves this "
                              "digest (addauth digest super:PASSWORD) passes every ACL; none when "
                              "not given"},
                             &ServerConfig::zk_super_digest));
    out.push_back(data_dir_field({"data-dir", "data_dir", "DIR", "Addresses",
                                  "Raft log and snapshots, created if missing", "data/node1"}));
}

void add_tls_fields(std::vector<Field>& out) {
    const std::string_view g = "TLS";
    out.push_back(text_field({"tls-cert-file", "tls_cert_file", "FILE", g,
                              "PEM certificate chain: every client port speaks only TLS with it"},
                             &ServerConfig::tls_cert_file));
    out.push_back(
        text_field({"tls-key-file", "tls_key_file", "FILE", g, "the certificate's PEM private key"},
                   &ServerConfig::tls_key_file));
    out.push_back(text_field({"tls-ca-file", "tls_ca_file", "FILE", g,
                              "PEM CA certificates client certificates must chain to"},
                             &ServerConfig::tls_ca_file));
    out.push_back(two_word_field({"tls-client-auth", "tls_client_auth", "none|require", g,
                                  "require: a client must present a certificate of the CA"},
                                 &ServerConfig::tls_client_cert_required, "none", "require"));
    out.push_back(two_word_field({"tls-client-cert-user", "tls_client_cert_user", "off|on", g,
                                  "on: a client certificate's common name is the client's user"},
                                 &ServerConfig::tls_client_cert_user, "off", "on"));
    out.push_back(text_field({"peer-tls-cert-file", "peer_tls_cert_file", "FILE", g,
                              "this member's PEM certificate for the Raft port (mutual TLS); it "
                              "names the member as node-ID.cluster-CLUSTER"},
                             &ServerConfig::peer_tls_cert_file));
    out.push_back(
        text_field({"peer-tls-key-file", "peer_tls_key_file", "FILE", g, "its PEM private key"},
                   &ServerConfig::peer_tls_key_file));
    out.push_back(text_field({"peer-tls-ca-file", "peer_tls_ca_file", "FILE", g,
                              "the cluster CA: peers' certificates must chain to it"},
                             &ServerConfig::peer_tls_ca_file));
    out.push_back(text_field({"root-password-file", "root_password_file", "FILE", "Users",
                              "a file holding the password of the root user the cluster's first "
                              "leader creates, which turns authentication on (docs/security.md)"},
                             &ServerConfig::root_password_file));
}

void add_timing_fields(std::vector<Field>& out) {
    const std::string_view g = "Timing (milliseconds)";
    out.push_back(integer_field({"tick-ms", "tick_ms", "MS", g, "one Raft tick"},
                                &ServerConfig::tick_ms, 1, 1000));
    out.push_back(integer_field({"election-timeout-ms", "election_timeout_ms", "MS", g,
                                 "a multiple of the tick, >= 5 ticks"},
                                &ServerConfig::election_timeout_ms, 1, kNoMax));
    out.push_back(integer_field({"heartbeat-interval-ms", "heartbeat_interval_ms", "MS", g,
                                 ">= 1 tick, < election timeout / 3"},
                                &ServerConfig::heartbeat_interval_ms, 1, kNoMax));
    out.push_back(integer_field({"session-timeout-min-ms", "session_timeout_min_ms", "MS", g,
                                 "shortest session timeout a client may ask for"},
                                &ServerConfig::session_timeout_ms_min, 100, kNoMax));
    out.push_back(integer_field({"session-timeout-max-ms", "session_timeout_max_ms", "MS", g,
                                 "longest session timeout, >= the shortest"},
                                &ServerConfig::session_timeout_ms_max, 100, kNoMax));
    out.push_back(integer_field({"request-timeout-ms", "request_timeout_ms", "MS", g,
                                 "a write not applied by then answers TIMEOUT"},
                                &ServerConfig::request_timeout_ms, 100, kNoMax));
    out.push_back(integer_field({"pg-session-timeout-ms", "pg_session_timeout_ms", "MS", g,
                                 "a PostgreSQL connection's session ends this long after its "
                                 "node stops keeping it alive"},
                                &ServerConfig::pg_session_timeout_ms, 100, kNoMax));
}

void add_limit_fields(std::vector<Field>& out) {
    out.push_back(integer_field({"snapshot-every-entries", "snapshot_every_entries", "N",
                                 "Snapshots", "snapshot after this many applied entries"},
                                &ServerConfig::snapshot_every_entries, 100, kNoMax));
    out.push_back(integer_field({"compaction-lag-entries", "compaction_lag_entries", "N",
                                 "Snapshots", "log entries kept behind a snapshot"},
                                &ServerConfig::compaction_lag_entries, 0, kNoMax));
    out.push_back(integer_field({"max-writes-in-flight", "max_writes_in_flight", "N", "Storage",
                                 "Raft batches written at once (1: each waits for the last)"},
                                &ServerConfig::max_writes_in_flight, 1, 64));
    out.push_back(
        two_word_field({"follower-writes-on-loop", "follower_writes_on_loop", "off|on", "Storage",
                        "a follower syncs on its loop thread when its storage thread is idle"},
                       &ServerConfig::follower_writes_on_loop, "off", "on"));
    out.push_back(two_word_field(
        {"storage-engine", "storage_engine", "journal|rocksdb", "Storage",
         "the engine of a new store (an existing one keeps the engine that wrote it)"},
        &ServerConfig::storage_rocksdb, "journal", "rocksdb"));
    out.push_back(
        integer_field({"journal-segment-bytes", "journal_segment_bytes", "BYTES", "Storage",
                       "size of each journal segment file (zero-filled ahead)"},
                      &ServerConfig::journal_segment_bytes, 1u << 20, 1u << 30));
    out.push_back(integer_field(
        {"max-frame-bytes", "max_frame_bytes", "BYTES", "Limits", "largest client frame"},
        &ServerConfig::client_frame_bytes_max, 64 * 1024, kNoMax));
    out.push_back(integer_field({"max-pending-requests", "max_pending_requests", "N", "Limits",
                                 "requests in flight per client connection"},
                                &ServerConfig::pending_requests_per_connection_max, 1, kNoMax));
    out.push_back(integer_field(
        {"max-watches", "max_watches", "N", "Limits", "watches per client connection"},
        &ServerConfig::watches_per_connection_max, 1, 10000));
    out.push_back(
        integer_field({"max-connections", "max_connections", "N", "Limits", "client connections"},
                      &ServerConfig::connections_max, 1, kNoMax));
    out.push_back(integer_field({"max-connections-per-address", "max_connections_per_address", "N",
                                 "Limits", "client connections from one IP address"},
                                &ServerConfig::connections_per_address_max, 1, kNoMax));
    out.push_back(
        integer_field({"client-output-buffer-bytes-max", "client_output_buffer_bytes_max", "BYTES",
                       "Limits", "unread reply bytes per client connection before it is closed"},
                      &ServerConfig::client_output_buffer_bytes_max, 8u << 20, kNoMax));
    out.push_back(integer_field(
        {"client-message-deadline-ms", "client_message_deadline_ms", "MS", "Limits",
         "time for a client message to arrive whole, from its first byte (and the first from the "
         "connect)"},
        &ServerConfig::client_message_deadline_ms, 100, kNoMax));
    out.push_back(integer_field(
        {"max-requests-per-second", "max_requests_per_second", "N", "Limits",
         "requests a second one client connection may send (bursts of a second's worth); the "
         "excess is refused"},
        &ServerConfig::requests_per_second_per_connection_max, 1, kNoMax));
    out.push_back(integer_field(
        {"login-deadline-ms", "login_deadline_ms", "MS", "Limits",
         "with authentication on, a client connection not logged in this long is closed"},
        &ServerConfig::login_deadline_ms, 100, kNoMax));
    out.push_back(integer_field(
        {"script-instructions-max", "script_instructions_max", "N", "Limits",
         "Lua instructions one Redis script may run before it fails (stamped into its entry)"},
        &ServerConfig::script_instructions_max, 1000, ServerConfig::kScriptInstructionsCeiling));
    out.push_back(integer_field(
        {"sql-rows-max", "sql_rows_max", "N", "Limits",
         "row budget of one SQL statement: 1 per row looked at, 10 per row written (stamped "
         "into its entry)"},
        &ServerConfig::sql_rows_max, 1000, ServerConfig::kSqlRowsCeiling));
    out.push_back(log_level_field(
        {"log-level", "log_level", "LEVEL", "Logging", "debug, info, warn or error"}));
}

const std::vector<Field>& fields() {
    static const std::vector<Field> table = [] {
        std::vector<Field> out;
        add_identity_fields(out);
        add_tls_fields(out);
        add_timing_fields(out);
        add_limit_fields(out);
        return out;
    }();
    return table;
}

const Field& field_by_flag(std::string_view flag) {
    for (const Field& f : fields()) {
        if (f.flag == flag) {
            return f;
        }
    }
    RL_PANIC("unknown config field");
}

// ---- naming a value in a message ----------------------------------------------------------------

// Names a value by where it came from: the flag by default, the file's key when the file set it
// and no flag overrode it.
class Namer {
public:
    void set_file(std::string_view flag, const std::string& path) { file_of_[flag] = path; }
    void set_flag(std::string_view flag) { file_of_.erase(flag); }

    std::string value(const Field& f, std::string_view text) const {
        const auto it = file_of_.find(f.flag);
        if (it == file_of_.end()) {
            return fmt::format("--{} {}", f.flag, text.empty() ? "\"\"" : text);
        }
        if (f.kind == Kind::kMembers) {
            return fmt::format("members entry \"{}\" in {}", text, it->second);
        }
        const std::string shown =
            f.kind == Kind::kText ? fmt::format("\"{}\"", text) : std::string(text);
        return fmt::format("{} = {} in {}", f.key, shown, it->second);
    }
    // The setting itself, without a value: "--member" or "members in node1.toml".
    std::string setting(const Field& f) const {
        const auto it = file_of_.find(f.flag);
        if (it == file_of_.end()) {
            return fmt::format("--{}", f.flag);
        }
        return fmt::format("{} in {}", f.key, it->second);
    }

private:
    std::map<std::string_view, std::string> file_of_;
};

// ---- validation ---------------------------------------------------------------------------------

std::string missing_problem(const Field& f) {
    std::string in_file;
    if (f.kind == Kind::kMembers) {
        in_file = fmt::format("{} = [\"{}\", ...]", f.key, f.example);
    } else if (f.kind == Kind::kText) {
        in_file = fmt::format("{} = \"{}\"", f.key, f.example);
    } else {
        in_file = fmt::format("{} = {}", f.key, f.example);
    }
    return fmt::format("missing --{}: expected a value, e.g. --{} {} (or {} in the --config file)",
                       f.flag, f.flag, f.example, in_file);
}

std::string check_required_and_ranges(const ServerConfig& c, const Namer& namer) {
    const ServerConfig defaults;
    for (const Field& f : fields()) {
        const std::string shown = f.show(c);
        // Every required setting's default is invalid, so a default value means "not given".
        if (!f.example.empty() && shown == f.show(defaults)) {
            return missing_problem(f);
        }
        if (f.kind != Kind::kInteger) {
            continue;
        }
        const std::optional<uint64_t> value = f.number(c);
        if (!value || *value < f.lo || *value > f.hi) {
            return fmt::format("{}: expected {}", namer.value(f, shown), range_text(f.lo, f.hi));
        }
    }
    return "";
}

std::string check_member_list(const ServerConfig& c, const Namer& namer) {
    const Field& f = field_by_flag("member");
    if (c.members.empty() || c.members.size() > kMembersMax) {
        return fmt::format("{}: {} members given: expected 1..{} members", namer.setting(f),
                           c.members.size(), kMembersMax);
    }
    for (size_t i = 0; i < c.members.size(); ++i) {
        const Member& m = c.members[i];
        const std::string text = member_text(m);
        if (m.id == 0 || !parse_endpoint(to_string(m.raft))) {
            return fmt::format("{}: {}", namer.value(f, text), member_expectation(text));
        }
        for (size_t j = 0; j < i; ++j) {
            const Member& other = c.members[j];
            if (other.id == m.id) {
                return fmt::format("{}: id {} is already used by {}: expected distinct ids",
                                   namer.value(f, text), m.id, member_text(other));
            }
            if (other.raft == m.raft) {
                return fmt::format(
                    "{}: address {} is already member {}'s: expected distinct "
                    "addresses",
                    namer.value(f, text), to_string(m.raft), other.id);
            }
        }
    }
    const bool has_self = std::any_of(c.members.begin(), c.members.end(),
                                      [&](const Member& m) { return m.id == c.node_id; });
    if (!has_self) {
        return fmt::format(
            "{}: not among the member ids ({}): expected this node to be one of "
            "the --member entries",
            namer.value(field_by_flag("id"), std::to_string(c.node_id)), f.show(c));
    }
    return "";
}

// The client and admin ports must differ from each other and from every member's Raft address.
std::string check_listen_addresses(const ServerConfig& c, const Namer& namer) {
    const Field& client = field_by_flag("client-listen");
    const Field& admin = field_by_flag("admin-listen");
    for (const Field* f : {&client, &admin}) {
        const Endpoint& e = f == &client ? c.client_listen : c.admin_listen;
        if (!parse_endpoint(to_string(e))) {
            return fmt::format("{}: expected HOST:PORT with a port in 1..65535",
                               namer.value(*f, to_string(e)));
        }
        for (const Member& m : c.members) {
            if (m.raft == e) {
                return fmt::format("{}: member {}'s Raft address: expected an address of its own",
                                   namer.value(*f, to_string(e)), m.id);
            }
        }
    }
    if (c.client_listen == c.admin_listen) {
        return fmt::format("{}: same as --client-listen: expected an address of its own",
                           namer.value(admin, to_string(c.admin_listen)));
    }
    // The optional ports (Redis, PostgreSQL, ZooKeeper) need addresses of their own too.
    const std::pair<const char*, const Endpoint*> optional_ports[] = {
        {"redis-listen", &c.redis_listen},
        {"pg-listen", &c.pg_listen},
        {"zk-listen", &c.zk_listen}};
    for (size_t i = 0; i < std::size(optional_ports); ++i) {
        const auto& [flag, endpoint] = optional_ports[i];
        const Field& field = field_by_flag(flag);
        const Endpoint& e = *endpoint;
        if (e.host.empty()) {
            continue;
        }
        for (size_t j = 0; j < i; ++j) {
            if (e == *optional_ports[j].second) {
                return fmt::format("{}: same as --{}: expected an address of its own",
                                   namer.value(field, to_string(e)), optional_ports[j].first);
            }
        }
        for (const Member& m : c.members) {
            if (m.raft == e) {
                return fmt::format("{}: member {}'s Raft address: expected an address of its own",
                                   namer.value(field, to_string(e)), m.id);
            }
        }
        if (e == c.client_listen || e == c.admin_listen) {
            return fmt::format(
                "{}: same as the client or admin port: expected an address of its own",
                namer.value(field, to_string(e)));
        }
    }
    return "";
}

// The rules between timing settings: election and heartbeat against the tick, session bounds.
std::string check_timings(const ServerConfig& c, const Namer& namer) {
    const Field& election = field_by_flag("election-timeout-ms");
    const Field& heartbeat = field_by_flag("heartbeat-interval-ms");
    const uint32_t tick = c.tick_ms;
    const std::string e_name = namer.value(election, std::to_string(c.election_timeout_ms));
    if (c.election_timeout_ms % tick != 0) {
        return fmt::format("{}: expected a multiple of --tick-ms ({})", e_name, tick);
    }
    if (c.election_timeout_ms < kElectionTicksMin * tick) {
        return fmt::format("{}: expected at least {} ticks (>= {} with --tick-ms {})", e_name,
                           kElectionTicksMin, kElectionTicksMin * tick, tick);
    }
    const std::string h_name = namer.value(heartbeat, std::to_string(c.heartbeat_interval_ms));
    if (c.heartbeat_interval_ms < tick) {
        return fmt::format("{}: expected at least one tick (>= {} with --tick-ms {})", h_name, tick,
                           tick);
    }
    // Three heartbeats per election timeout let a follower miss two before it starts an election.
    if (uint64_t{c.heartbeat_interval_ms} * 3 >= c.election_timeout_ms) {
        return fmt::format(
            "{}: expected less than a third of --election-timeout-ms {} (at most {})", h_name,
            c.election_timeout_ms, (c.election_timeout_ms - 1) / 3);
    }
    if (c.session_timeout_ms_max < c.session_timeout_ms_min) {
        return fmt::format("{}: expected at least --session-timeout-min-ms ({})",
                           namer.value(field_by_flag("session-timeout-max-ms"),
                                       std::to_string(c.session_timeout_ms_max)),
                           c.session_timeout_ms_min);
    }
    // Only with the PostgreSQL port on: its connections' sessions are the only ones it times.
    if (!c.pg_listen.host.empty() && (c.pg_session_timeout_ms < c.session_timeout_ms_min ||
                                      c.pg_session_timeout_ms > c.session_timeout_ms_max)) {
        return fmt::format(
            "{}: expected within --session-timeout-min-ms {} and "
            "--session-timeout-max-ms {}",
            namer.value(field_by_flag("pg-session-timeout-ms"),
                        std::to_string(c.pg_session_timeout_ms)),
            c.session_timeout_ms_min, c.session_timeout_ms_max);
    }
    return "";
}

// ZooKeeper's digest form, user:base64(sha1(user:password)): one colon, something on each side.
std::string check_super_digest(const ServerConfig& c, const Namer& namer) {
    const std::string& d = c.zk_super_digest;
    const size_t colon = d.find(':');
    if (d.empty() || (colon != std::string::npos && colon > 0 && colon + 1 < d.size() &&
                      d.find(':', colon + 1) == std::string::npos)) {
        return "";
    }
    return fmt::format(
        "{}: expected USER:HASH, the digest of `USER:PASSWORD` as zkCli and "
        "ZooKeeper's DigestAuthenticationProvider print it",
        namer.value(field_by_flag("zk-super-digest"), d));
}

// The files themselves are read when the node starts (a missing or mismatched file stops it
// there, named); here only what belongs together.
std::string check_tls(const ServerConfig& c, const Namer& namer) {
    if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
        return fmt::format("{} and {} come together", namer.setting(field_by_flag("tls-cert-file")),
                           namer.setting(field_by_flag("tls-key-file")));
    }
    if ((!c.tls_ca_file.empty() || c.tls_client_cert_required) && c.tls_cert_file.empty()) {
        return fmt::format("{} and {} need {}", namer.setting(field_by_flag("tls-ca-file")),
                           namer.setting(field_by_flag("tls-client-auth")),
                           namer.setting(field_by_flag("tls-cert-file")));
    }
    if (c.tls_client_cert_user && !c.tls_client_cert_required) {
        return fmt::format("{} on needs {} require",
                           namer.setting(field_by_flag("tls-client-cert-user")),
                           namer.setting(field_by_flag("tls-client-auth")));
    }
    if (c.tls_client_cert_required && c.tls_ca_file.empty()) {
        return fmt::format("{} require needs {}", namer.setting(field_by_flag("tls-client-auth")),
                           namer.setting(field_by_flag("tls-ca-file")));
    }
    const size_t peer_files = size_t{!c.peer_tls_cert_file.empty()} +
                              size_t{!c.peer_tls_key_file.empty()} +
                              size_t{!c.peer_tls_ca_file.empty()};
    if (peer_files != 0 && peer_files != 3) {
        return fmt::format("{}, {} and {} come together",
                           namer.setting(field_by_flag("peer-tls-cert-file")),
                           namer.setting(field_by_flag("peer-tls-key-file")),
                           namer.setting(field_by_flag("peer-tls-ca-file")));
    }
    return "";
}

std::string check_config(const ServerConfig& c, const Namer& namer) {
    for (auto check : {check_required_and_ranges, check_member_list, check_listen_addresses,
                       check_timings, check_super_digest, check_tls}) {
        std::string problem = check(c, namer);
        if (!problem.empty()) {
            return problem;
        }
    }
    return "";
}

// ---- the TOML file ------------------------------------------------------------------------------

// A value as the message shows it: strings in double quotes, as the user most likely wrote them
// (toml++ would print a literal string, '...').
std::string toml_text(const toml::node& node) {
    if (const toml::value<std::string>* text = node.as_string()) {
        return fmt::format("\"{}\"", text->get());
    }
    std::ostringstream out;
    node.visit([&out](const auto& concrete) { out << concrete; });
    return out.str();
}

std::string unknown_key_problem(std::string_view key, const std::string& path) {
    std::string normalized(key);
    std::replace(normalized.begin(), normalized.end(), '-', '_');
    normalized = normalized == "member" ? "members" : normalized;
    std::string keys;
    for (const Field& f : fields()) {
        if (f.key == normalized) {
            return fmt::format("unknown key {} in {}: expected {}", key, path, f.key);
        }
        keys += (keys.empty() ? "" : ", ") + std::string(f.key);
    }
    return fmt::format("unknown key {} in {}: expected one of {}", key, path, keys);
}

std::string store_members(const Field& f,
                          const toml::node& node,
                          const std::string& path,
                          ServerConfig& c) {
    const toml::array* list = node.as_array();
    if (list == nullptr) {
        return fmt::format(
            "{} = {} in {}: expected a list such as [\"1=127.0.0.1:7001\", "
            "\"2=127.0.0.1:7002\"]",
            f.key, toml_text(node), path);
    }
    c.members.clear();
    for (const toml::node& item : *list) {
        const std::optional<std::string_view> text = item.value<std::string_view>();
        const std::string problem =
            text ? f.store(c, *text) : std::string("expected a string ID=HOST:PORT");
        if (!problem.empty()) {
            return fmt::format("members entry {} in {}: {}", toml_text(item), path, problem);
        }
    }
    return "";
}

std::string store_toml_value(const Field& f,
                             const toml::node& node,
                             const std::string& path,
                             ServerConfig& c) {
    if (f.kind == Kind::kMembers) {
        return store_members(f, node, path, c);
    }
    std::string problem;
    if (f.kind == Kind::kInteger) {
        const toml::value<int64_t>* number = node.as_integer();
        problem = number == nullptr ? "expected " + range_text(f.lo, f.hi)
                                    : f.store(c, std::to_string(number->get()));
    } else {
        const toml::value<std::string>* text = node.as_string();
        problem = text == nullptr ? fmt::format("expected a string: {} = \"...\"", f.key)
                                  : f.store(c, text->get());
    }
    if (problem.empty()) {
        return "";
    }
    return fmt::format("{} = {} in {}: {}", f.key, toml_text(node), path, problem);
}

std::string parse_toml_text(const std::string& path, const std::string& text, toml::table& out) {
    try {
        out = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        const toml::source_position& at = e.source().begin;
        return fmt::format("--config {}: line {}, column {}: {}: expected a valid TOML file", path,
                           at.line, at.column, e.description());
    }
    return "";
}

// Reads the file into `c`; `namer` learns which settings it gave.
std::string read_toml_file(const std::string& path, ServerConfig& c, Namer& namer) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (!in || !(text << in.rdbuf())) {
        return fmt::format("--config {}: cannot read the file ({}): expected a readable TOML file",
                           path, std::strerror(errno));
    }
    toml::table table;
    if (std::string problem = parse_toml_text(path, text.str(), table); !problem.empty()) {
        return problem;
    }
    for (const auto& [key, node] : table) {
        const auto f = std::find_if(fields().begin(), fields().end(), [&](const Field& candidate) {
            return candidate.key == key.str();
        });
        if (f == fields().end()) {
            return unknown_key_problem(key.str(), path);
        }
        if (std::string problem = store_toml_value(*f, node, path, c); !problem.empty()) {
            return problem;
        }
        namer.set_file(f->flag, path);
    }
    return "";
}

// ---- the command line ---------------------------------------------------------------------------

// The raw text of every flag, as CLI11 found it; values are parsed after the file is read, so the
// flags override it.
struct CommandLine {
    std::string config_path;
    // By field index; a field is either single-valued or repeated (kMembers).
    std::vector<std::string> values;
    std::vector<std::vector<std::string>> repeated_values;
    std::vector<CLI::Option*> options;
};

std::string option_help(const Field& f) {
    if (!f.example.empty()) {
        return fmt::format("{} (required)", f.help);
    }
    const std::string shown_default = f.show(ServerConfig{});
    // Only a range that says something: a lower bound above 1 or an upper bound below 2^32 - 1.
    if (f.kind == Kind::kInteger && f.hi < std::numeric_limits<uint32_t>::max()) {
        return fmt::format("{} ({}..{}, default {})", f.help, f.lo, f.hi, shown_default);
    }
    if (f.kind == Kind::kInteger && f.lo > 1) {
        return fmt::format("{} (>= {}, default {})", f.help, f.lo, shown_default);
    }
    return fmt::format("{} (default {})", f.help, shown_default);
}

constexpr std::string_view kHelpFooter = R"(Durations are integers in milliseconds.

--config FILE reads the same settings from a TOML file; the keys are the flag names with '_' for
'-' (tick_ms = 50, data_dir = "data/node1"), and the members are a list:
  members = ["1=127.0.0.1:7001", "2=127.0.0.1:7002", "3=127.0.0.1:7003"]
A flag given on the command line overrides the file (a --member flag replaces the whole list).
The members (1..9, this node included) need distinct ids and addresses.

Example, node 1 of a three-node cluster on one machine:
  raftlockd --id 1 --cluster-id 1 --member 1=127.0.0.1:7001 --member 2=127.0.0.1:7002 \
    --member 3=127.0.0.1:7003 --client-listen 127.0.0.1:7101 --admin-listen 127.0.0.1:7201 \
    --data-dir data/node1
See docs/operations.md for ports, the data directory and recovery procedures.)";

void define_options(CLI::App& app, CommandLine& cl) {
    app.set_version_flag("--version", std::string(kVersion));
    app.get_formatter()->column_width(32);
    app.footer(std::string(kHelpFooter));
    app.add_option("--config", cl.config_path, "TOML file with settings; flags override it")
        ->type_name("FILE");
    cl.values.resize(fields().size());
    cl.repeated_values.resize(fields().size());
    for (size_t i = 0; i < fields().size(); ++i) {
        const Field& f = fields()[i];
        const std::string name = fmt::format("--{}", f.flag);
        CLI::Option* option = f.kind == Kind::kMembers
                                  ? app.add_option(name, cl.repeated_values[i], option_help(f))
                                  : app.add_option(name, cl.values[i], option_help(f));
        option->type_name(std::string(f.value_name))
            ->group(std::string(f.group))
            ->allow_extra_args(false);
        cl.options.push_back(option);
    }
}

// Applies the flags given on the command line over whatever the file set.
std::string apply_flags(const CommandLine& cl, ServerConfig& c, Namer& namer) {
    for (size_t i = 0; i < fields().size(); ++i) {
        const Field& f = fields()[i];
        if (cl.options[i]->count() == 0) {
            continue;
        }
        if (f.kind == Kind::kMembers) {
            c.members.clear();
        }
        namer.set_flag(f.flag);
        const std::vector<std::string> texts =
            f.kind == Kind::kMembers ? cl.repeated_values[i] : std::vector{cl.values[i]};
        for (const std::string& text : texts) {
            if (std::string problem = f.store(c, text); !problem.empty()) {
                return fmt::format("{}: {}", namer.value(f, text), problem);
            }
        }
    }
    return "";
}

}  // namespace

std::optional<Endpoint> parse_endpoint(std::string_view text) {
    std::string_view host;
    std::string_view port;
    if (text.starts_with('[')) {
        const size_t close = text.find(']');
        if (close == std::string_view::npos || text.substr(close + 1, 1) != ":") {
            return std::nullopt;
        }
        host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            return std::nullopt;
        }
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string_view::npos) {
            return std::nullopt;
        }
    }
    const bool host_ok = !host.empty() && host.find_first_of(" \t\n=[]") == std::string_view::npos;
    const std::optional<uint16_t> port_number = parse_integer<uint16_t>(port);
    if (!host_ok || !port_number || *port_number == 0) {
        return std::nullopt;
    }
    return Endpoint{std::string(host), *port_number};
}

std::string to_string(const Endpoint& endpoint) {
    if (endpoint.host.find(':') != std::string::npos) {
        return fmt::format("[{}]:{}", endpoint.host, endpoint.port);
    }
    return fmt::format("{}:{}", endpoint.host, endpoint.port);
}

std::string_view to_string(LogLevel level) {
    switch (level) {
        case LogLevel::kDebug:
            return "debug";
        case LogLevel::kInfo:
            return "info";
        case LogLevel::kWarn:
            return "warn";
        case LogLevel::kError:
            return "error";
    }
    RL_PANIC("unknown log level");
}

const Member& ServerConfig::self() const {
    for (const Member& m : members) {
        if (m.id == node_id) {
            return m;
        }
    }
    RL_PANIC("ServerConfig::self(): this node is not a member (config not validated)");
}

std::string validate(const ServerConfig& config) {
    return check_config(config, Namer{});
}

Result<ServerConfig, ConfigError> parse_config(int argc, const char* const* argv) {
    CLI::App app("raftlockd: one node of a raftlock cluster (a Raft-replicated lock service).",
                 "raftlockd");
    CommandLine cl;
    define_options(app, cl);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        return ConfigError{"", app.help()};
    } catch (const CLI::CallForAllHelp&) {
        return ConfigError{"", app.help()};
    } catch (const CLI::CallForVersion& e) {
        return ConfigError{"", std::string(e.what()) + "\n"};
    } catch (const CLI::ParseError& e) {
        return ConfigError{fmt::format("{} (raftlockd --help lists the flags)", e.what()), ""};
    }
    ServerConfig config;
    Namer namer;
    std::string problem;
    if (app.count("--config") > 0) {
        problem = read_toml_file(cl.config_path, config, namer);
    }
    if (problem.empty()) {
        problem = apply_flags(cl, config, namer);
    }
    if (problem.empty()) {
        problem = check_config(config, namer);
    }
    if (!problem.empty()) {
        return ConfigError{std::move(problem), ""};
    }
    return config;
}

}  // namespace raftlock::server
