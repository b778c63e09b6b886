// The `raftlock` binary against FakeServer (tests/client/fake_server.h): exit codes, the
// cross-process session rules, and `lock` stopping its command when the lock is lost.

#include <atomic>
#include <fstream>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "client_test_util.h"

namespace raftlock::client::testing {

using namespace std::chrono_literals;

namespace {

struct Run {
    int exit_code = -1;
    std::string out;
    std::chrono::milliseconds elapsed{0};
};

// Runs raftlock with `args` against `endpoints`, capturing stdout (stderr passes through).
Run run_cli(const std::vector<Endpoint>& endpoints, std::vector<std::string> args) {
    args.insert(args.begin(), {RAFTLOCK_BINARY, "--endpoints", to_string(endpoints)});
    std::vector<char*> argv;
    for (std::string& arg : args) {
        argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const auto start = SteadyClock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv.data());
        _exit(126);
    }
    close(fds[1]);
    Run run;
    char buffer[4096];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof(buffer))) > 0;) {
        run.out.append(buffer, static_cast<size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    run.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return run;
}

std::string temp_path(const char* name) {
    return std::string("/tmp/raftlock_cli_test_") + std::to_string(getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("lock runs the command with the lock's environment, then releases and closes",
          "[cli][lock]") {
    FakeServer server;
    const std::string out = temp_path("env");
    auto run = run_cli({server.endpoint()},
                       {"lock", "jobs", "--ttl", "5s", "--", "sh", "-c",
                        "echo $RAFTLOCK_TOKEN $RAFTLOCK_LOCK $RAFTLOCK_SESSION > " + out});
    CHECK(run.exit_code == 0);
    CHECK(read_file(out) == "77 jobs 1000\n");
    std::remove(out.c_str());
    CHECK(count_body(server.received(), proto::Request::kRelease) == 1);
    CHECK(count_body(server.received(), proto::Request::kCloseSession) == 1);
}

TEST_CASE("lock exits with the command's exit code", "[cli][lock]") {
    FakeServer server;
    auto run = run_cli({server.endpoint()}, {"lock", "jobs", "--", "sh", "-c", "exit 7"});
    CHECK(run.exit_code == 7);
    auto missing = run_cli({server.endpoint()}, {"lock", "jobs", "--", "/nonexistent/cmd"});
    CHECK(missing.exit_code == 127);
}

TEST_CASE("lock stops the command before the session can expire when keepalives fail",
          "[cli][lock]") {
    FakeServer server;
    // When the session was opened: the expiry the command must be stopped before counts from
    // there, not from the CLI's start, which a loaded sanitizer build can delay by 500 ms.
    std::atomic<SteadyClock::rep> opened_at{0};
    server.set_handler([&](FakeServer& s, uint64_t conn, const proto::Request& request) {
        if (request.has_open_session()) {
            opened_at = SteadyClock::now().time_since_epoch().count();
        }
        if (!request.has_keep_alive()) {  // the leader never hears the keepalives
            s.reply(conn, FakeServer::ok_response(request));
        }
    });
    // From the session's opening to the CLI's exit (an upper bound of when the command stopped).
    auto since_open = [&] {
        REQUIRE(opened_at.load() != 0);
        const SteadyClock::time_point opened{SteadyClock::duration{opened_at.load()}};
        return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - opened);
    };
    SECTION("a command that stops on SIGTERM") {
        auto run =
            run_cli({server.endpoint()}, {"lock", "jobs", "--ttl", "1s", "--", "sleep", "5"});
        CHECK(run.exit_code == 4);
        // Open + 1 s is the earliest expiry; safe-until is 500 ms before it.
        CHECK(since_open() < 1000ms);
    }
    SECTION("a command that ignores SIGTERM gets SIGKILL after the grace") {
        auto run = run_cli({server.endpoint()}, {"lock", "jobs", "--ttl", "1s", "--", "sh", "-c",
                                                 "trap '' TERM; exec sleep 5"});
        CHECK(run.exit_code == 4);
        CHECK(since_open() < 1000ms);
    }
}

TEST_CASE("acquire prints session and token and leaves the session open", "[cli][acquire]") {
    FakeServer server;
    auto run =
        run_cli({server.endpoint()}, {"--output", "json", "acquire", "jobs", "--ttl", "30s"});
    REQUIRE(run.exit_code == 0);
    const auto printed = nlohmann::json::parse(run.out);
    CHECK(printed["session"] == 1000);
    CHECK(printed["token"] == 77);
    CHECK(count_body(server.received(), proto::Request::kCloseSession) == 0);
    const auto acquires = requests_of(server, proto::Request::kAcquire);
    REQUIRE(acquires.size() == 1);
    CHECK(acquires[0].seq() == 1);
}

TEST_CASE("describe shows how long a lock is held by cluster time and by the wall clock",
          "[cli][describe]") {
    // Granted an hour ago by this machine's clock; the cluster's last applied entry came 5 s
    // after the grant (an idle cluster's time stands still between entries).
    const int64_t wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    const int64_t since_ms = wall_ms - 3'600'000;
    FakeServer server;
    server.set_handler([&](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_describe_lock()) {
            proto::LockInfo* info = response.mutable_lock_info();
            info->set_name(request.describe_lock().name());
            info->set_now_ms(since_ms + 5000);
            proto::Holder* holder = info->add_holders();
            holder->set_session(9);
            holder->set_token(4);
            holder->set_since_ms(since_ms);
            holder->set_count(1);
        }
        s.reply(conn, response);
    });
    auto run = run_cli({server.endpoint()}, {"--output", "json", "describe", "jobs"});
    REQUIRE(run.exit_code == 0);
    const auto printed = nlohmann::json::parse(run.out);
    INFO(run.out);
    REQUIRE(printed["holders"].size() == 1);
    const auto& holder = printed["holders"][0];
    CHECK(holder["held_ms"] == 5000);
    CHECK(holder["held_wall_ms"].get<int64_t>() >= 3'600'000);
    CHECK(holder["held_wall_ms"].get<int64_t>() < 3'660'000);
    const std::string since = holder["since"].get<std::string>();
    CHECK(since.size() == std::string("2026-12-01T22:10:03.123Z").size());
    CHECK(since.back() == 'Z');
    auto text = run_cli({server.endpoint()}, {"describe", "jobs"});
    REQUIRE(text.exit_code == 0);
    INFO(text.out);
    CHECK(text.out.find("held 5.0s (cluster time), since " + since.substr(0, 16)) !=
          std::string::npos);
    CHECK(text.out.find(", 1h00m") != std::string::npos);
    CHECK(text.out.find("ago by this machine's clock") != std::string::npos);
}

TEST_CASE("a busy lock exits 1 and closes the session it opened", "[cli][acquire]") {
    FakeServer server;
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_acquire()) {
            response.clear_lock();
            response.set_code(proto::LOCK_BUSY);
        }
        s.reply(conn, response);
    });
    auto run = run_cli({server.endpoint()}, {"acquire", "jobs", "--no-wait"});
    CHECK(run.exit_code == 1);
    CHECK(count_body(server.received(), proto::Request::kCloseSession) == 1);
}

TEST_CASE("release finds the token and writes from the seq its attach was given",
          "[cli][release]") {
    FakeServer server;
    std::atomic<uint64_t> next_first_seq{5000};
    server.set_handler([&](FakeServer& s, uint64_t conn, const proto::Request& request) {
        proto::Response response = FakeServer::ok_response(request);
        if (request.has_describe_lock()) {
            auto* holder = response.mutable_lock_info()->add_holders();
            holder->set_session(1000);
            holder->set_owner_tag("w");
            holder->set_token(77);
            holder->set_count(1);
        }
        if (request.has_attach_session()) {
            // As the cluster does: above every seq the session used, a new range each time.
            response.mutable_attach_session()->set_first_seq(next_first_seq.fetch_add(4000));
        }
        s.reply(conn, response);
    });
    auto first = run_cli({server.endpoint()}, {"release", "jobs", "--session", "1000"});
    auto second = run_cli({server.endpoint()}, {"release", "jobs", "--session", "1000"});
    CHECK(first.exit_code == 0);
    CHECK(second.exit_code == 0);
    const auto attaches = requests_of(server, proto::Request::kAttachSession);
    REQUIRE(attaches.size() == 2);
    CHECK(attaches[0].session_id() == 1000);
    CHECK(attaches[0].seq() == 0);
    const auto releases = requests_of(server, proto::Request::kRelease);
    REQUIRE(releases.size() == 2);
    CHECK(releases[0].release().token() == 77);
    CHECK(releases[0].release().owner_tag() == "w");
    CHECK(releases[0].session_id() == 1000);
    CHECK(releases[0].seq() == 5000);
    CHECK(releases[0].ack_seq() == releases[0].seq() - 1);
    CHECK(releases[1].seq() == 9000);
    auto not_holder = run_cli({server.endpoint()}, {"release", "jobs", "--session", "5"});
    CHECK(not_holder.exit_code == 1);
}

TEST_CASE("usage errors exit 2, an unreachable cluster exits 3", "[cli]") {
    FakeServer server;
    CHECK(run_cli({server.endpoint()}, {"acquire"}).exit_code == 2);
    CHECK(run_cli({server.endpoint()}, {"acquire", "x", "--ttl", "30"}).exit_code == 2);
    CHECK(run_cli({server.endpoint()}, {"create", "/x", "--container", "--ttl", "1s"}).exit_code ==
          2);
    CHECK(run_cli({server.endpoint()}, {"nonsense"}).exit_code == 2);
    CHECK(run_cli({server.endpoint()}, {"--nonsense"}).exit_code == 2);
    CHECK(run_cli({server.endpoint()}, {"session", "nonsense"}).exit_code == 2);
    CHECK(run_cli({server.endpoint()}, {"--help"}).exit_code == 0);
    const Endpoint dead{"127.0.0.1", unused_port()};
    auto run = run_cli({dead}, {"describe", "x"});
    CHECK(run.exit_code == 3);
}

TEST_CASE("node writes use a short session of their own", "[cli][nodes]") {
    FakeServer server;
    auto run = run_cli({server.endpoint()}, {"set", "/a", "hello", "--version", "3"});
    CHECK(run.exit_code == 0);
    const auto sets = requests_of(server, proto::Request::kSetData);
    REQUIRE(sets.size() == 1);
    CHECK(sets[0].set_data().data() == "hello");
    CHECK(sets[0].set_data().version() == 3);
    CHECK(sets[0].seq() == 1);
    CHECK(count_body(server.received(), proto::Request::kCloseSession) == 1);
    auto got = run_cli({server.endpoint()}, {"get", "/a"});
    CHECK(got.exit_code == 0);
    CHECK(got.out == "v\n");
}

}  // namespace raftlock::client::testing
