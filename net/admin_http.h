#pragma once

// The admin HTTP port (Boost.Beast's parser): GET routes answered by callbacks, e.g. /status
// (JSON), /metrics (Prometheus text), /healthz. HTTP/1.1 with keep-alive; anything other than
// GET/HEAD of a known route gets 404/405; a malformed or oversized request (> 16 KiB) gets 400 and
// the connection is closed. HTTPS with options.tls (net/tls.h): then every connection speaks TLS,
// and one whose handshake fails is closed (tls_failures()). Threads: the io_context's, callbacks
// included. Beast lives in the .cc.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/result.h"
#include "net/tls.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace raftlock::net {

struct HttpReply {
    unsigned status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
};

struct AdminHttpOptions {
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 0;
    size_t connections_max = 256;  // when all are taken, the oldest still without a request goes
    // A keep-alive connection with no request (or a request not finished) for this long is
    // closed; so is one whose response is not read within it.
    uint32_t idle_timeout_ms = 30000;
    std::shared_ptr<const TlsContext> tls;  // non-null: HTTPS only
};

class AdminHttp {
public:
    using Route = std::function<HttpReply()>;

    // `routes` maps a path ("/status") to its callback.
    AdminHttp(boost::asio::io_context& io,
              AdminHttpOptions options,
              std::map<std::string, Route> routes);
    ~AdminHttp();
    AdminHttp(const AdminHttp&) = delete;
    AdminHttp& operator=(const AdminHttp&) = delete;

    Result<bool, std::string> start();
    uint16_t port() const;
    void stop();
    // Connections closed while still waiting for a request, to make room for a new one when all
    // connections_max were taken.
    uint64_t evicted() const;
    // Connections closed because their TLS handshake or a record failed.
    uint64_t tls_failures() const;
    // The TLS context for new connections: a reloaded certificate. Only on an HTTPS port.
    void set_tls(std::shared_ptr<const TlsContext> tls);

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace raftlock::net
