// raftlock's idle sessions for session.keepalive, many sessions over few connections.
//
// One raftlock::client::Client is one session, one TCP connection and one network thread: 10,000
// of them would be 10,000 threads on a 2-core machine, measuring the load generator rather than
// the servers. The client protocol does not tie a session to a connection (proto/client.proto:
// every request names its session), so here kConnections plain TCP connections, spread over the
// nodes, each carry a share of the sessions: OpenSession requests pipelined kWindow at a time,
// then a KeepAlive per session every third of the timeout (what the client library does), and a
// CloseSession per session at the end.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "bench/idle_pool.h"
#include "bench/idle_sessions.h"
#include "bench/run_clock.h"
#include "bench/tcp_stream.h"
#include "net/frame.h"
#include "proto/client.pb.h"

namespace raftlock::bench {

namespace {

using namespace std::chrono_literals;

constexpr size_t kConnections = 6;
// Below the server's --max-pending-requests (1024 by default).
constexpr size_t kWindow = 256;
constexpr auto kIoTimeout = 30s;
constexpr uint32_t kFrameBytesMax = 4u << 20;

// Sends `requests` on `stream` as one write and reads one Response per request (in any order),
// skipping pushed watch events and the SessionEnded a CloseSession brings; an expiry is an error.
Status exchange(TcpStream& stream,
                const std::vector<proto::Request>& requests,
                std::vector<proto::Response>& responses) {
    std::string out;
    for (const proto::Request& r : requests) {
        net::append_frame(out, r.SerializeAsString());
    }
    if (Status s = stream.write_all(out); !s.ok()) {
        return s;
    }
    responses.clear();
    while (responses.size() < requests.size()) {
        std::string header;
        if (Status s = stream.read_exact(net::kFrameHeaderBytes, header); !s.ok()) {
            return s;
        }
        const auto* b = reinterpret_cast<const unsigned char*>(header.data());
        const uint32_t length = (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
                                (uint32_t{b[2]} << 8) | uint32_t{b[3]};
        if (length > kFrameBytesMax) {
            return fmt::format("a frame of {} bytes from the server", length);
        }
        std::string payload;
        if (Status s = stream.read_exact(length, payload); !s.ok()) {
            return s;
        }
        proto::ServerMessage message;
        if (!message.ParseFromString(payload)) {
            return std::string("a frame that is not a ServerMessage");
        }
        if (message.has_session_ended() && message.session_ended().expired()) {
            return fmt::format("session {} ended (expired: {})",
                               message.session_ended().session_id(),
                               message.session_ended().expired());
        }
        if (message.has_response()) {
            responses.push_back(message.response());
        }
    }
    return Done{};
}

std::string response_error(const proto::Response& r) {
    return fmt::format("{}: {}", proto::Code_Name(r.code()), r.message());
}

class RaftlockIdleSessions final : public IdlePool {
public:
    RaftlockIdleSessions(std::vector<HostPort> nodes, std::chrono::milliseconds timeout)
        : nodes_(std::move(nodes)), timeout_(timeout) {}

    ~RaftlockIdleSessions() override { stop(); }

    Status open(size_t count) {
        start(count, kConnections,
              [this](size_t c, size_t n) { connection_loop(nodes_[c % nodes_.size()], n); });
        if (open_count() < count) {
            return fmt::format("opened {} of {} sessions: {}", open_count(), count,
                               errors_.first());
        }
        return Done{};
    }

    uint64_t keepalive_errors() const override { return errors_.count(); }

private:
    // Sends one request per session (built by `body`) in windows; returns the responses.
    Status for_each_session(TcpStream& stream,
                            const std::vector<uint64_t>& ids,
                            size_t count,
                            const std::function<void(proto::Request&)>& body,
                            std::vector<proto::Response>& all) {
        all.clear();
        std::vector<proto::Request> window;
        std::vector<proto::Response> responses;
        for (size_t i = 0; i < count; i += kWindow) {
            window.clear();
            for (size_t j = i; j < std::min(count, i + kWindow); ++j) {
                proto::Request& r = window.emplace_back();
                r.set_request_id(++request_id_);
                r.set_session_id(ids.empty() ? 0 : ids[j]);
                body(r);
            }
            if (Status s = exchange(stream, window, responses); !s.ok()) {
                // Answers may still be on their way: start the next round on a new connection.
                stream.close();
                return s;
            }
            all.insert(all.end(), responses.begin(), responses.end());
        }
        return Done{};
    }

    std::vector<uint64_t> open_sessions(TcpStream& stream, size_t n) {
        std::vector<uint64_t> ids;
        const int64_t timeout_ms = timeout_.count();
        std::vector<proto::Response> responses;
        Status s = for_each_session(
            stream, {}, n,
            [timeout_ms](proto::Request& r) {
                r.mutable_open_session()->set_timeout_ms(timeout_ms);
            },
            responses);
        if (!s.ok()) {
            errors_.add("open: " + s.error());
        }
        for (const proto::Response& r : responses) {
            if (r.code() == proto::OK) {
                ids.push_back(r.open_session().session_id());
            } else {
                errors_.add("open: " + response_error(r));
            }
        }
        return ids;
    }

    void keep_alive_all(TcpStream& stream, const std::vector<uint64_t>& ids) {
        std::vector<proto::Response> responses;
        Status s = for_each_session(
            stream, ids, ids.size(), [](proto::Request& r) { r.mutable_keep_alive(); }, responses);
        if (!s.ok()) {
            errors_.add("keepalive: " + s.error());
            return;
        }
        for (const proto::Response& r : responses) {
            if (r.code() != proto::OK) {
                errors_.add("keepalive: " + response_error(r));
            }
        }
    }

    void close_all(TcpStream& stream, const std::vector<uint64_t>& ids) {
        std::vector<proto::Response> responses;
        // CloseSession is the session's first (and last) write: seq 1.
        Status s = for_each_session(
            stream, ids, ids.size(),
            [](proto::Request& r) {
                r.set_seq(1);
                r.mutable_close_session();
            },
            responses);
        size_t failed = ids.size() - responses.size();
        for (const proto::Response& r : responses) {
            failed += r.code() == proto::OK ? 0 : 1;
        }
        // Not a measured figure; the sessions expire after their timeout anyway.
        if (failed > 0) {
            fmt::print(stderr, "idle raftlock sessions: {} of {} closes failed ({}); they expire\n",
                       failed, ids.size(), !s.ok() ? s.error() : response_error(responses.back()));
        }
    }

    void connection_loop(const HostPort& node, size_t n) {
        TcpStream stream;
        std::vector<uint64_t> ids;
        if (Status s = stream.connect(node, kIoTimeout); !s.ok()) {
            errors_.add("connect: " + s.error());
        } else {
            ids = open_sessions(stream, n);
        }
        opened(ids.size());
        // Rounds on a fixed schedule; one that overran its period starts the next at once.
        const auto interval = timeout_ / 3;
        auto next_round = Clock::now() + interval;
        while (wait_until(next_round)) {
            if (!stream.connected()) {
                (void)stream.connect(node, kIoTimeout);
            }
            keep_alive_all(stream, ids);
            next_round = std::max(next_round + interval, Clock::now());
        }
        close_all(stream, ids);
    }

    std::vector<HostPort> nodes_;
    std::chrono::milliseconds timeout_;
    std::atomic<uint64_t> request_id_{0};
};

}  // namespace

Result<std::unique_ptr<IdleSessions>, std::string> open_raftlock_idle(
    const std::vector<HostPort>& nodes, size_t count, std::chrono::milliseconds timeout) {
    auto sessions = std::make_unique<RaftlockIdleSessions>(nodes, timeout);
    if (Status s = sessions->open(count); !s.ok()) {
        return s.error();
    }
    return std::unique_ptr<IdleSessions>(std::move(sessions));
}

}  // namespace raftlock::bench
