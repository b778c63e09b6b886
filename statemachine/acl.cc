#include "statemachine/acl.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>

#include <arpa/inet.h>

namespace raftlock::statemachine {

namespace {

// An address as bytes: 4 for IPv4, 16 for IPv6 (inet_pton is pure: no I/O, no locale).
struct Address {
    std::array<uint8_t, 16> bytes{};
    size_t size = 0;
};

std::optional<Address> parse_address(std::string_view text) {
    if (text.empty() || text.size() > 64) {
        return std::nullopt;
    }
    const std::string s(text);
    Address a;
    if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
        a.size = 4;
        return a;
    }
    if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
        a.size = 16;
        return a;
    }
    return std::nullopt;
}

// "10.0.0.0/8" or "10.1.2.3" (all bits): the address and how many leading bits count.
struct Network {
    Address address;
    size_t bits = 0;
};

std::optional<Network> parse_network(std::string_view text) {
    const size_t slash = text.find('/');
    std::optional<Address> address = parse_address(text.substr(0, slash));
    if (!address) {
        return std::nullopt;
    }
    Network n{*address, address->size * 8};
    if (slash != std::string_view::npos) {
        const std::string_view digits = text.substr(slash + 1);
        size_t bits = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
            bits > n.bits) {
            return std::nullopt;
        }
        n.bits = bits;
    }
    return n;
}

bool network_contains(const Network& n, const Address& a) {
    if (n.address.size != a.size) {
        return false;
    }
    for (size_t bit = 0; bit < n.bits; ++bit) {
        const uint8_t mask = static_cast<uint8_t>(0x80u >> (bit % 8));
        if ((n.address.bytes[bit / 8] & mask) != (a.bytes[bit / 8] & mask)) {
            return false;
        }
    }
    return true;
}

// ZooKeeper's digest ids are `user:hash`: exactly one colon, something on each side.
bool valid_digest_id(std::string_view id) {
    const size_t colon = id.find(':');
    return colon != std::string_view::npos && colon > 0 && colon + 1 < id.size() &&
           id.find(':', colon + 1) == std::string_view::npos;
}

bool valid_entry(const AclEntry& e) {
    if (e.perms > kPermAll || e.id.id.size() > kAclIdBytesMax) {
        return false;
    }
    if (e.id.scheme == "world") {
        return e.id.id == "anyone";
    }
    if (e.id.scheme == "digest") {
        return valid_digest_id(e.id.id);
    }
    if (e.id.scheme == "ip") {
        return parse_network(e.id.id).has_value();
    }
    return false;
}

// Whether the caller's `id` is named by the ACL entry's.
bool id_matches(const AclId& entry, const AclId& id) {
    if (entry.scheme == "world") {
        return true;  // anyone
    }
    if (entry.scheme != id.scheme) {
        return false;
    }
    if (entry.scheme == "ip") {
        std::optional<Network> network = parse_network(entry.id);
        std::optional<Address> address = parse_address(id.id);
        return network && address && network_contains(*network, *address);
    }
    return entry.id == id.id;  // digest
}

}  // namespace

bool valid_acl(const Acl& acl) {
    return acl.size() <= kAclEntriesMax && std::all_of(acl.begin(), acl.end(), valid_entry);
}

bool valid_caller(const Caller& caller) {
    if (caller.size() > kCallerIdsMax) {
        return false;
    }
    return std::all_of(caller.begin(), caller.end(), [](const AclId& id) {
        if (id.id.size() > kAclIdBytesMax) {
            return false;
        }
        if (id.scheme == "ip") {
            return parse_address(id.id).has_value();
        }
        if (id.scheme == "digest") {
            return valid_digest_id(id.id);
        }
        return id.scheme == "super" && id.id.empty();
    });
}

Acl canonical_acl(Acl acl) {
    if (acl.size() == 1 && acl[0] == AclEntry{kPermAll, AclId{"world", "anyone"}}) {
        acl.clear();
    }
    return acl;
}

Acl displayed_acl(const Acl& stored) {
    if (stored.empty()) {
        return Acl{AclEntry{kPermAll, AclId{"world", "anyone"}}};
    }
    return stored;
}

bool acl_permits(const Acl& acl, uint8_t perms, const Caller& caller) {
    if (acl.empty()) {
        return true;  // open
    }
    for (const AclId& id : caller) {
        if (id.scheme == "super") {
            return true;
        }
    }
    for (const AclEntry& entry : acl) {
        if ((entry.perms & perms) == 0) {
            continue;
        }
        if (entry.id.scheme == "world" ||
            std::any_of(caller.begin(), caller.end(),
                        [&](const AclId& id) { return id_matches(entry.id, id); })) {
            return true;
        }
    }
    return false;
}

}  // namespace raftlock::statemachine
