#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/assert.h"

namespace raftlock {

// A value or an error, for failures a caller is expected to handle (C++20 has no std::expected).
// E is a small error type, usually a struct with a closed enum code and a message.
template <typename T, typename E>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
    Result(E error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & {
        RL_ASSERT(ok());
        return std::get<0>(v_);
    }
    const T& value() const& {
        RL_ASSERT(ok());
        return std::get<0>(v_);
    }
    T&& value() && {
        RL_ASSERT(ok());
        return std::get<0>(std::move(v_));
    }
    const E& error() const {
        RL_ASSERT(!ok());
        return std::get<1>(v_);
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

private:
    std::variant<T, E> v_;
};

}  // namespace raftlock
