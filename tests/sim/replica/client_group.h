#pragma once

// What every family of simulated clients shares (lock_clients.h, watch_clients.h,
// redis_clients.h, sql_clients.h): its clients, each with an index and one pending wake-up; the
// connections they hold; their findings; starting and stopping them.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/message.h>

#include "base/assert.h"
#include "tests/sim/replica/verdicts.h"
#include "tests/sim/replica/world.h"

namespace raftlock::sim::replica {

// A message in a trace line, printed only when the line is: building each message's text whether
// or not anyone traces took 8% of a sweep's time.
struct Brief {
    const google::protobuf::Message& message;
};

// How long a client waits between tries when nothing answers or no node takes it.
inline constexpr uint64_t kBackoffUs = 50'000;
// Beyond the server's own timeouts: what a calm cluster needs to answer at all.
inline constexpr uint64_t kAnswerSlackUs = 1'000'000;

// `Client` has `size_t index` and `std::optional<ConnId> conn`; it may be incomplete where the
// group's header is included (its family defines it in its .cc, with the family's constructor and
// destructor).
template <typename Client>
class ClientGroup : public ClientObserver {
public:
    ClientGroup(const ClientGroup&) = delete;
    ClientGroup& operator=(const ClientGroup&) = delete;

    // Every client starts within the first 100 ms; stop() makes them finish what they do and
    // start nothing new.
    void start() {
        for (size_t i = 0; i < clients_.size(); ++i) {
            wake_client(i, world_.rng().uniform(100'000));
        }
    }
    void stop() { stopping_ = true; }

    // Broken promises (what a negative control must cause), and requests left unanswered or
    // answered in a way no client expects.
    const std::vector<std::string>& failures() const { return verdicts_.failures(); }
    const std::vector<std::string>& liveness_failures() const {
        return verdicts_.liveness_failures();
    }

protected:
    ClientGroup(World& world, size_t count)
        : world_(world), verdicts_(world), wake_tokens_(count, 0) {
        for (size_t i = 0; i < count; ++i) {
            auto c = std::make_unique<Client>();
            c->index = i;
            clients_.push_back(std::move(c));
        }
    }
    ~ClientGroup() override = default;

    // What a client does when it wakes up.
    virtual void step(Client& c) = 0;
    // step(c) after `after_us`, unless another wake-up of c is scheduled meanwhile.
    void wake(Client& c, uint64_t after_us) { wake_client(c.index, after_us); }

    // Woken while a request (sent at sent_us) is in flight: false, after a wake-up at
    // answer_by_us, until that time. Then true: it is overdue, and if no fault was active since
    // it was sent and its connection still stands (`blame`: it was not already given up on), a
    // liveness failure "<request> unanswered for N ms on a calm cluster".
    template <typename Describe>
    bool overdue(Client& c, uint64_t sent_us, uint64_t answer_by_us, bool blame, Describe request) {
        const uint64_t now = world_.now_us();
        if (now < answer_by_us) {
            wake(c, answer_by_us - now);
            return false;
        }
        const std::optional<uint64_t> calm = world_.calm_since_us();
        if (blame && calm && *calm <= sent_us && c.conn && world_.connected(*c.conn)) {
            verdicts_.fail_liveness(fmt::format("{} unanswered for {} ms on a calm cluster",
                                                request(), (now - sent_us) / 1000));
        }
        return true;
    }

    // Connects c (which has no connection) to a node drawn at random, through `open` (&World::open,
    // &World::open_resp or &World::open_pg): false when that node refuses (it is down).
    using Opener = std::optional<ConnId> (World::*)(NodeId, ClientObserver&);
    bool connect_to_any(Client& c, Opener open) {
        RL_ASSERT(!c.conn);
        const std::vector<NodeId> ids = world_.ids();
        c.conn = (world_.*open)(ids[world_.rng().uniform(ids.size())], *this);
        if (!c.conn) {
            return false;
        }
        by_conn_[*c.conn] = &c;
        return true;
    }

    // The server closed `conn`: its client (nullptr if no client holds it any more), which has no
    // connection now.
    Client* take_closed(ConnId conn) {
        auto it = by_conn_.find(conn);
        if (it == by_conn_.end()) {
            return nullptr;
        }
        Client* c = it->second;
        by_conn_.erase(it);
        c->conn.reset();
        return c;
    }

    World& world_;
    std::vector<std::unique_ptr<Client>> clients_;
    std::map<ConnId, Client*> by_conn_;  // the connections the clients hold now
    bool stopping_ = false;
    Verdicts verdicts_;

private:
    void wake_client(size_t i, uint64_t after_us) {
        wake_after(world_, wake_tokens_[i], after_us, [this, i] { step(*clients_[i]); });
    }

    std::vector<uint64_t> wake_tokens_;  // one per client, never resized (wake_after keeps it)
};

}  // namespace raftlock::sim::replica

template <>
struct fmt::formatter<raftlock::sim::replica::Brief> : fmt::formatter<std::string_view> {
    auto format(const raftlock::sim::replica::Brief& brief, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(brief.message.ShortDebugString(), ctx);
    }
};
