// The ZooKeeper client protocol's records: byte layouts from zookeeper.jute, round trips of every
// request kind, and what malformed input gets.

#include "net/zk_codec.h"

#include <catch2/catch.hpp>

#include "net/frame.h"

namespace raftlock::net::zk {

namespace {

// Big-endian bytes, written the way the tests read the jute layout.
class Bytes {
public:
    Bytes& i32(int32_t v) {
        for (int shift = 24; shift >= 0; shift -= 8) {
            s_.push_back(static_cast<char>((static_cast<uint32_t>(v) >> shift) & 0xff));
        }
        return *this;
    }
    Bytes& i64(int64_t v) {
        for (int shift = 56; shift >= 0; shift -= 8) {
            s_.push_back(static_cast<char>((static_cast<uint64_t>(v) >> shift) & 0xff));
        }
        return *this;
    }
    Bytes& b(bool v) {
        s_.push_back(v ? '\1' : '\0');
        return *this;
    }
    Bytes& str(std::string_view v) {
        i32(static_cast<int32_t>(v.size()));
        s_.append(v);
        return *this;
    }
    Bytes& raw(std::string_view v) {
        s_.append(v);
        return *this;
    }
    const std::string& str() const { return s_; }
    // With the 4-byte length in front, as on the wire.
    std::string framed() const { return Bytes().i32(static_cast<int32_t>(s_.size())).raw(s_).s_; }

private:
    std::string s_;
};

Stat sample_stat() {
    Stat s;
    s.czxid = 7;
    s.mzxid = 9;
    s.ctime = 1700000000000;
    s.mtime = 1700000000500;
    s.version = 2;
    s.cversion = 1;
    s.aversion = 0;
    s.ephemeral_owner = 0x1234;
    s.data_length = 5;
    s.num_children = 1;
    s.pzxid = 8;
    return s;
}

Bytes& with_stat(Bytes& bytes, const Stat& s) {
    return bytes.i64(s.czxid)
        .i64(s.mzxid)
        .i64(s.ctime)
        .i64(s.mtime)
        .i32(s.version)
        .i32(s.cversion)
        .i32(s.aversion)
        .i64(s.ephemeral_owner)
        .i32(s.data_length)
        .i32(s.num_children)
        .i64(s.pzxid);
}

// The payload of an encoded request (without its length).
std::string payload_of(const Request& request) {
    std::string out;
    encode_request(request, out);
    REQUIRE(out.size() >= 4);
    return out.substr(4);
}

const Acl kOpenAcl{kPermAll, Id{"world", "anyone"}};

// One request of every kind a client sends.
std::vector<Request> every_request() {
    std::vector<Request> r;
    int32_t xid = 1;
    auto add = [&](OpCode type, RequestBody body) { r.push_back({xid++, type, std::move(body)}); };
    add(OpCode::kPing, EmptyRequest{});
    add(OpCode::kCloseSession, EmptyRequest{});
    add(OpCode::kWhoAmI, EmptyRequest{});
    add(OpCode::kCreate, CreateRequest{"/a", "data", {kOpenAcl}, 3, 0});
    add(OpCode::kCreate2, CreateRequest{"/b", std::nullopt, {kOpenAcl}, 0, 0});
    add(OpCode::kCreateContainer, CreateRequest{"/c", "", {}, 4, 0});
    add(OpCode::kCreateTtl, CreateRequest{"/d", "x", {kOpenAcl}, 5, 60000});
    add(OpCode::kDelete, DeleteRequest{"/a", 3});
    add(OpCode::kExists, PathWatchRequest{"/a", true});
    add(OpCode::kGetData, PathWatchRequest{"/a", false});
    add(OpCode::kGetChildren, PathWatchRequest{"/", true});
    add(OpCode::kGetChildren2, PathWatchRequest{"/", false});
    add(OpCode::kSetData, SetDataRequest{"/a", "new", -1});
    add(OpCode::kSync, PathRequest{"/a"});
    add(OpCode::kGetAcl, PathRequest{"/a"});
    add(OpCode::kGetEphemerals, PathRequest{"/"});
    add(OpCode::kGetAllChildrenNumber, PathRequest{"/a"});
    add(OpCode::kCheck, CheckVersionRequest{"/a", 4});
    add(OpCode::kSetAcl, SetAclRequest{"/a", {kOpenAcl, Acl{kPermRead, Id{"ip", "10.0.0.1"}}}, 0});
    add(OpCode::kSetWatches, SetWatchesRequest{12, {"/a"}, {"/b", "/c"}, {}, {}, {}});
    add(OpCode::kSetWatches2, SetWatchesRequest{13, {}, {}, {"/d"}, {"/e"}, {"/f"}});
    add(OpCode::kAddWatch, AddWatchRequest{"/locks", 1});
    add(OpCode::kCheckWatches, WatchesRequest{"/a", 3});
    add(OpCode::kRemoveWatches, WatchesRequest{"/a", 2});
    r.push_back({kXidAuth, OpCode::kAuth, AuthRequest{0, "digest", "user:pass"}});
    MultiRequest multi;
    multi.ops.push_back({OpCode::kCreate, CreateRequest{"/m", "1", {kOpenAcl}, 0, 0}});
    multi.ops.push_back({OpCode::kCheck, CheckVersionRequest{"/m", 0}});
    multi.ops.push_back({OpCode::kSetData, SetDataRequest{"/m", "2", 0}});
    multi.ops.push_back({OpCode::kDelete, DeleteRequest{"/m", -1}});
    add(OpCode::kMulti, multi);
    MultiRequest reads;
    reads.ops.push_back({OpCode::kGetData, PathWatchRequest{"/a", false}});
    reads.ops.push_back({OpCode::kGetChildren, PathWatchRequest{"/", false}});
    add(OpCode::kMultiRead, reads);
    return r;
}

}  // namespace

TEST_CASE("a ConnectRequest decodes as a 3.4+ client sends it, and as an older one",
          "[zk][codec]") {
    const std::string password(kPasswordBytes, '\0');
    Bytes modern;
    modern.i32(0).i64(0x55).i32(30000).i64(0x0102030405060708).str(password).b(true);
    auto c = decode_connect_request(modern.str());
    REQUIRE(c.ok());
    CHECK(c->protocol_version == 0);
    CHECK(c->last_zxid_seen == 0x55);
    CHECK(c->timeout_ms == 30000);
    CHECK(c->session_id == 0x0102030405060708);
    CHECK(c->password == password);
    CHECK(c->read_only == std::optional<bool>(true));

    Bytes old;
    old.i32(0).i64(0).i32(10000).i64(0).str("");
    auto o = decode_connect_request(old.str());
    REQUIRE(o.ok());
    CHECK_FALSE(o->read_only.has_value());

    auto truncated = decode_connect_request(old.str().substr(0, 19));
    REQUIRE_FALSE(truncated.ok());
    CHECK_THAT(truncated.error(), Catch::Contains("truncated"));
}

TEST_CASE("a create request decodes field by field", "[zk][codec]") {
    Bytes b;
    b.i32(7).i32(1).str("/lock/n-").str("me").i32(1).i32(31).str("world").str("anyone").i32(3);
    auto r = decode_request(b.str());
    REQUIRE(r.ok());
    CHECK(r->xid == 7);
    CHECK(r->type == OpCode::kCreate);
    const auto& c = std::get<CreateRequest>(r->body);
    CHECK(c.path == "/lock/n-");
    CHECK(c.data == std::optional<std::string>("me"));
    REQUIRE(c.acl.size() == 1);
    CHECK(c.acl[0] == kOpenAcl);
    CHECK(c.flags == static_cast<int32_t>(CreateMode::kEphemeralSequential));
}

TEST_CASE("every request kind survives encode and decode", "[zk][codec]") {
    for (const Request& request : every_request()) {
        INFO(to_string(request.type));
        const std::string payload = payload_of(request);
        auto decoded = decode_request(payload);
        REQUIRE(decoded.ok());
        CHECK(decoded->xid == request.xid);
        CHECK(decoded->type == request.type);
        CHECK(decoded->body.index() == request.body.index());
        CHECK(payload_of(*decoded) == payload);
    }
}

TEST_CASE("every truncation of a request is refused and closes the connection", "[zk][codec]") {
    for (const Request& request : every_request()) {
        INFO(to_string(request.type));
        const std::string payload = payload_of(request);
        for (size_t n = 0; n < payload.size(); ++n) {
            auto decoded = decode_request(std::string_view(payload).substr(0, n));
            if (n >= 8 && std::holds_alternative<EmptyRequest>(request.body)) {
                CHECK(decoded.ok());  // the header is the whole request
                continue;
            }
            INFO("prefix of " << n << " bytes");
            REQUIRE_FALSE(decoded.ok());
            CHECK(decoded.error().fatal);
        }
    }
}

TEST_CASE("lengths and counts beyond the payload are refused before anything is reserved",
          "[zk][codec]") {
    // getChildren's path claims 2 GiB.
    Bytes path;
    path.i32(1).i32(8).i32(0x7fffffff).raw("/a");
    auto r = decode_request(path.str());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().fatal);
    CHECK_THAT(r.error().message, Catch::Contains("truncated"));
    // setWatches claims 2^31-1 paths in a few bytes.
    Bytes watches;
    watches.i32(-8).i32(101).i64(0).i32(0x7fffffff).str("/a");
    r = decode_request(watches.str());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("do not fit"));
    // A create whose ACL count is negative (other than -1, null).
    Bytes acl;
    acl.i32(1).i32(1).str("/a").str("").i32(-5).i32(0);
    r = decode_request(acl.str());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("negative count"));
    // A buffer length below -1.
    Bytes data;
    data.i32(1).i32(5).str("/a").i32(-2).i32(0);
    r = decode_request(data.str());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("negative length"));
}

TEST_CASE("null buffers and vectors decode as absent or empty", "[zk][codec]") {
    Bytes b;
    b.i32(3).i32(1).str("/a").i32(-1).i32(-1).i32(0);
    auto r = decode_request(b.str());
    REQUIRE(r.ok());
    const auto& c = std::get<CreateRequest>(r->body);
    CHECK_FALSE(c.data.has_value());
    CHECK(c.acl.empty());
}

TEST_CASE("an operation this server does not serve is answered, not fatal", "[zk][codec]") {
    for (int32_t type : {16, 20, 102, 999, -10}) {
        Bytes b;
        b.i32(42).i32(type).raw("anything");
        auto r = decode_request(b.str());
        REQUIRE_FALSE(r.ok());
        CHECK_FALSE(r.error().fatal);
        CHECK(r.error().xid == 42);
        CHECK(r.error().type == type);
    }
}

TEST_CASE("a multi refuses operations that do not belong in it", "[zk][codec]") {
    // getData inside a (write) multi.
    Bytes b;
    b.i32(1).i32(14).i32(4).b(false).i32(-1).str("/a").b(false).i32(-1).b(true).i32(-1);
    auto r = decode_request(b.str());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().fatal);
    // create inside a multiRead.
    Bytes c;
    c.i32(1).i32(22).i32(1).b(false).i32(-1).str("/a").str("").i32(0).i32(0).i32(-1).b(true).i32(
        -1);
    r = decode_request(c.str());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().fatal);
    // A multi without its closing header is truncated.
    Bytes open;
    open.i32(1).i32(14).i32(2).b(false).i32(-1).str("/a").i32(-1);
    r = decode_request(open.str());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().fatal);
}

TEST_CASE("replies carry the header, and the body only when the operation succeeded",
          "[zk][codec]") {
    const Stat stat = sample_stat();
    std::string out;
    encode_reply(5, 0x10, Err::kOk, Create2Response{"/a0000000001", stat}, out);
    Bytes expected;
    expected.i32(5).i64(0x10).i32(0).str("/a0000000001");
    with_stat(expected, stat);
    CHECK(out == expected.framed());
    CHECK(out.size() == 4 + 16 + 4 + 12 + 68);  // a Stat is 68 bytes

    out.clear();
    encode_reply(6, 0x11, Err::kNoNode, GetDataResponse{"ignored", stat}, out);
    CHECK(out == Bytes().i32(6).i64(0x11).i32(-101).framed());

    out.clear();
    encode_reply(7, 0x12, Err::kOk, ChildrenResponse{{"x", "y"}, std::nullopt}, out);
    CHECK(out == Bytes().i32(7).i64(0x12).i32(0).i32(2).str("x").str("y").framed());

    out.clear();
    encode_reply(kXidPing, 0x12, Err::kOk, EmptyResponse{}, out);
    CHECK(out == Bytes().i32(-2).i64(0x12).i32(0).framed());
}

TEST_CASE("a multi reply lists each result and ends with the closing header", "[zk][codec]") {
    MultiResponse multi;
    multi.results.push_back({OpCode::kCreate, Err::kOk, CreateResponse{"/m"}});
    multi.results.push_back({OpCode::kSetData, Err::kOk, StatResponse{sample_stat()}});
    multi.results.push_back({OpCode::kDelete, Err::kOk, EmptyResponse{}});
    multi.results.push_back({OpCode::kError, Err::kBadVersion, EmptyResponse{}});
    std::string out;
    encode_reply(9, 0x20, Err::kOk, multi, out);
    Bytes expected;
    expected.i32(9).i64(0x20).i32(0);
    expected.i32(1).b(false).i32(0).str("/m");
    with_stat(expected.i32(5).b(false).i32(0), sample_stat());
    expected.i32(2).b(false).i32(0);
    expected.i32(-1).b(false).i32(-103).i32(-103);
    expected.i32(-1).b(true).i32(-1);
    CHECK(out == expected.framed());
}

TEST_CASE("a ConnectResponse and a watch event are laid out as ZooKeeper's", "[zk][codec]") {
    std::string out;
    const std::string password(kPasswordBytes, 'p');
    encode_connect_response({0, 4000, 0x77, password, false}, out);
    CHECK(out == Bytes().i32(0).i32(4000).i64(0x77).str(password).b(false).framed());

    out.clear();
    encode_watch_event(0x30, EventType::kNodeDeleted, KeeperState::kSyncConnected, "/a", out);
    CHECK(out == Bytes().i32(-1).i64(0x30).i32(0).i32(2).i32(3).str("/a").framed());
}

TEST_CASE("ZooKeeper messages split as raftlock frames, bounded by jute.maxbuffer", "[zk][codec]") {
    const auto bound = static_cast<uint32_t>(kDefaultMaxBuffer);
    std::string_view payload;
    FrameDecoder partial(bound);
    partial.feed(std::string_view("\0\0\0", 3));
    CHECK(partial.next(payload) == FrameDecoder::State::kNeedMore);

    FrameDecoder whole(bound);
    whole.feed(Bytes().raw(std::string(44, 'x')).framed());
    REQUIRE(whole.next(payload) == FrameDecoder::State::kFrame);
    CHECK(payload.size() == 44);

    FrameDecoder big(bound);
    big.feed(Bytes().i32(static_cast<int32_t>(kDefaultMaxBuffer) + 1).str());
    CHECK(big.next(payload) == FrameDecoder::State::kTooLarge);
    CHECK(big.rejected_length() == kDefaultMaxBuffer + 1);

    FrameDecoder negative(bound);
    negative.feed(Bytes().i32(-1).str());
    CHECK(negative.next(payload) == FrameDecoder::State::kTooLarge);
}

}  // namespace raftlock::net::zk
