#pragma once

// What one lab worker is told on its command line (main.cc), in the units the code uses.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/endpoints.h"

namespace raftlock::labworker {

enum class Family : uint8_t {
    kNativeFenced,          // raftlock acquire; its token goes to the resource, which checks it
    kNativeUnfenced,        // the same lock; the resource is sent no token
    kNativeZkRecipe,        // ZooKeeper's lock recipe on raftlock's nodes; no token to the resource
    kNativeZkRecipeFenced,  // the same; the holder's node's czxid is its token
};

inline bool is_fenced(Family family) {
    return family == Family::kNativeFenced || family == Family::kNativeZkRecipeFenced;
}
inline bool is_native(Family family) {
    return family == Family::kNativeFenced || family == Family::kNativeUnfenced;
}

struct WorkerOptions {
    Family family = Family::kNativeFenced;
    uint32_t worker = 1;   // 1..workers
    uint32_t workers = 1;  // the Jepsen process of the k-th `info` is worker + k * workers
    client::Endpoint resource;
    std::vector<client::Endpoint> endpoints;  // of the raftlock cluster
    std::string lock;
    std::chrono::milliseconds ttl{2000};  // session timeout; acquires wait at most 2 × ttl
    std::chrono::milliseconds work{50};   // between a section's read and its write
    std::chrono::milliseconds run_time{30000};
    uint64_t seed = 1;

    std::chrono::milliseconds acquire_wait() const { return 2 * ttl; }
};

}  // namespace raftlock::labworker
