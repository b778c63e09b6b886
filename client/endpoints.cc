#include "client/endpoints.h"

#include <charconv>

#include <fmt/format.h>

namespace raftlock::client {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

Result<Endpoint, std::string> parse_one(std::string_view item) {
    std::string_view host;
    std::string_view port;
    if (item.starts_with('[')) {
        const size_t close = item.find(']');
        if (close == std::string_view::npos || close + 1 >= item.size() || item[close + 1] != ':') {
            return fmt::format("endpoint '{}': write IPv6 addresses as [addr]:port", item);
        }
        host = item.substr(1, close - 1);
        port = item.substr(close + 2);
    } else {
        const size_t colon = item.rfind(':');
        if (colon == std::string_view::npos) {
            return fmt::format("endpoint '{}' has no port: write host:port, e.g. 127.0.0.1:7101",
                               item);
        }
        host = item.substr(0, colon);
        port = item.substr(colon + 1);
        if (host.find(':') != std::string_view::npos) {
            return fmt::format("endpoint '{}': write IPv6 addresses as [addr]:port", item);
        }
    }
    if (host.empty()) {
        return fmt::format("endpoint '{}' has no host", item);
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
        value > 65535) {
        return fmt::format("endpoint '{}': the port must be a number in 1..65535", item);
    }
    return Endpoint{std::string(host), static_cast<uint16_t>(value)};
}

}  // namespace

Result<std::vector<Endpoint>, std::string> parse_endpoints(std::string_view text) {
    std::vector<Endpoint> out;
    if (trim(text).empty()) {
        return std::string("the endpoint list is empty: give host:port,host:port,...");
    }
    size_t start = 0;
    for (size_t items = 0; start <= text.size(); items++) {
        if (items == kEndpointsMax) {
            return fmt::format("more than {} endpoints", kEndpointsMax);
        }
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view item = trim(text.substr(start, comma - start));
        if (item.empty()) {
            return fmt::format("empty item in the endpoint list '{}'", text);
        }
        auto endpoint = parse_one(item);
        if (!endpoint.ok()) {
            return endpoint.error();
        }
        for (const Endpoint& seen : out) {
            if (seen == endpoint.value()) {
                return fmt::format("endpoint '{}' is listed twice", item);
            }
        }
        out.push_back(std::move(endpoint).value());
        start = comma + 1;
    }
    return out;
}

std::string to_string(const Endpoint& endpoint) {
    if (endpoint.host.find(':') != std::string::npos) {
        return fmt::format("[{}]:{}", endpoint.host, endpoint.port);
    }
    return fmt::format("{}:{}", endpoint.host, endpoint.port);
}

std::string to_string(const std::vector<Endpoint>& endpoints) {
    std::string out;
    for (const Endpoint& endpoint : endpoints) {
        if (!out.empty()) {
            out.push_back(',');
        }
        out += to_string(endpoint);
    }
    return out;
}

}  // namespace raftlock::client
