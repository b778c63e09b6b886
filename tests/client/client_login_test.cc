// The client's login (ClientOptions::user): SCRAM-SHA-256 before the first request, against a
// FakeServer that plays the node's side with base/scram.h, or misbehaves.

#include <memory>
#include <mutex>

#include <catch2/catch.hpp>

#include "base/scram.h"
#include "client_test_util.h"

namespace raftlock::client::testing {
namespace {

namespace scram = base::scram;

std::vector<proto::Request> all_requests(const FakeServer& server) {
    std::vector<proto::Request> out;
    for (const Received& r : server.received()) {
        out.push_back(r.request);
    }
    return out;
}

ClientOptions login_options(const FakeServer& server, const std::string& password) {
    ClientOptions options = test_options({server.endpoint()});
    options.user = "alice";
    options.password = password;
    return options;
}

proto::Response authenticate_answer(const proto::Request& request, std::string data, bool done) {
    proto::Response r;
    r.set_request_id(request.request_id());
    r.mutable_authenticate()->set_data(std::move(data));
    r.mutable_authenticate()->set_done(done);
    return r;
}

// A node's side of the login, as raftlockd plays it, for user alice with password "secret".
struct LoginNode {
    std::mutex mu;
    std::unique_ptr<scram::ServerExchange> exchange;
    const scram::Verifier verifier =
        scram::make_verifier("secret", "salt-of-alice", scram::kIterationsMin);

    void handle(FakeServer& server, uint64_t conn, const proto::Request& request) {
        if (!request.has_authenticate()) {
            server.reply(conn, FakeServer::ok_response(request));
            return;
        }
        std::lock_guard lock(mu);
        if (exchange == nullptr) {
            exchange = std::make_unique<scram::ServerExchange>(
                scram::parse_client_first(request.authenticate().data()).value(), verifier,
                "node-nonce");
            server.reply(conn, authenticate_answer(request, exchange->server_first(), false));
            return;
        }
        auto last = exchange->client_final(request.authenticate().data());
        exchange.reset();
        if (!last.ok()) {
            proto::Response refused;
            refused.set_request_id(request.request_id());
            refused.set_code(proto::PERMISSION_DENIED);
            refused.set_message("authentication failed: wrong password");
            server.reply(conn, refused);
            return;
        }
        server.reply(conn, authenticate_answer(request, *last, true));
    }
};

TEST_CASE("a client with a user logs in before its first request", "[client][login]") {
    FakeServer server;
    LoginNode node;
    server.set_handler(
        [&](FakeServer& s, uint64_t conn, const proto::Request& r) { node.handle(s, conn, r); });
    Client client(login_options(server, "secret"));
    REQUIRE(client.exists("/x").ok());
    const std::vector<proto::Request> requests = all_requests(server);
    REQUIRE(requests.size() >= 3);
    CHECK(requests[0].has_authenticate());
    CHECK(requests[1].has_authenticate());
    CHECK(requests[2].has_exists());
}

TEST_CASE("a refused login fails the call at once, with the node's reason", "[client][login]") {
    FakeServer server;
    LoginNode node;
    server.set_handler(
        [&](FakeServer& s, uint64_t conn, const proto::Request& r) { node.handle(s, conn, r); });
    Client client(login_options(server, "guess"));
    auto answer = client.exists("/x");
    REQUIRE_FALSE(answer.ok());
    CHECK(answer.error().code == ErrorCode::kPermissionDenied);
    CHECK_THAT(answer.error().message, Catch::Contains("wrong password"));
    CHECK(server.accepted() == 1);  // not every node until the deadline
}

TEST_CASE("a node that answers the login out of order is not believed", "[client][login]") {
    FakeServer server;
    // "done" at once, without a challenge: the client must not take it (nor crash on it).
    server.set_handler([](FakeServer& s, uint64_t conn, const proto::Request& r) {
        if (r.has_authenticate()) {
            s.reply(conn, authenticate_answer(r, "v=AAAA", true));
        } else {
            s.reply(conn, FakeServer::ok_response(r));
        }
    });
    Client client(login_options(server, "secret"));
    auto answer = client.exists("/x");
    REQUIRE_FALSE(answer.ok());
    CHECK(answer.error().code == ErrorCode::kConnectFailed);
    CHECK_THAT(answer.error().message, Catch::Contains("out of order"));
    for (const proto::Request& r : all_requests(server)) {
        CHECK(r.has_authenticate());  // nothing else was sent
    }
}

}  // namespace
}  // namespace raftlock::client::testing
