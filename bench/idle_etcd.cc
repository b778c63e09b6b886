// etcd's idle sessions for session.keepalive: leases. kConnections threads, each with one
// keep-alive HTTP connection to one member's JSON gateway, grant their share of the leases
// (/v3/lease/grant), refresh each one every third of its TTL, and revoke them at the end.
//
// A refresh round is /v3/lease/keepalive requests each carrying up to kBatch messages ({"ID":...}
// objects one after another in one body): the gateway feeds them to one LeaseKeepAlive stream, as
// etcd's own client does with one stream for all its leases, and answers each with a
// {"result":...} object; the stream ends with the body. One request per lease would make the load
// generator's HTTP round trips, not etcd, the limit. The batch is small because the gateway is a
// Go HTTP/1.1 server, which stops reading a request body once the response has begun: only what
// the gateway's JSON decoder took in its first 512-byte read is sure to be answered (16 messages
// of at most 28 bytes; a 500-message body got 17 answers). An answer without a TTL means the
// lease had already expired: a keepalive error, as is a missing answer.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "bench/http_client.h"
#include "bench/idle_pool.h"
#include "bench/idle_sessions.h"
#include "bench/json_text.h"
#include "bench/run_clock.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr size_t kConnections = 8;
constexpr size_t kBatch = 16;
// Granting is one request per lease; a share that takes longer than this is given up.
constexpr auto kGrantDeadline = 180s;
constexpr auto kIoTimeout = 30s;

class EtcdIdleSessions final : public IdlePool {
public:
    EtcdIdleSessions(std::vector<HostPort> members, std::chrono::milliseconds timeout)
        : members_(std::move(members)),
          ttl_s_(std::max<int64_t>(1, (timeout.count() + 999) / 1000)),
          interval_(std::chrono::milliseconds(ttl_s_ * 1000 / 3)) {}

    ~EtcdIdleSessions() override { stop(); }

    Status open(size_t count) {
        start(count, kConnections,
              [this](size_t c, size_t n) { connection_loop(members_[c % members_.size()], n); });
        if (open_count() < count) {
            return fmt::format("granted {} of {} leases: {}", open_count(), count, errors_.first());
        }
        return Done{};
    }

    // Leases a round failed to renew.
    uint64_t keepalive_errors() const override { return failed_.load(); }

private:
    Result<Text, std::string> call(HttpClient& http, const char* path, const std::string& body) {
        auto r = http.post(path, body);
        if (!r.ok()) {
            return r.error();
        }
        if (r->status != 200) {
            return fmt::format("HTTP {}: {}", r->status, r->body);
        }
        return Text{std::move(r->body)};
    }

    // Grants n leases; the ones granted already are kept alive meanwhile (granting many takes
    // longer than a TTL). `next_round`: when the next keepalive round is due.
    std::vector<std::string> grant(HttpClient& http, size_t n, Clock::time_point& next_round) {
        std::vector<std::string> ids;
        const std::string body = fmt::format(R"({{"TTL":{}}})", ttl_s_);
        next_round = Clock::now() + interval_;
        const auto deadline = Clock::now() + kGrantDeadline;
        for (size_t i = 0; i < n; ++i) {
            if (Clock::now() >= deadline) {
                errors_.add(fmt::format("grant: only {} of {} leases in {} s", i, n,
                                        kGrantDeadline.count()));
                break;
            }
            if (Clock::now() >= next_round) {
                keep_alive_all(http, ids);
                next_round += interval_;
            }
            auto r = call(http, "/v3/lease/grant", body);
            auto id = r.ok() ? json_string_field(r->text, "ID") : std::nullopt;
            if (!id) {
                errors_.add("grant: " + (r.ok() ? r->text : r.error()));
                break;
            }
            ids.push_back(*id);
        }
        return ids;
    }

    void keep_alive_all(HttpClient& http, const std::vector<std::string>& ids) {
        std::string body;
        for (size_t i = 0; i < ids.size(); i += kBatch) {
            const size_t n = std::min(kBatch, ids.size() - i);
            body.clear();
            for (size_t j = i; j < i + n; ++j) {
                fmt::format_to(std::back_inserter(body), R"({{"ID":"{}"}})", ids[j]);
            }
            auto r = call(http, "/v3/lease/keepalive", body);
            if (!r.ok()) {
                failed_ += n;
                errors_.add("keepalive: " + r.error());
                continue;
            }
            const size_t answers = count(r->text, "\"result\"");
            const size_t alive = count(r->text, "\"TTL\"");
            if (alive < n) {
                failed_ += n - alive;
                errors_.add(fmt::format("keepalive: {} of {} leases not renewed ({} answers): {}",
                                        n - alive, n, answers, r->text.substr(0, 300)));
            }
        }
    }

    static size_t count(const std::string& text, std::string_view what) {
        size_t n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
            ++n;
        }
        return n;
    }

    void connection_loop(const HostPort& member, size_t n) {
        HttpClient http(member, kIoTimeout);
        Clock::time_point next_round;
        const std::vector<std::string> ids = grant(http, n, next_round);
        opened(ids.size());
        // Rounds on a fixed schedule; one that overran its period starts the next at once.
        while (wait_until(next_round)) {
            keep_alive_all(http, ids);
            next_round = std::max(next_round + interval_, Clock::now());
        }
        for (const std::string& id : ids) {
            (void)call(http, "/v3/lease/revoke", fmt::format(R"({{"ID":"{}"}})", id));
        }
    }

    std::vector<HostPort> members_;
    int64_t ttl_s_;
    std::chrono::milliseconds interval_;
    std::atomic<uint64_t> failed_{0};
};

}  // namespace

Result<std::unique_ptr<IdleSessions>, std::string> open_etcd_idle(
    const std::vector<HostPort>& members, size_t count, std::chrono::milliseconds timeout) {
    auto sessions = std::make_unique<EtcdIdleSessions>(members, timeout);
    if (Status s = sessions->open(count); !s.ok()) {
        return s.error();
    }
    return std::unique_ptr<IdleSessions>(std::move(sessions));
}

}  // namespace raftlock::bench
