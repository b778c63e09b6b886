// The ZooKeeper front end's operations beyond single reads and writes: multi (one native Multi,
// and ZooKeeper's result shapes when it fails), multiRead (a native read per operation), check,
// getACL, getAllChildrenNumber, getEphemerals, setWatches and whoAmI.

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "server/zk_frontend.h"
#include "tests/server/zk_frontend_fixture.h"

// Inside the fixture's namespace, so its names are found before any other test file's in a unity
// build; named, not anonymous, so this file's helpers stay apart from theirs too.
namespace raftlock::server::zk_frontend_fixture {
namespace zk_frontend_ops_test {

namespace zk = net::zk;

constexpr size_t kStatBytes = 68;

// One result of a MultiResponse as a client reads it.
struct MultiEntry {
    int32_t type = 0;
    int32_t err = 0;
    std::string text;  // a create's path, a getData's data
};

// Reads a MultiResponse body: (MultiHeader, result) pairs up to the closing header.
std::vector<MultiEntry> multi_entries(const std::string& body) {
    std::vector<MultiEntry> out;
    size_t at = 0;
    for (;;) {
        REQUIRE(body.size() - at >= 9);
        MultiEntry e;
        e.type = static_cast<int32_t>(net::load_u32(body, at));
        const bool done = body[at + 4] != 0;
        e.err = static_cast<int32_t>(net::load_u32(body, at + 5));
        at += 9;
        if (done) {
            CHECK(e.type == -1);
            CHECK(at == body.size());
            return out;
        }
        switch (static_cast<zk::OpCode>(e.type)) {
            case zk::OpCode::kError:
                CHECK(static_cast<int32_t>(net::load_u32(body, at)) == e.err);
                at += 4;
                break;
            case zk::OpCode::kCreate:
                e.text = string_at(body, at);
                at += 4 + e.text.size();
                break;
            case zk::OpCode::kCreate2:
                e.text = string_at(body, at);
                at += 4 + e.text.size() + kStatBytes;
                break;
            case zk::OpCode::kSetData:
                at += kStatBytes;
                break;
            case zk::OpCode::kGetData:
                e.text = string_at(body, at);
                at += 4 + e.text.size() + kStatBytes;
                break;
            case zk::OpCode::kGetChildren: {
                const uint32_t count = net::load_u32(body, at);
                at += 4;
                for (uint32_t i = 0; i < count; ++i) {
                    const std::string name = string_at(body, at);
                    e.text += (e.text.empty() ? "" : ",") + name;
                    at += 4 + name.size();
                }
                break;
            }
            default:  // delete, check: no body
                break;
        }
        out.push_back(e);
    }
}

zk::MultiOp multi_create(zk::OpCode type, std::string path) {
    zk::CreateRequest body;
    body.path = std::move(path);
    body.acl = {zk::Acl{zk::kPermAll, zk::Id{"world", "anyone"}}};
    body.flags = static_cast<int32_t>(zk::CreateMode::kPersistent);
    return zk::MultiOp{type, std::move(body)};
}

zk::Request five_op_multi(int32_t xid) {
    zk::MultiRequest multi;
    multi.ops.push_back(multi_create(zk::OpCode::kCreate, "/a"));
    multi.ops.push_back(multi_create(zk::OpCode::kCreate2, "/b"));
    multi.ops.push_back(zk::MultiOp{zk::OpCode::kSetData, zk::SetDataRequest{"/a", "x", 0}});
    multi.ops.push_back(zk::MultiOp{zk::OpCode::kDelete, zk::DeleteRequest{"/c", -1}});
    multi.ops.push_back(zk::MultiOp{zk::OpCode::kCheck, zk::CheckVersionRequest{"/d", 3}});
    return zk::Request{xid, zk::OpCode::kMulti, std::move(multi)};
}

proto::Response multi_answer(std::vector<proto::Code> codes, proto::Code overall) {
    proto::Response r = ok();
    r.set_code(overall);
    for (proto::Code code : codes) {
        proto::SubResult* sub = r.mutable_multi()->add_results();
        sub->set_code(code);
        sub->set_path(code == proto::OK ? "/made" : "");
    }
    return r;
}

TEST_CASE("a multi is one native Multi, answered by each operation's type", "[zk]") {
    Fixture f;
    f.open();
    f.send(five_op_multi(4));
    REQUIRE(f.backend.requests.size() == 1);
    const proto::Request& sent = f.backend.requests[0];
    REQUIRE(sent.has_multi());
    CHECK(sent.seq() == 1);  // a write of the session, exactly once like the others
    REQUIRE(sent.multi().ops_size() == 5);
    CHECK(sent.multi().ops(0).create().path() == "/a");
    CHECK(sent.multi().ops(2).set_data().version() == 0);
    CHECK(sent.multi().ops(3).delete_().path() == "/c");
    CHECK(sent.multi().ops(4).check().version() == 3);

    f.answer(0, multi_answer({proto::OK, proto::OK, proto::OK, proto::OK, proto::OK}, proto::OK));
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].xid == 4);
    CHECK(replies[0].err == 0);
    const std::vector<MultiEntry> entries = multi_entries(replies[0].body);
    REQUIRE(entries.size() == 5);
    CHECK(entries[0].type == static_cast<int32_t>(zk::OpCode::kCreate));
    CHECK(entries[0].text == "/made");
    CHECK(entries[1].type == static_cast<int32_t>(zk::OpCode::kCreate2));
    CHECK(entries[2].type == static_cast<int32_t>(zk::OpCode::kSetData));
    CHECK(entries[3].type == static_cast<int32_t>(zk::OpCode::kDelete));
    CHECK(entries[4].type == static_cast<int32_t>(zk::OpCode::kCheck));
}

TEST_CASE("a failed multi: OK before the failed operation, RUNTIMEINCONSISTENCY after", "[zk]") {
    Fixture f;
    f.open();
    f.send(five_op_multi(4));
    f.answer(0, multi_answer({proto::ROLLED_BACK, proto::ROLLED_BACK, proto::BAD_VERSION,
                              proto::ROLLED_BACK, proto::ROLLED_BACK},
                             proto::BAD_VERSION));
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].err == 0);  // the outcome is in the results, as ZooKeeper sends it
    const std::vector<MultiEntry> entries = multi_entries(replies[0].body);
    REQUIRE(entries.size() == 5);
    const std::vector<int32_t> expected = {0, 0, static_cast<int32_t>(zk::Err::kBadVersion),
                                           static_cast<int32_t>(zk::Err::kRuntimeInconsistency),
                                           static_cast<int32_t>(zk::Err::kRuntimeInconsistency)};
    for (size_t i = 0; i < entries.size(); ++i) {
        CHECK(entries[i].type == -1);
        CHECK(entries[i].err == expected[i]);
    }
}

TEST_CASE("a multi refused as a whole carries the error in its header", "[zk]") {
    Fixture f;
    f.open();
    f.send(five_op_multi(4));
    proto::Response refused = ok();
    refused.set_code(proto::BAD_ARGUMENTS);
    f.answer(0, refused);
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].err == static_cast<int32_t>(zk::Err::kBadArguments));
}

TEST_CASE("an empty multi or multiRead is answered at once, in its turn", "[zk]") {
    Fixture f;
    f.open();
    f.send(path_request(1, zk::OpCode::kGetData, "/a"));
    f.send(zk::Request{2, zk::OpCode::kMulti, zk::MultiRequest{}});
    f.send(zk::Request{3, zk::OpCode::kMultiRead, zk::MultiRequest{}});
    CHECK(f.take_replies().empty());  // behind the read
    f.answer(0, ok());
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 3);
    for (int i : {1, 2}) {
        CHECK(replies[i].xid == i + 1);
        CHECK(replies[i].err == 0);
        CHECK(multi_entries(replies[i].body).empty());
    }
    CHECK(f.backend.requests.size() == 1);  // nothing went to the log
}

TEST_CASE("a multiRead sends one read per operation and answers when all are in", "[zk]") {
    Fixture f;
    f.open();
    zk::MultiRequest reads;
    reads.ops.push_back(zk::MultiOp{zk::OpCode::kGetData, zk::PathWatchRequest{"/a", false}});
    reads.ops.push_back(zk::MultiOp{zk::OpCode::kGetChildren, zk::PathWatchRequest{"/b", false}});
    reads.ops.push_back(zk::MultiOp{zk::OpCode::kGetData, zk::PathWatchRequest{"/gone", false}});
    f.send(zk::Request{6, zk::OpCode::kMultiRead, std::move(reads)});
    REQUIRE(f.backend.requests.size() == 3);
    CHECK(f.backend.requests[0].get().path() == "/a");
    CHECK(f.backend.requests[1].children().path() == "/b");
    CHECK(f.backend.requests[2].get().path() == "/gone");

    proto::Response missing = ok();
    missing.set_code(proto::NO_NODE);
    f.answer(2, missing);
    proto::Response names = ok();
    names.mutable_children()->add_names("x");
    names.mutable_children()->add_names("y");
    f.answer(1, names);
    CHECK(f.take_replies().empty());  // the first read is still out
    proto::Response data = ok();
    data.mutable_get()->set_data("hello");
    f.answer(0, data);

    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].err == 0);
    const std::vector<MultiEntry> entries = multi_entries(replies[0].body);
    REQUIRE(entries.size() == 3);
    CHECK(entries[0].type == static_cast<int32_t>(zk::OpCode::kGetData));
    CHECK(entries[0].text == "hello");
    CHECK(entries[1].type == static_cast<int32_t>(zk::OpCode::kGetChildren));
    CHECK(entries[1].text == "x,y");
    CHECK(entries[2].type == -1);  // only the missing node's read failed
    CHECK(entries[2].err == static_cast<int32_t>(zk::Err::kNoNode));
}

proto::Response get_with_version(int32_t version) {
    proto::Response r = ok();
    r.mutable_get()->mutable_stat()->set_version(version);
    r.mutable_get()->mutable_stat()->set_czxid(12);
    return r;
}

TEST_CASE("check reads the node's version: OK, BADVERSION or NONODE", "[zk]") {
    Fixture f;
    f.open();
    f.send(zk::Request{1, zk::OpCode::kCheck, zk::CheckVersionRequest{"/a", 2}});
    f.send(zk::Request{2, zk::OpCode::kCheck, zk::CheckVersionRequest{"/a", 3}});
    f.send(zk::Request{3, zk::OpCode::kCheck, zk::CheckVersionRequest{"/a", -1}});
    f.send(zk::Request{4, zk::OpCode::kCheck, zk::CheckVersionRequest{"/gone", -1}});
    REQUIRE(f.backend.requests.size() == 4);
    // A get, so that the node's ACL must grant READ, as for ZooKeeper's check.
    CHECK(f.backend.requests[0].get().path() == "/a");
    CHECK(f.backend.requests[0].seq() == 0);  // a read: no log entry
    for (size_t i = 0; i < 3; ++i) {
        f.answer(i, get_with_version(3));
    }
    proto::Response missing = ok();
    missing.set_code(proto::NO_NODE);
    f.answer(3, missing);
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 4);
    CHECK(replies[0].err == static_cast<int32_t>(zk::Err::kBadVersion));
    CHECK(replies[1].err == 0);
    CHECK(replies[2].err == 0);
    CHECK(replies[3].err == static_cast<int32_t>(zk::Err::kNoNode));
}

TEST_CASE("getACL answers the node's ACL and stat", "[zk]") {
    Fixture f;
    f.open();
    f.send(zk::Request{1, zk::OpCode::kGetAcl, zk::PathRequest{"/a"}});
    f.send(zk::Request{2, zk::OpCode::kGetAcl, zk::PathRequest{"/gone"}});
    REQUIRE(f.backend.requests.size() == 2);
    CHECK(f.backend.requests[0].get_acl().path() == "/a");
    // Checked as the connection: its address.
    REQUIRE(f.backend.requests[0].caller().ids_size() == 1);
    CHECK(f.backend.requests[0].caller().ids(0).scheme() == "ip");
    CHECK(f.backend.requests[0].caller().ids(0).id() == "127.0.0.1");
    proto::Response acl = ok();
    proto::AclEntry* entry = acl.mutable_acl()->add_acl();
    entry->set_perms(zk::kPermAll);
    entry->mutable_id()->set_scheme("world");
    entry->mutable_id()->set_id("anyone");
    acl.mutable_acl()->mutable_stat()->set_czxid(12);
    acl.mutable_acl()->mutable_stat()->set_aversion(3);
    f.answer(0, acl);
    proto::Response missing = ok();
    missing.set_code(proto::NO_NODE);
    f.answer(1, missing);
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 2);
    CHECK(replies[0].err == 0);
    const std::string& body = replies[0].body;
    CHECK(net::load_u32(body, 0) == 1);  // one ACL
    CHECK(net::load_u32(body, 4) == static_cast<uint32_t>(zk::kPermAll));
    CHECK(string_at(body, 8) == "world");
    CHECK(string_at(body, 17) == "anyone");
    CHECK(body.size() == 27 + kStatBytes);
    CHECK(net::load_u64(body, 27) == 12);                 // the stat's czxid
    CHECK(net::load_u32(body, 27 + 8 * 4 + 4 * 2) == 3);  // its aversion
    CHECK(replies[1].err == static_cast<int32_t>(zk::Err::kNoNode));
}

TEST_CASE("getAllChildrenNumber and getEphemerals are native reads of the session", "[zk]") {
    Fixture f;
    f.open();
    f.send(zk::Request{1, zk::OpCode::kGetAllChildrenNumber, zk::PathRequest{"/a"}});
    f.send(zk::Request{2, zk::OpCode::kGetEphemerals, zk::PathRequest{"/locks"}});
    REQUIRE(f.backend.requests.size() == 2);
    CHECK(f.backend.requests[0].count_descendants().path() == "/a");
    CHECK(f.backend.requests[1].list_ephemerals().prefix() == "/locks");
    CHECK(f.backend.requests[1].session_id() == 9);
    proto::Response count = ok();
    count.mutable_count()->set_count(7);
    f.answer(0, count);
    proto::Response paths = ok();
    paths.mutable_paths()->add_paths("/locks/a");
    paths.mutable_paths()->add_paths("/locks/b");
    f.answer(1, paths);
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 2);
    CHECK(net::load_u32(replies[0].body, 0) == 7);
    CHECK(net::load_u32(replies[1].body, 0) == 2);
    CHECK(string_at(replies[1].body, 4) == "/locks/a");
    CHECK(string_at(replies[1].body, 16) == "/locks/b");
}

TEST_CASE("setWatches restores the watches on this node by the client's newest zxid", "[zk]") {
    Fixture f;
    f.open();
    zk::SetWatchesRequest watches;
    watches.relative_zxid = 30;
    watches.data_watches = {"/d"};
    watches.exist_watches = {"/e1", "/e2"};
    watches.child_watches = {"/c"};
    watches.persistent_recursive_watches = {"/r"};
    f.send(zk::Request{zk::kXidSetWatches, zk::OpCode::kSetWatches2, watches});
    REQUIRE(f.backend.requests.size() == 1);
    const proto::RestoreWatches& restore = f.backend.requests[0].restore_watches();
    CHECK(restore.relative_zxid() == 30);
    CHECK(restore.data_size() == 1);
    CHECK(restore.exists_size() == 2);
    CHECK(restore.children(0) == "/c");
    CHECK(restore.persistent_recursive(0) == "/r");
    f.answer(0, ok());
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].xid == zk::kXidSetWatches);
    CHECK(replies[0].err == 0);
    CHECK(replies[0].body.empty());
}

TEST_CASE("removeWatches and checkWatches name the watch kinds; none there is NOWATCHER", "[zk]") {
    Fixture f;
    f.open();
    f.send(zk::Request{1, zk::OpCode::kRemoveWatches, zk::WatchesRequest{"/a", 3}});
    f.send(zk::Request{2, zk::OpCode::kCheckWatches, zk::WatchesRequest{"/a", 1}});
    f.send(zk::Request{3, zk::OpCode::kRemoveWatches, zk::WatchesRequest{"/a", 9}});
    REQUIRE(f.backend.requests.size() == 2);
    const proto::RemoveWatch& any = f.backend.requests[0].remove_watch();
    CHECK(any.path() == "/a");
    CHECK(any.kinds_size() == 4);  // Any: data, children and both persistent kinds
    CHECK_FALSE(any.check_only());
    const proto::RemoveWatch& check = f.backend.requests[1].remove_watch();
    REQUIRE(check.kinds_size() == 1);
    CHECK(check.kinds(0) == proto::WATCH_CHILDREN);
    CHECK(check.check_only());
    f.answer(0, ok());
    proto::Response none = ok();
    none.set_code(proto::NO_NODE);
    f.answer(1, none);
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 3);
    CHECK(replies[0].err == 0);
    CHECK(replies[1].err == static_cast<int32_t>(zk::Err::kNoWatcher));
    CHECK(replies[2].err == static_cast<int32_t>(zk::Err::kBadArguments));  // no type 9
}

TEST_CASE("whoAmI names the client by its address", "[zk]") {
    Fixture f;
    f.open();
    f.send(zk::Request{1, zk::OpCode::kWhoAmI, zk::EmptyRequest{}});
    CHECK(f.backend.requests.empty());
    const std::vector<Reply> replies = f.take_replies();
    REQUIRE(replies.size() == 1);
    CHECK(net::load_u32(replies[0].body, 0) == 1);
    CHECK(string_at(replies[0].body, 4) == "ip");
    CHECK(string_at(replies[0].body, 10) == "127.0.0.1");
}

TEST_CASE("the four-letter words report what this node counts", "[zk]") {
    ZkFrontendOptions options = Fixture::defaults();
    options.server_facts = [] {
        ZkServerFacts facts;
        facts.node_id = 2;
        facts.leader = true;
        facts.applied_index = 0x2a;
        facts.node_count = 5;
        facts.session_count = 3;
        facts.ephemeral_count = 4;
        facts.watchers = 1;
        facts.watched_paths = 6;
        facts.watches = 7;
        return facts;
    };
    Fixture f(options);
    f.open();
    ZkFrontend& z = f.frontend;
    CHECK(z.on_zk_four_letter_word("ruok") == "imok");
    const std::string mntr = z.on_zk_four_letter_word("mntr").value();
    CHECK_THAT(mntr, Catch::Contains("zk_server_state\tleader\n"));
    CHECK_THAT(mntr, Catch::Contains("zk_znode_count\t5\n"));
    CHECK_THAT(mntr, Catch::Contains("zk_watch_count\t7\n"));
    CHECK_THAT(mntr, Catch::Contains("zk_ephemerals_count\t4\n"));
    CHECK_THAT(mntr, Catch::Contains("zk_num_alive_connections\t1\n"));
    CHECK(z.on_zk_four_letter_word("wchs") == "1 connections watching 6 paths\nTotal watches:7\n");
    CHECK_THAT(z.on_zk_four_letter_word("cons").value(),
               Catch::Contains("/127.0.0.1:5000[1](queued=0,sid=0x9,to=10000)"));
    CHECK_THAT(z.on_zk_four_letter_word("conf").value(),
               Catch::Contains("minSessionTimeout=2000\n"));
    CHECK_THAT(z.on_zk_four_letter_word("envi").value(), Catch::Contains("raftlock.node_id=2\n"));
    CHECK_THAT(z.on_zk_four_letter_word("srvr").value(),
               Catch::Contains("Zxid: 0x2a\nMode: leader"));
    CHECK_FALSE(z.on_zk_four_letter_word("dump").has_value());
}

}  // namespace zk_frontend_ops_test
}  // namespace raftlock::server::zk_frontend_fixture
