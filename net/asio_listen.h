#pragma once

// Internal to net/: opening a listening socket the same way for every port (peer, client, admin).
// Includes Asio, so only net/*.cc include this header.

#include <string>

#include <boost/asio/ip/tcp.hpp>
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

}  // namespace raftlock::net
