#include "statemachine/redis/glob.h"

#include <utility>

namespace raftlock::statemachine::redis {

namespace {

// Matches one [...] class at pattern[p] (p points just past the '['); returns whether `c` is in
// it and sets p past the closing ']' (or to the end when it is missing, as Redis does).
bool class_match(std::string_view pattern, size_t& p, char c) {
    bool negate = false;
    if (p < pattern.size() && pattern[p] == '^') {
        negate = true;
        ++p;
    }
    bool found = false;
    while (p < pattern.size() && pattern[p] != ']') {
        if (pattern[p] == '\\' && p + 1 < pattern.size()) {
            found |= pattern[p + 1] == c;
            p += 2;
        } else if (p + 2 < pattern.size() && pattern[p + 1] == '-') {
            auto lo = static_cast<unsigned char>(pattern[p]);
            auto hi = static_cast<unsigned char>(pattern[p + 2]);
            if (lo > hi) {
                std::swap(lo, hi);
            }
            const auto u = static_cast<unsigned char>(c);
            found |= u >= lo && u <= hi;
            p += 3;
        } else {
            found |= pattern[p] == c;
            ++p;
        }
    }
    if (p < pattern.size()) {
        ++p;  // the ']'
    }
    return found != negate;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
    size_t p = 0;
    size_t t = 0;
    size_t star_p = std::string_view::npos;  // just past the last '*'
    size_t star_t = 0;                       // where that '*' started matching in text
    while (t < text.size()) {
        if (p < pattern.size()) {
            const char pc = pattern[p];
            if (pc == '*') {
                while (p < pattern.size() && pattern[p] == '*') {
                    ++p;
                }
                star_p = p;
                star_t = t;
                continue;
            }
            size_t next = p + 1;
            bool ok = false;
            if (pc == '?') {
                ok = true;
            } else if (pc == '[') {
                ok = class_match(pattern, next, text[t]);
            } else if (pc == '\\' && p + 1 < pattern.size()) {
                ok = pattern[p + 1] == text[t];
                next = p + 2;
            } else {
                ok = pc == text[t];
            }
            if (ok) {
                p = next;
                ++t;
                continue;
            }
        }
        if (star_p == std::string_view::npos) {
            return false;
        }
        // Let the last '*' swallow one more character and retry from there.
        p = star_p;
        t = ++star_t;
    }
    while (p < pattern.size() && pattern[p] == '*') {
        ++p;
    }
    return p == pattern.size();
}

}  // namespace raftlock::statemachine::redis
