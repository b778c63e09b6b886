#include "client/watcher.h"

#include <set>
#include <utility>

#include <fmt/format.h>

#include "client/convert.h"

namespace raftlock::client {

proto::Request watch_request(WatchKind kind, const std::string& path) {
    proto::Request request;
    switch (kind) {
        case WatchKind::kData:
            request.mutable_get()->set_path(path);
            request.mutable_get()->set_watch(true);
            break;
        case WatchKind::kExists:
            request.mutable_exists()->set_path(path);
            request.mutable_exists()->set_watch(true);
            break;
        case WatchKind::kChildren:
            request.mutable_children()->set_path(path);
            request.mutable_children()->set_watch(true);
            break;
        case WatchKind::kPersistent:
        case WatchKind::kPersistentRecursive:
            request.mutable_add_watch()->set_path(path);
            request.mutable_add_watch()->set_recursive(kind == WatchKind::kPersistentRecursive);
            break;
    }
    return request;
}

WatchSnapshot snapshot_of(WatchKind kind, const proto::Response& response) {
    WatchSnapshot snapshot;
    const ErrorCode code = error_code_from_wire(response.code());
    if (code == ErrorCode::kNoNode) {
        return snapshot;  // exists = false
    }
    switch (kind) {
        case WatchKind::kData:
            snapshot.exists = true;
            snapshot.mzxid = response.get().stat().mzxid();
            break;
        case WatchKind::kExists:
            snapshot.exists = response.exists().exists();
            snapshot.mzxid = response.exists().stat().mzxid();
            break;
        case WatchKind::kChildren:
            snapshot.exists = true;
            snapshot.children.assign(response.children().names().begin(),
                                     response.children().names().end());
            break;
        case WatchKind::kPersistent:
        case WatchKind::kPersistentRecursive:
            snapshot.exists = true;
            break;
    }
    return snapshot;
}

std::optional<Error> Watcher::check_room() const {
    if (registry_.full()) {
        return Error{ErrorCode::kLimitExceeded,
                     fmt::format("this client has {} watches, its limit: remove some first",
                                 registry_.size())};
    }
    return std::nullopt;
}

std::optional<Watch> Watcher::remove(WatchId id, bool& still_needed) {
    auto watch = registry_.remove(id);
    still_needed = watch && registry_.has_persistent(watch->path, watch->kind);
    return watch;
}

void Watcher::on_event(const proto::WatchEvent& event) {
    const WatchEvent converted = from_proto(event);
    for (const WatchCallback& callback : registry_.dispatch(converted)) {
        callback(converted);
    }
}

void Watcher::on_connected() {
    // The new server knows none of our watches. Persistent ones are added once per path and kind.
    std::set<std::pair<std::string, WatchKind>> added;
    for (WatchId id : registry_.ids()) {
        const Watch* watch = registry_.find(id);
        if (!is_one_shot(watch->kind) && !added.insert({watch->path, watch->kind}).second) {
            continue;
        }
        reregister(id, *watch);
    }
}

void Watcher::reregister(WatchId id, const Watch& watch) {
    PendingRequest pending;
    pending.request = watch_request(watch.kind, watch.path);
    pending.request_class = RequestClass::kRead;
    pending.deadline = core_.now() + core_.options().request_timeout;
    pending.done = [this, id](ClientResult<proto::Response> answer) { on_reread(id, answer); };
    core_.submit(std::move(pending));
}

void Watcher::on_reread(WatchId id, const ClientResult<proto::Response>& answer) {
    Watch* watch = registry_.find(id);
    if (watch == nullptr || !is_one_shot(watch->kind) || !answer.ok()) {
        return;  // fired or removed meanwhile, persistent, or the client is stopping
    }
    const ErrorCode code = error_code_from_wire(answer->code());
    if (code != ErrorCode::kOk && code != ErrorCode::kNoNode) {
        return;
    }
    const auto change = change_since(watch->kind, watch->seen, snapshot_of(watch->kind, *answer));
    if (!change) {
        return;  // unchanged: the watch now set on this server will fire when it changes
    }
    // The node changed while we were not connected: fire the watch here, as the old server would
    // have. zxid 0 says the event was inferred.
    const WatchEvent event{watch->path, *change, 0};
    auto removed = registry_.remove(id);
    removed->callback(event);
}

}  // namespace raftlock::client
