#include "net/admin_http.h"

#include <array>
#include <chrono>
#include <optional>
#include <sstream>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
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

// The connection's bytes are read and written by hand, not by Beast's stream algorithms, so that
// one path serves HTTP and HTTPS: with TLS, what is read goes through the TlsSession before the
// parser, and what is written comes out of it.
struct HttpConn {
    HttpConn(tcp::socket s, uint64_t id_) : stream(std::move(s)), id(id_) {}

    beast::tcp_stream stream;         // carries the per-operation deadline
    std::unique_ptr<TlsSession> tls;  // on an HTTPS port
    std::string input;                // request bytes (decrypted) not yet taken by the parser
    std::optional<http::request_parser<http::string_body>> parser;  // one per request
    std::string output;                                             // what is being written
    std::array<char, 4096> read_buffer;
    size_t drained_bytes = 0;
    uint64_t id;
    bool reading = false;  // waiting for (the rest of) a request: what a full port may evict
    bool closed = false;
};

class AdminCore : public std::enable_shared_from_this<AdminCore> {
public:
    using ConnPtr = std::shared_ptr<HttpConn>;

    AdminCore(asio::io_context& io,
              AdminHttpOptions options,
              std::map<std::string, AdminHttp::Route> routes)
        : options_(std::move(options)), routes_(std::move(routes)), acceptor_(io), retry_(io) {
        RL_ASSERT(options_.connections_max > 0);
        RL_ASSERT(options_.idle_timeout_ms > 0);
        RL_ASSERT(options_.tls == nullptr || options_.tls->role() == TlsRole::kServer);
        for (const auto& [path, route] : routes_) {
            RL_ASSERT_MSG(!path.empty() && path[0] == '/', "routes are absolute paths");
            RL_ASSERT(route != nullptr);
        }
    }

    Result<bool, std::string> start();
    uint16_t port() const { return port_; }
    void stop();
    uint64_t evicted() const { return evicted_; }
    uint64_t tls_failures() const { return tls_failures_; }
    void set_tls(std::shared_ptr<const TlsContext> tls) {
        RL_ASSERT(options_.tls != nullptr && tls != nullptr);
        options_.tls = std::move(tls);
    }

private:
    void accept();
    void on_accept(tcp::socket socket);
    bool evict_reading();
    // Waits for the next request: parses what was read already, reads more when that is not one.
    void read(const ConnPtr& c);
    void parse(const ConnPtr& c);
    void read_more(const ConnPtr& c);
    void on_bytes(const ConnPtr& c, std::string_view bytes);
    // Writes `bytes` (already encrypted on an HTTPS port), then runs `then`.
    void write(const ConnPtr& c, std::string bytes, std::function<void()> then);
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
    uint64_t tls_failures_ = 0;
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
    if (options_.tls != nullptr) {
        c->tls = TlsSession::start_server(options_.tls);
    }
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
    parse(c);
}

// The parser takes what it can of the input; the limits bound what it waits for (a request
// longer than kRequestBytesMax is an error, so the input holds at most that and one read).
void AdminCore::parse(const ConnPtr& c) {
    RL_ASSERT(c->reading && c->parser.has_value());
    while (!c->input.empty()) {
        error_code ec;
        const size_t used = c->parser->put(asio::buffer(c->input), ec);
        RL_ASSERT(used <= c->input.size());
        c->input.erase(0, used);
        if (ec == http::error::need_more) {
            break;
        }
        if (ec) {
            c->reading = false;
            HttpReply reply{400, "text/plain; charset=utf-8",
                            "bad request: " + ec.message() + "\n"};
            respond(c, std::move(reply), 11, false, false, false);
            return;
        }
        if (c->parser->is_done()) {
            c->reading = false;
            on_request(c);
            return;
        }
    }
    read_more(c);
}

void AdminCore::read_more(const ConnPtr& c) {
    c->stream.async_read_some(asio::buffer(c->read_buffer),
                              [self = shared_from_this(), c](error_code ec, size_t n) {
                                  if (self->stopped_ || c->closed) {
                                      return;
                                  }
                                  if (ec) {
                                      self->close_conn(c);  // closed by the client, reset, or idle
                                      return;
                                  }
                                  self->on_bytes(c, std::string_view(c->read_buffer.data(), n));
                              });
}

void AdminCore::on_bytes(const ConnPtr& c, std::string_view bytes) {
    if (c->tls == nullptr) {
        c->input.append(bytes);
        parse(c);
        return;
    }
    const Result<bool, std::string> fed = c->tls->feed(bytes, c->input);
    std::string out = c->tls->take_output();  // handshake messages, or the alert
    if (!fed.ok()) {
        ++tls_failures_;
        log_.log("http-tls", "admin http: closed a connection whose TLS failed: " + fed.error());
        write(c, std::move(out), [this, c] { close_conn(c); });
        return;
    }
    if (c->tls->peer_closed()) {
        close_conn(c);
        return;
    }
    if (out.empty()) {
        parse(c);
    } else {
        write(c, std::move(out), [this, c] { parse(c); });
    }
}

void AdminCore::write(const ConnPtr& c, std::string bytes, std::function<void()> then) {
    if (bytes.empty()) {
        then();
        return;
    }
    c->output = std::move(bytes);
    c->stream.expires_after(milliseconds(options_.idle_timeout_ms));
    asio::async_write(
        c->stream, asio::buffer(c->output),
        [self = shared_from_this(), c, then = std::move(then)](error_code ec, size_t) {
            if (self->stopped_ || c->closed) {
                return;
            }
            if (ec) {
                self->close_conn(c);
                return;
            }
            then();
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
    http::response<http::string_body> response;
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
    std::ostringstream text;
    text << response;
    std::string bytes = std::move(text).str();
    if (c->tls != nullptr) {
        if (const Result<bool, std::string> w = c->tls->write(bytes); !w.ok()) {
            ++tls_failures_;
            close_conn(c);
            return;
        }
        bytes = c->tls->take_output();
    }
    write(c, std::move(bytes), [this, c, keep_alive] {
        if (keep_alive) {
            read(c);
        } else {
            linger(c);
        }
    });
}

// Half-close, then read until the client closes: closing with request bytes still unread would
// send a reset, which can destroy the response (the 400 saying why) before the client reads it.
void AdminCore::linger(const ConnPtr& c) {
    if (c->tls != nullptr && !c->tls->peer_closed()) {
        c->tls->shutdown();  // close_notify after the response
        write(c, c->tls->take_output(), [this, c] {
            c->tls.reset();  // what follows is only discarded
            linger(c);
        });
        return;
    }
    error_code ignored;
    c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    c->stream.expires_after(kLingerMs);
    drain(c);
}

void AdminCore::drain(const ConnPtr& c) {
    c->stream.async_read_some(asio::buffer(c->read_buffer),
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

uint64_t AdminHttp::tls_failures() const {
    return impl_->core->tls_failures();
}

void AdminHttp::set_tls(std::shared_ptr<const TlsContext> tls) {
    impl_->core->set_tls(std::move(tls));
}

}  // namespace raftlock::net
