#include "client/request_table.h"

#include "base/assert.h"

namespace raftlock::client {

uint64_t RequestTable::add(PendingRequest pending) {
    RL_ASSERT(!full());
    const uint64_t id = next_id_++;
    pending.request.set_request_id(id);
    pending_.emplace(id, std::move(pending));
    return id;
}

PendingRequest* RequestTable::find(uint64_t request_id) {
    auto it = pending_.find(request_id);
    return it == pending_.end() ? nullptr : &it->second;
}

std::optional<PendingRequest> RequestTable::take(uint64_t request_id) {
    auto it = pending_.find(request_id);
    if (it == pending_.end()) {
        return std::nullopt;
    }
    PendingRequest out = std::move(it->second);
    pending_.erase(it);
    return out;
}

std::vector<uint64_t> RequestTable::unsent_ids() const {
    std::vector<uint64_t> ids;
    for (const auto& [id, pending] : pending_) {
        if (!pending.on_wire && pending.request_class != RequestClass::kPinned) {
            ids.push_back(id);
        }
    }
    return ids;
}

void RequestTable::mark_all_off_wire() {
    for (auto& [id, pending] : pending_) {
        if (pending.request_class != RequestClass::kPinned) {
            pending.on_wire = false;
        }
    }
}

std::optional<SteadyTime> RequestTable::earliest_deadline() const {
    std::optional<SteadyTime> earliest;
    for (const auto& [id, pending] : pending_) {
        if (!earliest || pending.deadline < *earliest) {
            earliest = pending.deadline;
        }
    }
    return earliest;
}

std::vector<PendingRequest> RequestTable::take_expired(SteadyTime now) {
    std::vector<PendingRequest> out;
    for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->second.deadline <= now) {
            out.push_back(std::move(it->second));
            it = pending_.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

std::vector<PendingRequest> RequestTable::take_all() {
    std::vector<PendingRequest> out;
    for (auto& [id, pending] : pending_) {
        out.push_back(std::move(pending));
    }
    pending_.clear();
    return out;
}

}  // namespace raftlock::client
