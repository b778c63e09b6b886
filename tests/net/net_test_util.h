#pragma once

// Helpers for the net tests: run an io_context until a condition holds (never a blind sleep), pick
// a free loopback port, and a raw TCP client that runs on the same io_context as the server.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

namespace raftlock::net::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Runs handlers until `done()` or until `deadline` passes; true when `done()` held.
inline bool run_until(asio::io_context& io,
                      const std::function<bool()>& done,
                      std::chrono::milliseconds deadline = std::chrono::milliseconds(3000)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= end) {
            return false;
        }
        if (io.stopped()) {
            io.restart();  // ran out of work; new work may come from the test
        }
        io.run_one_for(std::chrono::milliseconds(5));
    }
    return true;
}

// Runs handlers for `duration` (to show that something does NOT happen within it).
inline void run_for(asio::io_context& io, std::chrono::milliseconds duration) {
    (void)run_until(
        io, [] { return false; }, duration);
}

// Runs every handler that is ready now.
inline void poll(asio::io_context& io) {
    if (io.stopped()) {
        io.restart();
    }
    io.poll();
}

// Connects synchronously (the kernel completes it from the listen backlog) and then reads
// asynchronously into `received` until the server closes.
class RawClient {
public:
    RawClient(asio::io_context& io, uint16_t port, int receive_buffer_bytes = 0) : socket_(io) {
        socket_.open(tcp::v4());
        if (receive_buffer_bytes > 0) {
            socket_.set_option(asio::socket_base::receive_buffer_size(receive_buffer_bytes));
        }
        socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    }
    ~RawClient() {
        state_->gone = true;
        close();
    }
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    // Starts the read loop; a client that never calls it models one that does not read.
    void start_reading() {
        state_->socket = &socket_;
        read(state_);
    }

    void write(std::string bytes) {
        auto buffer = std::make_shared<std::string>(std::move(bytes));
        auto state = state_;
        asio::async_write(socket_, asio::buffer(*buffer),
                          [buffer, state](boost::system::error_code ec, size_t) {
                              if (ec) {
                                  state->write_failed = true;
                              }
                          });
    }

    void close() {
        boost::system::error_code ignored;
        socket_.close(ignored);
    }

    const std::string& received() const { return state_->received; }
    bool closed_by_server() const { return state_->closed; }
    bool write_failed() const { return state_->write_failed; }

private:
    // Shared with pending handlers, so a RawClient may be destroyed with a read outstanding.
    struct State {
        tcp::socket* socket = nullptr;
        std::string received;
        bool closed = false;
        bool write_failed = false;
        bool gone = false;
        char buffer[16384];
    };

    static void read(const std::shared_ptr<State>& state) {
        state->socket->async_read_some(asio::buffer(state->buffer),
                                       [state](boost::system::error_code ec, size_t n) {
                                           if (state->gone) {
                                               return;
                                           }
                                           if (ec) {
                                               // As a real client does on EOF.
                                               state->closed = true;
                                               boost::system::error_code ignored;
                                               state->socket->close(ignored);
                                               return;
                                           }
                                           state->received.append(state->buffer, n);
                                           read(state);
                                       });
    }

    tcp::socket socket_;
    std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace raftlock::net::testing
