// Writes a few valid inputs for each fuzz target, made with the real encoders, so the fuzzers
// start from the interesting part of the input space instead of rediscovering the framing:
//
//   fuzz_seeds <dir>   writes <dir>/frame_request/*, <dir>/peer_frame/*, <dir>/command/*,
//                      <dir>/resp/*, <dir>/keyspace/*

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "net/message_frame.h"
#include "net/raft_codec.h"
#include "net/resp_codec.h"
#include "proto/client.pb.h"
#include "proto/peer.pb.h"
#include "statemachine/codec.h"

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
    return seeds;
}

}  // namespace

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
    return 0;
}
