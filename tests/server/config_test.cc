// raftlockd's configuration: flags, the TOML file, the override rule and every validation message.

#include "server/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <unistd.h>

namespace raftlock::server {
namespace {

// A command line as (flag, value) pairs, so a test can replace one flag of a valid set.
using Flags = std::vector<std::pair<std::string, std::string>>;

Flags base_flags() {
    return {
        {"--id", "1"},
        {"--cluster-id", "1"},
        {"--member", "1=127.0.0.1:7001"},
        {"--member", "2=127.0.0.1:7002"},
        {"--member", "3=127.0.0.1:7003"},
        {"--client-listen", "127.0.0.1:7101"},
        {"--admin-listen", "127.0.0.1:7201"},
        {"--data-dir", "data/node1"},
    };
}

// The base flags with every occurrence of `flag` replaced by `values` (none: the flag removed).
Flags with(Flags flags, const std::string& flag, const std::vector<std::string>& values) {
    std::erase_if(flags, [&](const auto& f) { return f.first == flag; });
    for (const std::string& v : values) {
        flags.emplace_back(flag, v);
    }
    return flags;
}

Flags with(const std::string& flag, const std::string& value) {
    return with(base_flags(), flag, {value});
}

std::vector<std::string> to_args(const Flags& flags) {
    std::vector<std::string> args;
    for (const auto& [flag, value] : flags) {
        args.push_back(flag);
        args.push_back(value);
    }
    return args;
}

Result<ServerConfig, ConfigError> parse(const std::vector<std::string>& args) {
    std::vector<const char*> argv = {"raftlockd"};
    for (const std::string& a : args) {
        argv.push_back(a.c_str());
    }
    return parse_config(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(const std::vector<std::string>& args) {
    const auto result = parse(args);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().help.empty());
    return result.error().message;
}

// A directory for TOML files, removed with everything in it at the end of the test.
class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "config_test.XXXXXX");
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path_ = pattern;
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string write(const std::string& name, const std::string& text) const {
        const std::string file = path_ + "/" + name;
        std::ofstream(file) << text;
        return file;
    }

private:
    std::string path_;
};

constexpr const char* kNodeToml = R"(id = 2
cluster_id = 7
members = ["1=127.0.0.1:7001", "2=127.0.0.1:7002", "3=127.0.0.1:7003"]
client_listen = "127.0.0.1:7102"
admin_listen = "127.0.0.1:7202"
data_dir = "data/node2"
tick_ms = 20
election_timeout_ms = 400
heartbeat_interval_ms = 60
log_level = "debug"
)";

TEST_CASE("the required flags alone give a valid config with every default", "[server][config]") {
    const auto result = parse(to_args(base_flags()));
    REQUIRE(result.ok());
    const ServerConfig& c = result.value();
    CHECK(c.node_id == 1);
    CHECK(c.cluster_id == 1);
    REQUIRE(c.members.size() == 3);
    CHECK(c.members[1] == Member{2, {"127.0.0.1", 7002}});
    CHECK(c.self() == Member{1, {"127.0.0.1", 7001}});
    CHECK(c.client_listen == Endpoint{"127.0.0.1", 7101});
    CHECK(c.admin_listen == Endpoint{"127.0.0.1", 7201});
    CHECK(c.data_dir == "data/node1");
    const ServerConfig defaults;
    CHECK(c.tick_ms == defaults.tick_ms);
    CHECK(c.election_timeout_ms == defaults.election_timeout_ms);
    CHECK(c.heartbeat_interval_ms == defaults.heartbeat_interval_ms);
    CHECK(c.session_timeout_ms_min == defaults.session_timeout_ms_min);
    CHECK(c.session_timeout_ms_max == defaults.session_timeout_ms_max);
    CHECK(c.request_timeout_ms == defaults.request_timeout_ms);
    CHECK(c.snapshot_every_entries == defaults.snapshot_every_entries);
    CHECK(c.compaction_lag_entries == defaults.compaction_lag_entries);
    CHECK(c.client_frame_bytes_max == defaults.client_frame_bytes_max);
    CHECK(c.pending_requests_per_connection_max == defaults.pending_requests_per_connection_max);
    CHECK(c.watches_per_connection_max == defaults.watches_per_connection_max);
    CHECK(c.connections_max == defaults.connections_max);
    CHECK(c.log_level == LogLevel::kInfo);
    CHECK(validate(c).empty());
}

TEST_CASE("every optional flag sets its field", "[server][config]") {
    Flags flags = base_flags();
    const Flags optional = {
        {"--tick-ms", "10"},
        {"--election-timeout-ms", "300"},
        {"--heartbeat-interval-ms", "90"},
        {"--session-timeout-min-ms", "500"},
        {"--session-timeout-max-ms", "90000"},
        {"--request-timeout-ms", "2500"},
        {"--snapshot-every-entries", "5000"},
        {"--compaction-lag-entries", "0"},
        {"--max-frame-bytes", "65536"},
        {"--max-pending-requests", "7"},
        {"--max-watches", "10000"},
        {"--max-connections", "3"},
        {"--max-connections-per-address", "2"},
        {"--client-output-buffer-bytes-max", "8388608"},
        {"--client-message-deadline-ms", "100"},
        {"--log-level", "warn"},
        {"--zk-super-digest", "super:xQJmxLMiHGwaqBvst5y6rkB6HQs="},
    };
    flags.insert(flags.end(), optional.begin(), optional.end());
    const auto result = parse(to_args(flags));
    REQUIRE(result.ok());
    const ServerConfig& c = result.value();
    CHECK(c.tick_ms == 10);
    CHECK(c.election_timeout_ms == 300);
    CHECK(c.heartbeat_interval_ms == 90);
    CHECK(c.session_timeout_ms_min == 500);
    CHECK(c.session_timeout_ms_max == 90000);
    CHECK(c.request_timeout_ms == 2500);
    CHECK(c.snapshot_every_entries == 5000);
    CHECK(c.compaction_lag_entries == 0);
    CHECK(c.client_frame_bytes_max == 65536);
    CHECK(c.pending_requests_per_connection_max == 7);
    CHECK(c.watches_per_connection_max == 10000);
    CHECK(c.connections_max == 3);
    CHECK(c.connections_per_address_max == 2);
    CHECK(c.client_output_buffer_bytes_max == 8388608);
    CHECK(c.client_message_deadline_ms == 100);
    CHECK(c.log_level == LogLevel::kWarn);
    CHECK(c.zk_super_digest == "super:xQJmxLMiHGwaqBvst5y6rkB6HQs=");
}

TEST_CASE("valid flag sets in other spellings parse", "[server][config]") {
    struct Case {
        const char* name;
        std::vector<std::string> args;
        Member self;
    };
    const Case cases[] = {
        {"--flag=value form",
         {"--id=2", "--cluster-id=9", "--member=1=a:1", "--member=2=b:2", "--client-listen=b:3",
          "--admin-listen=b:4", "--data-dir=/var/lib/raftlock"},
         {2, {"b", 2}}},
        {"a single-member cluster",
         {"--id", "5", "--cluster-id", "1", "--member", "5=localhost:7005", "--client-listen",
          "localhost:7105", "--admin-listen", "localhost:7205", "--data-dir", "d"},
         {5, {"localhost", 7005}}},
        {"IPv6 addresses in brackets",
         {"--id", "1", "--cluster-id", "1", "--member", "1=[::1]:7001", "--member",
          "2=[fe80::2]:7001", "--client-listen", "[::1]:7101", "--admin-listen", "[::]:7201",
          "--data-dir", "d"},
         {1, {"::1", 7001}}},
        {"nine members, large ids",
         {"--id",
          "18446744073709551615",
          "--cluster-id",
          "18446744073709551615",
          "--member",
          "1=h:1",
          "--member",
          "2=h:2",
          "--member",
          "3=h:3",
          "--member",
          "4=h:4",
          "--member",
          "5=h:5",
          "--member",
          "6=h:6",
          "--member",
          "7=h:7",
          "--member",
          "8=h:8",
          "--member",
          "18446744073709551615=h:65535",
          "--client-listen",
          "h:7101",
          "--admin-listen",
          "h:7201",
          "--data-dir",
          "d"},
         {18446744073709551615u, {"h", 65535}}},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const auto result = parse(c.args);
        if (!result.ok()) {
            FAIL(result.error().message);
        }
        CHECK(result.value().self() == c.self);
    }
}

TEST_CASE("--help lists every flag with its default, --version prints the version",
          "[server][config]") {
    for (const char* flag : {"--help", "-h"}) {
        const auto result = parse({flag});
        REQUIRE_FALSE(result.ok());
        CHECK(result.error().message.empty());
        const std::string& help = result.error().help;
        for (const char* name : {"--config FILE",
                                 "--id ID",
                                 "--cluster-id ID",
                                 "--member ID=HOST:PORT",
                                 "--client-listen HOST:PORT",
                                 "--admin-listen HOST:PORT",
                                 "--data-dir DIR",
                                 "--tick-ms MS",
                                 "--election-timeout-ms MS",
                                 "--heartbeat-interval-ms MS",
                                 "--session-timeout-min-ms MS",
                                 "--session-timeout-max-ms MS",
                                 "--request-timeout-ms MS",
                                 "--snapshot-every-entries N",
                                 "--compaction-lag-entries N",
                                 "--max-writes-in-flight N",
                                 "--max-frame-bytes BYTES",
                                 "--max-pending-requests N",
                                 "--max-watches N",
                                 "--max-connections N",
                                 "--max-connections-per-address N",
                                 "--client-output-buffer-bytes-max BYTES",
                                 "--client-message-deadline-ms MS",
                                 "--log-level LEVEL",
                                 "--version"}) {
            INFO(name);
            CHECK(help.find(name) != std::string::npos);
        }
        CHECK(help.find("one Raft tick (1..1000, default 50)") != std::string::npos);
        CHECK(help.find("(default info)") != std::string::npos);
        CHECK(help.find("members = [\"1=127.0.0.1:7001\"") != std::string::npos);
    }
    const auto version = parse({"--version"});
    REQUIRE_FALSE(version.ok());
    CHECK(version.error().message.empty());
    CHECK(version.error().help.starts_with("raftlockd "));
}

TEST_CASE("a missing required flag is named with an example", "[server][config]") {
    struct Case {
        Flags flags;
        const char* message;
    };
    const Flags base = base_flags();
    const Case cases[] = {
        {with(base, "--id", {}),
         "missing --id: expected a value, e.g. --id 1 (or id = 1 in the --config file)"},
        {with(base, "--cluster-id", {}),
         "missing --cluster-id: expected a value, e.g. --cluster-id 1 (or cluster_id = 1 in the "
         "--config file)"},
        {with(base, "--member", {}),
         "missing --member: expected a value, e.g. --member 1=127.0.0.1:7001 (or members = "
         "[\"1=127.0.0.1:7001\", ...] in the --config file)"},
        {with(base, "--client-listen", {}),
         "missing --client-listen: expected a value, e.g. --client-listen 127.0.0.1:7101 (or "
         "client_listen = \"127.0.0.1:7101\" in the --config file)"},
        {with(base, "--admin-listen", {}),
         "missing --admin-listen: expected a value, e.g. --admin-listen 127.0.0.1:7201 (or "
         "admin_listen = \"127.0.0.1:7201\" in the --config file)"},
        {with(base, "--data-dir", {}),
         "missing --data-dir: expected a value, e.g. --data-dir data/node1 (or data_dir = "
         "\"data/node1\" in the --config file)"},
    };
    for (const Case& c : cases) {
        INFO(c.message);
        CHECK(error_of(to_args(c.flags)) == c.message);
    }
}

TEST_CASE("every bad flag value is named with what was expected", "[server][config]") {
    struct Case {
        Flags flags;
        const char* message;
    };
    const Case cases[] = {
        {with("--id", "0"), "--id 0: expected an integer >= 1"},
        {with("--id", "one"), "--id one: expected an integer >= 1"},
        {with("--id", "18446744073709551616"),
         "--id 18446744073709551616: expected an integer >= 1"},
        {with("--cluster-id", "-1"), "--cluster-id -1: expected an integer >= 1"},
        {with("--member", "2=127.0.0.1"),
         "--member 2=127.0.0.1: expected ID=HOST:PORT (e.g. 2=127.0.0.1:7002)"},
        {with("--member", "1=127.0.0.1:0"),
         "--member 1=127.0.0.1:0: expected ID=HOST:PORT (e.g. 1=127.0.0.1:7001)"},
        {with("--member", "1=127.0.0.1:65536"),
         "--member 1=127.0.0.1:65536: expected ID=HOST:PORT (e.g. 1=127.0.0.1:7001)"},
        {with("--member", "0=127.0.0.1:7000"),
         "--member 0=127.0.0.1:7000: expected ID=HOST:PORT (e.g. 2=127.0.0.1:7002)"},
        {with("--member", "127.0.0.1:7001"),
         "--member 127.0.0.1:7001: expected ID=HOST:PORT (e.g. 2=127.0.0.1:7002)"},
        {with("--member", "1=::1:7001"),
         "--member 1=::1:7001: expected ID=HOST:PORT (e.g. 1=127.0.0.1:7001)"},
        {with("--member", "1=:7001"),
         "--member 1=:7001: expected ID=HOST:PORT (e.g. 1=127.0.0.1:7001)"},
        {with("--client-listen", "127.0.0.1"),
         "--client-listen 127.0.0.1: expected HOST:PORT with a port in 1..65535 (e.g. "
         "127.0.0.1:7101)"},
        {with("--admin-listen", "[::1]7201"),
         "--admin-listen [::1]7201: expected HOST:PORT with a port in 1..65535 (e.g. "
         "127.0.0.1:7101)"},
        {with("--data-dir", ""), "--data-dir \"\": expected a directory path"},
        {with("--tick-ms", "0"), "--tick-ms 0: expected an integer in 1..1000"},
        {with("--tick-ms", "1001"), "--tick-ms 1001: expected an integer in 1..1000"},
        {with("--tick-ms", "5ms"), "--tick-ms 5ms: expected an integer in 1..1000"},
        {with("--election-timeout-ms", "0"),
         "--election-timeout-ms 0: expected an integer in 1..4294967295"},
        {with("--heartbeat-interval-ms", "4294967296"),
         "--heartbeat-interval-ms 4294967296: expected an integer in 1..4294967295"},
        {with("--session-timeout-min-ms", "99"),
         "--session-timeout-min-ms 99: expected an integer >= 100"},
        {with("--session-timeout-max-ms", "-5"),
         "--session-timeout-max-ms -5: expected an integer >= 100"},
        {with("--request-timeout-ms", "99"),
         "--request-timeout-ms 99: expected an integer in 100..4294967295"},
        {with("--snapshot-every-entries", "99"),
         "--snapshot-every-entries 99: expected an integer >= 100"},
        {with("--compaction-lag-entries", "x"),
         "--compaction-lag-entries x: expected an integer >= 0"},
        {with("--max-frame-bytes", "65535"),
         "--max-frame-bytes 65535: expected an integer in 65536..4294967295"},
        {with("--max-pending-requests", "0"),
         "--max-pending-requests 0: expected an integer in 1..4294967295"},
        {with("--max-watches", "10001"), "--max-watches 10001: expected an integer in 1..10000"},
        {with("--max-connections", "0"),
         "--max-connections 0: expected an integer in 1..4294967295"},
        {with("--max-connections-per-address", "0"),
         "--max-connections-per-address 0: expected an integer in 1..4294967295"},
        {with("--client-output-buffer-bytes-max", "8388607"),
         "--client-output-buffer-bytes-max 8388607: expected an integer >= 8388608"},
        {with("--client-message-deadline-ms", "99"),
         "--client-message-deadline-ms 99: expected an integer in 100..4294967295"},
        {with("--log-level", "INFO"), "--log-level INFO: expected debug, info, warn or error"},
    };
    for (const Case& c : cases) {
        INFO(c.message);
        CHECK(error_of(to_args(c.flags)) == c.message);
    }
}

TEST_CASE("every cross-field rule is checked and named", "[server][config]") {
    struct Case {
        Flags flags;
        const char* message;
    };
    const Flags base = base_flags();
    const std::vector<std::string> ten = {"1=h:1", "2=h:2", "3=h:3", "4=h:4", "5=h:5",
                                          "6=h:6", "7=h:7", "8=h:8", "9=h:9", "10=h:10"};
    const Case cases[] = {
        {with(base, "--member", ten), "--member: 10 members given: expected 1..9 members"},
        {with("--id", "4"),
         "--id 4: not among the member ids (1, 2, 3): expected this node to be one of the --member "
         "entries"},
        {with(base, "--member", {"1=127.0.0.1:7001", "2=127.0.0.1:7002", "2=127.0.0.1:7009"}),
         "--member 2=127.0.0.1:7009: id 2 is already used by 2=127.0.0.1:7002: expected distinct "
         "ids"},
        {with(base, "--member", {"1=127.0.0.1:7001", "2=127.0.0.1:7002", "3=127.0.0.1:7001"}),
         "--member 3=127.0.0.1:7001: address 127.0.0.1:7001 is already member 1's: expected "
         "distinct addresses"},
        {with("--client-listen", "127.0.0.1:7002"),
         "--client-listen 127.0.0.1:7002: member 2's Raft address: expected an address of its "
         "own"},
        {with("--admin-listen", "127.0.0.1:7001"),
         "--admin-listen 127.0.0.1:7001: member 1's Raft address: expected an address of its own"},
        {with("--admin-listen", "127.0.0.1:7101"),
         "--admin-listen 127.0.0.1:7101: same as --client-listen: expected an address of its own"},
        {with("--redis-listen", "127.0.0.1:7003"),
         "--redis-listen 127.0.0.1:7003: member 3's Raft address: expected an address of its own"},
        {with("--redis-listen", "127.0.0.1:7101"),
         "--redis-listen 127.0.0.1:7101: same as the client or admin port: expected an address of "
         "its own"},
        {with("--redis-listen", "7301"),
         "--redis-listen 7301: expected HOST:PORT with a port in 1..65535 (e.g. 127.0.0.1:7101)"},
        {with("--zk-super-digest", "super"),
         "--zk-super-digest super: expected USER:HASH, the digest of `USER:PASSWORD` as zkCli and "
         "ZooKeeper's DigestAuthenticationProvider print it"},
        {with("--tls-cert-file", "node.crt"), "--tls-cert-file and --tls-key-file come together"},
        {with("--tls-ca-file", "ca.crt"),
         "--tls-ca-file and --tls-client-auth need --tls-cert-file"},
        {with(with(with("--tls-cert-file", "node.crt"), "--tls-key-file", {"node.key"}),
              "--tls-client-auth", {"require"}),
         "--tls-client-auth require needs --tls-ca-file"},
        {with(with(with("--tls-cert-file", "node.crt"), "--tls-key-file", {"node.key"}),
              "--tls-client-cert-user", {"on"}),
         "--tls-client-cert-user on needs --tls-client-auth require"},
        {with(with("--peer-tls-cert-file", "node.crt"), "--peer-tls-key-file", {"node.key"}),
         "--peer-tls-cert-file, --peer-tls-key-file and --peer-tls-ca-file come together"},
        {with("--election-timeout-ms", "1030"),
         "--election-timeout-ms 1030: expected a multiple of --tick-ms (50)"},
        {with("--election-timeout-ms", "200"),
         "--election-timeout-ms 200: expected at least 5 ticks (>= 250 with --tick-ms 50)"},
        {with("--heartbeat-interval-ms", "49"),
         "--heartbeat-interval-ms 49: expected at least one tick (>= 50 with --tick-ms 50)"},
        {with("--heartbeat-interval-ms", "334"),
         "--heartbeat-interval-ms 334: expected less than a third of --election-timeout-ms 1000 "
         "(at most 333)"},
        {with(with("--election-timeout-ms", "300"), "--heartbeat-interval-ms", {"100"}),
         "--heartbeat-interval-ms 100: expected less than a third of --election-timeout-ms 300 "
         "(at most 99)"},
        {with("--session-timeout-max-ms", "999"),
         "--session-timeout-max-ms 999: expected at least --session-timeout-min-ms (1000)"},
        {with("--pg-listen", "127.0.0.1:7002"),
         "--pg-listen 127.0.0.1:7002: member 2's Raft address: expected an address of its own"},
        {with("--pg-listen", "127.0.0.1:7201"),
         "--pg-listen 127.0.0.1:7201: same as the client or admin port: expected an address of "
         "its own"},
        {with(with("--pg-listen", "127.0.0.1:7401"), "--redis-listen", {"127.0.0.1:7401"}),
         "--pg-listen 127.0.0.1:7401: same as --redis-listen: expected an address of its own"},
        {with(with("--zk-listen", "127.0.0.1:7401"), "--pg-listen", {"127.0.0.1:7401"}),
         "--zk-listen 127.0.0.1:7401: same as --pg-listen: expected an address of its own"},
        {with("--zk-listen", "127.0.0.1:7101"),
         "--zk-listen 127.0.0.1:7101: same as the client or admin port: expected an address of "
         "its own"},
        {with(with("--pg-listen", "127.0.0.1:7401"), "--session-timeout-max-ms", {"5000"}),
         "--pg-session-timeout-ms 10000: expected within --session-timeout-min-ms 1000 and "
         "--session-timeout-max-ms 5000"},
    };
    for (const Case& c : cases) {
        INFO(c.message);
        CHECK(error_of(to_args(c.flags)) == c.message);
    }
    // The boundaries themselves are valid.
    CHECK(parse(to_args(with("--heartbeat-interval-ms", "333"))).ok());
    CHECK(parse(to_args(
                    with(with("--election-timeout-ms", "250"), "--heartbeat-interval-ms", {"83"})))
              .ok());
    CHECK(parse(to_args(with("--session-timeout-max-ms", "1000"))).ok());
}

TEST_CASE("command-line syntax errors name the flag", "[server][config]") {
    struct Case {
        std::vector<std::string> args;
        const char* message;
    };
    const Case cases[] = {
        {{"--bogus"},
         "The following argument was not expected: --bogus (raftlockd --help lists the flags)"},
        {{"stray"},
         "The following argument was not expected: stray (raftlockd --help lists the flags)"},
        {{"--tick-ms"}, "--tick-ms: 1 required MS missing (raftlockd --help lists the flags)"},
        {{"--id", "1", "--id", "2"},
         "--id: At Most 1 required but received 2 (raftlockd --help lists the flags)"},
    };
    for (const Case& c : cases) {
        INFO(c.message);
        CHECK(error_of(c.args) == c.message);
    }
}

TEST_CASE("a TOML file gives every setting and flags override it", "[server][config]") {
    TempDir dir;
    const std::string file = dir.write("node2.toml", kNodeToml);

    const auto from_file = parse({"--config", file});
    REQUIRE(from_file.ok());
    const ServerConfig& c = from_file.value();
    CHECK(c.node_id == 2);
    CHECK(c.cluster_id == 7);
    CHECK(c.self() == Member{2, {"127.0.0.1", 7002}});
    CHECK(c.members.size() == 3);
    CHECK(c.client_listen == Endpoint{"127.0.0.1", 7102});
    CHECK(c.admin_listen == Endpoint{"127.0.0.1", 7202});
    CHECK(c.data_dir == "data/node2");
    CHECK(c.tick_ms == 20);
    CHECK(c.election_timeout_ms == 400);
    CHECK(c.heartbeat_interval_ms == 60);
    CHECK(c.log_level == LogLevel::kDebug);
    CHECK(c.request_timeout_ms == ServerConfig{}.request_timeout_ms);

    // A --member flag replaces the file's whole list; other keys stay.
    const auto overridden = parse({"--config", file, "--tick-ms", "10", "--member",
                                   "2=127.0.0.1:7002", "--data-dir", "elsewhere"});
    REQUIRE(overridden.ok());
    CHECK(overridden->tick_ms == 10);
    CHECK(overridden->members == std::vector<Member>{{2, {"127.0.0.1", 7002}}});
    CHECK(overridden->data_dir == "elsewhere");
    CHECK(overridden->election_timeout_ms == 400);
    CHECK(overridden->cluster_id == 7);
}

TEST_CASE("a rule broken by a file value names the key and the file", "[server][config]") {
    TempDir dir;
    const std::string file = dir.write("node2.toml", kNodeToml);
    // tick 30 from the command line does not divide the file's election timeout of 400.
    CHECK(error_of({"--config", file, "--tick-ms", "30"}) ==
          "election_timeout_ms = 400 in " + file + ": expected a multiple of --tick-ms (30)");
    // A flag's value is named as a flag even when the rule involves the file.
    CHECK(error_of({"--config", file, "--heartbeat-interval-ms", "200"}) ==
          "--heartbeat-interval-ms 200: expected less than a third of --election-timeout-ms 400 "
          "(at most 133)");
    const std::string lonely = dir.write("lonely.toml", "id = 9\nmembers = [\"1=h:1\"]\n");
    CHECK(error_of({"--config", lonely, "--cluster-id", "1", "--client-listen", "h:2",
                    "--admin-listen", "h:3", "--data-dir", "d"}) ==
          "id = 9 in " + lonely +
              ": not among the member ids (1): expected this node to be one of the --member "
              "entries");
    const std::string ten =
        dir.write("ten.toml",
                  "members = [\"1=h:1\", \"2=h:2\", \"3=h:3\", \"4=h:4\", \"5=h:5\", \"6=h:6\", "
                  "\"7=h:7\", \"8=h:8\", \"9=h:9\", \"10=h:10\"]\n");
    CHECK(error_of(to_args(with(with(base_flags(), "--member", {}), "--config", {ten}))) ==
          "members in " + ten + ": 10 members given: expected 1..9 members");
    const std::string twins = dir.write("twins.toml", "members = [\"1=h:1\", \"1=h:2\"]\n");
    CHECK(error_of(to_args(with(with(base_flags(), "--member", {}), "--config", {twins}))) ==
          "members entry \"1=h:2\" in " + twins +
              ": id 1 is already used by 1=h:1: expected distinct ids");
    const std::string empty_dir = dir.write("empty.toml", "data_dir = \"\"\n");
    CHECK(error_of({"--config", empty_dir}) ==
          "data_dir = \"\" in " + empty_dir + ": expected a directory path");
}

TEST_CASE("every bad TOML file is named with the key, the value and what was expected",
          "[server][config]") {
    TempDir dir;
    struct Case {
        const char* toml;
        const char* message;  // after "<file>" where {} stands for the file
    };
    const Case cases[] = {
        {"tick_ms = \"50\"\n", "tick_ms = \"50\" in {}: expected an integer in 1..1000"},
        {"tick_ms = 0\n", "tick_ms = 0 in {}: expected an integer in 1..1000"},
        {"tick_ms = 2.5\n", "tick_ms = 2.5 in {}: expected an integer in 1..1000"},
        {"session_timeout_min_ms = -5\n",
         "session_timeout_min_ms = -5 in {}: expected an integer >= 100"},
        {"tick-ms = 50\n", "unknown key tick-ms in {}: expected tick_ms"},
        {"member = [\"1=h:1\"]\n", "unknown key member in {}: expected members"},
        {"colour = 1\n",
         "unknown key colour in {}: expected one of id, cluster_id, members, "
         "initial_cluster_state, client_listen, "
         "admin_listen, console_actions, "
         "redis_listen, redis_password, pg_listen, pg_password, zk_listen, zk_reads, "
         "zk_super_digest, data_dir, tls_cert_file, tls_key_file, tls_ca_file, tls_client_auth, "
         "tls_client_cert_user, peer_tls_cert_file, peer_tls_key_file, peer_tls_ca_file, "
         "root_password_file, tick_ms, "
         "election_timeout_ms, "
         "heartbeat_interval_ms, "
         "session_timeout_min_ms, session_timeout_max_ms, request_timeout_ms, "
         "pg_session_timeout_ms, snapshot_every_entries, compaction_lag_entries, "
         "max_writes_in_flight, follower_writes_on_loop, storage_engine, journal_segment_bytes, "
         "max_frame_bytes, "
         "max_pending_requests, "
         "max_watches, max_connections, max_connections_per_address, "
         "client_output_buffer_bytes_max, client_message_deadline_ms, max_requests_per_second, "
         "login_deadline_ms, script_instructions_max, "
         "sql_rows_max, "
         "log_level"},
        {"client_listen = 7101\n",
         "client_listen = 7101 in {}: expected a string: client_listen = \"...\""},
        {"log_level = \"loud\"\n",
         "log_level = \"loud\" in {}: expected debug, info, warn or error"},
        {"members = \"1=h:1\"\n",
         "members = \"1=h:1\" in {}: expected a list such as [\"1=127.0.0.1:7001\", "
         "\"2=127.0.0.1:7002\"]"},
        {"members = [\"1=h:1\", 2]\n", "members entry 2 in {}: expected a string ID=HOST:PORT"},
        {"members = [\"3=h\"]\n",
         "members entry \"3=h\" in {}: expected ID=HOST:PORT (e.g. 3=127.0.0.1:7003)"},
        {"tick_ms = \n",
         "--config {}: line 1, column 11: Error while parsing key-value pair: expected value, saw "
         "'\\n': expected a valid TOML file"},
    };
    for (const Case& c : cases) {
        const std::string file = dir.write("bad.toml", c.toml);
        std::string want = c.message;
        want.replace(want.find("{}"), 2, file);
        INFO(c.toml);
        CHECK(error_of({"--config", file}) == want);
    }
    const std::string missing = dir.write("x", "") + ".missing";
    CHECK(error_of({"--config", missing}) ==
          "--config " + missing +
              ": cannot read the file (No such file or directory): expected a readable TOML file");
}

TEST_CASE("--console-actions turns the web console's actions on, from a flag or the file",
          "[server][config]") {
    const auto plain = parse(to_args(base_flags()));
    REQUIRE(plain.ok());
    CHECK_FALSE(plain->console_actions);  // read-only unless asked for
    const auto on = parse(to_args(with("--console-actions", "on")));
    REQUIRE(on.ok());
    CHECK(on->console_actions);
    CHECK(error_of(to_args(with("--console-actions", "yes"))) ==
          "--console-actions yes: expected off or on");
    TempDir dir;
    const std::string file =
        dir.write("node2.toml", std::string(kNodeToml) + "console_actions = \"on\"\n");
    const auto from_file = parse({"--config", file});
    REQUIRE(from_file.ok());
    CHECK(from_file->console_actions);
    const auto overridden = parse({"--config", file, "--console-actions", "off"});
    REQUIRE(overridden.ok());
    CHECK_FALSE(overridden->console_actions);
}

TEST_CASE("validate() checks a config built in code", "[server][config]") {
    ServerConfig c;
    CHECK(validate(c) ==
          "missing --id: expected a value, e.g. --id 1 (or id = 1 in the --config file)");
    c.node_id = 1;
    c.cluster_id = 1;
    c.members = {{1, {"127.0.0.1", 7001}}};
    c.client_listen = {"127.0.0.1", 7101};
    c.admin_listen = {"127.0.0.1", 7201};
    c.data_dir = "d";
    CHECK(validate(c).empty());
    c.session_timeout_ms_min = -1;
    CHECK(validate(c) == "--session-timeout-min-ms -1: expected an integer >= 100");
    c.session_timeout_ms_min = 1000;
    c.members.push_back({2, {"", 7002}});
    CHECK(validate(c) == "--member 2=:7002: expected ID=HOST:PORT (e.g. 2=127.0.0.1:7002)");
    c.members.back() = {2, {"::1", 7002}};
    CHECK(validate(c).empty());
    c.admin_listen.port = 0;
    CHECK(validate(c) == "--admin-listen 127.0.0.1:0: expected HOST:PORT with a port in 1..65535");
}

TEST_CASE("log levels have stable names", "[server][config]") {
    CHECK(to_string(LogLevel::kDebug) == "debug");
    CHECK(to_string(LogLevel::kInfo) == "info");
    CHECK(to_string(LogLevel::kWarn) == "warn");
    CHECK(to_string(LogLevel::kError) == "error");
}

}  // namespace
}  // namespace raftlock::server
