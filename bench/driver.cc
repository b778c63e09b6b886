#include "bench/driver.h"

#include <charconv>

#include <fmt/format.h>

namespace raftlock::bench {

Result<std::vector<HostPort>, std::string> parse_host_ports(const std::string& text) {
    std::vector<HostPort> out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        const std::string item = text.substr(start, end - start);
        const size_t colon = item.rfind(':');
        if (item.empty() || colon == std::string::npos || colon == 0) {
            return fmt::format("bad endpoint '{}' (expected host:port)", item);
        }
        HostPort hp;
        hp.host = item.substr(0, colon);
        const std::string port = item.substr(colon + 1);
        const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), hp.port);
        if (ec != std::errc() || p != port.data() + port.size() || hp.port == 0) {
            return fmt::format("bad port in endpoint '{}'", item);
        }
        out.push_back(hp);
        start = end + 1;
    }
    return out;
}

}  // namespace raftlock::bench
