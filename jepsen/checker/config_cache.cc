#include "jepsen/checker/config_cache.h"

#include <algorithm>

namespace raftlock::jepsen {

namespace {

constexpr uint64_t kAllOnes = ~uint64_t{0};

// Per-entry overhead of a hash node and its tail allocation, beyond the key itself.
constexpr size_t kNodeOverheadBytes = 48;

}  // namespace

LinearizedSet::LinearizedSet(size_t ops) : words_((ops + 63) / 64, 0) {}

void LinearizedSet::set(int32_t op) {
    RL_ASSERT(op >= 0);
    uint32_t w = static_cast<uint32_t>(op) / 64;
    RL_ASSERT(w < words_.size());
    words_[w] |= uint64_t{1} << (op % 64);
    end_word_ = std::max(end_word_, w + 1);
    // Amortized: each word joins the full run once per time it fills up.
    while (full_words_ < words_.size() && words_[full_words_] == kAllOnes) {
        ++full_words_;
    }
}

void LinearizedSet::clear(int32_t op) {
    RL_ASSERT(op >= 0);
    uint32_t w = static_cast<uint32_t>(op) / 64;
    RL_ASSERT(w < words_.size());
    words_[w] &= ~(uint64_t{1} << (op % 64));
    full_words_ = std::min(full_words_, w);
    while (end_word_ > 0 && words_[end_word_ - 1] == 0) {
        --end_word_;
    }
    RL_ASSERT(end_word_ >= full_words_);
}

bool LinearizedSet::contains(int32_t op) const {
    return (words_[static_cast<uint32_t>(op) / 64] >> (op % 64)) & 1;
}

std::span<const uint64_t> LinearizedSet::tail() const {
    return std::span<const uint64_t>(words_).subspan(full_words_, end_word_ - full_words_);
}

size_t ConfigCache::KeyHash::operator()(const Key& key) const {
    // A multiply-xorshift mix (as in splitmix64): fast, and good enough for a hash table.
    uint64_t h = 0x9e3779b97f4a7c15ull ^ key.full_words;
    auto mix = [&h](uint64_t v) {
        h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    };
    mix(static_cast<uint64_t>(key.state.words[0]));
    mix(static_cast<uint64_t>(key.state.words[1]));
    for (uint64_t w : key.tail) {
        mix(w);
    }
    for (uint64_t w : key.unknown) {
        mix(w);
    }
    return static_cast<size_t>(h);
}

bool ConfigCache::insert(const LinearizedSet& known,
                         std::span<const uint64_t> unknown,
                         const State& state) {
    scratch_.state = state;
    scratch_.full_words = known.full_words();
    scratch_.tail.assign(known.tail().begin(), known.tail().end());
    size_t used = unknown.size();
    while (used > 0 && unknown[used - 1] == 0) {
        --used;
    }
    scratch_.unknown.assign(unknown.begin(), unknown.begin() + static_cast<ptrdiff_t>(used));
    if (entries_.find(scratch_) != entries_.end()) {
        return false;
    }
    bytes_ += sizeof(Key) + (scratch_.tail.size() + scratch_.unknown.size()) * sizeof(uint64_t) +
              kNodeOverheadBytes;
    entries_.insert(scratch_);
    return true;
}

}  // namespace raftlock::jepsen
