#include "net/resp_codec.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/net/resp_through.h"

namespace raftlock::net {
namespace {

using statemachine::redis::Argv;
using statemachine::redis::Value;
using namespace std::string_literals;
using testing::through;

const RespLimits kDefaults{};

RespCommand parse(std::string_view input, const RespLimits& limits = kDefaults) {
    return parse_resp_command(input, limits);
}

// Parses every command of `stream` as the listener does, and fails on anything but a clean end.
std::vector<Argv> parse_all(std::string_view stream, const RespLimits& limits = kDefaults) {
    std::vector<Argv> commands;
    while (!stream.empty()) {
        RespCommand c = parse_resp_command(stream, limits);
        REQUIRE(c.status == RespParse::kCommand);
        REQUIRE(c.consumed > 0);
        REQUIRE(c.consumed <= stream.size());
        commands.push_back(std::move(c.argv));
        stream.remove_prefix(c.consumed);
    }
    return commands;
}

// Feeds `stream` one byte at a time into a growing buffer, parsing after each byte and consuming
// every complete command: what a socket delivering one byte per read would make the listener do.
std::vector<Argv> parse_byte_by_byte(std::string_view stream) {
    std::vector<Argv> commands;
    std::string buffer;
    for (char byte : stream) {
        buffer.push_back(byte);
        for (;;) {
            RespCommand c = parse_resp_command(buffer, kDefaults);
            REQUIRE(c.status != RespParse::kError);
            if (c.status == RespParse::kNeedMore) {
                CHECK(c.consumed == 0);
                break;
            }
            REQUIRE(c.consumed > 0);
            commands.push_back(std::move(c.argv));
            buffer.erase(0, c.consumed);
        }
    }
    CHECK(buffer.empty());
    return commands;
}

std::string encode(const Value& v, int protocol) {
    std::string out;
    encode_resp(v, protocol, out);
    return out;
}

// The request a client library sends for `argv`: an array of bulk strings.
std::string request_of(const Argv& argv) {
    std::vector<Value> items;
    for (const std::string& arg : argv) {
        items.push_back(Value::bulk(arg));
    }
    return encode(Value::array(std::move(items)), 2);
}

std::string repeat(char c, size_t n) {
    return std::string(n, c);
}

TEST_CASE("a multibulk command parses into its arguments and consumes exactly its bytes",
          "[resp]") {
    const std::string set = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n";
    const RespCommand c = parse(set + "*1\r\n$4\r\nPING\r\n");
    REQUIRE(c.status == RespParse::kCommand);
    CHECK(c.consumed == set.size());
    CHECK(c.argv == Argv{"SET", "k", "value"});
    CHECK(c.error.empty());
}

TEST_CASE("every proper prefix of a command needs more bytes, whatever its form", "[resp]") {
    const std::vector<std::string> commands = {
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n",
        "*2\r\n$3\r\nGET\r\n$0\r\n\r\n",
        "*1\r\n$10\r\n\r\n\r\n\r\n\r\n\r\n\r\n",
        "*0\r\n",
        "*-1\r\n",
        "PING\r\n",
        "SET k \"a b\" 'c d'\n",
        "\r\n",
        "\n",
    };
    for (const std::string& command : commands) {
        INFO(command);
        for (size_t n = 0; n < command.size(); ++n) {
            INFO("prefix of " << n << " bytes");
            const RespCommand c = parse(std::string_view(command).substr(0, n));
            CHECK(c.status == RespParse::kNeedMore);
            CHECK(c.consumed == 0);
            CHECK(c.argv.empty());
        }
        const RespCommand whole = parse(command);
        CHECK(whole.status == RespParse::kCommand);
        CHECK(whole.consumed == command.size());
    }
}

TEST_CASE("a pipeline parses command after command, whichever way the bytes are split", "[resp]") {
    const std::string stream = request_of({"SET", "k", "v"}) + "PING\r\n" + "*0\r\n" +
                               request_of({"GET", "k"}) + "  \r\n" +
                               request_of({"ECHO", "a\r\nb"}) + "echo \"x y\"\n";
    const std::vector<Argv> expected = {
        {"SET", "k", "v"}, {"PING"}, {}, {"GET", "k"}, {}, {"ECHO", "a\r\nb"}, {"echo", "x y"},
    };
    CHECK(parse_all(stream) == expected);
    CHECK(parse_byte_by_byte(stream) == expected);
    // Split once at every boundary: the first part, then the rest appended.
    for (size_t split = 0; split <= stream.size(); ++split) {
        std::vector<Argv> got;
        std::string buffer = stream.substr(0, split);
        for (int round = 0; round < 2; ++round) {
            for (;;) {
                RespCommand c = parse(buffer);
                REQUIRE(c.status != RespParse::kError);
                if (c.status == RespParse::kNeedMore) {
                    break;
                }
                got.push_back(std::move(c.argv));
                buffer.erase(0, c.consumed);
            }
            buffer += stream.substr(split);
        }
        CHECK(got == expected);
    }
}

TEST_CASE("bulk arguments are binary safe", "[resp]") {
    const std::string value = "a\r\nb\0c\n\r*$\xff"s;
    const RespCommand c = parse(request_of({"SET", "k", value}));
    REQUIRE(c.status == RespParse::kCommand);
    CHECK(c.argv == Argv{"SET", "k", value});
    CHECK(c.argv[2].size() == 11);
    // An empty bulk is an empty argument (an inline "" is dropped instead; see below).
    CHECK(parse("*2\r\n$3\r\nGET\r\n$0\r\n\r\n").argv == Argv{"GET", ""});
}

TEST_CASE("empty commands are reported with no arguments so the caller skips them", "[resp]") {
    struct Case {
        std::string input;
        size_t consumed;
    };
    // The last: every argument empty, and Redis drops empty inline arguments.
    const std::vector<Case> cases = {
        {"*0\r\n", 4}, {"*-1\r\n", 5},  {"*-100\r\n", 7},   {"\r\n", 2},
        {"\n", 1},     {" \t \r\n", 5}, {"\"\" ''\r\n", 7},
    };
    for (const Case& c : cases) {
        INFO(c.input);
        const RespCommand got = parse(c.input + "PING\r\n");
        CHECK(got.status == RespParse::kCommand);
        CHECK(got.consumed == c.consumed);
        CHECK(got.argv.empty());
    }
}

TEST_CASE("malformed commands get Redis's protocol error texts", "[resp]") {
    struct Case {
        std::string input;
        std::string error;
    };
    const std::string invalid_mbulk = "Protocol error: invalid multibulk length";
    const std::string invalid_bulk = "Protocol error: invalid bulk length";
    const std::string unbalanced = "Protocol error: unbalanced quotes in request";
    const std::vector<Case> cases = {
        // The count must be what Redis's string2ll accepts.
        {"*x\r\n", invalid_mbulk},
        {"*\r\n", invalid_mbulk},
        {"*-0\r\n", invalid_mbulk},
        {"*01\r\n", invalid_mbulk},
        {"*+1\r\n", invalid_mbulk},
        {"* 1\r\n", invalid_mbulk},
        {"*1 \r\n", invalid_mbulk},
        {"*1048577\r\n", invalid_mbulk},
        {"*99999999999999999999\r\n", invalid_mbulk},
        {"*" + repeat('1', 30) + "\r\n", invalid_mbulk},
        {"*1\0\r\n"s, invalid_mbulk},
        // Each argument must be a bulk.
        {"*1\r\nPING\r\n", "Protocol error: expected '$', got 'P'"},
        {"*2\r\n$1\r\na\r\n:1\r\n", "Protocol error: expected '$', got ':'"},
        {"*1\r\n*1\r\n", "Protocol error: expected '$', got '*'"},
        {"*1\r\n\r\n", "Protocol error: expected '$', got '\r'"},
        {"*1\r\n$-1\r\n", invalid_bulk},
        {"*1\r\n$\r\n", invalid_bulk},
        {"*1\r\n$x\r\n", invalid_bulk},
        {"*1\r\n$01\r\n", invalid_bulk},
        {"*1\r\n$16777217\r\n", invalid_bulk},
        // Waiting bytes without the end of their line.
        {repeat('a', 64 * 1024 + 1), "Protocol error: too big inline request"},
        {"*" + repeat('1', 64 * 1024), "Protocol error: too big mbulk count string"},
        {"*1\r\n$" + repeat('1', 64 * 1024), "Protocol error: too big bulk count string"},
        // Inline quoting.
        {"SET k \"v\n", unbalanced},
        {"SET k 'v\n", unbalanced},
        {"SET k \"v\"x\n", unbalanced},
        {"SET k 'v'x\n", unbalanced},
        {"\"abc\\\r\n", unbalanced},
        {"\"a\0\"\n"s, unbalanced},
    };
    for (const Case& c : cases) {
        INFO(c.input.substr(0, 40));
        const RespCommand got = parse(c.input);
        CHECK(got.status == RespParse::kError);
        CHECK(got.error == c.error);
        CHECK(got.consumed == 0);
        CHECK(got.argv.empty());
    }
}

TEST_CASE("a line may wait up to the inline limit for its end, and a complete one is not measured",
          "[resp]") {
    const size_t max = kDefaults.inline_bytes_max;
    CHECK(parse(repeat('a', max)).status == RespParse::kNeedMore);
    CHECK(parse("*" + repeat('1', max - 1)).status == RespParse::kNeedMore);
    CHECK(parse("*1\r\n$" + repeat('1', max - 1)).status == RespParse::kNeedMore);
    // As in Redis: a long line that arrived whole is fine.
    const RespCommand long_line = parse("ECHO " + repeat('x', 2 * max) + "\r\n");
    REQUIRE(long_line.status == RespParse::kCommand);
    CHECK(long_line.argv[1].size() == 2 * max);
    // The count line's limit counts every waiting byte, not only the line's.
    const std::string first = "*2\r\n$3\r\nabc\r\n";
    CHECK(parse(first + repeat('x', max)).status == RespParse::kNeedMore);
    CHECK(parse(first + repeat('x', max + 1)).error == "Protocol error: too big bulk count string");
}

TEST_CASE("the limits bound arguments, their count and waiting lines", "[resp]") {
    RespLimits limits;
    limits.bulk_bytes_max = 3;
    limits.array_items_max = 2;
    limits.inline_bytes_max = 8;
    CHECK(parse("*2\r\n$3\r\nabc\r\n$0\r\n\r\n", limits).status == RespParse::kCommand);
    CHECK(parse("*3\r\n", limits).error == "Protocol error: invalid multibulk length");
    CHECK(parse("*1\r\n$4\r\n", limits).error == "Protocol error: invalid bulk length");
    CHECK(parse("123456789", limits).error == "Protocol error: too big inline request");
    CHECK(parse("12345678", limits).status == RespParse::kNeedMore);
    CHECK(parse("*1234567", limits).status == RespParse::kNeedMore);
    CHECK(parse("*12345678", limits).error == "Protocol error: too big mbulk count string");
    CHECK(parse("*1\r\n$1234567", limits).status == RespParse::kNeedMore);
    CHECK(parse("*1\r\n$12345678", limits).error == "Protocol error: too big bulk count string");
    // Inline commands are bounded by their line only, as in Redis.
    CHECK(parse("a b c d e f g h\n", limits).argv.size() == 8);
    CHECK(parse("abcdefgh\n", limits).argv == Argv{"abcdefgh"});
}

TEST_CASE("a large declared count or length waits for its bytes", "[resp]") {
    // Nothing is reserved for these (the framing is checked before any argument is copied).
    CHECK(parse("*1048576\r\n").status == RespParse::kNeedMore);
    CHECK(parse("*1048576\r\n$1\r\na\r\n").status == RespParse::kNeedMore);
    CHECK(parse("*1\r\n$16777216\r\n").status == RespParse::kNeedMore);
    CHECK(parse("*1\r\n$16777216\r\n" + repeat('x', 1000)).status == RespParse::kNeedMore);
    // The exact limit is allowed.
    const std::string big = repeat('x', kDefaults.bulk_bytes_max);
    const RespCommand c = parse(request_of({"SET", "k", big}));
    REQUIRE(c.status == RespParse::kCommand);
    CHECK(c.argv[2].size() == big.size());
}

TEST_CASE("like Redis, the byte after a line's CR and the two after bulk data are not checked",
          "[resp]") {
    const RespCommand c = parse("*2\rX$3\rXGETYZ$1\rXkYZ*0\r\n");
    REQUIRE(c.status == RespParse::kCommand);
    CHECK(c.argv == Argv{"GET", "k"});
    CHECK(c.consumed == 20);
}

TEST_CASE("inline commands split their line with sdssplitargs's quoting rules", "[resp]") {
    struct Case {
        std::string line;
        Argv argv;
    };
    const std::vector<Case> cases = {
        {"PING", {"PING"}},
        {"  set   k\tv  ", {"set", "k", "v"}},
        {"SET k \"hello world\"", {"SET", "k", "hello world"}},
        {"SET k 'hello world'", {"SET", "k", "hello world"}},
        // Double quotes: C-like escapes and \xHH; an unknown escape is the character itself.
        {R"("a\nb" "\r\t\b\a" "\\ \" \q")", {"a\nb", "\r\t\b\a", "\\ \" q"}},
        {R"("\x41\x62\xff" "\x4" "\xZZ")", {"Ab\xff", "x4", "xZZ"}},
        {R"("\x00")", {"\0"s}},
        // Single quotes: only \' is an escape.
        {R"('it\'s' 'a\nb' '\x41')", {"it's", R"(a\nb)", R"(\x41)"}},
        // A quote may open in the middle of an argument; the closing one must end it.
        {R"(foo"bar baz" x'y z')", {"foobar baz", "xy z"}},
        {"\"a\"\tb", {"a", "b"}},
        {"'a'\x0b"
         "b",
         {"a", "b"}},  // any isspace() byte may follow a closing quote
        // Empty arguments are dropped (processInlineBuffer).
        {"SET k \"\"", {"SET", "k"}},
        {"'' GET ''", {"GET"}},
        // Blanks are skipped with isspace() but only space, tab, CR and LF end a bare argument.
        {"a\x0b"
         "b \x0c"
         "c",
         {"a\x0b"
          "b",
          "c"}},
        {"a\rb", {"a", "b"}},
        {"a\r", {"a"}},
        // A NUL ends the line (sdssplitargs reads a C string).
        {"a\0b c"s, {"a"}},
    };
    for (const Case& c : cases) {
        INFO(c.line);
        for (const std::string end : {"\n", "\r\n"}) {
            const RespCommand got = parse(c.line + end + "PING\r\n");
            REQUIRE(got.status == RespParse::kCommand);
            CHECK(got.argv == c.argv);
            CHECK(got.consumed == c.line.size() + end.size());
        }
    }
}

TEST_CASE("a request encoded as an array of bulks parses back to its arguments", "[resp]") {
    const std::vector<Argv> argvs = {
        {"PING"}, {"SET", "k", ""}, {"SET", "\r\n", "\0\0"s}, {repeat('z', 1000), "x"}};
    for (const Argv& argv : argvs) {
        const std::string bytes = request_of(argv);
        const RespCommand c = parse(bytes);
        REQUIRE(c.status == RespParse::kCommand);
        CHECK(c.consumed == bytes.size());
        CHECK(c.argv == argv);
    }
}

TEST_CASE("each kind of value encodes as RESP2 and as RESP3", "[resp]") {
    struct Case {
        Value value;
        std::string resp2;
        std::string resp3;
    };
    const Value pair = Value::map({Value::bulk("a"), Value::integer_of(1)});
    const std::vector<Case> cases = {
        {Value::null(), "$-1\r\n", "_\r\n"},
        {Value::null_array(), "*-1\r\n", "_\r\n"},
        {Value::ok(), "+OK\r\n", "+OK\r\n"},
        {Value::simple(""), "+\r\n", "+\r\n"},
        {Value::error("ERR syntax error"), "-ERR syntax error\r\n", "-ERR syntax error\r\n"},
        {Value::integer_of(0), ":0\r\n", ":0\r\n"},
        {Value::integer_of(-5), ":-5\r\n", ":-5\r\n"},
        {Value::integer_of(std::numeric_limits<int64_t>::min()), ":-9223372036854775808\r\n",
         ":-9223372036854775808\r\n"},
        {Value::bulk(""), "$0\r\n\r\n", "$0\r\n\r\n"},
        {Value::bulk("a\r\nb"), "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
        {Value::array({}), "*0\r\n", "*0\r\n"},
        {Value::array({Value::integer_of(1), Value::null()}), "*2\r\n:1\r\n$-1\r\n",
         "*2\r\n:1\r\n_\r\n"},
        {pair, "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n$1\r\na\r\n:1\r\n"},
        {Value::map({}), "*0\r\n", "%0\r\n"},
        {Value::push({Value::bulk("message"), pair}),
         "*2\r\n$7\r\nmessage\r\n*2\r\n$1\r\na\r\n:1\r\n",
         ">2\r\n$7\r\nmessage\r\n%1\r\n$1\r\na\r\n:1\r\n"},
        {Value::real(0.1), "$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"},
        {Value::real(-std::numeric_limits<double>::infinity()), "$4\r\n-inf\r\n", ",-inf\r\n"},
        {Value::real(3), "$1\r\n3\r\n", ",3\r\n"},
        {Value::set({Value::bulk("a")}), "*1\r\n$1\r\na\r\n", "~1\r\n$1\r\na\r\n"},
        {Value::pairs({Value::bulk("a"), Value::real(1.5), Value::bulk("b"), Value::real(2)}),
         "*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n",
         "*2\r\n*2\r\n$1\r\na\r\n,1.5\r\n*2\r\n$1\r\nb\r\n,2\r\n"},
        // Line breaks cannot travel in a simple string or an error.
        {Value::simple("a\r\nb"), "+a  b\r\n", "+a  b\r\n"},
        {Value::error("ERR bad\nthing\r"), "-ERR bad thing \r\n", "-ERR bad thing \r\n"},
    };
    for (const Case& c : cases) {
        INFO(c.resp2);
        CHECK(encode(c.value, 2) == c.resp2);
        CHECK(encode(c.value, 3) == c.resp3);
    }
}

TEST_CASE("encode_resp appends to what the buffer holds", "[resp]") {
    std::string out = "+OK\r\n";
    encode_resp(Value::integer_of(7), 2, out);
    encode_resp(Value::null(), 3, out);
    CHECK(out == "+OK\r\n:7\r\n_\r\n");
}

TEST_CASE("encoded values parse back as the same values", "[resp]") {
    const Value nested = Value::array(
        {Value::ok(), Value::error("WRONGTYPE Operation against a key holding the wrong kind"),
         Value::integer_of(std::numeric_limits<int64_t>::max()), Value::bulk("x\r\ny\0"s),
         Value::null(), Value::null_array(), Value::array({}),
         Value::map({Value::bulk("k"), Value::array({Value::bulk("v")})}),
         Value::push({Value::bulk("message"), Value::bulk("ch"), Value::bulk("hi")}),
         Value::real(1.5), Value::real(-std::numeric_limits<double>::infinity()),
         Value::set({Value::bulk("a"), Value::bulk("b")}),
         Value::pairs({Value::bulk("m"), Value::real(0.1), Value::bulk("n"), Value::real(2)})});
    const std::vector<Value> values = {
        Value::null(),
        Value::null_array(),
        Value::ok(),
        Value::error("ERR x"),
        Value::integer_of(-1),
        Value::bulk(""),
        Value::bulk(repeat('b', 100000)),
        nested,
        Value::array({nested, nested}),
    };
    for (int protocol : {2, 3}) {
        for (const Value& v : values) {
            const std::string bytes = encode(v, protocol);
            INFO("protocol " << protocol << ": " << bytes.substr(0, 60));
            const RespReply r = parse_resp_reply(bytes + "+next\r\n", kDefaults);
            REQUIRE(r.status == RespParse::kCommand);
            CHECK(r.consumed == bytes.size());
            CHECK(r.value == through(v, protocol));
        }
        const std::string bytes = encode(nested, protocol);
        for (size_t n = 0; n < bytes.size(); ++n) {
            const RespReply r = parse_resp_reply(std::string_view(bytes).substr(0, n), kDefaults);
            CHECK(r.status == RespParse::kNeedMore);
            CHECK(r.consumed == 0);
        }
    }
}

TEST_CASE("parse_resp_reply reads the RESP3 types", "[resp]") {
    struct Case {
        std::string bytes;
        Value value;
    };
    const std::vector<Case> cases = {
        {"#t\r\n", Value::integer_of(1)},
        {"#f\r\n", Value::integer_of(0)},
        {",3.14\r\n", Value{Value::Kind::kDouble, 0, "3.14", {}}},
        {",inf\r\n", Value::real(std::numeric_limits<double>::infinity())},
        {"(3492890328409238509324850943850943825024385\r\n",
         Value::bulk("3492890328409238509324850943850943825024385")},
        {"=15\r\ntxt:Some string\r\n", Value::bulk("Some string")},
        {"!21\r\nSYNTAX invalid syntax\r\n", Value::error("SYNTAX invalid syntax")},
        {"~2\r\n+a\r\n:1\r\n", Value::set({Value::simple("a"), Value::integer_of(1)})},
        {"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n:5\r\n", Value::integer_of(5)},
        {"*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",
         Value::array({Value::integer_of(1), Value::integer_of(2)})},
        {"_\r\n", Value::null()},
        {"$-1\r\n", Value::null()},
        {"*-1\r\n", Value::null_array()},
    };
    for (const Case& c : cases) {
        INFO(c.bytes);
        const RespReply r = parse_resp_reply(c.bytes, kDefaults);
        REQUIRE(r.status == RespParse::kCommand);
        CHECK(r.consumed == c.bytes.size());
        CHECK(r.value == c.value);
    }
}

TEST_CASE("parse_resp_reply refuses malformed replies", "[resp]") {
    RespLimits limits;
    limits.bulk_bytes_max = 4;
    limits.array_items_max = 3;
    std::string deep;
    for (int i = 0; i < 200; ++i) {
        deep += "*1\r\n";
    }
    const std::vector<std::string> cases = {
        "?\r\n",
        "+a\rb\r\n",
        ":x\r\n",
        ":\r\n",
        "_x\r\n",
        "#x\r\n",
        "$x\r\n",
        "$-2\r\n",
        "$5\r\n",
        "$2\r\nabcd\r\n",
        "=3\r\nabc\r\n",
        "*-2\r\n",
        "%-1\r\n",
        "*4\r\n",
        "*?\r\n",
        "$?\r\n",
        deep,
        "*1\r\n$1\r\nab\r\n",
    };
    for (const std::string& bytes : cases) {
        INFO(bytes.substr(0, 40));
        const RespReply r = parse_resp_reply(bytes, limits);
        CHECK(r.status == RespParse::kError);
        CHECK_FALSE(r.error.empty());
        CHECK(r.consumed == 0);
    }
    CHECK(parse_resp_reply(repeat('+', 100000), limits).status == RespParse::kError);
    CHECK(parse_resp_reply("*3\r\n:1\r\n", limits).status == RespParse::kNeedMore);
    CHECK(parse_resp_reply("", limits).status == RespParse::kNeedMore);
}

}  // namespace
}  // namespace raftlock::net
