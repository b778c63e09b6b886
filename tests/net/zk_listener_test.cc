#include "net/zk_listener.h"

#include <map>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/net/net_test_util.h"

namespace raftlock::net {
// Named, not anonymous: in a unity build its helpers stay apart from other test files'.
namespace zk_listener_test {

using testing::RawClient;
using testing::run_for;
using testing::run_until;
using namespace std::chrono_literals;

std::string framed(const std::string& payload) {
    const auto n = static_cast<uint32_t>(payload.size());
    std::string out{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                    static_cast<char>(n >> 8), static_cast<char>(n)};
    return out + payload;
}

// Records what the listener hands over; echoes each message back framed.
struct Recorder final : ZkHandler {
    void on_zk_open(ConnectionId id, const std::string&) override { opened.push_back(id); }
    void on_zk_message(ConnectionId id, std::string_view payload) override {
        messages[id].emplace_back(payload);
        if (listener != nullptr) {
            listener->send(id, framed(std::string(payload)));
            if (pause_after_first) {
                listener->pause_reading(id, true);
            }
        }
    }
    void on_zk_close(ConnectionId id) override { closed.push_back(id); }
    std::optional<std::string> on_zk_four_letter_word(std::string_view word) override {
        words.emplace_back(word);
        if (word == "ruok") {
            return std::string("imok");
        }
        return std::nullopt;
    }

    ZkListener* listener = nullptr;
    bool pause_after_first = false;
    std::vector<ConnectionId> opened;
    std::vector<ConnectionId> closed;
    std::map<ConnectionId, std::vector<std::string>> messages;
    std::vector<std::string> words;
};

struct Fixture {
    explicit Fixture(ZkListenerOptions options = {}) : listener(io, options, handler) {
        handler.listener = &listener;
        REQUIRE(listener.start().ok());
    }
    boost::asio::io_context io;
    Recorder handler;
    ZkListener listener;
};

TEST_CASE("zookeeper port: whole messages go to the handler in order, split or coalesced",
          "[net][zk]") {
    Fixture f;
    RawClient c(f.io, f.listener.port());
    c.start_reading();
    const std::string both = framed("first") + framed("second message");
    c.write(both.substr(0, 3));  // not even a whole length yet
    run_for(f.io, 50ms);
    CHECK(f.handler.opened.empty());
    c.write(both.substr(3));
    REQUIRE(run_until(f.io, [&] {
        return f.handler.messages.size() == 1 && f.handler.messages.begin()->second.size() == 2;
    }));
    const ConnectionId id = f.handler.opened.at(0);
    CHECK((id & kZkConnectionBit) != 0);
    CHECK(f.handler.messages[id] == std::vector<std::string>{"first", "second message"});
    REQUIRE(run_until(f.io, [&] { return c.received() == both; }));
    c.close();
    REQUIRE(run_until(f.io, [&] { return f.handler.closed.size() == 1; }));
    CHECK(f.handler.closed[0] == id);
}

TEST_CASE("zookeeper port: a four-letter word is answered and closed, never a session",
          "[net][zk]") {
    Fixture f;
    RawClient ruok(f.io, f.listener.port());
    ruok.start_reading();
    ruok.write("ru");
    run_for(f.io, 20ms);
    ruok.write("ok");
    REQUIRE(run_until(f.io, [&] { return ruok.closed_by_server(); }));
    CHECK(ruok.received() == "imok");
    // One the handler does not serve: closed without a word, as outside ZooKeeper's whitelist.
    RawClient dump(f.io, f.listener.port());
    dump.start_reading();
    dump.write("dump");
    REQUIRE(run_until(f.io, [&] { return dump.closed_by_server(); }));
    CHECK(dump.received().empty());
    CHECK(f.handler.words == std::vector<std::string>{"ruok", "dump"});
    CHECK(f.handler.opened.empty());
    CHECK(f.handler.closed.empty());
}

TEST_CASE("zookeeper port: a length beyond jute.maxbuffer closes only that connection",
          "[net][zk]") {
    ZkListenerOptions options;
    options.max_message_bytes = 1000;
    Fixture f(options);
    RawClient bad(f.io, f.listener.port());
    RawClient good(f.io, f.listener.port());
    bad.start_reading();
    good.start_reading();
    bad.write(framed(std::string(1001, 'x')));
    good.write(framed(std::string(1000, 'y')));
    REQUIRE(run_until(f.io, [&] { return bad.closed_by_server(); }));
    REQUIRE(run_until(f.io, [&] { return good.received().size() == 1004; }));
    CHECK_FALSE(good.closed_by_server());
    CHECK(f.listener.stats().protocol_errors == 1);
    // A negative length (the top bit set) is beyond any maximum too.
    RawClient negative(f.io, f.listener.port());
    negative.start_reading();
    negative.write(std::string("\xff\xff\xff\xfe", 4));
    REQUIRE(run_until(f.io, [&] { return negative.closed_by_server(); }));
}

TEST_CASE("zookeeper port: while paused, read messages wait and come in order on resume",
          "[net][zk]") {
    Fixture f;
    f.handler.pause_after_first = true;
    RawClient c(f.io, f.listener.port());
    c.start_reading();
    c.write(framed("a") + framed("b") + framed("c"));
    REQUIRE(run_until(f.io, [&] { return !f.handler.messages.empty(); }));
    run_for(f.io, 50ms);
    const ConnectionId id = f.handler.opened.at(0);
    CHECK(f.handler.messages[id] == std::vector<std::string>{"a"});
    f.handler.pause_after_first = false;
    f.listener.pause_reading(id, false);
    REQUIRE(run_until(f.io, [&] { return f.handler.messages[id].size() == 3; }));
    CHECK(f.handler.messages[id] == std::vector<std::string>{"a", "b", "c"});
}

}  // namespace zk_listener_test
}  // namespace raftlock::net
