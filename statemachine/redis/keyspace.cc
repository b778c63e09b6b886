// The keyspace's storage: expiry, the at-most-once table, the snapshot section and invariants.
// The commands themselves are in commands.cc.

#include "statemachine/redis/keyspace.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/redis/commands.h"

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

void Keyspace::advance(Index index, TimeMs now_ms, uint8_t format) {
    RL_ASSERT(index > index_);
    index_ = index;
    if (tracked_since_ == 0 && format >= kRedisFormatTransactions) {
        tracked_since_ = index;
    }
    while (!expiry_.empty() && expiry_.begin()->first <= now_ms) {
        auto it = keys_.find(expiry_.begin()->second);
        RL_ASSERT_MSG(it != keys_.end(), "the expiry index names a key that does not exist");
        erase_at(it);
    }
}

void Keyspace::erase_at(std::map<KeyName, Entry>::iterator it) {
    RL_ASSERT(it != keys_.end());
    if (it->second.expire_at_ms != 0) {
        const size_t erased = expiry_.erase({it->second.expire_at_ms, it->first});
        RL_ASSERT(erased == 1);
    }
    Index& deleted_at = deletions_[it->first.hash % kDeletionBuckets];
    RL_ASSERT(deleted_at <= index_);
    if (tracked_since_ != 0) {
        deleted_at = index_;
    }
    keys_.erase(it);
}

bool Keyspace::changed_since(std::string_view key, Index index) const {
    if (index < tracked_since_ || tracked_since_ == 0) {
        return true;  // before the records began: they cannot tell (see the header comment)
    }
    const uint64_t hash = key_hash(key);
    auto it = keys_.find(KeyName{hash, std::string(key)});
    if (it != keys_.end()) {
        return it->second.changed_at > index;
    }
    return deletions_[hash % kDeletionBuckets] > index;
}

std::optional<TimeMs> Keyspace::next_expiry_ms() const {
    if (expiry_.empty()) {
        return std::nullopt;
    }
    return expiry_.begin()->first;
}

namespace {

// A value's type as the snapshot numbers it: numbers on disk, never reused or renumbered (not the
// index of the Entry variant's alternative).
enum SnapshotType : uint8_t {
    kSnapshotString = 0,
    kSnapshotHash = 1,
    kSnapshotList = 2,  // version 6 on, as are the two below
    kSnapshotSet = 3,
    kSnapshotZSet = 4,
};

template <class T>
constexpr uint8_t snapshot_type() {
    if constexpr (std::is_same_v<T, std::string>) {
        return kSnapshotString;
    } else if constexpr (std::is_same_v<T, Keyspace::Hash>) {
        return kSnapshotHash;
    } else if constexpr (std::is_same_v<T, Keyspace::List>) {
        return kSnapshotList;
    } else if constexpr (std::is_same_v<T, Keyspace::Set>) {
        return kSnapshotSet;
    } else {
        static_assert(std::is_same_v<T, Keyspace::ZSet>);
        return kSnapshotZSet;
    }
}

}  // namespace

// Snapshot section (statemachine/snapshot.cc, version 2; types 2-4 from version 6; what WATCH
// needs from version 7):
//   keys: name, u8 type, expire_at_ms, changed_at (version 7), then by type
//     0 string: the bytes            1 hash: count, (field, value)*
//     2 list: count, item*           3 set: count, member*
//     4 sorted set: count, (member, fixed64 score bits)* in member order
//   scripts: sha, body
//   origins: origin, last_seq, last_index
//   (version 7) tracked_since, deletions: (bucket, index)* for the buckets with one
void Keyspace::write(Writer& w) const {
    w.varint(keys_.size());
    for (const auto& [key, entry] : keys_) {
        w.bytes(key.name);
        std::visit(
            // (A structured binding is not captured: clang refuses it before C++20's P1091.)
            [&w, expire_at_ms = entry.expire_at_ms,
             changed_at = entry.changed_at](const auto& value) {
                using T = std::decay_t<decltype(value)>;
                w.u8(snapshot_type<T>());
                w.svarint(expire_at_ms);
                w.varint(changed_at);
                if constexpr (std::is_same_v<T, std::string>) {
                    w.bytes(value);
                } else if constexpr (std::is_same_v<T, Hash>) {
                    w.varint(value.size());
                    for (const auto& [field, v] : value) {
                        w.bytes(field);
                        w.bytes(v);
                    }
                } else if constexpr (std::is_same_v<T, List> || std::is_same_v<T, Set>) {
                    w.varint(value.size());
                    for (const std::string& item : value) {
                        w.bytes(item);
                    }
                } else {
                    static_assert(std::is_same_v<T, ZSet>);
                    w.varint(value.size());
                    for (const auto& [member, score] : value.scores) {
                        w.bytes(member);
                        w.fixed64(std::bit_cast<uint64_t>(score));
                    }
                }
            },
            entry.value);
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
    w.varint(tracked_since_);
    const auto recorded = [](Index at) { return at != 0; };
    w.varint(static_cast<uint64_t>(std::count_if(deletions_.begin(), deletions_.end(), recorded)));
    for (size_t bucket = 0; bucket < deletions_.size(); ++bucket) {
        if (recorded(deletions_[bucket])) {
            w.varint(bucket);
            w.varint(deletions_[bucket]);
        }
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

bool Keyspace::read(Reader& r, bool collections, bool changes, Index last_applied) {
    RL_ASSERT(keys_.empty() && scripts_.empty() && origins_.empty());
    index_ = last_applied;
    for (uint64_t n = read_count(r); r.ok() && n > 0; --n) {
        std::string name = r.bytes(kValueBytesMax);
        const uint8_t type = r.u8();
        Entry entry;
        entry.expire_at_ms = r.svarint();
        if (changes) {
            entry.changed_at = r.varint();
        }
        if (type == kSnapshotString) {
            entry.value = r.bytes(kValueBytesMax);
        } else if (type == kSnapshotHash) {
            Hash h;
            for (uint64_t f = read_count(r); r.ok() && f > 0; --f) {
                std::string field = r.bytes(kValueBytesMax);
                if (!h.emplace(std::move(field), r.bytes(kValueBytesMax)).second) {
                    return false;  // a field twice: not a snapshot this code wrote
                }
            }
            entry.value = std::move(h);
        } else if (type == kSnapshotList && collections) {
            List list;
            for (uint64_t i = read_count(r); r.ok() && i > 0; --i) {
                list.push_back(r.bytes(kValueBytesMax));
            }
            entry.value = std::move(list);
        } else if (type == kSnapshotSet && collections) {
            Set set;
            for (uint64_t i = read_count(r); r.ok() && i > 0; --i) {
                if (!set.insert(r.bytes(kValueBytesMax)).second) {
                    return false;
                }
            }
            entry.value = std::move(set);
        } else if (type == kSnapshotZSet && collections) {
            ZSet z;
            for (uint64_t i = read_count(r); r.ok() && i > 0; --i) {
                std::string member = r.bytes(kValueBytesMax);
                const double score = std::bit_cast<double>(r.fixed64());
                if (std::isnan(score) || !z.scores.emplace(member, score).second) {
                    return false;
                }
                z.order.emplace(score, std::move(member));
            }
            entry.value = std::move(z);
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
    if (changes) {
        tracked_since_ = r.varint();
        for (uint64_t n = read_count(r); r.ok() && n > 0; --n) {
            const uint64_t bucket = r.varint_in(0, kDeletionBuckets - 1);
            if (r.ok()) {
                deletions_[bucket] = r.varint();
            }
        }
    }
    return r.ok();
}

std::string Keyspace::check_invariants() const {
    size_t with_ttl = 0;
    for (const auto& [key, entry] : keys_) {
        if (key.hash != key_hash(key.name)) {
            return fmt::format("redis key '{}' is filed under the wrong hash", key.name);
        }
        if (entry.changed_at > index_) {
            return fmt::format("redis key '{}' was changed at {}, after the last entry {}",
                               key.name, entry.changed_at, index_);
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
        const bool empty = std::visit(
            [](const auto& v) {
                if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
                    return false;
                } else {
                    return v.empty();
                }
            },
            entry.value);
        if (empty) {
            return fmt::format("redis key '{}' holds an empty collection (it should be deleted)",
                               key.name);
        }
        if (const auto* z = std::get_if<ZSet>(&entry.value)) {
            if (z->order.size() != z->scores.size()) {
                return fmt::format("redis sorted set '{}' has {} members but {} in score order",
                                   key.name, z->scores.size(), z->order.size());
            }
            for (const auto& [score, member] : z->order) {
                auto it = z->scores.find(member);
                if (it == z->scores.end() ||
                    std::bit_cast<uint64_t>(it->second) != std::bit_cast<uint64_t>(score)) {
                    return fmt::format("redis sorted set '{}' orders '{}' by a stale score",
                                       key.name, member);
                }
            }
        }
    }
    if (with_ttl != expiry_.size()) {
        return "the redis expiry index names keys without that TTL";
    }
    if (tracked_since_ > index_ ||
        std::any_of(deletions_.begin(), deletions_.end(), [&](Index at) { return at > index_; })) {
        return "the redis keyspace records a change after the last entry";
    }
    if (scripts_.size() > kScriptsMax || origins_.size() > kOriginsMax) {
        return "the redis script cache or origin table is over its limit";
    }
    return {};
}

}  // namespace raftlock::statemachine::redis
