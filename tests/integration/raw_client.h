#pragma once

// A bare client-protocol connection for the integration tests: blocking socket, frames in and
// out, and the ability to send bytes that are not frames at all.

#include <cstdint>
#include <optional>
#include <string>

#include "proto/client.pb.h"

namespace raftlock::integration {

class RawConnection {
public:
    explicit RawConnection(uint16_t port);  // REQUIREs the connection
    ~RawConnection();
    RawConnection(const RawConnection&) = delete;
    RawConnection& operator=(const RawConnection&) = delete;

    void send_bytes(const std::string& bytes);
    void send(const proto::Request& request);
    // The next ServerMessage within timeout_ms; empty on timeout or when the server closed.
    std::optional<proto::ServerMessage> receive(int timeout_ms = 5000);
    // The Response with this id (skipping pushes, which are kept for take_push()).
    std::optional<proto::Response> response(uint64_t request_id, int timeout_ms = 5000);
    proto::Response call(const proto::Request& request, int timeout_ms = 10000);
    // True when the server closed the connection within timeout_ms.
    bool closed_by_server(int timeout_ms = 5000);

private:
    int fd_ = -1;
    std::string buffer_;
};

}  // namespace raftlock::integration
