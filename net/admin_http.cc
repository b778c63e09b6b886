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
    bool reading = false;         // waiting for (the rest of) a request: what a full port may evict
    bool read_in_flight = false;  // an async_read_some is outstanding
    // Its request waits for an asynchronous route's reply; meanwhile the connection is read only
    // to see it close (what arrives is kept for the next request).
    bool parked = false;
    bool lingering = false;  // after the last response: what is read is discarded (linger())
    bool closed = false;
    // The parked request's, for its reply.
    unsigned parked_version = 11;
    bool parked_keep_alive = true;
    bool parked_head = false;
};

// A path's handlers, one per method it takes.
struct RouteEntry {
    AdminHttp::RequestRoute get;
    AdminHttp::AsyncRoute async_get;
    AdminHttp::RequestRoute post;
    AdminHttp::AsyncRoute async_post;
    bool takes_get() const { return get != nullptr || async_get != nullptr; }
    bool takes_post() const { return post != nullptr || async_post != nullptr; }
};

constexpr size_t kQueryParamsMax = 32;

int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    if (ch >= 'a' && ch <= 'f') {
        return ch - 'a' + 10;
    }
    if (ch >= 'A' && ch <= 'F') {
        return ch - 'A' + 10;
    }
    return -1;
}

// application/x-www-form-urlencoded decoding: %XX and '+' for a space. Nullopt for a broken %.
std::optional<std::string> url_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '+') {
            out.push_back(' ');
        } else if (text[i] != '%') {
            out.push_back(text[i]);
        } else {
            if (i + 2 >= text.size()) {
                return std::nullopt;
            }
            const int hi = hex_value(text[i + 1]);
            const int lo = hex_value(text[i + 2]);
            if (hi < 0 || lo < 0) {
                return std::nullopt;
            }
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        }
    }
    return out;
}

// "a=1&b=%2Fx" -> {a: 1, b: /x}; nullopt, with the reason in `error`, for a broken one.
std::optional<std::map<std::string, std::string>> parse_query(std::string_view query,
                                                              std::string& error) {
    std::map<std::string, std::string> out;
    size_t params = 0;
    while (!query.empty()) {
        const size_t amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (pair.empty()) {
            continue;
        }
        if (++params > kQueryParamsMax) {
            error = fmt::format("more than {} query parameters", kQueryParamsMax);
            return std::nullopt;
        }
        const size_t eq = pair.find('=');
        std::optional<std::string> key = url_decode(pair.substr(0, eq));
        std::optional<std::string> value =
            url_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
        if (!key || !value) {
            error = "a broken %-escape in the query string";
            return std::nullopt;
        }
        out.insert_or_assign(std::move(*key), std::move(*value));
    }
    return out;
}

class AdminCore : public std::enable_shared_from_this<AdminCore> {
public:
    using ConnPtr = std::shared_ptr<HttpConn>;

    AdminCore(asio::io_context& io,
              AdminHttpOptions options,
              std::map<std::string, AdminHttp::Route> routes)
        : options_(std::move(options)), acceptor_(io), retry_(io) {
        RL_ASSERT(options_.connections_max > 0);
        RL_ASSERT(options_.idle_timeout_ms > 0);
        RL_ASSERT(options_.park_timeout_ms > 0);
        RL_ASSERT(options_.tls == nullptr || options_.tls->role() == TlsRole::kServer);
        for (auto& [path, route] : routes) {
            RL_ASSERT(route != nullptr);
            entry(path).get = [route = std::move(route)](const HttpRequest&) { return route(); };
        }
    }

    // The entry of `path`, made when new (before start()).
    RouteEntry& entry(const std::string& path) {
        RL_ASSERT(!started_);
        RL_ASSERT_MSG(!path.empty() && path[0] == '/', "routes are absolute paths");
        return routes_[path];
    }
    size_t parked() const { return parked_; }
    // HttpPending::reply: answers `c` if it still waits.
    bool reply_parked(const ConnPtr& c, HttpReply reply);

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
    void park(const ConnPtr& c, const AdminHttp::AsyncRoute& route, const HttpRequest& request);
    void respond(const ConnPtr& c,
                 HttpReply reply,
                 unsigned version,
                 bool keep_alive,
                 bool head,
                 const std::string& allow);
    void linger(const ConnPtr& c);
    void close_conn(ConnPtr c);  // by value: `c` may be the map entry it erases

    AdminHttpOptions options_;
    std::map<std::string, RouteEntry> routes_;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    uint16_t port_ = 0;
    std::map<uint64_t, ConnPtr> conns_;
    uint64_t next_id_ = 1;
    uint64_t evicted_ = 0;
    uint64_t tls_failures_ = 0;
    size_t parked_ = 0;  // connections with parked == true
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
        c->parked = false;
        c->stream.close();
    }
    conns_.clear();
    parked_ = 0;
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
            respond(c, std::move(reply), 11, false, false, "");
            return;
        }
        if (c->parser->is_done()) {
            c->reading = false;
            on_request(c);
            return;
        }
    }
    if (!c->read_in_flight) {  // else the read started while parked brings the rest
        read_more(c);
    }
}

// One read at a time per connection; what it brings goes where the connection is: to the parser,
// kept while a reply is pending, or discarded while lingering.
void AdminCore::read_more(const ConnPtr& c) {
    RL_ASSERT(!c->read_in_flight);
    c->read_in_flight = true;
    c->stream.async_read_some(asio::buffer(c->read_buffer),
                              [self = shared_from_this(), c](error_code ec, size_t n) {
                                  c->read_in_flight = false;
                                  if (self->stopped_ || c->closed) {
                                      return;
                                  }
                                  if (c->lingering) {
                                      c->drained_bytes += n;
                                      if (ec || c->drained_bytes > kLingerBytesMax) {
                                          self->close_conn(c);
                                          return;
                                      }
                                      self->read_more(c);
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
    std::string out;
    if (c->tls == nullptr) {
        c->input.append(bytes);
    } else {
        const Result<bool, std::string> fed = c->tls->feed(bytes, c->input);
        out = c->tls->take_output();  // handshake messages, or the alert
        if (!fed.ok()) {
            ++tls_failures_;
            log_.log("http-tls",
                     "admin http: closed a connection whose TLS failed: " + fed.error());
            if (c->reading) {
                write(c, std::move(out), [this, c] { close_conn(c); });
            } else {
                close_conn(c);
            }
            return;
        }
        if (c->tls->peer_closed()) {
            close_conn(c);
            return;
        }
    }
    if (!c->reading) {
        // Parked, or its reply being written: bytes of a next request wait in the input (bounded
        // like a request); a TLS record that wants an answer now cannot have one, as the reply
        // may be on its way.
        if (!out.empty() || c->input.size() > kRequestBytesMax) {
            close_conn(c);
            return;
        }
        if (c->parked) {
            read_more(c);  // to see the client go while it waits
        }
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

// "GET, HEAD", "POST" or both: what a path takes, for a 405's Allow header.
std::string allowed_methods(const RouteEntry& route) {
    if (route.takes_get() && route.takes_post()) {
        return "GET, HEAD, POST";
    }
    return route.takes_get() ? "GET, HEAD" : "POST";
}

void AdminCore::on_request(const ConnPtr& c) {
    const http::request<http::string_body>& message = c->parser->get();
    const std::string_view target(message.target().data(), message.target().size());
    const size_t question = target.find('?');
    const std::string path(target.substr(0, question));
    const bool head = message.method() == http::verb::head;
    const bool get = head || message.method() == http::verb::get;
    const bool post = message.method() == http::verb::post;
    const unsigned version = message.version();
    const bool keep_alive = message.keep_alive();
    const auto found = routes_.find(path);
    if (found == routes_.end()) {
        respond(c, HttpReply{404, "text/plain; charset=utf-8", "no such page: " + path + "\n"},
                version, keep_alive, head, "");
        return;
    }
    const RouteEntry& route = found->second;
    if ((get && !route.takes_get()) || (post && !route.takes_post()) || (!get && !post)) {
        const std::string allow = allowed_methods(route);
        respond(c,
                HttpReply{405, "text/plain; charset=utf-8",
                          fmt::format("{} takes {} only\n", path,
                                      allow == "GET, HEAD" ? "GET or HEAD" : allow)},
                version, keep_alive, false, allow);
        return;
    }
    HttpRequest request;
    request.method = post ? HttpMethod::kPost : HttpMethod::kGet;
    request.path = path;
    std::string error;
    if (question != std::string_view::npos) {
        auto query = parse_query(target.substr(question + 1), error);
        if (!query) {
            respond(c, HttpReply{400, "text/plain; charset=utf-8", "bad request: " + error + "\n"},
                    version, keep_alive, head, "");
            return;
        }
        request.query = std::move(*query);
    }
    request.body = message.body();
    if (const auto auth = message.find(http::field::authorization); auth != message.end()) {
        request.authorization = std::string(auth->value());
    }
    request.console_header = message.find("X-Raftlock-Console") != message.end();
    if (post && !request.console_header) {
        respond(c,
                HttpReply{403, "text/plain; charset=utf-8",
                          "a POST must carry the header X-Raftlock-Console (curl -H "
                          "'X-Raftlock-Console: 1'): this port takes no cross-site posts\n"},
                version, keep_alive, false, "");
        return;
    }
    const AdminHttp::AsyncRoute& async = post ? route.async_post : route.async_get;
    if (async != nullptr) {
        c->parked_version = version;
        c->parked_keep_alive = keep_alive;
        c->parked_head = head;
        park(c, async, request);
        return;
    }
    const AdminHttp::RequestRoute& handler = post ? route.post : route.get;
    respond(c, handler(request), version, keep_alive, head, "");
}

class ParkedRequest final : public HttpPending {
public:
    ParkedRequest(std::weak_ptr<AdminCore> core, std::weak_ptr<HttpConn> conn)
        : core_(std::move(core)), conn_(std::move(conn)) {}

    bool reply(HttpReply reply) override {
        const std::shared_ptr<AdminCore> core = core_.lock();
        const std::shared_ptr<HttpConn> conn = conn_.lock();
        if (core == nullptr || conn == nullptr || answered_) {
            return false;
        }
        answered_ = true;
        return core->reply_parked(conn, std::move(reply));
    }
    bool waiting() const override {
        const std::shared_ptr<HttpConn> conn = conn_.lock();
        return !answered_ && conn != nullptr && conn->parked && !conn->closed;
    }

private:
    std::weak_ptr<AdminCore> core_;
    std::weak_ptr<HttpConn> conn_;
    bool answered_ = false;
};

// The route answers through the ParkedRequest, maybe before it returns; until then the
// connection is read only to see it close, and closed at park_timeout_ms.
void AdminCore::park(const ConnPtr& c,
                     const AdminHttp::AsyncRoute& route,
                     const HttpRequest& request) {
    RL_ASSERT(!c->parked);
    RL_ASSERT(!c->reading);
    if (parked_ >= options_.parked_max) {
        log_.log("http-parked", fmt::format("admin http: {} requests already wait for a reply",
                                            options_.parked_max));
        respond(c,
                HttpReply{
                    503, "text/plain; charset=utf-8",
                    fmt::format("{} requests already wait here; try again\n", options_.parked_max)},
                c->parked_version, c->parked_keep_alive, c->parked_head, "");
        return;
    }
    c->parked = true;
    ++parked_;
    route(request, std::make_shared<ParkedRequest>(weak_from_this(), c));
    if (!c->parked || c->closed) {
        return;  // answered already
    }
    c->stream.expires_after(milliseconds(options_.park_timeout_ms));
    if (!c->read_in_flight) {
        read_more(c);
    }
}

bool AdminCore::reply_parked(const ConnPtr& c, HttpReply reply) {
    if (stopped_ || c->closed || !c->parked) {
        return false;
    }
    c->parked = false;
    RL_ASSERT(parked_ > 0);
    --parked_;
    respond(c, std::move(reply), c->parked_version, c->parked_keep_alive, c->parked_head, "");
    return true;
}

void AdminCore::respond(const ConnPtr& c,
                        HttpReply reply,
                        unsigned version,
                        bool keep_alive,
                        bool head,
                        const std::string& allow) {
    http::response<http::string_body> response;
    response.version(version);
    response.result(reply.status);
    response.set(http::field::server, "raftlock");
    response.set(http::field::content_type, reply.content_type);
    if (!allow.empty()) {
        response.set(http::field::allow, allow);
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
    c->lingering = true;
    if (!c->read_in_flight) {  // else the read in flight drains (read_more)
        read_more(c);
    }
}

void AdminCore::close_conn(ConnPtr c) {
    if (c->closed) {
        return;
    }
    c->closed = true;
    if (c->parked) {
        c->parked = false;
        RL_ASSERT(parked_ > 0);
        --parked_;
    }
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

void AdminHttp::add_route(const std::string& path, HttpMethod method, RequestRoute route) {
    RL_ASSERT(route != nullptr);
    RouteEntry& entry = impl_->core->entry(path);
    const bool post = method == HttpMethod::kPost;
    RL_ASSERT_MSG(post ? !entry.takes_post() : !entry.takes_get(), "one route per path and method");
    (post ? entry.post : entry.get) = std::move(route);
}

void AdminHttp::add_async_route(const std::string& path, HttpMethod method, AsyncRoute route) {
    RL_ASSERT(route != nullptr);
    RouteEntry& entry = impl_->core->entry(path);
    const bool post = method == HttpMethod::kPost;
    RL_ASSERT_MSG(post ? !entry.takes_post() : !entry.takes_get(), "one route per path and method");
    (post ? entry.async_post : entry.async_get) = std::move(route);
}

size_t AdminHttp::parked() const {
    return impl_->core->parked();
}

uint64_t AdminHttp::tls_failures() const {
    return impl_->core->tls_failures();
}

void AdminHttp::set_tls(std::shared_ptr<const TlsContext> tls) {
    impl_->core->set_tls(std::move(tls));
}

}  // namespace raftlock::net
