#pragma once

// Endpoint lists: "host:port,host:port,..." as given by --endpoints and RAFTLOCK_ENDPOINTS.
// An IPv6 address is written in brackets: "[::1]:7101".

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace raftlock::client {

struct Endpoint {
    std::string host;
    uint16_t port = 0;

    bool operator==(const Endpoint&) const = default;
};

inline constexpr size_t kEndpointsMax = 64;
inline constexpr std::string_view kDefaultEndpoints =
    "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103";

// Parses a comma-separated list; blanks around items are ignored. Errors (for people) name the bad
// item: an empty list or item, a missing or out-of-range port, a duplicate, more than
// kEndpointsMax.
Result<std::vector<Endpoint>, std::string> parse_endpoints(std::string_view text);

// "127.0.0.1:7101" (brackets around IPv6 hosts).
std::string to_string(const Endpoint& endpoint);
// "127.0.0.1:7101,127.0.0.1:7102"
std::string to_string(const std::vector<Endpoint>& endpoints);

}  // namespace raftlock::client
