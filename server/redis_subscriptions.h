#pragma once

// Who on this node listens to what on the Redis port (docs/redis-mode.md, pub/sub): each
// connection's channels and patterns, indexed both ways so that a publication finds its receivers
// without visiting every connection, and a closing connection leaves nothing behind.
//
// Node-local and not replicated: a PUBLISH goes through the log, and every node delivers it to the
// subscribers in its own registry when it applies the entry.

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "net/stream_listener.h"

namespace raftlock::server {

class RedisSubscriptions {
public:
    enum class Kind : uint8_t { kChannel, kPattern };

    // False when the connection already had it.
    bool add(net::ConnectionId id, Kind kind, const std::string& name);
    // False when the connection did not have it.
    bool remove(net::ConnectionId id, Kind kind, const std::string& name);
    void remove_all(net::ConnectionId id);

    // The connection's subscriptions of one kind, in name order.
    std::vector<std::string> of(net::ConnectionId id, Kind kind) const;
    bool holds(net::ConnectionId id, Kind kind, const std::string& name) const;
    // Channels and patterns together: what SUBSCRIBE's replies count.
    size_t count(net::ConnectionId id) const;
    // Bytes of the connection's channel names and patterns (the per-connection bound).
    size_t bytes(net::ConnectionId id) const;

    // Who receives a message on `channel`: the channel's subscribers, then, pattern by pattern,
    // the subscribers of each pattern that matches it (Redis's order). `receive(id, pattern)`:
    // pattern is null for a channel subscription.
    template <class Receive>
    void for_each_receiver(const std::string& channel, Receive&& receive) const {
        if (auto it = channels_.find(channel); it != channels_.end()) {
            for (net::ConnectionId id : it->second) {
                receive(id, static_cast<const std::string*>(nullptr));
            }
        }
        for (const auto& [pattern, ids] : patterns_) {
            if (matches(pattern, channel)) {
                for (net::ConnectionId id : ids) {
                    receive(id, &pattern);
                }
            }
        }
    }

    // PUBSUB CHANNELS [pattern]: channels with a subscriber, in name order.
    std::vector<std::string> channels(const std::optional<std::string>& pattern) const;
    // PUBSUB NUMSUB: a channel's subscribers (patterns not counted, as in Redis).
    size_t subscribers(const std::string& channel) const;
    // Channels with a subscriber (INFO's pubsub_channels).
    size_t channel_count() const { return channels_.size(); }
    // PUBSUB NUMPAT: distinct patterns with a subscriber.
    size_t pattern_count() const { return patterns_.size(); }

    // Empty when both indexes agree.
    std::string check_invariants() const;

private:
    struct Held {
        std::set<std::string> channels;
        std::set<std::string> patterns;
        size_t bytes = 0;
    };
    using Index = std::map<std::string, std::set<net::ConnectionId>>;

    static bool matches(std::string_view pattern, std::string_view channel);
    Index& index(Kind kind) { return kind == Kind::kChannel ? channels_ : patterns_; }
    static std::set<std::string>& names(Held& held, Kind kind) {
        return kind == Kind::kChannel ? held.channels : held.patterns;
    }
    static const std::set<std::string>& names(const Held& held, Kind kind) {
        return kind == Kind::kChannel ? held.channels : held.patterns;
    }

    Index channels_;
    Index patterns_;
    std::map<net::ConnectionId, Held> held_;
};

}  // namespace raftlock::server
