#include "server/redis_subscriptions.h"

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/redis/glob.h"

namespace raftlock::server {

bool RedisSubscriptions::add(net::ConnectionId id, Kind kind, const std::string& name) {
    Held& held = held_[id];
    if (!names(held, kind).insert(name).second) {
        return false;
    }
    held.bytes += name.size();
    const bool inserted = index(kind)[name].insert(id).second;
    RL_ASSERT(inserted);  // the two indexes agree
    return true;
}

bool RedisSubscriptions::remove(net::ConnectionId id, Kind kind, const std::string& name) {
    auto held = held_.find(id);
    if (held == held_.end() || names(held->second, kind).erase(name) == 0) {
        return false;
    }
    RL_ASSERT(held->second.bytes >= name.size());
    held->second.bytes -= name.size();
    if (held->second.channels.empty() && held->second.patterns.empty()) {
        held_.erase(held);
    }
    Index& by_name = index(kind);
    auto it = by_name.find(name);
    RL_ASSERT(it != by_name.end());  // the two indexes agree
    const size_t erased = it->second.erase(id);
    RL_ASSERT(erased == 1);
    if (it->second.empty()) {
        by_name.erase(it);  // PUBSUB CHANNELS lists only channels someone listens to
    }
    return true;
}

void RedisSubscriptions::remove_all(net::ConnectionId id) {
    for (const Kind kind : {Kind::kChannel, Kind::kPattern}) {
        for (const std::string& name : of(id, kind)) {
            const bool removed = remove(id, kind, name);
            RL_ASSERT(removed);
        }
    }
    RL_ASSERT(!held_.contains(id));
}

std::vector<std::string> RedisSubscriptions::of(net::ConnectionId id, Kind kind) const {
    auto it = held_.find(id);
    if (it == held_.end()) {
        return {};
    }
    const std::set<std::string>& set = names(it->second, kind);
    return {set.begin(), set.end()};
}

bool RedisSubscriptions::holds(net::ConnectionId id, Kind kind, const std::string& name) const {
    auto it = held_.find(id);
    return it != held_.end() && names(it->second, kind).contains(name);
}

size_t RedisSubscriptions::count(net::ConnectionId id) const {
    auto it = held_.find(id);
    return it == held_.end() ? 0 : it->second.channels.size() + it->second.patterns.size();
}

size_t RedisSubscriptions::bytes(net::ConnectionId id) const {
    auto it = held_.find(id);
    return it == held_.end() ? 0 : it->second.bytes;
}

std::vector<std::string> RedisSubscriptions::channels(
    const std::optional<std::string>& pattern) const {
    std::vector<std::string> out;
    for (const auto& [channel, ids] : channels_) {
        RL_ASSERT(!ids.empty());
        if (!pattern || matches(*pattern, channel)) {
            out.push_back(channel);
        }
    }
    return out;
}

size_t RedisSubscriptions::subscribers(const std::string& channel) const {
    auto it = channels_.find(channel);
    return it == channels_.end() ? 0 : it->second.size();
}

bool RedisSubscriptions::matches(std::string_view pattern, std::string_view channel) {
    return statemachine::redis::glob_match(pattern, channel);
}

std::string RedisSubscriptions::check_invariants() const {
    size_t indexed = 0;
    for (const Index* by_name : {&channels_, &patterns_}) {
        const bool channel = by_name == &channels_;
        for (const auto& [name, ids] : *by_name) {
            if (ids.empty()) {
                return fmt::format("\"{}\" is indexed with no subscriber", name);
            }
            for (net::ConnectionId id : ids) {
                auto held = held_.find(id);
                const std::set<std::string>* set =
                    held == held_.end()
                        ? nullptr
                        : (channel ? &held->second.channels : &held->second.patterns);
                if (set == nullptr || !set->contains(name)) {
                    return fmt::format("connection {} is indexed under \"{}\" without holding it",
                                       id, name);
                }
                ++indexed;
            }
        }
    }
    size_t held_total = 0;
    for (const auto& [id, held] : held_) {
        size_t bytes = 0;
        for (const std::string& name : held.channels) {
            bytes += name.size();
        }
        for (const std::string& name : held.patterns) {
            bytes += name.size();
        }
        if (bytes != held.bytes || (held.channels.empty() && held.patterns.empty())) {
            return fmt::format("connection {}: {} bytes counted, {} held", id, held.bytes, bytes);
        }
        held_total += held.channels.size() + held.patterns.size();
    }
    if (held_total != indexed) {
        return fmt::format("{} subscriptions held, {} indexed", held_total, indexed);
    }
    return {};
}

}  // namespace raftlock::server
