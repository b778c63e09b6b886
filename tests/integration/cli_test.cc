// The raftlock CLI against a real cluster.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include "client/client.h"
#include "process_cluster.h"

namespace raftlock::integration {
namespace {

using namespace std::chrono_literals;

nlohmann::json run_json(ProcessCluster& c, std::vector<std::string> args, int expect_status = 0) {
    std::vector<std::string> argv = {raftlock_path(), "--endpoints", c.endpoints(), "--output",
                                     "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    const int status = run_program(argv, &out);
    INFO(out);
    REQUIRE(status == expect_status);
    const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    REQUIRE(!j.is_discarded());
    return j;
}

TEST_CASE("the CLI acquires, describes and releases a lock across processes",
          "[integration][cli]") {
    ProcessCluster c;
    REQUIRE(c.wait_for_leader() != 0);
    const nlohmann::json held = run_json(c, {"acquire", "deploy", "--ttl", "30s"});
    const uint64_t session = held["session"].get<uint64_t>();
    const uint64_t token = held["token"].get<uint64_t>();
    CHECK(token > 0);
    // The lock outlives the CLI process.
    const nlohmann::json info = run_json(c, {"describe", "deploy"});
    INFO(info.dump());
    REQUIRE(info["holders"].size() == 1);
    CHECK(info["holders"][0]["token"].get<uint64_t>() == token);
    run_json(c, {"acquire", "deploy", "--no-wait"}, 1);  // busy
    run_json(c, {"release", "deploy", "--session", std::to_string(session)});
    const nlohmann::json free = run_json(c, {"describe", "deploy"});
    CHECK(free["holders"].empty());
    // The session outlives its lock until closed; a second close says it is gone.
    run_json(c, {"session", "close", std::to_string(session)});
    const nlohmann::json gone = run_json(c, {"session", "close", std::to_string(session)}, 1);
    CHECK(gone["error"] == "session_expired");
    // `--` ends the options for every command, not only `lock NAME... -- CMD`.
    run_json(c, {"create", "/dashed"});
    run_json(c, {"set", "/dashed", "--", "-leading-dash"});
    const nlohmann::json dashed = run_json(c, {"get", "/dashed"});
    INFO(dashed.dump());
    CHECK(dashed.dump().find("-leading-dash") != std::string::npos);
    const nlohmann::json status = run_json(c, {"cluster", "status"});
    INFO(status.dump());
    CHECK(status.dump().find("leader") != std::string::npos);
}

TEST_CASE("the CLI takes several locks at once, and lock -- CMD waits for all of them",
          "[integration][cli][multi]") {
    ProcessCluster c;
    REQUIRE(c.wait_for_leader() != 0);
    const nlohmann::json held = run_json(c, {"acquire", "a", "b", "c", "--ttl", "30s"});
    INFO(held.dump());
    CHECK(held["locks"] == nlohmann::json::array({"a", "b", "c"}));
    const uint64_t session = held["session"].get<uint64_t>();
    const uint64_t token = held["token"].get<uint64_t>();
    for (const char* name : {"a", "b", "c"}) {
        const nlohmann::json info = run_json(c, {"describe", name});
        REQUIRE(info["holders"].size() == 1);
        CHECK(info["holders"][0]["token"].get<uint64_t>() == token);
    }
    // All or none: b is held, so {b, d} is refused and d stays free.
    run_json(c, {"acquire", "d", "b", "--no-wait"}, 1);
    CHECK(run_json(c, {"describe", "d"})["waiters"].empty());

    // lock b x -- CMD: queued on both (x is free but waits with b), runs once b is released.
    const std::string out = c.dir() + "/multi.out";
    const pid_t cli = spawn_program(
        {raftlock_path(), "--endpoints", c.endpoints(), "lock", "b", "x", "--ttl", "30s", "--wait",
         "20s", "--", "/bin/sh", "-c", "echo \"$RAFTLOCK_LOCK $RAFTLOCK_TOKEN\" > " + out},
        c.dir() + "/multi.log");
    nlohmann::json x;
    for (int i = 0; i < 500; ++i) {
        x = run_json(c, {"describe", "x"});
        if (!x["waiters"].empty()) {
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
    INFO(x.dump());
    REQUIRE(x["waiters"].size() == 1);
    CHECK(x["holders"].empty());
    CHECK(x["waiters"][0]["together"] == nlohmann::json::array({"b"}));
    CHECK(!std::filesystem::exists(out));
    run_json(c, {"release", "b", "--session", std::to_string(session)});
    REQUIRE(wait_program(cli, 20000) == 0);
    std::ifstream in(out);
    std::string names;
    uint64_t granted = 0;
    in >> names >> granted;
    CHECK(names == "b,x");
    CHECK(granted > token);
    // The CLI released both on its way out.
    CHECK(run_json(c, {"describe", "b"})["holders"].empty());
    CHECK(run_json(c, {"describe", "x"})["holders"].empty());
}

TEST_CASE("member transfer hands leadership to the voter named, through any node",
          "[integration][cli][membership]") {
    ProcessCluster c;
    const uint64_t leader = c.wait_for_leader();
    REQUIRE(leader != 0);
    const uint64_t target = leader % 3 + 1;
    const uint64_t third = target % 3 + 1;
    REQUIRE(third != leader);
    const nlohmann::json moved = run_json(c, {"member", "transfer", std::to_string(target)});
    CHECK(moved["leader"].get<uint64_t>() == target);

    // Back to the first leader, asked of the third node, which is neither: its core passes the
    // request on to the leader. The node that answered saw the new leader lead; the new leader
    // says so itself (the old one may not have heard yet, so no node is asked who leads).
    client::ClientOptions o;
    o.endpoints = *client::parse_endpoints(c.client_endpoint(third));
    client::Client on_third(o);
    const auto role_of = [&](uint64_t node) {
        auto endpoint = client::parse_endpoints(c.client_endpoint(node));
        REQUIRE(endpoint.ok());
        auto status = on_third.node_status(endpoint->front());
        REQUIRE(status.ok());
        return status->role;
    };
    CHECK(role_of(target) == "leader");
    auto back = on_third.transfer_leadership(leader);
    INFO((back.ok() ? std::string() : back.error().message));
    REQUIRE(back.ok());
    CHECK(*back == leader);
    CHECK(role_of(leader) == "leader");

    // To the leader itself: answered at once. To a node that is not a voter: refused.
    CHECK(run_json(c, {"member", "transfer", std::to_string(leader)})["leader"] == leader);
    const nlohmann::json refused = run_json(c, {"member", "transfer", "9"}, 1);
    CHECK(refused["error"] == "bad_arguments");
    // The cluster takes writes under its new leader.
    const nlohmann::json held = run_json(c, {"acquire", "after-transfer", "--ttl", "30s"});
    CHECK(held["token"].get<uint64_t>() > 0);

    // To a voter that is down: the attempt is given up, the leader stays and takes writes.
    c.kill(third);
    client::ClientOptions quick;
    quick.endpoints = *client::parse_endpoints(c.client_endpoint(leader));
    quick.request_timeout = 3000ms;  // (the server answers after two election timeouts: 2 s)
    client::Client on_leader(quick);
    auto stuck = on_leader.transfer_leadership(third);
    REQUIRE(!stuck.ok());
    CHECK(stuck.error().message.find("did not take leadership") != std::string::npos);
    CHECK(role_of(leader) == "leader");
    CHECK(run_json(c, {"acquire", "after-failed-transfer", "--ttl", "30s"})["token"] > 0);
}

TEST_CASE("lock -- CMD stops its command when the session is lost while the CLI was paused",
          "[integration][cli]") {
    ProcessCluster c;
    REQUIRE(c.wait_for_leader() != 0);
    const std::string pidfile = c.dir() + "/child.pid";
    const pid_t cli =
        spawn_program({raftlock_path(), "--endpoints", c.endpoints(), "lock", "job", "--ttl", "1s",
                       "--", "/bin/sh", "-c", "echo $$ > " + pidfile + "; exec sleep 300"},
                      c.dir() + "/cli.log");
    pid_t child = 0;
    for (int i = 0; i < 500 && child == 0; ++i) {
        std::ifstream in(pidfile);
        in >> child;
        std::this_thread::sleep_for(10ms);
    }
    REQUIRE(child > 0);
    REQUIRE(::kill(child, 0) == 0);

    ::kill(cli, SIGSTOP);  // no keepalives: the session expires on the cluster
    raftlock::client::ClientOptions o;
    o.endpoints = *raftlock::client::parse_endpoints(c.endpoints());
    raftlock::client::Client other(o);
    REQUIRE(other.open_session(10s).ok());
    raftlock::client::AcquireOptions wait;
    wait.wait = 20s;
    auto lease = other.acquire("job", wait);
    REQUIRE(lease.ok());  // the cluster handed the lock over after the expiry
    ::kill(cli, SIGCONT);
    // The CLI sees its safe-until long gone: it stops the command and exits 4.
    const int status = wait_program(cli, 10000);
    std::ifstream log(c.dir() + "/cli.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    INFO(text);
    CHECK(status == 4);
    CHECK(::kill(child, 0) != 0);  // gone
}

}  // namespace
}  // namespace raftlock::integration
