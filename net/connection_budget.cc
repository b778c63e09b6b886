#include "net/connection_budget.h"

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::net {

ConnectionBudget::ConnectionBudget(size_t total_max, size_t per_address_max)
    : total_max_(total_max), per_address_max_(per_address_max) {
    RL_ASSERT(total_max_ > 0);
    RL_ASSERT(per_address_max_ > 0);
}

std::string ConnectionBudget::admit(const std::string& address) {
    RL_ASSERT(total_ <= total_max_);
    if (total_ >= total_max_) {
        ++refused_;
        return fmt::format(
            "this node's {} client connections (--max-connections, and the "
            "open-file limit)",
            total_max_);
    }
    auto it = per_address_.find(address);
    if (it != per_address_.end() && it->second >= per_address_max_) {
        ++refused_;
        return fmt::format("{} connections from {} (--max-connections-per-address)",
                           per_address_max_, address);
    }
    if (it == per_address_.end()) {
        it = per_address_.emplace(address, 0).first;
    }
    ++it->second;
    ++total_;
    return "";
}

void ConnectionBudget::release(const std::string& address) {
    const auto it = per_address_.find(address);
    RL_ASSERT(it != per_address_.end() && it->second > 0);
    RL_ASSERT(total_ > 0);
    --total_;
    if (--it->second == 0) {
        per_address_.erase(it);
    }
}

}  // namespace raftlock::net
