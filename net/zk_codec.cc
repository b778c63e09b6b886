#include "net/zk_codec.h"

#include <fmt/format.h>

#include "base/assert.h"
#include "net/big_endian.h"

namespace raftlock::net::zk {

namespace {

// ---------------------------------------------------------------------------------------------
// Reading jute

// Reads records from a payload. The first problem is kept and every later read returns a default
// value, so a decoder reads a whole record and checks once.
class Reader {
public:
    explicit Reader(std::string_view in) : in_(in) {}

    bool failed() const { return !error_.empty(); }
    const std::string& error() const { return error_; }
    size_t remaining() const { return in_.size() - pos_; }

    int32_t i32(const char* what) {
        if (!take(4, what)) {
            return 0;
        }
        pos_ += 4;
        return static_cast<int32_t>(load_u32(in_, pos_ - 4));
    }

    int64_t i64(const char* what) {
        if (!take(8, what)) {
            return 0;
        }
        pos_ += 8;
        return static_cast<int64_t>(load_u64(in_, pos_ - 8));
    }

    bool boolean(const char* what) {
        if (!take(1, what)) {
            return false;
        }
        return in_[pos_++] != 0;  // Java's readBoolean: any non-zero byte is true
    }

    // A buffer or a ustring: nullopt for length -1.
    std::optional<std::string> bytes(const char* what) {
        const int32_t length = i32(what);
        if (failed()) {
            return std::nullopt;
        }
        if (length == -1) {
            return std::nullopt;
        }
        if (length < 0) {
            fail(fmt::format("{}: negative length {}", what, length));
            return std::nullopt;
        }
        const auto n = static_cast<size_t>(length);
        if (!take(n, what)) {
            return std::nullopt;
        }
        std::string out(in_.substr(pos_, n));
        pos_ += n;
        return out;
    }

    // A ustring where null means nothing different from empty (paths, schemes).
    std::string text(const char* what) { return bytes(what).value_or(std::string()); }

    // A vector's count: -1 (null) is empty. Each item takes at least `item_bytes_min` bytes, so a
    // count the remaining bytes cannot hold is refused before anything is reserved.
    size_t count(const char* what, size_t item_bytes_min) {
        RL_ASSERT(item_bytes_min > 0);
        const int32_t n = i32(what);
        if (failed() || n == -1) {
            return 0;
        }
        if (n < 0) {
            fail(fmt::format("{}: negative count {}", what, n));
            return 0;
        }
        if (static_cast<size_t>(n) > remaining() / item_bytes_min) {
            fail(fmt::format("{}: {} items do not fit in the {} bytes left", what, n, remaining()));
            return 0;
        }
        return static_cast<size_t>(n);
    }

    std::vector<std::string> texts(const char* what) {
        const size_t n = count(what, 4);
        std::vector<std::string> out;
        out.reserve(n);
        for (size_t i = 0; i < n && !failed(); ++i) {
            out.push_back(text(what));
        }
        return out;
    }

    std::vector<Acl> acls() {
        const size_t n = count("acl", 12);
        std::vector<Acl> out;
        out.reserve(n);
        for (size_t i = 0; i < n && !failed(); ++i) {
            Acl acl;
            acl.perms = i32("acl perms");
            acl.id.scheme = text("acl scheme");
            acl.id.id = text("acl id");
            out.push_back(std::move(acl));
        }
        return out;
    }

    void fail(std::string message) {
        if (error_.empty()) {
            error_ = std::move(message);
        }
    }

private:
    bool take(size_t n, const char* what) {
        if (failed()) {
            return false;
        }
        if (remaining() < n) {
            fail(fmt::format("{}: truncated ({} bytes needed, {} left)", what, n, remaining()));
            return false;
        }
        return true;
    }

    std::string_view in_;
    size_t pos_ = 0;
    std::string error_;
};

CreateRequest read_create(Reader& r, OpCode type) {
    CreateRequest c;
    c.path = r.text("path");
    c.data = r.bytes("data");
    c.acl = r.acls();
    c.flags = r.i32("flags");
    if (type == OpCode::kCreateTtl) {
        c.ttl = r.i64("ttl");
    }
    return c;
}

DeleteRequest read_delete(Reader& r) {
    DeleteRequest d;
    d.path = r.text("path");
    d.version = r.i32("version");
    return d;
}

SetDataRequest read_set_data(Reader& r) {
    SetDataRequest s;
    s.path = r.text("path");
    s.data = r.bytes("data");
    s.version = r.i32("version");
    return s;
}

CheckVersionRequest read_check(Reader& r) {
    CheckVersionRequest c;
    c.path = r.text("path");
    c.version = r.i32("version");
    return c;
}

PathWatchRequest read_path_watch(Reader& r) {
    PathWatchRequest p;
    p.path = r.text("path");
    p.watch = r.boolean("watch");
    return p;
}

bool is_multi_write(OpCode type) {
    switch (type) {
        case OpCode::kCreate:
        case OpCode::kCreate2:
        case OpCode::kCreateTtl:
        case OpCode::kCreateContainer:
        case OpCode::kDelete:
        case OpCode::kSetData:
        case OpCode::kCheck:
            return true;
        default:
            return false;
    }
}

// A MultiOperationRecord: (MultiHeader, op) pairs until a header says done. ZooKeeper refuses an op
// type that does not belong in the request with an IOException (the connection closes); so do we.
MultiRequest read_multi(Reader& r, OpCode multi_type) {
    MultiRequest m;
    for (;;) {
        const auto type = static_cast<OpCode>(r.i32("multi header type"));
        const bool done = r.boolean("multi header done");
        (void)r.i32("multi header err");
        if (r.failed() || done) {
            return m;
        }
        if (m.ops.size() == kMultiOpsMax) {
            r.fail(fmt::format("more than {} operations in one multi", kMultiOpsMax));
            return m;
        }
        const bool read_op = type == OpCode::kGetData || type == OpCode::kGetChildren;
        if (multi_type == OpCode::kMulti ? !is_multi_write(type) : !read_op) {
            r.fail(fmt::format("operation type {} does not belong in a {}",
                               static_cast<int32_t>(type), to_string(multi_type)));
            return m;
        }
        MultiOp op;
        op.type = type;
        switch (type) {
            case OpCode::kDelete:
                op.body = read_delete(r);
                break;
            case OpCode::kSetData:
                op.body = read_set_data(r);
                break;
            case OpCode::kCheck:
                op.body = read_check(r);
                break;
            case OpCode::kGetData:
            case OpCode::kGetChildren:
                // A multiRead's GetDataRequest / GetChildrenRequest carry a watch flag too.
                op.body = read_path_watch(r);
                break;
            default:
                op.body = read_create(r, type);
                break;
        }
        m.ops.push_back(std::move(op));
    }
}

SetWatchesRequest read_set_watches(Reader& r, bool v2) {
    SetWatchesRequest s;
    s.relative_zxid = r.i64("relativeZxid");
    s.data_watches = r.texts("dataWatches");
    s.exist_watches = r.texts("existWatches");
    s.child_watches = r.texts("childWatches");
    if (v2) {
        s.persistent_watches = r.texts("persistentWatches");
        s.persistent_recursive_watches = r.texts("persistentRecursiveWatches");
    }
    return s;
}

// ---------------------------------------------------------------------------------------------
// Writing jute

class Writer {
public:
    explicit Writer(std::string& out) : out_(out), start_(out.size()) { out_.append(4, '\0'); }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    // Patches the length prefix (the frame of net/frame.h, written in place).
    ~Writer() {
        const size_t length = out_.size() - start_ - 4;
        RL_ASSERT(length <= static_cast<size_t>(INT32_MAX));
        std::string prefix;
        put_u32(static_cast<uint32_t>(length), prefix);
        out_.replace(start_, 4, prefix);
    }

    void i32(int32_t v) { put_u32(static_cast<uint32_t>(v), out_); }
    void i64(int64_t v) { put_u64(static_cast<uint64_t>(v), out_); }
    void boolean(bool v) { out_.push_back(v ? '\1' : '\0'); }
    void bytes(std::string_view v) {
        RL_ASSERT(v.size() <= static_cast<size_t>(INT32_MAX));
        i32(static_cast<int32_t>(v.size()));
        out_.append(v);
    }
    void bytes(const std::optional<std::string>& v) {
        if (!v) {
            i32(-1);
            return;
        }
        bytes(std::string_view(*v));
    }
    void texts(const std::vector<std::string>& v) {
        i32(static_cast<int32_t>(v.size()));
        for (const std::string& s : v) {
            bytes(std::string_view(s));
        }
    }
    void acls(const std::vector<Acl>& v) {
        i32(static_cast<int32_t>(v.size()));
        for (const Acl& acl : v) {
            i32(acl.perms);
            bytes(std::string_view(acl.id.scheme));
            bytes(std::string_view(acl.id.id));
        }
    }
    void stat(const Stat& s) {
        i64(s.czxid);
        i64(s.mzxid);
        i64(s.ctime);
        i64(s.mtime);
        i32(s.version);
        i32(s.cversion);
        i32(s.aversion);
        i64(s.ephemeral_owner);
        i32(s.data_length);
        i32(s.num_children);
        i64(s.pzxid);
    }

private:
    std::string& out_;
    size_t start_;
};

struct BodyWriter {
    Writer& w;

    void operator()(const EmptyResponse&) const {}
    void operator()(const ErrorResponse& r) const { w.i32(static_cast<int32_t>(r.err)); }
    void operator()(const CreateResponse& r) const { w.bytes(std::string_view(r.path)); }
    void operator()(const Create2Response& r) const {
        w.bytes(std::string_view(r.path));
        w.stat(r.stat);
    }
    void operator()(const StatResponse& r) const { w.stat(r.stat); }
    void operator()(const GetDataResponse& r) const {
        w.bytes(r.data);
        w.stat(r.stat);
    }
    void operator()(const ChildrenResponse& r) const {
        w.texts(r.children);
        if (r.stat) {
            w.stat(*r.stat);
        }
    }
    void operator()(const GetAclResponse& r) const {
        w.acls(r.acl);
        w.stat(r.stat);
    }
    void operator()(const PathResponse& r) const { w.bytes(std::string_view(r.path)); }
    void operator()(const PathsResponse& r) const { w.texts(r.paths); }
    void operator()(const CountResponse& r) const { w.i32(r.count); }
    void operator()(const WhoAmIResponse& r) const {
        w.i32(static_cast<int32_t>(r.infos.size()));
        for (const ClientInfo& info : r.infos) {
            w.bytes(std::string_view(info.auth_scheme));
            w.bytes(std::string_view(info.user));
        }
    }
    void operator()(const MultiResponse& r) const {
        for (const MultiResult& result : r.results) {
            const bool error = result.type == OpCode::kError;
            w.i32(static_cast<int32_t>(result.type));
            w.boolean(false);
            w.i32(static_cast<int32_t>(error ? result.err : Err::kOk));
            if (error) {
                w.i32(static_cast<int32_t>(result.err));  // ErrorResponse
                continue;
            }
            std::visit(*this, result.body);
        }
        // The end: MultiHeader {type -1, done, err -1}.
        w.i32(-1);
        w.boolean(true);
        w.i32(-1);
    }
};

struct RequestWriter {
    Writer& w;
    OpCode type;

    void operator()(const EmptyRequest&) const {}
    void operator()(const CreateRequest& c) const {
        w.bytes(std::string_view(c.path));
        w.bytes(c.data);
        w.acls(c.acl);
        w.i32(c.flags);
        if (type == OpCode::kCreateTtl) {
            w.i64(c.ttl);
        }
    }
    void operator()(const DeleteRequest& d) const {
        w.bytes(std::string_view(d.path));
        w.i32(d.version);
    }
    void operator()(const PathWatchRequest& p) const {
        w.bytes(std::string_view(p.path));
        w.boolean(p.watch);
    }
    void operator()(const SetDataRequest& s) const {
        w.bytes(std::string_view(s.path));
        w.bytes(s.data);
        w.i32(s.version);
    }
    void operator()(const PathRequest& p) const { w.bytes(std::string_view(p.path)); }
    void operator()(const CheckVersionRequest& c) const {
        w.bytes(std::string_view(c.path));
        w.i32(c.version);
    }
    void operator()(const SetAclRequest& s) const {
        w.bytes(std::string_view(s.path));
        w.acls(s.acl);
        w.i32(s.version);
    }
    void operator()(const SetWatchesRequest& s) const {
        w.i64(s.relative_zxid);
        w.texts(s.data_watches);
        w.texts(s.exist_watches);
        w.texts(s.child_watches);
        if (type == OpCode::kSetWatches2) {
            w.texts(s.persistent_watches);
            w.texts(s.persistent_recursive_watches);
        }
    }
    void operator()(const AddWatchRequest& a) const {
        w.bytes(std::string_view(a.path));
        w.i32(a.mode);
    }
    void operator()(const WatchesRequest& r) const {
        w.bytes(std::string_view(r.path));
        w.i32(r.type);
    }
    void operator()(const AuthRequest& a) const {
        w.i32(a.type);
        w.bytes(std::string_view(a.scheme));
        w.bytes(std::string_view(a.auth));
    }
    void operator()(const MultiRequest& m) const {
        for (const MultiOp& op : m.ops) {
            w.i32(static_cast<int32_t>(op.type));
            w.boolean(false);
            w.i32(-1);
            std::visit(RequestWriter{w, op.type}, op.body);
        }
        w.i32(-1);
        w.boolean(true);
        w.i32(-1);
    }
};

}  // namespace

// ---------------------------------------------------------------------------------------------

Result<ConnectRequest, std::string> decode_connect_request(std::string_view payload) {
    Reader r(payload);
    ConnectRequest c;
    c.protocol_version = r.i32("protocolVersion");
    c.last_zxid_seen = r.i64("lastZxidSeen");
    c.timeout_ms = r.i32("timeOut");
    c.session_id = r.i64("sessionId");
    c.password = r.text("passwd");
    if (r.failed()) {
        return "ConnectRequest: " + r.error();
    }
    // The read-only flag came with 3.4; a client before it ends the record here (ZooKeeper reads
    // the flag only when a byte is left).
    if (r.remaining() > 0) {
        c.read_only = r.boolean("readOnly");
    }
    return c;
}

Result<Request, DecodeError> decode_request(std::string_view payload) {
    Reader r(payload);
    Request request;
    request.xid = r.i32("xid");
    const int32_t raw_type = r.i32("type");
    if (r.failed()) {
        return DecodeError{true, 0, 0, "RequestHeader: " + r.error()};
    }
    request.type = static_cast<OpCode>(raw_type);
    switch (request.type) {
        case OpCode::kPing:
        case OpCode::kCloseSession:
        case OpCode::kWhoAmI:
            request.body = EmptyRequest{};
            break;
        case OpCode::kCreate:
        case OpCode::kCreate2:
        case OpCode::kCreateContainer:
        case OpCode::kCreateTtl:
            request.body = read_create(r, request.type);
            break;
        case OpCode::kDelete:
            request.body = read_delete(r);
            break;
        case OpCode::kExists:
        case OpCode::kGetData:
        case OpCode::kGetChildren:
        case OpCode::kGetChildren2:
            request.body = read_path_watch(r);
            break;
        case OpCode::kSetData:
            request.body = read_set_data(r);
            break;
        case OpCode::kSync:
        case OpCode::kGetAcl:
        case OpCode::kGetEphemerals:
        case OpCode::kGetAllChildrenNumber:
            request.body = PathRequest{r.text("path")};
            break;
        case OpCode::kCheck:
            request.body = read_check(r);
            break;
        case OpCode::kSetAcl: {
            SetAclRequest s;
            s.path = r.text("path");
            s.acl = r.acls();
            s.version = r.i32("version");
            request.body = std::move(s);
            break;
        }
        case OpCode::kSetWatches:
        case OpCode::kSetWatches2:
            request.body = read_set_watches(r, request.type == OpCode::kSetWatches2);
            break;
        case OpCode::kAddWatch: {
            AddWatchRequest a;
            a.path = r.text("path");
            a.mode = r.i32("mode");
            request.body = std::move(a);
            break;
        }
        case OpCode::kCheckWatches:
        case OpCode::kRemoveWatches: {
            WatchesRequest w;
            w.path = r.text("path");
            w.type = r.i32("type");
            request.body = std::move(w);
            break;
        }
        case OpCode::kAuth: {
            AuthRequest a;
            a.type = r.i32("type");
            a.scheme = r.text("scheme");
            a.auth = r.bytes("auth").value_or(std::string());
            request.body = std::move(a);
            break;
        }
        case OpCode::kMulti:
        case OpCode::kMultiRead:
            request.body = read_multi(r, request.type);
            break;
        default:
            return DecodeError{false, request.xid, raw_type,
                               fmt::format("operation type {} is not served", raw_type)};
    }
    if (r.failed()) {
        return DecodeError{true, request.xid, raw_type,
                           fmt::format("{} request: {}", to_string(request.type), r.error())};
    }
    // Bytes after the record are ignored, as ZooKeeper's record reader ignores them.
    return request;
}

void encode_connect_response(const ConnectResponse& response, std::string& out) {
    Writer w(out);
    w.i32(response.protocol_version);
    w.i32(response.timeout_ms);
    w.i64(response.session_id);
    w.bytes(std::string_view(response.password));
    w.boolean(response.read_only);
}

void encode_reply(int32_t xid, int64_t zxid, Err err, const ResponseBody& body, std::string& out) {
    Writer w(out);
    w.i32(xid);
    w.i64(zxid);
    w.i32(static_cast<int32_t>(err));
    if (err == Err::kOk) {
        std::visit(BodyWriter{w}, body);
    }
}

void encode_watch_event(
    int64_t zxid, EventType type, KeeperState state, std::string_view path, std::string& out) {
    Writer w(out);
    w.i32(kXidNotification);
    w.i64(zxid);
    w.i32(0);
    w.i32(static_cast<int32_t>(type));
    w.i32(static_cast<int32_t>(state));
    w.bytes(path);
}

void encode_connect_request(const ConnectRequest& request, std::string& out) {
    Writer w(out);
    w.i32(request.protocol_version);
    w.i64(request.last_zxid_seen);
    w.i32(request.timeout_ms);
    w.i64(request.session_id);
    w.bytes(std::string_view(request.password));
    if (request.read_only) {
        w.boolean(*request.read_only);
    }
}

void encode_request(const Request& request, std::string& out) {
    Writer w(out);
    w.i32(request.xid);
    w.i32(static_cast<int32_t>(request.type));
    std::visit(RequestWriter{w, request.type}, request.body);
}

const char* to_string(OpCode type) {
    switch (type) {
        case OpCode::kNotification:
            return "notification";
        case OpCode::kCreate:
            return "create";
        case OpCode::kDelete:
            return "delete";
        case OpCode::kExists:
            return "exists";
        case OpCode::kGetData:
            return "getData";
        case OpCode::kSetData:
            return "setData";
        case OpCode::kGetAcl:
            return "getACL";
        case OpCode::kSetAcl:
            return "setACL";
        case OpCode::kGetChildren:
            return "getChildren";
        case OpCode::kSync:
            return "sync";
        case OpCode::kPing:
            return "ping";
        case OpCode::kGetChildren2:
            return "getChildren2";
        case OpCode::kCheck:
            return "check";
        case OpCode::kMulti:
            return "multi";
        case OpCode::kCreate2:
            return "create2";
        case OpCode::kReconfig:
            return "reconfig";
        case OpCode::kCheckWatches:
            return "checkWatches";
        case OpCode::kRemoveWatches:
            return "removeWatches";
        case OpCode::kCreateContainer:
            return "createContainer";
        case OpCode::kDeleteContainer:
            return "deleteContainer";
        case OpCode::kCreateTtl:
            return "createTTL";
        case OpCode::kMultiRead:
            return "multiRead";
        case OpCode::kAuth:
            return "auth";
        case OpCode::kSetWatches:
            return "setWatches";
        case OpCode::kSasl:
            return "sasl";
        case OpCode::kGetEphemerals:
            return "getEphemerals";
        case OpCode::kGetAllChildrenNumber:
            return "getAllChildrenNumber";
        case OpCode::kSetWatches2:
            return "setWatches2";
        case OpCode::kAddWatch:
            return "addWatch";
        case OpCode::kWhoAmI:
            return "whoAmI";
        case OpCode::kCreateSession:
            return "createSession";
        case OpCode::kCloseSession:
            return "closeSession";
        case OpCode::kError:
            return "error";
    }
    return "unknown";
}

}  // namespace raftlock::net::zk
