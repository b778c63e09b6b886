#pragma once

// The worker's side of the lab's resource protocol (docs/lock-lab.md, "How a worker talks to the
// resource server"): TCP, newline-delimited JSON, one request line answered by one reply line, in
// order. Blocking; one connection per object, so a thread that must not wait behind another (the
// loss reporter) has an object of its own.
//
// A request is never sent twice: after a send or receive error the outcome is unknown (the server
// may have logged it), and a second copy would put a duplicate line in the resource log. The
// connection is dropped and made again by the next call.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "client/endpoints.h"

namespace raftlock::labworker {

class ResourceClient {
public:
    // How long one call may wait for a connection, and then for its reply.
    static constexpr std::chrono::milliseconds kConnectWait{5000};
    static constexpr std::chrono::milliseconds kReplyWait{10000};
    static constexpr size_t kReplyBytesMax = 64 * 1024;

    explicit ResourceClient(client::Endpoint address) : address_(std::move(address)) {}
    ~ResourceClient();
    ResourceClient(const ResourceClient&) = delete;
    ResourceClient& operator=(const ResourceClient&) = delete;

    // Connects unless connected, retrying every 100 ms until `wait` has passed. False when no
    // connection could be made.
    bool connect(std::chrono::milliseconds wait);

    // Sends one request and returns the server's reply. Empty when there was no connection within
    // kConnectWait (the request was not sent) or the connection failed after sending (unknown
    // whether the server handled it); `error` then says which. A reply of the form {"error": ...}
    // (the server refused a malformed request) is returned as it is.
    std::optional<nlohmann::json> call(const nlohmann::json& request, std::string* error = nullptr);

    const client::Endpoint& address() const { return address_; }

private:
    bool connect_once(std::string& error);
    bool send_line(const std::string& line, std::string& error);
    std::optional<std::string> receive_line(std::string& error);
    void disconnect();

    client::Endpoint address_;
    int fd_ = -1;
    std::string received_;  // bytes after the last reply line (none in a well-behaved exchange)
};

}  // namespace raftlock::labworker
