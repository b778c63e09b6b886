#pragma once

// What the ZooKeeper front end's tests share: a front end on one connection, a backend that
// records native requests and lets a test answer them in any order, and readers of the jute
// replies it sends.

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "net/big_endian.h"
#include "server/zk_frontend.h"

namespace raftlock::server::zk_frontend_fixture {

namespace zk = net::zk;

constexpr net::ConnectionId kConn = 77;

struct Output final : ZkOutput {
    void send(net::ConnectionId, std::string bytes) override { sent += bytes; }
    void close(net::ConnectionId) override { closed = true; }
    void pause_reading(net::ConnectionId, bool p) override { paused = p; }
    std::string sent;
    bool closed = false;
    bool paused = false;
};

struct Backend final : net::ClientHandler {
    void on_client_open(net::ConnectionId, const std::string&) override { ++opens; }
    void on_client_certificate(net::ConnectionId, const std::string&) override {}
    void on_client_request(net::ConnectionId, proto::Request&& request) override {
        requests.push_back(std::move(request));
    }
    void on_client_close(net::ConnectionId) override { ++closes; }
    std::vector<proto::Request> requests;
    int opens = 0;
    int closes = 0;
};

// One reply as the client reads it: the header and the body's bytes.
struct Reply {
    int32_t xid = 0;
    int64_t zxid = 0;
    int32_t err = 0;
    std::string body;
};

// Splits what the server sent into messages (the 4-byte length removed).
inline std::vector<std::string> messages(const std::string& sent) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at < sent.size()) {
        REQUIRE(sent.size() - at >= 4);
        const uint32_t length = net::load_u32(sent, at);
        REQUIRE(sent.size() - at - 4 >= length);
        out.push_back(sent.substr(at + 4, length));
        at += 4 + length;
    }
    return out;
}

inline Reply reply_of(const std::string& message) {
    REQUIRE(message.size() >= 16);
    Reply r;
    r.xid = static_cast<int32_t>(net::load_u32(message, 0));
    r.zxid = static_cast<int64_t>(net::load_u64(message, 4));
    r.err = static_cast<int32_t>(net::load_u32(message, 12));
    r.body = message.substr(16);
    return r;
}

// A jute ustring at the start of `body`.
inline std::string string_at(const std::string& body, size_t at = 0) {
    const auto length = static_cast<int32_t>(net::load_u32(body, at));
    REQUIRE(length >= 0);
    return body.substr(at + 4, static_cast<size_t>(length));
}

struct Fixture {
    explicit Fixture(ZkFrontendOptions options = defaults()) : frontend(options, output, backend) {
        frontend.on_zk_open(kConn, "127.0.0.1:5000");
    }
    static ZkFrontendOptions defaults() {
        ZkFrontendOptions o;
        o.session_timeout_ms_min = 2000;
        o.session_timeout_ms_max = 60000;
        o.password_seed = 0x5eed;
        o.pipeline_max = 8;
        return o;
    }
    void send_connect(const zk::ConnectRequest& request) {
        std::string bytes;
        zk::encode_connect_request(request, bytes);
        frontend.on_zk_message(kConn, std::string_view(bytes).substr(4));
    }
    void send(zk::Request request) {
        std::string bytes;
        zk::encode_request(request, bytes);
        frontend.on_zk_message(kConn, std::string_view(bytes).substr(4));
    }
    void answer(size_t index, proto::Response response) {
        response.set_request_id(backend.requests.at(index).request_id());
        proto::ServerMessage message;
        *message.mutable_response() = std::move(response);
        frontend.on_server_message(kConn, message);
    }
    // A new session 9 with the given timeout, established.
    void open(int32_t timeout_ms = 10000) {
        zk::ConnectRequest connect;
        connect.timeout_ms = timeout_ms;
        send_connect(connect);
        REQUIRE(backend.requests.size() == 1);
        proto::Response opened;
        opened.set_code(proto::OK);
        opened.set_applied_index(40);
        opened.mutable_open_session()->set_session_id(9);
        opened.mutable_open_session()->set_timeout_ms(
            backend.requests[0].open_session().timeout_ms());
        answer(0, opened);
        backend.requests.clear();
        output.sent.clear();
    }
    std::vector<Reply> take_replies() {
        std::vector<Reply> out;
        for (const std::string& m : messages(std::exchange(output.sent, {}))) {
            out.push_back(reply_of(m));
        }
        return out;
    }

    Output output;
    Backend backend;
    ZkFrontend frontend;
};

inline proto::Response ok(uint64_t applied = 50) {
    proto::Response r;
    r.set_code(proto::OK);
    r.set_applied_index(applied);
    return r;
}

inline zk::Request path_request(int32_t xid,
                                zk::OpCode type,
                                std::string path,
                                bool watch = false) {
    return zk::Request{xid, type, zk::PathWatchRequest{std::move(path), watch}};
}

inline zk::Request create_request(int32_t xid, std::string path, zk::CreateMode mode) {
    zk::CreateRequest body;
    body.path = std::move(path);
    body.data.emplace(1, 'd');  // (not = "d": GCC 12 at -O2 warns falsely on that)
    body.acl = {zk::Acl{zk::kPermAll, zk::Id{"world", "anyone"}}};
    body.flags = static_cast<int32_t>(mode);
    return zk::Request{xid, zk::OpCode::kCreate, std::move(body)};
}

}  // namespace raftlock::server::zk_frontend_fixture
