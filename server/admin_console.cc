#include "server/admin_console.h"

#include <charconv>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/base64.h"
#include "console/assets.h"
#include "server/console_views.h"

namespace raftlock::server {

namespace {

constexpr std::string_view kJson = "application/json";
constexpr size_t kListDefault = 100;

net::HttpReply json_reply(std::string body, unsigned status = 200) {
    return net::HttpReply{status, std::string(kJson), std::move(body) + "\n"};
}

// GET /api/actions: what the page offers (buttons only where they can work).
std::string actions_json(bool actions, bool login) {
    return fmt::format(R"({{"actions":{},"login_needed":{}}})", actions, login);
}

net::HttpReply bad_request(const std::string& why) {
    return net::HttpReply{400, "text/plain; charset=utf-8", why + "\n"};
}

// The query's `key` as an integer in [lo, hi]; `fallback` when absent; nullopt (with the message
// in `error`) when it is not one.
std::optional<uint64_t> query_number(const net::HttpRequest& request,
                                     const std::string& key,
                                     uint64_t fallback,
                                     uint64_t lo,
                                     uint64_t hi,
                                     std::string& error) {
    const auto it = request.query.find(key);
    if (it == request.query.end()) {
        return fallback;
    }
    uint64_t value = 0;
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < lo ||
        value > hi) {
        error = fmt::format("{}={}: expected an integer in {}..{}", key, text, lo, hi);
        return std::nullopt;
    }
    return value;
}

std::string query_text(const net::HttpRequest& request,
                       const std::string& key,
                       std::string fallback) {
    const auto it = request.query.find(key);
    return it == request.query.end() ? fallback : it->second;
}

void add_assets(net::AdminHttp& http) {
    for (const auto& [path, file] :
         {std::pair{"/", "index.html"}, std::pair{"/console.js", "console.js"},
          std::pair{"/console.css", "console.css"}}) {
        const std::optional<console::Asset> asset = console::find_asset(file);
        RL_ASSERT_MSG(asset.has_value(), "a console file is not built in");
        http.add_route(path, net::HttpMethod::kGet, [asset = *asset](const net::HttpRequest&) {
            return net::HttpReply{200, std::string(asset.content_type), std::string(asset.body)};
        });
    }
}

void add_events(net::AdminHttp& http, Replica& replica, const Clock& clock) {
    http.add_async_route(
        "/api/events", net::HttpMethod::kGet,
        [&replica, &clock](const net::HttpRequest& request,
                           std::shared_ptr<net::HttpPending> pending) {
            std::string error;
            const auto after = query_number(request, "after", 0, 0, UINT64_MAX, error);
            const auto wait_ms = query_number(request, "wait_ms", 0, 0,
                                              static_cast<uint64_t>(kEventsWaitMsMax), error);
            if (!after || !wait_ms) {
                pending->reply(bad_request(error));
                return;
            }
            ConsoleFeed& feed = replica.console_feed();
            if (*wait_ms == 0) {
                pending->reply(json_reply(feed.events_json(*after)));
                return;
            }
            // The feed's waiter owns the pending reply, which refers to its connection weakly: a
            // client that leaves makes it stop `waiting`, and the feed drops it.
            const ConsoleFeed::Park parked = feed.park(ConsoleFeed::Waiter{
                .after = *after,
                .deadline_ms = clock.steady_ms() + static_cast<int64_t>(*wait_ms),
                .waiting = [pending] { return pending->waiting(); },
                .wake = [pending, &feed,
                         after = *after] { pending->reply(json_reply(feed.events_json(after))); }});
            switch (parked) {
                case ConsoleFeed::Park::kParked:
                    return;
                case ConsoleFeed::Park::kReady:
                    pending->reply(json_reply(feed.events_json(*after)));
                    return;
                case ConsoleFeed::Park::kFull:
                    pending->reply(net::HttpReply{
                        503, "text/plain; charset=utf-8",
                        "too many readers wait for events here; ask without wait_ms\n"});
                    return;
            }
        });
}

net::HttpReply text_reply(unsigned status, std::string message) {
    return net::HttpReply{status, "text/plain; charset=utf-8", std::move(message) + "\n"};
}

// Who may act, as `user`: nobody without --console-actions; with authentication enabled, a user
// holding root who proves its password (HTTP Basic; the same check as a Redis AUTH); else
// whoever reaches the port. Nullopt: allowed.
std::optional<net::HttpReply> action_refusal(const net::HttpRequest& request,
                                             Replica& replica,
                                             bool actions,
                                             std::string& user) {
    if (!actions) {
        return text_reply(403,
                          "console actions are off on this node: start it with "
                          "--console-actions on (console_actions = \"on\" in its TOML file)");
    }
    if (!replica.state().auth().enabled()) {
        return std::nullopt;
    }
    const std::string_view header = request.authorization;
    constexpr std::string_view kBasic = "Basic ";
    std::optional<std::string> decoded;
    if (header.starts_with(kBasic)) {
        decoded = base64_decode(header.substr(kBasic.size()));
    }
    const size_t colon = decoded ? decoded->find(':') : std::string::npos;
    if (colon == std::string::npos) {
        return text_reply(401,
                          "authentication is enabled: a console action needs a root user's name "
                          "and password (HTTP Basic)");
    }
    user = decoded->substr(0, colon);
    if (!replica.redis_login(user, decoded->substr(colon + 1))) {
        return text_reply(401, "wrong user name or password");
    }
    if (!replica.state().auth().is_root(user)) {
        return text_reply(403, "user " + user +
                                   " does not hold the root role: console actions "
                                   "are for root users");
    }
    return std::nullopt;
}

// An action route: checks who asks and the arguments, then `act` answers through `pending`.
using Act = std::function<void(const net::HttpRequest&,
                               const std::string& user,
                               const std::shared_ptr<net::HttpPending>& pending)>;

void add_action(
    net::AdminHttp& http, const std::string& name, Replica& replica, bool actions, Act act) {
    http.add_async_route(
        "/api/actions/" + name, net::HttpMethod::kPost,
        [&replica, actions, act = std::move(act)](const net::HttpRequest& request,
                                                  std::shared_ptr<net::HttpPending> pending) {
            std::string user;
            if (std::optional<net::HttpReply> refused =
                    action_refusal(request, replica, actions, user)) {
                pending->reply(std::move(*refused));
                return;
            }
            act(request, user, pending);
        });
}

Replica::ConsoleDone answer_to(std::shared_ptr<net::HttpPending> pending) {
    return [pending = std::move(pending)](unsigned status, std::string message) {
        pending->reply(text_reply(status, std::move(message)));
    };
}

void add_actions(net::AdminHttp& http, Replica& replica, bool actions) {
    http.add_route("/api/actions", net::HttpMethod::kGet,
                   [&replica, actions](const net::HttpRequest&) {
                       return json_reply(actions_json(actions, replica.state().auth().enabled()));
                   });
    add_action(http, "force-release", replica, actions,
               [&replica](const net::HttpRequest& r, const std::string& user,
                          const std::shared_ptr<net::HttpPending>& pending) {
                   std::string error;
                   const auto session = query_number(r, "session", 0, 1, UINT64_MAX, error);
                   const auto token = query_number(r, "token", 0, 1, UINT64_MAX, error);
                   const std::string name = query_text(r, "name", "");
                   if (!session || !token || name.empty() || !r.query.contains("session") ||
                       !r.query.contains("token")) {
                       pending->reply(bad_request(
                           error.empty() ? "name=LOCK&session=S&token=T are needed" : error));
                       return;
                   }
                   replica.console_force_release(user, name, *session, *token, answer_to(pending));
               });
    add_action(http, "expire-session", replica, actions,
               [&replica](const net::HttpRequest& r, const std::string&,
                          const std::shared_ptr<net::HttpPending>& pending) {
                   std::string error;
                   const auto session = query_number(r, "session", 0, 1, UINT64_MAX, error);
                   if (!session || !r.query.contains("session")) {
                       pending->reply(bad_request(error.empty() ? "session=S is needed" : error));
                       return;
                   }
                   replica.console_expire_session(*session, answer_to(pending));
               });
    add_action(http, "transfer-leadership", replica, actions,
               [&replica](const net::HttpRequest& r, const std::string&,
                          const std::shared_ptr<net::HttpPending>& pending) {
                   std::string error;
                   const auto to = query_number(r, "to", 0, 1, UINT64_MAX, error);
                   if (!to || !r.query.contains("to")) {
                       pending->reply(bad_request(error.empty() ? "to=NODE is needed" : error));
                       return;
                   }
                   replica.console_transfer_leadership(*to, answer_to(pending));
               });
}

}  // namespace

void add_console_routes(net::AdminHttp& http, Replica& replica, const Clock& clock, bool actions) {
    add_assets(http);
    add_events(http, replica, clock);
    add_actions(http, replica, actions);
    const auto get = [&http](const std::string& path, net::AdminHttp::RequestRoute route) {
        http.add_route(path, net::HttpMethod::kGet, std::move(route));
    };
    get("/api/cluster",
        [&replica](const net::HttpRequest&) { return json_reply(replica.console_cluster_json()); });
    get("/api/history", [&replica](const net::HttpRequest&) {
        return json_reply(replica.console_history().json());
    });
    get("/api/locks", [&replica](const net::HttpRequest& request) {
        std::string error;
        const auto limit = query_number(request, "limit", kListDefault, 1, kConsoleListMax, error);
        if (!limit) {
            return bad_request(error);
        }
        return json_reply(console_locks_json(replica.state(), query_text(request, "prefix", ""),
                                             *limit, replica.console_cluster_now_ms()));
    });
    get("/api/lock", [&replica](const net::HttpRequest& request) {
        if (!request.query.contains("name")) {
            return bad_request("name=LOCK is missing");
        }
        bool found = false;
        std::string body = console_lock_json(replica.state(), request.query.at("name"),
                                             replica.console_cluster_now_ms(), found);
        return json_reply(std::move(body), found ? 200 : 404);
    });
    get("/api/sessions", [&replica](const net::HttpRequest& request) {
        std::string error;
        const auto limit = query_number(request, "limit", kListDefault, 1, kConsoleListMax, error);
        if (!limit) {
            return bad_request(error);
        }
        return json_reply(replica.console_sessions_json(*limit));
    });
    get("/api/nodes", [&replica](const net::HttpRequest& request) {
        std::string error;
        const auto limit = query_number(request, "limit", kListDefault, 1, kConsoleListMax, error);
        if (!limit) {
            return bad_request(error);
        }
        bool found = false;
        std::string body =
            console_node_json(replica.state(), query_text(request, "path", "/"), *limit, found);
        return json_reply(std::move(body), found ? 200 : 404);
    });
}

}  // namespace raftlock::server
