#pragma once

// The admin HTTP port (Boost.Beast's parser): GET routes answered by callbacks, e.g. /status
// (JSON), /metrics (Prometheus text), /healthz, and the web console's (server/admin_console.h):
// routes that read the query string, POST routes, and asynchronous GET routes that answer later
// (a long-poll). HTTP/1.1 with keep-alive; an unknown path gets 404, a method the path does not
// take 405 with Allow; a malformed or oversized request (> 16 KiB) or query gets 400 and
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

enum class HttpMethod : uint8_t { kGet, kPost };

// A request as a route sees it. HEAD arrives as kGet (its reply's body is dropped).
struct HttpRequest {
    HttpMethod method = HttpMethod::kGet;
    std::string path;                          // without the query string
    std::map<std::string, std::string> query;  // percent-decoded; a repeated key: the last
    std::string body;                          // at most 16 KiB with the headers
    std::string authorization;                 // the Authorization header, as sent
    bool console_header = false;               // X-Raftlock-Console was sent (see add_route)
};

// A request an asynchronous route answers later, on the io_context thread. The port keeps at
// most AdminHttpOptions::parked_max of them and closes one not answered within park_timeout_ms.
class HttpPending {
public:
    virtual ~HttpPending() = default;
    // Sends the reply; false, sending nothing, when it was answered already or its connection is
    // gone (closed by the client, timed out, the port stopped).
    virtual bool reply(HttpReply reply) = 0;
    // Whether the connection still waits for the reply: a route drops those that do not.
    virtual bool waiting() const = 0;
};

struct AdminHttpOptions {
    std::string listen_host = "127.0.0.1";
    uint16_t listen_port = 0;
    size_t connections_max = 256;  // when all are taken, the oldest still without a request goes
    // A keep-alive connection with no request (or a request not finished) for this long is
    // closed; so is one whose response is not read within it.
    uint32_t idle_timeout_ms = 30000;
    std::shared_ptr<const TlsContext> tls;  // non-null: HTTPS only
    // Requests an asynchronous route left unanswered: more get 503 at once. Each holds a
    // connection, so this is also what long-polls may take of connections_max.
    size_t parked_max = 64;
    // A parked request not answered within this is closed (its route should answer sooner).
    uint32_t park_timeout_ms = 60000;
};

class AdminHttp {
public:
    using Route = std::function<HttpReply()>;
    using RequestRoute = std::function<HttpReply(const HttpRequest&)>;
    // Answers through `pending`, at once or later; a route that cannot take more parked requests
    // answers at once (503).
    using AsyncRoute = std::function<void(const HttpRequest&, std::shared_ptr<HttpPending>)>;

    // `routes` maps a path ("/status") to its GET callback.
    AdminHttp(boost::asio::io_context& io,
              AdminHttpOptions options,
              std::map<std::string, Route> routes);
    ~AdminHttp();
    AdminHttp(const AdminHttp&) = delete;
    AdminHttp& operator=(const AdminHttp&) = delete;

    // Before start(): a route for `method` at `path` (a path may take both methods). A POST must
    // carry the header X-Raftlock-Console (any value) or gets 403: a browser sends a custom
    // header across origins only after a CORS preflight, which this port never grants, so another
    // site's page cannot make a visitor's browser post to it.
    void add_route(const std::string& path, HttpMethod method, RequestRoute route);
    // Before start(): an asynchronous route (a POST one with the same header rule as above).
    void add_async_route(const std::string& path, HttpMethod method, AsyncRoute route);

    Result<bool, std::string> start();
    uint16_t port() const;
    // Requests parked by asynchronous routes now.
    size_t parked() const;
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
