#pragma once

// Just enough JSON for etcd's gateway, whose replies the benchmark reads a field or two of:
// finding the string value of a named field (bytes fields are base64: base/base64.h). Not a JSON
// parser: a field is found by its first occurrence.

#include <optional>
#include <string>
#include <string_view>

#include "base/base64.h"

namespace raftlock::bench {

// The string value of the first `"name":"..."` in `json` (no unescaping: the gateway's values
// here are base64 or decimal digits); empty when there is none.
std::optional<std::string> json_string_field(std::string_view json, std::string_view name);

}  // namespace raftlock::bench
