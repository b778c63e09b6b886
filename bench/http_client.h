#pragma once

// A minimal HTTP/1.1 client for etcd's JSON gateway: POST with a JSON body over one keep-alive
// connection, responses with Content-Length or chunked bodies, and a streaming mode for /v3/watch
// (one long chunked response read piece by piece). No TLS, no redirects, no pipelining.

#include <chrono>
#include <string>

#include "bench/tcp_stream.h"

namespace raftlock::bench {

struct HttpResponse {
    int status = 0;
    std::string body;
};

class HttpClient {
public:
    HttpClient(HostPort server, std::chrono::milliseconds io_timeout)
        : server_(std::move(server)), io_timeout_(io_timeout) {}

    // POST `path` and read the whole response. A keep-alive connection the server closed while
    // idle is reopened once, but only when nothing of the response arrived.
    Result<HttpResponse, std::string> post(const std::string& path, const std::string& body);

    // POST `path` and read only the status and headers; then next_chunk() returns the body's
    // chunks as they arrive. Needs a chunked response.
    Result<int, std::string> post_stream(const std::string& path, const std::string& body);
    Result<Text, std::string> next_chunk();

    void shutdown() { stream_.shutdown(); }

    static constexpr size_t kHeadersMax = 100;
    static constexpr size_t kBodyBytesMax = 64 << 20;

private:
    struct Head {
        int status = 0;
        bool chunked = false;
        bool close = false;
        size_t content_length = 0;
    };
    Status send_request(const std::string& path, const std::string& body);
    Result<Head, std::string> read_head();
    Status read_body(const Head& head, std::string& out);

    HostPort server_;
    std::chrono::milliseconds io_timeout_;
    TcpStream stream_;
    std::string request_;
};

}  // namespace raftlock::bench
