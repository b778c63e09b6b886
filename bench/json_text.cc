#include "bench/json_text.h"

#include <array>
#include <cstdint>

namespace raftlock::bench {

std::optional<std::string> json_string_field(std::string_view json, std::string_view name) {
    std::string needle = "\"";
    needle += name;
    needle += "\"";
    size_t at = json.find(needle);
    while (at != std::string_view::npos) {
        size_t p = at + needle.size();
        while (p < json.size() && (json[p] == ' ' || json[p] == ':')) {
            ++p;
        }
        if (p < json.size() && json[p] == '"') {
            const size_t end = json.find('"', p + 1);
            if (end == std::string_view::npos) {
                return std::nullopt;
            }
            return std::string(json.substr(p + 1, end - p - 1));
        }
        at = json.find(needle, at + 1);
    }
    return std::nullopt;
}

}  // namespace raftlock::bench
