// Writes a few valid inputs for each fuzz target, made with the real encoders, so the fuzzers
// start from the interesting part of the input space instead of rediscovering the framing:
//
//   fuzz_seeds <dir>   writes <dir>/frame_request/*, <dir>/peer_frame/*, <dir>/command/*,
//                      <dir>/resp/*, <dir>/keyspace/*, <dir>/sql_parser/*, <dir>/sql_engine/*,
//                      <dir>/pg_codec/*, <dir>/zk_codec/*, <dir>/scram/*

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/scram.h"
#include "net/message_frame.h"
#include "net/pg_codec.h"
#include "net/raft_codec.h"
#include "net/resp_codec.h"
#include "net/zk_codec.h"
#include "proto/client.pb.h"
#include "proto/peer.pb.h"
#include "statemachine/codec.h"
#include "statemachine/sql/parser.h"

namespace {

namespace fs = std::filesystem;
using namespace raftlock;

void write_seeds(const fs::path& dir, const std::vector<std::string>& seeds) {
    fs::create_directories(dir);
    for (size_t i = 0; i < seeds.size(); ++i) {
        std::ofstream out(dir / fmt::format("seed-{}", i), std::ios::binary);
        out << seeds[i];
    }
}

std::vector<std::string> request_seeds() {
    std::vector<proto::Request> requests(4);
    requests[0].set_request_id(1);
    requests[0].mutable_open_session()->set_timeout_ms(10000);
    requests[1].set_request_id(2);
    requests[1].set_session_id(5);
    requests[1].set_seq(1);
    requests[1].mutable_create()->set_path("/a");
    requests[1].mutable_create()->set_data("data");
    requests[2].set_request_id(3);
    requests[2].mutable_acquire()->set_name("lock");
    requests[2].mutable_acquire()->set_wait_ms(100);
    requests[2].mutable_fence()->set_lock("lock");
    requests[2].mutable_fence()->set_token(9);
    auto* op = requests[3].mutable_multi()->add_ops();
    op->mutable_check()->set_path("/a");
    // Each seed: the split byte, then a stream of frames (one, then all four).
    std::string all(1, '\x07');
    std::vector<std::string> seeds;
    for (const proto::Request& r : requests) {
        std::string frame;
        net::encode_message_frame(r, frame);
        seeds.push_back(std::string(1, '\x3f') + frame);
        all += frame;
    }
    seeds.push_back(all);
    return seeds;
}

std::vector<std::string> peer_seeds() {
    raft::Message append;
    append.type = raft::MessageType::kAppend;
    append.from = 1;
    append.to = 2;
    append.term = 3;
    append.log_term = 2;
    append.index = 17;
    append.commit = 16;
    append.entries = {raft::Entry{3, 18, raft::EntryType::kNormal, "x"},
                      raft::Entry{3, 19, raft::EntryType::kConfChange, "cc"}};
    raft::Message snapshot;
    snapshot.type = raft::MessageType::kSnapshot;
    // With members' addresses: a map field, whose serialization order is unspecified (a fuzz
    // crash of the round-trip check until it compared deterministic serializations).
    snapshot.snapshot_meta = raft::SnapshotMetadata{
        10, 2,
        raft::ConfState{{1, 2, 3}, {4}, {{1, "10.0.0.1:7001"}, {2, "h2:7001"}, {4, "[::1]:7004"}}}};
    snapshot.snapshot_chunk = "chunk";
    snapshot.snapshot_size_bytes = 100;
    std::vector<std::string> seeds;
    for (const raft::Message& m : {append, snapshot}) {
        proto::PeerFrame frame;
        net::to_proto(m, *frame.mutable_raft());
        seeds.push_back(frame.SerializeAsString());
    }
    proto::PeerFrame hello;
    hello.mutable_hello()->set_cluster_id(7);
    seeds.push_back(hello.SerializeAsString());
    return seeds;
}

std::vector<std::string> command_seeds() {
    using namespace raftlock::statemachine;
    std::vector<Command> commands(4);
    commands[0].op = OpenSession{10000};
    commands[1].client_id = 5;
    commands[1].seq = 1;
    commands[1].op = Create{"/a", "data", NodeKind::kPersistent, 0};
    commands[2].client_id = 5;
    commands[2].seq = 2;
    commands[2].fence = Fence{"lock", 3};
    commands[2].op = Acquire{"lock", "tag", LockMode::kExclusive, 1, 100, 0};
    commands[3].client_id = 5;
    commands[3].seq = 3;
    commands[3].op = Multi{{Check{"/a", -1}, SetData{"/a", "d", 2}}};
    std::vector<std::string> seeds;
    for (const Command& c : commands) {
        auto bytes = encode_command(c);
        if (!bytes.ok()) {
            fmt::print(stderr, "fuzz_seeds: a seed command does not encode: {}\n", to_string(c));
            std::exit(1);
        }
        seeds.push_back(*bytes);
    }
    return seeds;
}

// Pipelines as Redis clients send them: multibulk commands (an array of bulks, from the real
// encoder), inline commands with sdssplitargs's quoting, and a few replies for the reply parser.
// The first byte of each seed picks the fuzz target's limits (even: Redis's defaults).
std::vector<std::string> resp_seeds() {
    using raftlock::statemachine::redis::Value;
    const auto request = [](std::vector<std::string> argv) {
        std::vector<Value> items;
        for (std::string& arg : argv) {
            items.push_back(Value::bulk(std::move(arg)));
        }
        std::string bytes;
        net::encode_resp(Value::array(std::move(items)), 2, bytes);
        return bytes;
    };
    const std::string pipeline = request({"SET", "lock:a", "token-1", "NX", "PX", "30000"}) +
                                 request({"GET", "lock:a"}) + request({"MULTI"}) +
                                 request({"INCR", "fence"}) + request({"EXEC"}) +
                                 request({"SET", "bin", std::string("a\r\nb\0c", 6)});
    const std::string eval =
        request({"EVAL",
                 "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
                 "else return 0 end",
                 "1", "lock:a", "token-1"}) +
        request({"HELLO", "3"}) + "*0\r\n";
    const std::string inline_commands =
        "PING\r\nSET k \"hello world\" 'it\\'s'\r\nECHO \"\\x41\\n\\t\\\"\"\n  \r\nGET k\n";
    const Value reply = Value::array(
        {Value::ok(), Value::integer_of(-7), Value::null(), Value::bulk("v\r\n"),
         Value::error("ERR syntax error"), Value::map({Value::bulk("proto"), Value::integer_of(3)}),
         Value::push({Value::bulk("message"), Value::bulk("hi")}), Value::null_array()});
    std::string replies2;
    std::string replies3;
    net::encode_resp(reply, 2, replies2);
    net::encode_resp(reply, 3, replies3);
    replies3 +=
        "#t\r\n,3.5\r\n(12345678901234567890\r\n=8\r\ntxt:abcd\r\n~1\r\n+x\r\n"
        "|1\r\n+a\r\n+b\r\n!3\r\nERR\r\n";
    return {
        std::string(1, '\x00') + pipeline,
        std::string(1, '\x2b') + pipeline + inline_commands + eval,
        std::string(1, '\x10') + eval,
        std::string(1, '\x06') + inline_commands,
        std::string(1, '\x07') + inline_commands + pipeline,
        std::string(1, '\x00') + replies2,
        std::string(1, '\x01') + replies3,
    };
}

// Pipelines for the keyspace target (no leading limits byte): the RESP seeds' commands, and one
// that touches every type, TTLs and scripts.
std::vector<std::string> keyspace_seeds() {
    std::vector<std::string> seeds;
    for (const std::string& seed : resp_seeds()) {
        seeds.push_back(seed.substr(1));
    }
    seeds.push_back(
        "SET k v PX 100\r\nHSET h a 1 b 2\r\nHINCRBY h a 5\r\nEXPIRE h 1 NX\r\nINCR n\r\n"
        "SCAN 0 COUNT 2\r\nDELEX k IFEQ v\r\nSCRIPT LOAD \"return redis.call('incr', KEYS[1])\"\r\n"
        "EVAL \"for i = 1, 3 do redis.call('set', KEYS[1] .. i, ARGV[1]) end return "
        "redis.call('keys', "
        "'*')\" 1 key val\r\nKEYS *\r\nTTL k\r\nFLUSHDB\r\n");
    // Lists, sets and sorted sets (issue 22), with a script over a sorted set.
    seeds.push_back(
        "RPUSH l a b c a\r\nLPOP l 2\r\nLREM l -1 a\r\nLSET l 0 x\r\nLTRIM l 0 -2\r\n"
        "LRANGE l 0 -1\r\nSADD s a b\r\nSREM s a\r\nSMEMBERS s\r\nZADD z GT CH 1 a 2.5 b\r\n"
        "ZINCRBY z inf a\r\nZRANGE z (1 +inf BYSCORE REV LIMIT 0 1 WITHSCORES\r\n"
        "ZREMRANGEBYSCORE z -inf (2\r\nEVAL \"redis.call('zadd', KEYS[1], 1, 'm') return "
        "redis.call('zrank', KEYS[1], 'm')\" 1 z\r\nSCAN 0 TYPE zset\r\nPEXPIRE z 5\r\n");
    // PUBLISH, alone and from a script that goes on writing after it (format 7).
    seeds.push_back(
        "PUBLISH c m\r\nEVAL \"redis.call('publish', KEYS[1], ARGV[1]) redis.call('set', "
        "KEYS[1], ARGV[1]) return redis.call('publish', 'x', ARGV[1])\" 1 c hello\r\nGET c\r\n");
    // MULTI/EXEC with watches (format 8): one that runs, one a write after its WATCH aborts, and
    // a key that expires and is deleted between watch and EXEC.
    seeds.push_back(
        "SET w 1 PX 60\r\nWATCH w c\r\nMULTI\r\nINCR c\r\nPUBLISH ch m\r\nGET c\r\nEXEC\r\n"
        "WATCH c\r\nSET c 5\r\nMULTI\r\nDEL c\r\nEXEC\r\nWATCH w gone\r\nzzzz\r\nMULTI\r\n"
        "SADD s a\r\nLPUSH s b\r\nPING\r\nEXEC\r\n");
    return seeds;
}

// A client's bytes for the PostgreSQL decoder, written by a small frontend encoder here: the first
// byte of each seed picks the fuzz target's options (bit 0: small limits, bit 1: start in the
// regular phase, the rest: the piece size of the split check).
class PgFrontend {
public:
    PgFrontend& i16(int64_t v) {
        body_.push_back(static_cast<char>((v >> 8) & 0xff));
        body_.push_back(static_cast<char>(v & 0xff));
        return *this;
    }
    PgFrontend& i32(int64_t v) { return i16(v >> 16).i16(v); }
    PgFrontend& str(std::string_view s) {
        body_.append(s);
        body_.push_back('\0');
        return *this;
    }
    PgFrontend& raw(std::string_view s) {
        body_.append(s);
        return *this;
    }
    PgFrontend& byte(char c) {
        body_.push_back(c);
        return *this;
    }
    // The body so far as a regular message of `type`, or as a startup packet when type is 0.
    std::string message(char type = 0) const {
        PgFrontend length;
        length.i32(static_cast<int64_t>(body_.size()) + 4);
        return (type == 0 ? "" : std::string(1, type)) + length.body_ + body_;
    }

private:
    std::string body_;
};

std::vector<std::string> pg_codec_seeds() {
    using F = PgFrontend;
    const std::string ssl = F().i32(net::kPgSslRequestCode).message();
    const std::string gss = F().i32(net::kPgGssEncRequestCode).message();
    const std::string startup = F().i32(net::kPgProtocol3)
                                    .str("user")
                                    .str("alice")
                                    .str("database")
                                    .str("locks")
                                    .str("application_name")
                                    .str("psql")
                                    .str("client_encoding")
                                    .str("UTF8")
                                    .byte('\0')
                                    .message();
    const std::string cancel = F().i32(net::kPgCancelRequestCode).i32(4242).i32(77).message();
    const std::string password =
        F().str(net::pg_md5_password("secret", "alice", {1, 2, 3, 4})).message('p');
    const std::string simple = F().str("SELECT pg_advisory_lock(42); SELECT 1").message('Q') +
                               F().str("").message('Q') + F().message('X');
    const std::string ts = net::encode_binary_timestamptz(1704067200000000).value();
    const std::string extended = F().str("s1")
                                     .str("SELECT pg_try_advisory_lock($1, $2)")
                                     .i16(2)
                                     .i32(23)
                                     .i32(0)
                                     .message('P') +
                                 F().byte('S').str("s1").message('D') +
                                 F().str("")
                                     .str("s1")
                                     .i16(2)
                                     .i16(1)
                                     .i16(0)
                                     .i16(2)
                                     .i32(4)
                                     .raw(net::encode_binary_int4(7))
                                     .i32(-1)
                                     .i16(1)
                                     .i16(1)
                                     .message('B') +
                                 F().byte('P').str("").message('D') +
                                 F().str("").i32(0).message('E') + F().message('S') +
                                 F().message('H') + F().byte('S').str("s1").message('C');
    const std::string binary_params = F().str("p")
                                          .str("")
                                          .i16(5)
                                          .i16(1)
                                          .i16(1)
                                          .i16(1)
                                          .i16(1)
                                          .i16(0)
                                          .i16(5)
                                          .i32(2)
                                          .raw(net::encode_binary_int2(-2))
                                          .i32(8)
                                          .raw(net::encode_binary_int8(1))
                                          .i32(1)
                                          .raw(net::encode_binary_bool(true))
                                          .i32(8)
                                          .raw(ts)
                                          .i32(3)
                                          .raw("abc")
                                          .i16(0)
                                          .message('B') +
                                      F().str("p").i32(1).message('E');
    const std::string copy =
        F().raw("1\t2\n").message('d') + F().message('c') + F().str("no COPY here").message('f');
    return {
        std::string(1, '\x00') + ssl + startup + password + simple,
        std::string(1, '\x04') + gss + ssl + startup + extended,
        std::string(1, '\x00') + cancel,
        std::string(1, '\x02') + extended + binary_params,
        std::string(1, '\x0b') + simple + copy,
        std::string(1, '\x03') + F().str("SELECT 1").message('Q') + F().message('S'),
        std::string(1, '\x1e') + copy + binary_params,
    };
}

// Query strings for the SQL parser: every statement form and clause of the subset, a few
// refusals, and multi-statement queries. Each valid seed is checked against the parser here, so
// a grammar change that breaks one fails this program instead of quietly weakening the corpus.
std::vector<std::string> sql_parser_seeds() {
    const std::vector<std::string> valid = {
        "SELECT 1",
        "SELECT now(), version(), current_schema()",
        "SELECT pg_advisory_lock(1, 2)",
        "SELECT pg_try_advisory_xact_lock($1)",
        "SELECT GET_LOCK('x', 10), RELEASE_LOCK('x')",
        "SELECT * FROM accounts WHERE id = 1 FOR UPDATE",
        "SELECT * FROM jobs WHERE state = 'ready' ORDER BY id DESC LIMIT 1 FOR UPDATE SKIP LOCKED",
        "SELECT name, owner AS o, version v FROM public.locks WHERE name = $1 AND expires_at > "
        "now() ORDER BY name, owner ASC LIMIT $2 FOR SHARE NOWAIT",
        "SELECT count(*) FROM locks WHERE owner IS NOT NULL AND expires_at ISNULL",
        "SELECT -5, - -3, -2147483648, 9223372036854775807, 1_000, -(a), t.c FROM t",
        "SELECT '5'::bigint, CAST($1 AS text), timestamptz '2026-01-01 00:00:00+00', "
        "timestamp with time zone '2026-01-01', 'x'::character varying, TRUE, FALSE, NULL",
        "SELECT a = b IS NULL, a + 1 - 2 <> b, a <= b, a >= b, a < b, a > b, a != b FROM t",
        "SELECT \"Quoted \"\"Name\"\"\", 'it''s' AS \"select\", 'a'\n 'b' FROM \"T\"",
        "/* nested /* comment */ */ SELECT 1 -- trailing\n",
        "SELECT CURRENT_TIMESTAMP",
        "INSERT INTO locks (name, owner) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING name",
        "INSERT INTO t VALUES (1, 'a', now()), (2, NULL, '2026-01-01'::timestamptz) RETURNING *",
        "UPDATE items SET value = $1, version = version + 1 WHERE id = $2 AND version = $3",
        "UPDATE ONLY t SET a = a - 1 RETURNING a, b AS c",
        "DELETE FROM locks WHERE name = $1 AND owner = $2 RETURNING name",
        "DELETE FROM t",
        "CREATE TABLE locks (name text PRIMARY KEY, owner text, version bigint NOT NULL DEFAULT 0, "
        "expires_at timestamptz)",
        "CREATE TABLE IF NOT EXISTS t (a varchar(20) UNIQUE NULL, b int DEFAULT -1, c integer, d "
        "int8, e boolean DEFAULT true, f timestamp with time zone DEFAULT now(), g character "
        "varying(5), h bool, i int4)",
        "DROP TABLE IF EXISTS public.t CASCADE",
        "BEGIN; SELECT 1; COMMIT",
        "BEGIN TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE",
        "START TRANSACTION; ROLLBACK; ABORT WORK; END",
        "SET DateStyle = 'ISO'",
        "SET client_encoding TO 'UTF8'; SET SESSION x = -1.5; SET TIME ZONE 'UTC'; RESET ALL",
        "SET application_name = \"app\"; SET x TO DEFAULT; SET NAMES 'UTF8'; RESET x",
        "SHOW transaction_isolation; SHOW ALL; SHOW TRANSACTION ISOLATION LEVEL; SHOW TIME ZONE",
        ";; ;",
    };
    for (const std::string& query : valid) {
        if (!raftlock::statemachine::sql::parse(query, {}).ok()) {
            fmt::print(stderr, "fuzz_seeds: a SQL seed does not parse: {}\n", query);
            std::exit(1);
        }
    }
    std::vector<std::string> seeds = valid;
    for (const char* refused : {
             "SELECT * FROM a JOIN b ON a.x = b.x WHERE a = 1 OR b = 2",
             "SELECT a FROM t GROUP BY a HAVING count(*) > 1 UNION SELECT 1 OFFSET 2",
             "SELECT 'unterminated",
             "SELECT 1.5e3, E'x', $$y$$, 0x1F, 99999999999999999999, $0",
             "WITH x AS (SELECT 1) SELECT (SELECT 2), a IN (1), a LIKE 'b' FROM x",
             "CREATE TABLE t (a int PRIMARY KEY, a text, CHECK (a > 0))",
             "INSERT INTO t (a, a) VALUES (1), (1, 2) ON CONFLICT (a) DO UPDATE SET a = 1",
         }) {
        seeds.emplace_back(refused);
    }
    return seeds;
}

// Session scripts for the SQL engine target (tests/fuzz/sql_engine_fuzz.cc): one step per line,
// the first byte picks the session ('1'..'4'; '~' ends one, '!' cancels its wait, '+' moves time).
std::vector<std::string> sql_engine_seeds() {
    return {
        "1SELECT pg_advisory_lock(1)\n2SELECT pg_advisory_lock(1)\n1SELECT pg_advisory_unlock(1)\n"
        "2SELECT pg_try_advisory_lock(1)\n3SELECT pg_advisory_lock_shared(1)\n+xxxxx\n",
        "1SELECT pg_advisory_lock(1)\n2SELECT pg_advisory_lock(2)\n1SELECT pg_advisory_lock(2)\n"
        "2SELECT pg_advisory_lock(1)\n~\n",
        "1SELECT GET_LOCK('a', 10)\n2SELECT GET_LOCK('A', 1)\n+xxxx\n2SELECT IS_USED_LOCK('a')\n"
        "1SELECT RELEASE_ALL_LOCKS()\n",
        "1CREATE TABLE locks (name text PRIMARY KEY, owner text, version bigint NOT NULL DEFAULT "
        "0)\n"
        "1BEGIN\n1INSERT INTO locks (name, owner) VALUES ('a', 'x')\n"
        "2INSERT INTO locks (name, owner) VALUES ('a', 'y') ON CONFLICT DO NOTHING RETURNING *\n"
        "1COMMIT\n2SELECT * FROM locks\n",
        "1CREATE TABLE t (id int PRIMARY KEY, v int)\n1INSERT INTO t VALUES (1, 0), (2, 0)\n"
        "1BEGIN\n1SELECT * FROM t WHERE id = 1 FOR UPDATE\n2UPDATE t SET v = v + 1 WHERE id = 1\n"
        "3SELECT id FROM t ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED\n!\n1ROLLBACK\n",
        "1CREATE TABLE t (id int PRIMARY KEY, v text, version int NOT NULL DEFAULT 0)\n"
        "1INSERT INTO t (id, v) VALUES (1, 'a')\n1BEGIN\n2BEGIN\n"
        "1UPDATE t SET v = 'b', version = version + 1 WHERE id = 1 AND version = 0\n"
        "2UPDATE t SET v = 'c', version = version + 1 WHERE id = 1 AND version = 0\n1COMMIT\n"
        "2COMMIT\n2DELETE FROM t WHERE id = 1 RETURNING v\n",
    };
}

// zk_codec_fuzz's input: a byte choosing the decoder (even: ConnectRequest), then the payload.
std::vector<std::string> zk_codec_seeds() {
    namespace zk = net::zk;
    std::vector<std::string> out;
    auto add = [&](char decoder, const std::string& framed) {
        out.push_back(std::string(1, decoder) + framed.substr(4));
    };
    std::string bytes;
    zk::encode_connect_request({0, 0, 30000, 0, std::string(zk::kPasswordBytes, '\0'), false},
                               bytes);
    add(0, bytes);
    const zk::Acl open{zk::kPermAll, zk::Id{"world", "anyone"}};
    zk::MultiRequest multi;
    multi.ops.push_back({zk::OpCode::kCreate, zk::CreateRequest{"/m", "1", {open}, 0, 0}});
    multi.ops.push_back({zk::OpCode::kCheck, zk::CheckVersionRequest{"/m", 0}});
    multi.ops.push_back({zk::OpCode::kDelete, zk::DeleteRequest{"/m", -1}});
    const std::vector<zk::Request> requests = {
        {1, zk::OpCode::kCreate, zk::CreateRequest{"/lock/n-", "me", {open}, 3, 0}},
        {2, zk::OpCode::kCreateTtl, zk::CreateRequest{"/t", "", {open}, 5, 1000}},
        {3, zk::OpCode::kGetChildren2, zk::PathWatchRequest{"/lock", true}},
        {4, zk::OpCode::kSetData, zk::SetDataRequest{"/a", "v", -1}},
        {5, zk::OpCode::kMulti, multi},
        {zk::kXidSetWatches, zk::OpCode::kSetWatches2,
         zk::SetWatchesRequest{9, {"/a"}, {"/b"}, {"/c"}, {"/d"}, {"/e"}}},
        {zk::kXidAuth, zk::OpCode::kAuth, zk::AuthRequest{0, "digest", "u:p"}},
        {zk::kXidPing, zk::OpCode::kPing, zk::EmptyRequest{}},
    };
    for (const zk::Request& request : requests) {
        bytes.clear();
        zk::encode_request(request, bytes);
        add(1, bytes);
    }
    return out;
}

}  // namespace

// A real exchange's messages, as scram_fuzz reads them: a side byte, then two messages split by a
// NUL (the PostgreSQL side wraps the first in a SASLInitialResponse).
std::vector<std::string> scram_seeds() {
    namespace scram = raftlock::base::scram;
    scram::ClientExchange client("user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    const std::string client_first = client.client_first();
    auto first = scram::parse_client_first(client_first);
    scram::ServerExchange server(std::move(first).value(),
                                 scram::make_verifier("pencil", "fuzz-salt-bytes", 4096),
                                 "server-nonce");
    const std::string server_first = server.server_first();
    const std::string client_final = client.server_first(server_first).value();
    const std::string server_final = server.client_final(client_final).value();
    const std::string two = client_first + std::string(1, '\0') + client_final;
    std::string initial = "SCRAM-SHA-256";
    initial.push_back('\0');
    const auto n = static_cast<uint32_t>(two.size());
    for (int shift : {24, 16, 8, 0}) {
        initial.push_back(static_cast<char>((n >> shift) & 0xff));
    }
    initial += two;
    return {std::string(1, '\0') + two, std::string(1, '\1') + initial,
            std::string(1, '\2') + server_first + std::string(1, '\0') + server_final};
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fmt::print(stderr, "usage: fuzz_seeds <dir>\n");
        return 2;
    }
    const fs::path dir = argv[1];
    write_seeds(dir / "frame_request", request_seeds());
    write_seeds(dir / "peer_frame", peer_seeds());
    write_seeds(dir / "command", command_seeds());
    write_seeds(dir / "resp", resp_seeds());
    write_seeds(dir / "keyspace", keyspace_seeds());
    write_seeds(dir / "sql_parser", sql_parser_seeds());
    write_seeds(dir / "sql_engine", sql_engine_seeds());
    write_seeds(dir / "pg_codec", pg_codec_seeds());
    write_seeds(dir / "zk_codec", zk_codec_seeds());
    write_seeds(dir / "scram", scram_seeds());
    return 0;
}
