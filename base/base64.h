#pragma once

// Base64 (RFC 4648, the standard alphabet, with padding): etcd's gateway encodes bytes fields in
// it, and ZooKeeper's digest ids are user:base64(sha1(user:password)).

#include <optional>
#include <string>
#include <string_view>

namespace raftlock {

std::string base64_encode(std::string_view bytes);
// Nullopt on a character outside the alphabet; decoding stops at the first '='.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace raftlock
