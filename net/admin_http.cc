#include "net/admin_http.h"

#include <array>
#include <chrono>
#include <optional>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

#include "base/assert.h"
#include "net/asio_listen.h"
#include "net/log_limiter.h"

namespace raftlock::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using std::chrono::milliseconds;

namespace {

// The whole request (line, headers and any body): admin requests are a line and a few headers.
constexpr uint32_t kRequestBytesMax = 16 * 1024;
// After the last response of a connection: read and discard at most this much, for at most
// kLingerMs, while waiting for the client to close (see linger()).
constexpr size_t kLingerBytesMax = 64 * 1024;
constexpr milliseconds kLingerMs{1000};

struct HttpConn {
    HttpConn(tcp::socket s, uint64_t id_)
        : stream(std::move(s)), buffer(kRequestBytesMax), id(id_) {}

    beast::tcp_stream stream;  // carries the per-operation deadline
    beast::flat_buffer buffer;
    std::optional<http::request_parser<http::string_body>> parser;  // one per request
    http::response<http::string_body> response;
    std::array<char, 4096> drain_buffer;
    size_t drained_bytes = 0;
    uint64_t id;
    bool reading = false;  // waiting for (the rest of) a request: what a full port may evict
    bool closed = false;
};

// True for errors that mean "the bytes are not an acceptable HTTP request" (answered 400), as
// opposed to the client going away or timing out (closed without a word).
bool is_malformed(const error_code& ec) {
    return ec.category() == http::make_error_code(http::error::bad_method).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
}

class AdminCore : public std::enable_shared_from_this<AdminCore> {
public:
    using ConnPtr = std::shared_ptr<HttpConn>;

    AdminCore(asio::io_context& io,
              AdminHttpOptions options,
              std::map<std::string, AdminHttp::Route> routes)
        : options_(std::move(options)), routes_(std::move(routes)), acceptor_(io), retry_(io) {
        RL_ASSERT(options_.connections_max > 0);
        RL_ASSERT(options_.idle_timeout_ms > 0);
        for (const auto& [path, route] : routes_) {
            RL_ASSERT_MSG(!path.empty() && path[0] == '/', "routes are absolute paths");
            RL_ASSERT(route != nullptr);
        }
    }

    Result<bool, std::string> start();
    uint16_t port() const { return port_; }
    void stop();
    uint64_t evicted() const { return evicted_; }

private:
    void accept();
    void on_accept(tcp::socket socket);
    bool evict_reading();
    void read(const ConnPtr& c);
    void on_request(const ConnPtr& c);
    void respond(const ConnPtr& c,
                 HttpReply reply,
                 unsigned version,
                 bool keep_alive,
                 bool head,
                 bool allow_header);
    void linger(const ConnPtr& c);
    void drain(const ConnPtr& c);
    void close_conn(ConnPtr c);  // by value: `c` may be the map entry it erases

    AdminHttpOptions options_;
    std::map<std::string, AdminHttp::Route> routes_;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    uint16_t port_ = 0;
    std::map<uint64_t, ConnPtr> conns_;
    uint64_t next_id_ = 1;
    uint64_t evicted_ = 0;
    bool started_ = false;
    bool stopped_ = false;
    LogLimiter log_{kRepeatedLineInterval};
};

Result<bool, std::string> AdminCore::start() {
    RL_ASSERT(!started_);
    RL_ASSERT(!stopped_);
    started_ = true;
    const std::string error = open_acceptor(acceptor_, options_.listen_host, options_.listen_port);
    if (!error.empty()) {
        return error;
    }
    port_ = acceptor_.local_endpoint().port();
    accept();
    return true;
}

void AdminCore::stop() {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
    for (auto& [id, c] : conns_) {
        c->closed = true;
        c->stream.close();
    }
    conns_.clear();
}

void AdminCore::accept() {
    accept_forever(
        shared_from_this(), acceptor_, retry_, stopped_,
        [this](tcp::socket socket) { on_accept(std::move(socket)); },
        [this](const error_code& ec) {
            log_.log("http-accept", "admin http: accept failed: " + ec.message());
        });
}

void AdminCore::on_accept(tcp::socket socket) {
    if (conns_.size() >= options_.connections_max && !evict_reading()) {
        log_.log("http-full", fmt::format("admin http: refusing connections above {}",
                                          options_.connections_max));
        error_code ignored;
        socket.close(ignored);
        return;
    }
    auto c = std::make_shared<HttpConn>(std::move(socket), next_id_++);
    conns_.emplace(c->id, c);
    read(c);
}

// Full: the oldest connection still waiting for its request goes, so idle or trickling clients
// cannot take /healthz away (issue 16, row 8); a probe sends its request as it connects, so it
// is the newest, not the oldest. False when every connection is being answered.
bool AdminCore::evict_reading() {
    for (auto& [id, c] : conns_) {  // by id: oldest first
        if (c->reading) {
            ++evicted_;
            log_.log("http-evict", fmt::format("admin http: {} connections: closing the oldest "
                                               "that has not sent a whole request",
                                               options_.connections_max));
            const ConnPtr victim = c;  // close_conn erases the map entry
            close_conn(victim);
            return true;
        }
    }
    return false;
}

void AdminCore::read(const ConnPtr& c) {
    c->reading = true;
    c->parser.emplace();
    c->parser->header_limit(kRequestBytesMax);
    c->parser->body_limit(kRequestBytesMax);
    c->stream.expires_after(milliseconds(options_.idle_timeout_ms));
    http::async_read(c->stream, c->buffer, *c->parser,
                     [self = shared_from_this(), c](error_code ec, size_t) {
                         if (self->stopped_ || c->closed) {
                             return;
                         }
                         c->reading = false;
                         if (is_malformed(ec)) {
                             HttpReply reply{400, "text/plain; charset=utf-8",
                                             "bad request: " + ec.message() + "\n"};
                             self->respond(c, std::move(reply), 11, false, false, false);
                             return;
                         }
                         if (ec) {
                             self->close_conn(c);  // closed by the client, reset, or idle
                             return;
                         }
                         self->on_request(c);
                     });
}

void AdminCore::on_request(const ConnPtr& c) {
    const http::request<http::string_body>& request = c->parser->get();
    const std::string_view target(request.target().data(), request.target().size());
    const std::string path(target.substr(0, target.find('?')));
    const bool head = request.method() == http::verb::head;
    const bool get_or_head = head || request.method() == http::verb::get;
    const auto route = routes_.find(path);
    if (route == routes_.end()) {
        respond(c, HttpReply{404, "text/plain; charset=utf-8", "no such page: " + path + "\n"},
                request.version(), request.keep_alive(), head, false);
        return;
    }
    if (!get_or_head) {
        respond(c,
                HttpReply{405, "text/plain; charset=utf-8",
                          fmt::format("{} takes GET or HEAD only\n", path)},
                request.version(), request.keep_alive(), false, true);
        return;
    }
    respond(c, route->second(), request.version(), request.keep_alive(), head, false);
}

void AdminCore::respond(const ConnPtr& c,
                        HttpReply reply,
                        unsigned version,
                        bool keep_alive,
                        bool head,
                        bool allow_header) {
    http::response<http::string_body>& response = c->response;
    response = {};
    response.version(version);
    response.result(reply.status);
    response.set(http::field::server, "raftlock");
    response.set(http::field::content_type, reply.content_type);
    if (allow_header) {
        response.set(http::field::allow, "GET, HEAD");
    }
    response.keep_alive(keep_alive);
    response.body() = std::move(reply.body);
    response.prepare_payload();
    if (head) {
        response.body().clear();  // Content-Length still says what a GET would get
    }
    c->stream.expires_after(milliseconds(options_.idle_timeout_ms));
    http::async_write(c->stream, response,
                      [self = shared_from_this(), c, keep_alive](error_code ec, size_t) {
                          if (self->stopped_ || c->closed) {
                              return;
                          }
                          if (ec) {
                              self->close_conn(c);
                          } else if (keep_alive) {
                              self->read(c);
                          } else {
                              self->linger(c);
                          }
                      });
}

// Half-close, then read until the client closes: closing with request bytes still unread would
// send a reset, which can destroy the response (the 400 saying why) before the client reads it.
void AdminCore::linger(const ConnPtr& c) {
    error_code ignored;
    c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    c->stream.expires_after(kLingerMs);
    drain(c);
}

void AdminCore::drain(const ConnPtr& c) {
    c->stream.async_read_some(asio::buffer(c->drain_buffer),
                              [self = shared_from_this(), c](error_code ec, size_t n) {
                                  if (self->stopped_ || c->closed) {
                                      return;
                                  }
                                  c->drained_bytes += n;
                                  if (ec || c->drained_bytes > kLingerBytesMax) {
                                      self->close_conn(c);
                                      return;
                                  }
                                  self->drain(c);
                              });
}

void AdminCore::close_conn(ConnPtr c) {
    if (c->closed) {
        return;
    }
    c->closed = true;
    c->stream.close();
    conns_.erase(c->id);
}

}  // namespace

class AdminHttp::Impl {
public:
    Impl(asio::io_context& io, AdminHttpOptions options, std::map<std::string, Route> routes)
        : core(std::make_shared<AdminCore>(io, std::move(options), std::move(routes))) {}
    ~Impl() { core->stop(); }

    std::shared_ptr<AdminCore> core;
};

AdminHttp::AdminHttp(asio::io_context& io,
                     AdminHttpOptions options,
                     std::map<std::string, Route> routes)
    : impl_(std::make_unique<Impl>(io, std::move(options), std::move(routes))) {}

AdminHttp::~AdminHttp() = default;

Result<bool, std::string> AdminHttp::start() {
    return impl_->core->start();
}

uint16_t AdminHttp::port() const {
    return impl_->core->port();
}

void AdminHttp::stop() {
    impl_->core->stop();
}

uint64_t AdminHttp::evicted() const {
    return impl_->core->evicted();
}

}  // namespace raftlock::net
