#pragma once

// Internal to net/: opening a listening socket the same way for every port (peer, client, admin).
// Includes Asio, so only net/*.cc include this header.

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

namespace raftlock::net {

// Opens, binds and listens `acceptor` on host:port. Empty on success, else "host:port: cause".
// `host` must be an IP address: a listener binds to an interface, not to a name.
inline std::string open_acceptor(boost::asio::ip::tcp::acceptor& acceptor,
                                 const std::string& host,
                                 uint16_t port) {
    using boost::asio::ip::tcp;
    const std::string where = fmt::format("{}:{}", host, port);
    boost::system::error_code ec;
    const boost::asio::ip::address address = boost::asio::ip::make_address(host, ec);
    if (ec) {
        return where + ": not an IP address (" + ec.message() + ")";
    }
    const tcp::endpoint endpoint(address, port);
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) {
        // A restarted node must get its port back while old connections sit in TIME_WAIT.
        acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    }
    if (!ec) {
        acceptor.bind(endpoint, ec);
    }
    if (!ec) {
        acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
        boost::system::error_code ignored;
        acceptor.close(ignored);
        return where + ": " + ec.message();
    }
    return "";
}

// "address:port" of the socket's peer, or "?" when it is already gone.
inline std::string remote_text(const boost::asio::ip::tcp::socket& socket) {
    boost::system::error_code ec;
    const boost::asio::ip::tcp::endpoint ep = socket.remote_endpoint(ec);
    if (ec) {
        return "?";
    }
    return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

// How long a failed accept (e.g. out of file descriptors) waits before the next try, so the loop
// does not spin while the cause lasts.
inline constexpr std::chrono::milliseconds kAcceptRetry{100};

// The accept loop of every port: hands each new socket to `on_accept`, reports a failed accept to
// `on_error` and tries again after kAcceptRetry, and ends once `stopped` is true. `owner` (the
// port's core) stays alive while an accept or a retry is pending, which keeps `acceptor`, `retry`
// and `stopped` (its members) valid.
template <typename Owner, typename OnAccept, typename OnError>
void accept_forever(std::shared_ptr<Owner> owner,
                    boost::asio::ip::tcp::acceptor& acceptor,
                    boost::asio::steady_timer& retry,
                    const bool& stopped,
                    OnAccept on_accept,
                    OnError on_error) {
    acceptor.async_accept([=, &acceptor, &retry, &stopped](boost::system::error_code ec,
                                                           boost::asio::ip::tcp::socket socket) {
        if (stopped) {
            return;
        }
        if (ec) {
            on_error(ec);
            retry.expires_after(kAcceptRetry);
            retry.async_wait([=, &acceptor, &retry, &stopped](boost::system::error_code wait_ec) {
                if (!wait_ec && !stopped) {
                    accept_forever(owner, acceptor, retry, stopped, on_accept, on_error);
                }
            });
            return;
        }
        on_accept(std::move(socket));
        accept_forever(owner, acceptor, retry, stopped, on_accept, on_error);
    });
}

}  // namespace raftlock::net
