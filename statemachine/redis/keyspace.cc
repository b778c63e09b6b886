// The keyspace's storage: expiry, the at-most-once table, the snapshot section and invariants.
// The commands themselves are in commands.cc.

#include "statemachine/redis/keyspace.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::statemachine::redis {

uint64_t key_hash(std::string_view name) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : name) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    // 0 is the SCAN cursor that means "start" and "done": no key hashes to it.
    return h == 0 ? 1 : h;
}

bool Keyspace::admit(uint64_t origin, uint64_t seq, Index index) {
    auto it = origins_.find(origin);
    if (it == origins_.end()) {
        if (origins_.size() >= kOriginsMax) {
            // Forget the origin that wrote least recently (deterministic: ties cannot happen, as
            // every origin's last index is a distinct entry).
            auto oldest = origins_.begin();
            for (auto o = origins_.begin(); o != origins_.end(); ++o) {
                if (o->second.last_index < oldest->second.last_index) {
                    oldest = o;
                }
            }
            origins_.erase(oldest);
        }
        origins_.emplace(origin, Origin{seq, index});
        return true;
    }
    if (seq <= it->second.last_seq) {
        return false;
    }
    it->second = Origin{seq, index};
    return true;
}

void Keyspace::expire_until(TimeMs now_ms) {
    while (!expiry_.empty() && expiry_.begin()->first <= now_ms) {
        auto node = expiry_.extract(expiry_.begin());
        const size_t erased = keys_.erase(node.value().second);
        RL_ASSERT_MSG(erased == 1, "the expiry index names a key that does not exist");
    }
}

std::optional<TimeMs> Keyspace::next_expiry_ms() const {
    if (expiry_.empty()) {
        return std::nullopt;
    }
    return expiry_.begin()->first;
}

// Snapshot section (statemachine/snapshot.cc, version 2):
//   keys: name, u8 type (0 string, 1 hash), expire_at_ms, string | fields: (field, value)*
//   scripts: sha, body
//   origins: origin, last_seq, last_index
void Keyspace::write(Writer& w) const {
    w.varint(keys_.size());
    for (const auto& [key, entry] : keys_) {
        w.bytes(key.name);
        if (const auto* s = std::get_if<std::string>(&entry.value)) {
            w.u8(0);
            w.svarint(entry.expire_at_ms);
            w.bytes(*s);
        } else {
            const Hash& h = std::get<Hash>(entry.value);
            w.u8(1);
            w.svarint(entry.expire_at_ms);
            w.varint(h.size());
            for (const auto& [field, value] : h) {
                w.bytes(field);
                w.bytes(value);
            }
        }
    }
    w.varint(scripts_.size());
    for (const auto& [sha, body] : scripts_) {
        w.bytes(sha);
        w.bytes(body);
    }
    w.varint(origins_.size());
    for (const auto& [origin, o] : origins_) {
        w.varint(origin);
        w.varint(o.last_seq);
        w.varint(o.last_index);
    }
}

namespace {

// Every item takes at least one byte: a count above what is left is malformed.
uint64_t read_count(Reader& r) {
    const uint64_t n = r.varint();
    if (n > r.remaining()) {
        r.fail();
        return 0;
    }
    return n;
}

}  // namespace

bool Keyspace::read(Reader& r) {
    RL_ASSERT(keys_.empty() && scripts_.empty() && origins_.empty());
    for (uint64_t n = read_count(r); r.ok() && n > 0; --n) {
        std::string name = r.bytes(kValueBytesMax);
        const uint8_t type = r.u8();
        Entry entry;
        entry.expire_at_ms = r.svarint();
        if (type == 0) {
            entry.value = r.bytes(kValueBytesMax);
        } else if (type == 1) {
            Hash h;
            for (uint64_t f = read_count(r); r.ok() && f > 0; --f) {
                std::string field = r.bytes(kValueBytesMax);
                h[std::move(field)] = r.bytes(kValueBytesMax);
            }
            entry.value = std::move(h);
        } else {
            return false;
        }
        KeyName key{key_hash(name), std::move(name)};
        if (entry.expire_at_ms != 0) {
            expiry_.emplace(entry.expire_at_ms, key);
        }
        if (!keys_.emplace(std::move(key), std::move(entry)).second) {
            return false;
        }
    }
    for (uint64_t n = read_count(r); r.ok() && n > 0; --n) {
        std::string sha = r.bytes(40);
        scripts_[std::move(sha)] = r.bytes(kValueBytesMax);
    }
    for (uint64_t n = read_count(r); r.ok() && n > 0; --n) {
        const uint64_t origin = r.varint();
        Origin o;
        o.last_seq = r.varint();
        o.last_index = r.varint();
        origins_[origin] = o;
    }
    return r.ok();
}

std::string Keyspace::check_invariants() const {
    size_t with_ttl = 0;
    for (const auto& [key, entry] : keys_) {
        if (key.hash != key_hash(key.name)) {
            return fmt::format("redis key '{}' is filed under the wrong hash", key.name);
        }
        if (entry.expire_at_ms < 0) {
            return fmt::format("redis key '{}' has a negative deadline", key.name);
        }
        if (entry.expire_at_ms != 0) {
            ++with_ttl;
            if (!expiry_.contains({entry.expire_at_ms, key})) {
                return fmt::format("redis key '{}' has a TTL missing from the index", key.name);
            }
        }
        if (const auto* h = std::get_if<Hash>(&entry.value); h && h->empty()) {
            return fmt::format("redis hash '{}' has no fields (it should be deleted)", key.name);
        }
    }
    if (with_ttl != expiry_.size()) {
        return "the redis expiry index names keys without that TTL";
    }
    if (scripts_.size() > kScriptsMax || origins_.size() > kOriginsMax) {
        return "the redis script cache or origin table is over its limit";
    }
    return {};
}

}  // namespace raftlock::statemachine::redis
