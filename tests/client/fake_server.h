#pragma once

// A scripted raftlockd stand-in for client tests: a TCP acceptor on 127.0.0.1:<ephemeral> that
// speaks the client protocol's frames, records every request, answers through a replaceable
// handler, and can drop its connections or stop listening. Runs its own thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "client/endpoints.h"
#include "client/safe_until.h"
#include "proto/client.pb.h"

namespace raftlock::client::testing {

struct Received {
    uint64_t conn = 0;
    proto::Request request;
    SteadyTime at;
};

class FakeServer {
public:
    // Called on the server's thread for every request (after it is recorded).
    using Handler = std::function<void(FakeServer& server, uint64_t conn, const proto::Request&)>;

    FakeServer();
    ~FakeServer();
    FakeServer(const FakeServer&) = delete;
    FakeServer& operator=(const FakeServer&) = delete;

    Endpoint endpoint() const;
    void set_handler(Handler handler);

    // Any thread. Unknown connections are ignored.
    void send(uint64_t conn, const proto::ServerMessage& message);
    void reply(uint64_t conn, const proto::Response& response);
    // Closes every open connection (the client sees EOF).
    void drop_connections();
    // Stops listening: later connects are refused.
    void close_listener();

    std::vector<Received> received() const;
    size_t accepted() const;
    // Waits until `done(received())` holds, for at most `timeout`; returns its last value.
    bool wait_until(const std::function<bool(const std::vector<Received>&)>& done,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) const;

    // The answer a healthy server would give (the default handler sends it).
    static proto::Response ok_response(const proto::Request& request);

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// A loopback port nothing listens on (bound and released at once), for "connection refused".
uint16_t unused_port();

// Counts requests with the given body case.
size_t count_body(const std::vector<Received>& received, proto::Request::BodyCase body);

}  // namespace raftlock::client::testing
