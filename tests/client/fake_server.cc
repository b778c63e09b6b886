#include "fake_server.h"

#include <array>
#include <map>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "net/frame.h"

namespace raftlock::client::testing {

namespace asio = boost::asio;
using asio::ip::tcp;

class FakeServer::Impl {
public:
    explicit Impl(FakeServer& owner)
        : owner_(owner), acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
        port_ = acceptor_.local_endpoint().port();
        accept_next();
        thread_ = std::thread([this] { io_.run(); });
    }

    ~Impl() {
        asio::post(io_, [this] {
            boost::system::error_code ignored;
            acceptor_.close(ignored);
            for (auto& [id, conn] : conns_) {
                conn->socket.close(ignored);
            }
            conns_.clear();
            io_.stop();
        });
        thread_.join();
    }

    struct Conn {
        explicit Conn(asio::io_context& io) : socket(io), decoder(64u << 20) {}
        tcp::socket socket;
        net::FrameDecoder decoder;
        std::array<char, 4096> buffer{};
    };

    void accept_next() {
        acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
            if (ec) {
                return;
            }
            const uint64_t id = next_conn_++;
            auto conn = std::make_shared<Conn>(io_);
            conn->socket = std::move(socket);
            conns_[id] = conn;
            {
                std::lock_guard lock(mu_);
                accepted_++;
            }
            read(id, conn);
            accept_next();
        });
    }

    void read(uint64_t id, const std::shared_ptr<Conn>& conn) {
        conn->socket.async_read_some(
            asio::buffer(conn->buffer),
            [this, id, conn](const boost::system::error_code& ec, size_t bytes) {
                if (ec) {
                    conns_.erase(id);
                    return;
                }
                conn->decoder.feed(std::string_view(conn->buffer.data(), bytes));
                std::string_view payload;
                while (conn->decoder.next(payload) == net::FrameDecoder::State::kFrame) {
                    proto::Request request;
                    request.ParseFromArray(payload.data(), static_cast<int>(payload.size()));
                    deliver(id, request);
                    if (!conns_.contains(id)) {
                        return;  // the handler dropped it
                    }
                }
                read(id, conn);
            });
    }

    void deliver(uint64_t id, const proto::Request& request) {
        Handler handler;
        {
            std::lock_guard lock(mu_);
            received_.push_back(Received{id, request, SteadyClock::now()});
            handler = handler_;
        }
        changed_.notify_all();
        if (handler) {
            handler(owner_, id, request);
        } else {
            owner_.reply(id, ok_response(request));
        }
    }

    void send(uint64_t id, const proto::ServerMessage& message) {
        auto it = conns_.find(id);
        if (it == conns_.end()) {
            return;
        }
        auto frame = std::make_shared<std::string>();
        net::append_frame(*frame, message.SerializeAsString());
        asio::async_write(it->second->socket, asio::buffer(*frame),
                          [frame](const boost::system::error_code&, size_t) {});
    }

    void drop_all() {
        boost::system::error_code ignored;
        for (auto& [id, conn] : conns_) {
            conn->socket.shutdown(tcp::socket::shutdown_both, ignored);
            conn->socket.close(ignored);
        }
        conns_.clear();
    }

    FakeServer& owner_;
    asio::io_context io_;
    tcp::acceptor acceptor_;
    uint16_t port_ = 0;
    std::thread thread_;
    std::map<uint64_t, std::shared_ptr<Conn>> conns_;  // server thread only
    uint64_t next_conn_ = 1;

    mutable std::mutex mu_;
    mutable std::condition_variable changed_;
    std::vector<Received> received_;
    size_t accepted_ = 0;
    Handler handler_;
};

FakeServer::FakeServer() : impl_(std::make_unique<Impl>(*this)) {}
FakeServer::~FakeServer() = default;

Endpoint FakeServer::endpoint() const {
    return Endpoint{"127.0.0.1", impl_->port_};
}

void FakeServer::set_handler(Handler handler) {
    std::lock_guard lock(impl_->mu_);
    impl_->handler_ = std::move(handler);
}

void FakeServer::send(uint64_t conn, const proto::ServerMessage& message) {
    asio::post(impl_->io_, [this, conn, message] { impl_->send(conn, message); });
}

void FakeServer::reply(uint64_t conn, const proto::Response& response) {
    proto::ServerMessage message;
    *message.mutable_response() = response;
    send(conn, message);
}

void FakeServer::drop_connections() {
    asio::post(impl_->io_, [this] { impl_->drop_all(); });
}

void FakeServer::close_listener() {
    asio::post(impl_->io_, [this] {
        boost::system::error_code ignored;
        impl_->acceptor_.close(ignored);
    });
}

std::vector<Received> FakeServer::received() const {
    std::lock_guard lock(impl_->mu_);
    return impl_->received_;
}

size_t FakeServer::accepted() const {
    std::lock_guard lock(impl_->mu_);
    return impl_->accepted_;
}

bool FakeServer::wait_until(const std::function<bool(const std::vector<Received>&)>& done,
                            std::chrono::milliseconds timeout) const {
    std::unique_lock lock(impl_->mu_);
    return impl_->changed_.wait_for(lock, timeout, [&] { return done(impl_->received_); });
}

proto::Response FakeServer::ok_response(const proto::Request& request) {
    proto::Response response;
    response.set_request_id(request.request_id());
    response.set_code(proto::OK);
    switch (request.body_case()) {
        case proto::Request::kOpenSession:
            response.mutable_open_session()->set_session_id(1000);
            response.mutable_open_session()->set_timeout_ms(request.open_session().timeout_ms());
            break;
        case proto::Request::kAttachSession:
            response.mutable_attach_session()->set_first_seq(1000);
            response.mutable_attach_session()->set_timeout_ms(10000);
            break;
        case proto::Request::kAcquire:
            response.mutable_lock()->set_outcome(proto::LOCK_GRANTED);
            response.mutable_lock()->set_token(77);
            response.mutable_lock()->set_hold_count(1);
            break;
        case proto::Request::kRelease:
            response.mutable_lock()->set_outcome(proto::LOCK_RELEASED);
            break;
        case proto::Request::kCancel:
            response.mutable_lock()->set_outcome(proto::LOCK_CANCELLED);
            break;
        case proto::Request::kGet:
            response.mutable_get()->set_data("v");
            response.mutable_get()->mutable_stat()->set_mzxid(5);
            break;
        case proto::Request::kExists:
            response.mutable_exists()->set_exists(true);
            response.mutable_exists()->mutable_stat()->set_mzxid(5);
            break;
        case proto::Request::kChildren:
            response.mutable_children()->add_names("a");
            break;
        case proto::Request::kCreate:
            response.mutable_node()->set_path(request.create().path());
            break;
        case proto::Request::kNodeStatus:
            response.mutable_node_status()->set_id(1);
            response.mutable_node_status()->set_role("leader");
            break;
        default:
            break;
    }
    return response;
}

uint16_t unused_port() {
    asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const uint16_t port = acceptor.local_endpoint().port();
    acceptor.close();
    return port;
}

size_t count_body(const std::vector<Received>& received, proto::Request::BodyCase body) {
    size_t n = 0;
    for (const Received& r : received) {
        if (r.request.body_case() == body) {
            n++;
        }
    }
    return n;
}

}  // namespace raftlock::client::testing
