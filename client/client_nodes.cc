// Client: node operations and watches.

#include <fmt/format.h>

#include "client/client.h"
#include "client/client_impl.h"
#include "client/convert.h"

namespace raftlock::client {

namespace {

// Registers a one-shot watch of `kind` when its read succeeded (network thread, before the caller
// wakes and before any later event of that connection is dispatched).
std::function<std::optional<Error>(const proto::Response&)> register_on_ok(Client::Impl& impl,
                                                                           WatchKind kind,
                                                                           const std::string& path,
                                                                           WatchCallback callback) {
    if (!callback) {
        return {};
    }
    return [&impl, kind, path, callback = std::move(callback)](
               const proto::Response& response) -> std::optional<Error> {
        if (auto error = impl.watcher().check_room()) {
            return error;
        }
        impl.watcher().add(Watch{path, kind, snapshot_of(kind, response), callback});
        return std::nullopt;
    };
}

}  // namespace

ClientResult<CreatedNode> Client::create(const std::string& path,
                                         const std::string& data,
                                         const CreateOptions& options) {
    proto::Request request;
    proto::Create* create = request.mutable_create();
    create->set_path(path);
    create->set_data(data);
    create->set_kind(to_proto(options.kind));
    create->set_ttl_ms(options.ttl.count());
    fill_fence(options.fence, request);
    auto answer = impl_->call(std::move(request), {RequestClass::kSessionWrite});
    if (auto error = answer_error(answer, fmt::format("create '{}'", path))) {
        return *error;
    }
    return CreatedNode{answer->node().path(), from_proto(answer->node().stat())};
}

ClientResult<NodeData> Client::get(const std::string& path, WatchCallback watch) {
    Impl::CallSpec spec;
    spec.on_ok = register_on_ok(*impl_, WatchKind::kData, path, std::move(watch));
    proto::Request request = watch_request(WatchKind::kData, path);
    request.mutable_get()->set_watch(static_cast<bool>(spec.on_ok));
    auto answer = impl_->call(std::move(request), std::move(spec));
    if (auto error = answer_error(answer, fmt::format("get '{}'", path))) {
        return *error;
    }
    const proto::GetResult& got = answer->get();
    return NodeData{got.data(), from_proto(got.stat()), from_proto(got.kind())};
}

ClientResult<Stat> Client::set(const std::string& path,
                               const std::string& data,
                               const WriteOptions& options) {
    proto::Request request;
    request.mutable_set_data()->set_path(path);
    request.mutable_set_data()->set_data(data);
    request.mutable_set_data()->set_version(options.version);
    fill_fence(options.fence, request);
    auto answer = impl_->call(std::move(request), {RequestClass::kSessionWrite});
    if (auto error = answer_error(answer, fmt::format("set '{}'", path))) {
        return *error;
    }
    return from_proto(answer->node().stat());
}

ClientResult<Done> Client::remove(const std::string& path, const WriteOptions& options) {
    proto::Request request;
    request.mutable_delete_()->set_path(path);
    request.mutable_delete_()->set_version(options.version);
    fill_fence(options.fence, request);
    auto answer = impl_->call(std::move(request), {RequestClass::kSessionWrite});
    if (auto error = answer_error(answer, fmt::format("delete '{}'", path))) {
        return *error;
    }
    return Done{};
}

ClientResult<std::optional<Stat>> Client::exists(const std::string& path, WatchCallback watch) {
    Impl::CallSpec spec;
    spec.on_ok = register_on_ok(*impl_, WatchKind::kExists, path, std::move(watch));
    proto::Request request = watch_request(WatchKind::kExists, path);
    request.mutable_exists()->set_watch(static_cast<bool>(spec.on_ok));
    auto answer = impl_->call(std::move(request), std::move(spec));
    if (answer.ok() && answer->code() == proto::NO_NODE) {
        return std::optional<Stat>();
    }
    if (auto error = answer_error(answer, fmt::format("exists '{}'", path))) {
        return *error;
    }
    if (!answer->exists().exists()) {
        return std::optional<Stat>();
    }
    return std::optional<Stat>(from_proto(answer->exists().stat()));
}

ClientResult<std::vector<std::string>> Client::children(const std::string& path,
                                                        WatchCallback watch) {
    Impl::CallSpec spec;
    spec.on_ok = register_on_ok(*impl_, WatchKind::kChildren, path, std::move(watch));
    proto::Request request = watch_request(WatchKind::kChildren, path);
    request.mutable_children()->set_watch(static_cast<bool>(spec.on_ok));
    auto answer = impl_->call(std::move(request), std::move(spec));
    if (auto error = answer_error(answer, fmt::format("children of '{}'", path))) {
        return *error;
    }
    const auto& names = answer->children().names();
    return std::vector<std::string>(names.begin(), names.end());
}

ClientResult<std::vector<SubResult>> Client::multi(const std::vector<MultiOp>& ops,
                                                   const std::optional<Fence>& fence) {
    proto::Request request;
    for (const MultiOp& op : ops) {
        fill_multi_op(op, *request.mutable_multi()->add_ops());
    }
    fill_fence(fence, request);
    auto answer = impl_->call(std::move(request), {RequestClass::kSessionWrite});
    if (answer.ok() && answer->code() != proto::OK) {
        // Name the sub-op that failed; the others only say they were rolled back.
        const auto& results = answer->multi().results();
        for (int i = 0; i < results.size(); i++) {
            const ErrorCode code = error_code_from_wire(results[i].code());
            if (code != ErrorCode::kOk && code != ErrorCode::kRolledBack) {
                return Error{error_code_from_wire(answer->code()),
                             fmt::format("multi op {} ({}) failed: {}; nothing was applied", i,
                                         results[i].path(), to_string(code))};
            }
        }
    }
    if (auto error = answer_error(answer, "multi")) {
        return *error;
    }
    std::vector<SubResult> out;
    for (const proto::SubResult& result : answer->multi().results()) {
        out.push_back(SubResult{error_code_from_wire(result.code()), result.path(),
                                from_proto(result.stat())});
    }
    return out;
}

ClientResult<WatchId> Client::add_watch(const std::string& path,
                                        bool recursive,
                                        WatchCallback callback) {
    if (!callback) {
        return Error{ErrorCode::kInvalidArgument, "add_watch needs a callback"};
    }
    const WatchKind kind = recursive ? WatchKind::kPersistentRecursive : WatchKind::kPersistent;
    auto id = std::make_shared<WatchId>(0);
    Impl::CallSpec spec;
    spec.on_ok = [this, id, kind, path,
                  callback = std::move(callback)](const proto::Response&) -> std::optional<Error> {
        if (auto error = impl_->watcher().check_room()) {
            return error;
        }
        *id = impl_->watcher().add(Watch{path, kind, WatchSnapshot{true, 0, {}}, callback});
        impl_->core().ensure_connection();
        return std::nullopt;
    };
    auto answer = impl_->call(watch_request(kind, path), std::move(spec));
    if (auto error = answer_error(answer, fmt::format("add watch on '{}'", path))) {
        return *error;
    }
    return *id;
}

ClientResult<Done> Client::remove_watch(WatchId id) {
    if (auto error = impl_->check_thread()) {
        return *error;
    }
    std::optional<Watch> removed;
    bool still_needed = false;
    impl_->core().run_here([&] { removed = impl_->watcher().remove(id, still_needed); });
    if (!removed) {
        return Error{ErrorCode::kInvalidArgument, fmt::format("no watch with id {}", id)};
    }
    if (is_one_shot(removed->kind) || still_needed) {
        return Done{};  // a one-shot server watch fires once into nothing; harmless
    }
    proto::Request request;
    request.mutable_remove_watch()->set_path(removed->path);
    request.mutable_remove_watch()->set_recursive(removed->kind == WatchKind::kPersistentRecursive);
    auto answer = impl_->call(std::move(request), {});
    if (auto error = answer_error(answer, fmt::format("remove watch on '{}'", removed->path))) {
        return *error;
    }
    return Done{};
}

}  // namespace raftlock::client
