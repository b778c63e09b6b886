#pragma once

// Helpers shared by the client tests that run against FakeServer.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <vector>

#include "client/client.h"
#include "fake_server.h"

namespace raftlock::client::testing {

inline ClientOptions test_options(std::vector<Endpoint> endpoints, uint64_t seed = 1) {
    ClientOptions options;
    options.endpoints = std::move(endpoints);
    options.connect_timeout = std::chrono::milliseconds(500);
    options.request_timeout = std::chrono::milliseconds(2000);
    options.seed = seed;
    return options;
}

// Orders two endpoints so that a client with `seed` tries `first` first (the client starts at
// index rng() % n of its list, with rng = mt19937_64(seed)).
inline std::vector<Endpoint> first_for_seed(uint64_t seed, Endpoint first, Endpoint second) {
    std::mt19937_64 rng(seed);
    if (rng() % 2 == 0) {
        return {first, second};
    }
    return {second, first};
}

// A value set by another thread, waited for with a deadline (no blind sleeps).
template <typename T>
class Signal {
public:
    void set(T value) {
        {
            std::lock_guard lock(mu_);
            values_.push_back(std::move(value));
        }
        cv_.notify_all();
    }
    bool wait(size_t count = 1, std::chrono::milliseconds timeout = std::chrono::seconds(3)) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, timeout, [&] { return values_.size() >= count; });
    }
    std::vector<T> values() {
        std::lock_guard lock(mu_);
        return values_;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<T> values_;
};

inline std::vector<proto::Request> requests_of(const FakeServer& server,
                                               proto::Request::BodyCase body) {
    std::vector<proto::Request> out;
    for (const Received& r : server.received()) {
        if (r.request.body_case() == body) {
            out.push_back(r.request);
        }
    }
    return out;
}

inline std::function<bool(const std::vector<Received>&)> has_body(proto::Request::BodyCase body,
                                                                  size_t count = 1) {
    return [body, count](const std::vector<Received>& received) {
        return count_body(received, body) >= count;
    };
}

}  // namespace raftlock::client::testing
