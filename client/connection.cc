#include "client/connection.h"

#include <array>
#include <deque>
#include <mutex>
#include <string_view>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <sys/socket.h>

#include "base/assert.h"
#include "base/scram.h"
#include "net/frame.h"
#include "proto/client.pb.h"

namespace raftlock::client {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

class TcpConnection final : public Connection, public std::enable_shared_from_this<TcpConnection> {
public:
    TcpConnection(asio::io_context& io,
                  Endpoint endpoint,
                  const ConnectionOptions& options,
                  ConnectionHandlers handlers)
        : endpoint_(std::move(endpoint)),
          options_(options),
          handlers_(std::move(handlers)),
          resolver_(io),
          socket_(io),
          connect_timer_(io),
          decoder_(options.frame_bytes_max) {}

    void start() {
        RL_ASSERT(options_.serial != nullptr);
        connect_timer_.expires_after(options_.connect_timeout);
        connect_timer_.async_wait([self = shared_from_this()](const error_code& ec) {
            const std::lock_guard lock(*self->options_.serial);
            if (!ec && !self->closed_ && !self->connected_) {
                self->fail(fmt::format("connect to {} timed out after {} ms",
                                       to_string(self->endpoint_),
                                       self->options_.connect_timeout.count()));
            }
        });
        resolver_.async_resolve(
            endpoint_.host, std::to_string(endpoint_.port),
            [self = shared_from_this()](const error_code& ec, tcp::resolver::results_type results) {
                const std::lock_guard lock(*self->options_.serial);
                self->on_resolved(ec, std::move(results));
            });
    }

    void send(const proto::Request& request) override {
        RL_ASSERT(connected_);
        send_frame(request);
    }

    void close() override {
        if (closed_) {
            return;
        }
        closed_ = true;
        shutdown_socket();
    }

    const Endpoint& endpoint() const override { return endpoint_; }

private:
    // The request id of the login's requests; the library numbers its calls from 1 up.
    static constexpr uint64_t kLoginRequestId = UINT64_MAX;

    void send_frame(const proto::Request& request) {
        if (closed_) {
            return;
        }
        std::string frame;
        net::append_frame(frame, request.SerializeAsString());
        if (tls_ != nullptr) {
            if (auto w = tls_->write(frame); !w.ok()) {
                fail_tls(w.error());
                return;
            }
            frame = tls_->take_output();
        }
        send_bytes(std::move(frame));
    }

    // Bytes as they go on the wire (ciphertext on a TLS connection). With nothing queued before
    // them the kernel takes them now, on the calling thread; asio::async_write would post its
    // completion to the network thread even when its first write sent everything, a wake-up per
    // request (decision 0022). What the kernel does not take waits in the queue, in order.
    void send_bytes(std::string frame) {
        if (frame.empty()) {
            return;
        }
        if (write_queue_.empty()) {
            const size_t sent = send_now(frame);
            if (sent == frame.size()) {
                return;
            }
            frame.erase(0, sent);
        }
        queued_bytes_ += frame.size();
        if (queued_bytes_ > options_.send_queue_bytes_max) {
            fail(fmt::format("send queue to {} exceeded {} bytes", to_string(endpoint_),
                             options_.send_queue_bytes_max));
            return;
        }
        write_queue_.push_back(std::move(frame));
        if (write_queue_.size() == 1) {
            write_next();
        }
    }

    // What a non-blocking send took of `bytes`: 0 when the socket is full or failed, in which
    // case the queued write meets the same state and reports it.
    size_t send_now(std::string_view bytes) {
        RL_ASSERT(socket_.is_open());
        const ssize_t sent = ::send(socket_.native_handle(), bytes.data(), bytes.size(),
                                    MSG_DONTWAIT | MSG_NOSIGNAL);
        RL_ASSERT(sent <= static_cast<ssize_t>(bytes.size()));
        return sent > 0 ? static_cast<size_t>(sent) : 0;
    }

    void on_resolved(const error_code& ec, tcp::resolver::results_type results) {
        if (closed_) {
            return;
        }
        if (ec) {
            fail(fmt::format("cannot resolve {}: {}", endpoint_.host, ec.message()));
            return;
        }
        asio::async_connect(
            socket_, results,
            [self = shared_from_this()](const error_code& ec, const tcp::endpoint&) {
                const std::lock_guard lock(*self->options_.serial);
                self->on_connect(ec);
            });
    }

    void on_connect(const error_code& ec) {
        if (closed_) {
            return;
        }
        if (ec) {
            fail(fmt::format("connect to {}: {}", to_string(endpoint_), ec.message()));
            return;
        }
        error_code ignored;
        socket_.set_option(tcp::no_delay(true), ignored);
        if (options_.tls != nullptr) {
            // Connected once the handshake is done: the connect timer keeps running until then.
            tls_ = std::make_unique<net::TlsSession>(options_.tls, endpoint_.host);
            if (auto started = tls_->start(); !started.ok()) {
                fail_tls(started.error());
                return;
            }
            send_bytes(tls_->take_output());
            if (!closed_) {
                read_next();
            }
            return;
        }
        transport_up();
        if (!closed_) {
            read_next();
        }
    }

    // The transport is up: log in first when there is a user, else connected at once.
    void transport_up() {
        if (options_.user.empty()) {
            connected();
            return;
        }
        login_ = std::make_unique<base::scram::ClientExchange>(options_.user, options_.password,
                                                               base::scram::random_nonce());
        send_login(login_->client_first());
    }

    void send_login(const std::string& data) {
        proto::Request request;
        request.set_request_id(kLoginRequestId);
        request.mutable_authenticate()->set_mechanism("SCRAM-SHA-256");
        request.mutable_authenticate()->set_data(data);
        send_frame(request);
    }

    // One answer of the login; false when the connection failed.
    bool on_login_answer(const proto::ServerMessage& message) {
        const proto::Response& r = message.response();
        if (!message.has_response() || r.request_id() != kLoginRequestId) {
            fail(fmt::format("{} answered the login with something else", to_string(endpoint_)),
                 true);
            return false;
        }
        if (r.code() != proto::OK || !r.has_authenticate()) {
            const std::string reason = fmt::format(
                "login to {} as \"{}\" refused: {}", to_string(endpoint_), options_.user,
                r.message().empty() ? proto::Code_Name(r.code()) : r.message());
            if (r.code() == proto::PERMISSION_DENIED && handlers_.on_login_refused) {
                closed_ = true;
                shutdown_socket();
                auto self = shared_from_this();  // the handler may drop the last reference
                handlers_.on_login_refused(reason);
            } else {
                fail(reason, true);
            }
            return false;
        }
        // Each step once, in order: a node that skips or repeats one is not believed (and the
        // exchange's steps must not be called out of order).
        if (r.authenticate().done() != login_challenged_) {
            fail(fmt::format("{} answered the login out of order", to_string(endpoint_)), true);
            return false;
        }
        if (!login_challenged_) {
            login_challenged_ = true;
            auto final_message = login_->server_first(r.authenticate().data());
            if (!final_message.ok()) {
                fail(fmt::format("login to {}: {}", to_string(endpoint_),
                                 final_message.error().message),
                     true);
                return false;
            }
            send_login(*final_message);
            return !closed_;
        }
        if (auto verified = login_->server_final(r.authenticate().data()); !verified.ok()) {
            fail(fmt::format("login to {}: {}", to_string(endpoint_), verified.error().message),
                 true);
            return false;
        }
        login_.reset();
        connected();
        return !closed_;
    }

    void connected() {
        connected_ = true;
        connect_timer_.cancel();
        handlers_.on_connected();
    }

    void read_next() {
        socket_.async_read_some(asio::buffer(read_buffer_),
                                [self = shared_from_this()](const error_code& ec, size_t bytes) {
                                    const std::lock_guard lock(*self->options_.serial);
                                    self->on_read(ec, bytes);
                                });
    }

    void on_read(const error_code& ec, size_t bytes) {
        if (closed_) {
            return;
        }
        if (ec) {
            if (ec != asio::error::eof) {
                fail(fmt::format("read from {}: {}", to_string(endpoint_), ec.message()));
            } else if (!received_any_ && tls_ == nullptr) {
                // What a TLS port does to a client that speaks in the clear (it sends no alert
                // one could read), and also a node that went away at once.
                fail(
                    fmt::format("{} closed the connection without a word: does it speak TLS "
                                "(give its CA: --cacert, ClientOptions::tls)?",
                                to_string(endpoint_)));
            } else {
                fail(fmt::format("{} closed the connection", to_string(endpoint_)));
            }
            return;
        }
        received_any_ = true;
        std::string_view received(read_buffer_.data(), bytes);
        std::string plaintext;
        if (tls_ != nullptr) {
            const auto fed = tls_->feed(received, plaintext);
            send_bytes(tls_->take_output());  // handshake messages, or the alert of a failure
            if (!fed.ok()) {
                fail_tls(fed.error());
                return;
            }
            if (closed_) {
                return;
            }
            received = plaintext;
            if (!connected_ && login_ == nullptr && tls_->handshake_done()) {
                transport_up();
                if (closed_) {
                    return;  // the handler closed us, or the login could not start
                }
            }
        }
        decoder_.feed(received);
        if (!drain_frames()) {
            return;
        }
        // close_notify: after the replies that came with it.
        if (tls_ != nullptr && tls_->peer_closed()) {
            fail(fmt::format("{} closed the connection", to_string(endpoint_)));
            return;
        }
        read_next();
    }

    // Delivers every whole frame; false when the connection failed (garbage or closed meanwhile).
    bool drain_frames() {
        for (;;) {
            std::string_view payload;
            const auto state = decoder_.next(payload);
            if (state == net::FrameDecoder::State::kNeedMore) {
                return true;
            }
            if (state == net::FrameDecoder::State::kTooLarge) {
                fail(fmt::format("{} sent a frame of {} bytes, above the limit of {}",
                                 to_string(endpoint_), decoder_.rejected_length(),
                                 decoder_.frame_bytes_max()));
                return false;
            }
            proto::ServerMessage message;
            if (!message.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
                fail(
                    fmt::format("{} sent bytes that are not a ServerMessage: is it a raftlockd "
                                "client port?",
                                to_string(endpoint_)));
                return false;
            }
            if (login_ != nullptr) {
                if (!on_login_answer(message)) {
                    return false;
                }
                continue;
            }
            handlers_.on_message(std::move(message));
            if (closed_) {
                return false;  // the handler closed us
            }
        }
    }

    void write_next() {
        asio::async_write(socket_, asio::buffer(write_queue_.front()),
                          [self = shared_from_this()](const error_code& ec, size_t) {
                              const std::lock_guard lock(*self->options_.serial);
                              self->on_written(ec);
                          });
    }

    void on_written(const error_code& ec) {
        if (closed_) {
            return;
        }
        if (ec) {
            fail(fmt::format("write to {}: {}", to_string(endpoint_), ec.message()));
            return;
        }
        queued_bytes_ -= write_queue_.front().size();
        write_queue_.pop_front();
        if (!write_queue_.empty()) {
            write_next();
        }
    }

    // `refused`: the node would not have us (a TLS failure), whether or not a connection stood.
    void fail(const std::string& reason, bool refused = false) {
        if (closed_) {
            return;
        }
        closed_ = true;
        shutdown_socket();
        // The owner may drop its last reference inside the handler; we live on through `self`.
        auto self = shared_from_this();
        handlers_.on_closed(connected_ && !refused, reason);
    }

    // A TLS failure is a refusal even after our side of the handshake completed: under TLS 1.3
    // the node's verdict on our certificate (none, or of another CA) arrives after it, as an
    // alert. Trying again would only meet it again.
    void fail_tls(const std::string& error) {
        fail(fmt::format("TLS with {}: {}", to_string(endpoint_), error), true);
    }

    void shutdown_socket() {
        error_code ignored;
        connect_timer_.cancel();
        resolver_.cancel();
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }

    Endpoint endpoint_;
    ConnectionOptions options_;
    ConnectionHandlers handlers_;
    tcp::resolver resolver_;
    tcp::socket socket_;
    asio::steady_timer connect_timer_;
    net::FrameDecoder decoder_;
    std::unique_ptr<net::TlsSession> tls_;  // with options_.tls, once the TCP connect succeeded
    std::unique_ptr<base::scram::ClientExchange> login_;  // while logging in
    bool login_challenged_ = false;                       // the node's server-first-message came
    std::array<char, 64 * 1024> read_buffer_{};
    std::deque<std::string> write_queue_;
    size_t queued_bytes_ = 0;
    bool connected_ = false;
    bool closed_ = false;
    bool received_any_ = false;
};

}  // namespace

std::shared_ptr<Connection> start_connection(boost::asio::io_context& io,
                                             Endpoint endpoint,
                                             const ConnectionOptions& options,
                                             ConnectionHandlers handlers) {
    auto connection =
        std::make_shared<TcpConnection>(io, std::move(endpoint), options, std::move(handlers));
    connection->start();
    return connection;
}

}  // namespace raftlock::client
