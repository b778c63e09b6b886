#pragma once

// Just enough JSON for etcd's gateway, whose replies the benchmark reads a field or two of:
// base64 (the gateway's encoding of bytes fields), string escaping for requests, and finding the
// string value of a named field. Not a JSON parser: a field is found by its first occurrence.

#include <optional>
#include <string>
#include <string_view>

namespace raftlock::bench {

std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

// The string value of the first `"name":"..."` in `json` (no unescaping: the gateway's values
// here are base64 or decimal digits); empty when there is none.
std::optional<std::string> json_string_field(std::string_view json, std::string_view name);

}  // namespace raftlock::bench
