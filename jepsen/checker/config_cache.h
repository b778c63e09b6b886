#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "jepsen/checker/model.h"

namespace raftlock::jepsen {

// The set of linearized operations of a search, as a bitset over operation indices (which follow
// call order). Because the search linearizes roughly in call order, the set is nearly always a
// run of ones followed by a short ragged tail; it keeps that canonical split up to date so a
// configuration can be stored in a few words instead of n / 64.
class LinearizedSet {
public:
    explicit LinearizedSet(size_t ops);

    void set(int32_t op);
    void clear(int32_t op);
    bool contains(int32_t op) const;

    // Words [0, full_words()) are all ones; tail() runs from there to the last non-zero word.
    uint32_t full_words() const { return full_words_; }
    std::span<const uint64_t> tail() const;

private:
    std::vector<uint64_t> words_;
    uint32_t full_words_ = 0;
    uint32_t end_word_ = 0;  // one past the last non-zero word; >= full_words_
};

// The memo of Lowe's algorithm: configurations already explored. A configuration is the set of
// linearized operations whose outcome is known (`known`, over operation indices), the set of
// linearized operations whose outcome is unknown (`unknown`, a bitset over their own dense
// indices; they are few, and do not follow the "run of ones" shape) and the model state. Exact:
// a repeat is recognized only when all three are equal, never by a lossy hash.
class ConfigCache {
public:
    // Remembers the configuration; returns false when it was already known.
    bool insert(const LinearizedSet& known, std::span<const uint64_t> unknown, const State& state);

    size_t size() const { return entries_.size(); }
    // An estimate of the heap the cache holds, for the memory budget.
    size_t bytes() const { return bytes_; }

private:
    struct Key {
        State state;
        uint32_t full_words = 0;
        std::vector<uint64_t> tail;
        std::vector<uint64_t> unknown;  // trailing zero words trimmed

        bool operator==(const Key& other) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& key) const;
    };

    std::unordered_set<Key, KeyHash> entries_;
    Key scratch_;  // reused for lookups so that a repeat costs no allocation
    size_t bytes_ = 0;
};

}  // namespace raftlock::jepsen
