#pragma once

// The web console's static files, embedded at build time (console/CMakeLists.txt, embed.cmake).

#include <optional>
#include <string_view>

namespace raftlock::console {

struct Asset {
    std::string_view content_type;
    std::string_view body;
};

// The file named `name` ("index.html", "console.js", "console.css"); nullopt for another name.
std::optional<Asset> find_asset(std::string_view name);

}  // namespace raftlock::console
