#include "net/pg_codec.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace raftlock::net {
namespace {

using namespace std::string_literals;
using Phase = PgDecoder::Phase;

// ---------------------------------------------------------------------------------------------
// Frontend messages written by hand, field by field, from the protocol documentation.

class Body {
public:
    Body& u8(uint8_t v) {
        bytes_.push_back(static_cast<char>(v));
        return *this;
    }
    Body& i16(int64_t v) {  // the low 16 bits, big-endian
        return u8(static_cast<uint8_t>(v >> 8)).u8(static_cast<uint8_t>(v));
    }
    Body& i32(int64_t v) {  // the low 32 bits, big-endian
        return i16(v >> 16).i16(v);
    }
    Body& str(std::string_view s) {  // a C string
        bytes_.append(s);
        return u8(0);
    }
    Body& raw(std::string_view s) {
        bytes_.append(s);
        return *this;
    }
    const std::string& bytes() const { return bytes_; }

private:
    std::string bytes_;
};

// A regular message: type, Int32 length (itself and the body), body.
std::string regular(char type, const Body& body = Body()) {
    return std::string(1, type) + Body().i32(4 + body.bytes().size()).bytes() + body.bytes();
}

// A startup packet: Int32 length (itself, the code and the body), Int32 code, body.
std::string startup_packet(uint32_t code, const Body& body = Body()) {
    return Body().i32(8 + body.bytes().size()).i32(code).bytes() + body.bytes();
}

std::string startup_message(const std::vector<std::pair<std::string, std::string>>& pairs = {
                                {"user", "alice"}}) {
    Body body;
    for (const auto& [name, value] : pairs) {
        body.str(name).str(value);
    }
    return startup_packet(kPgProtocol3, body.u8(0));
}

// What a server sees of a stream: the messages in order, and the error that ended it, if any.
struct Trace {
    std::vector<PgFrontendMessage> messages;
    std::optional<PgProtocolError> error;

    std::vector<std::string> texts() const {
        std::vector<std::string> out;
        for (const PgFrontendMessage& m : messages) {
            out.push_back(to_string(m));
        }
        return out;
    }
};

// Takes messages as a server does until the decoder needs more bytes or fails, switching to
// regular messages after a StartupMessage and stopping after a CancelRequest.
void drain(PgDecoder& decoder, Trace& trace) {
    while (!trace.error && decoder.phase() != Phase::kCancelled) {
        PgNext next = decoder.next();
        if (!next.ok()) {
            trace.error = next.error();
            return;
        }
        if (!next->has_value()) {
            return;
        }
        if (std::holds_alternative<PgStartup>(**next)) {
            decoder.start_regular();
        }
        trace.messages.push_back(std::move(**next));
    }
}

PgDecoder decoder_in(bool regular, const PgLimits& limits) {
    PgDecoder decoder(limits);
    if (regular) {
        decoder.start_regular();
    }
    return decoder;
}

// The whole stream in one feed.
Trace decode(std::string_view stream, bool regular = true, const PgLimits& limits = {}) {
    PgDecoder decoder = decoder_in(regular, limits);
    Trace trace;
    decoder.feed(stream);
    drain(decoder, trace);
    return trace;
}

// The stream in pieces of `piece_bytes`, draining after each, as reads of that size would.
Trace decode_in_pieces(std::string_view stream,
                       size_t piece_bytes,
                       bool regular = true,
                       const PgLimits& limits = {}) {
    PgDecoder decoder = decoder_in(regular, limits);
    Trace trace;
    for (size_t at = 0; at < stream.size(); at += piece_bytes) {
        decoder.feed(stream.substr(at, piece_bytes));
        drain(decoder, trace);
    }
    return trace;
}

// The one message a complete stream holds; fails the test otherwise.
PgFrontendMessage decode_one(std::string_view stream, bool regular = true) {
    Trace trace = decode(stream, regular);
    INFO((trace.error ? trace.error->message : "no error"));
    REQUIRE(!trace.error);
    REQUIRE(trace.messages.size() == 1);
    return trace.messages[0];
}

// The error a stream ends in; fails the test if it ends otherwise.
std::string decode_error(std::string_view stream,
                         bool regular = true,
                         const PgLimits& limits = {}) {
    const Trace trace = decode(stream, regular, limits);
    REQUIRE(trace.error);
    return trace.error->message;
}

// ---------------------------------------------------------------------------------------------
// Startup

TEST_CASE("a StartupMessage keeps every parameter in order and needs start_regular",
          "[pg][codec]") {
    const std::string bytes = startup_message({{"user", "alice"},
                                               {"database", "locks"},
                                               {"application_name", "psql"},
                                               {"options", "-c geqo=off"},
                                               {"client_encoding", "UTF8"},
                                               {"DateStyle", "ISO, MDY"}});
    PgDecoder decoder;
    decoder.feed(bytes);
    PgNext next = decoder.next();
    REQUIRE(next.ok());
    REQUIRE(next->has_value());
    const auto& startup = std::get<PgStartup>(**next);
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"user", "alice"},          {"database", "locks"},       {"application_name", "psql"},
        {"options", "-c geqo=off"}, {"client_encoding", "UTF8"}, {"DateStyle", "ISO, MDY"}};
    CHECK(startup.parameters == expected);
    CHECK(startup.user() == "alice");
    CHECK(startup.parameter("database") == std::optional<std::string_view>("locks"));
    CHECK(startup.parameter("replication") == std::nullopt);
    CHECK(to_string(startup) ==
          "StartupMessage 3.0 user=\"alice\" database=\"locks\" application_name=\"psql\" "
          "options=\"-c geqo=off\" client_encoding=\"UTF8\" DateStyle=\"ISO, MDY\"");
    CHECK(decoder.phase() == Phase::kStartupDone);
    CHECK(decoder.partial_bytes() == 0);
    decoder.start_regular();
    CHECK(decoder.phase() == Phase::kRegular);
}

TEST_CASE("a repeated startup parameter is kept twice and the later one wins", "[pg][codec]") {
    const auto m = std::get<PgStartup>(
        decode_one(startup_message({{"user", "a"}, {"user", "b"}, {"database", ""}}), false));
    CHECK(m.parameters.size() == 3);
    CHECK(m.user() == "b");
    CHECK(m.parameter("database") == std::optional<std::string_view>(""));
}

TEST_CASE("an SSLRequest is answered and the StartupMessage follows on the same connection",
          "[pg][codec]") {
    CHECK(kPgEncryptionRefused == "N");
    const std::string ssl = startup_packet(kPgSslRequestCode);
    CHECK(ssl == "\x00\x00\x00\x08\x04\xd2\x16\x2f"s);  // 8, then 1234 << 16 | 5679
    PgDecoder decoder;
    decoder.feed(ssl);
    PgNext first = decoder.next();
    REQUIRE(first.ok());
    REQUIRE(first->has_value());
    CHECK(std::holds_alternative<PgSslRequest>(**first));
    CHECK(decoder.phase() == Phase::kStartup);
    PgNext nothing = decoder.next();
    REQUIRE(nothing.ok());
    CHECK(!nothing->has_value());
    decoder.feed(startup_message());
    PgNext second = decoder.next();
    REQUIRE(second.ok());
    REQUIRE(second->has_value());
    CHECK(to_string(**second) == "StartupMessage 3.0 user=\"alice\"");
}

TEST_CASE("GSSENCRequest then SSLRequest then StartupMessage in one feed are three messages",
          "[pg][codec]") {
    const Trace trace =
        decode(startup_packet(kPgGssEncRequestCode) + startup_packet(kPgSslRequestCode) +
                   startup_message() + regular('Q', Body().str("SELECT 1")),
               false);
    CHECK(!trace.error);
    CHECK(trace.texts() == std::vector<std::string>{"GSSENCRequest", "SSLRequest",
                                                    "StartupMessage 3.0 user=\"alice\"",
                                                    "Query \"SELECT 1\""});
}

TEST_CASE("a CancelRequest carries the process id and secret key and ends the startup",
          "[pg][codec]") {
    PgDecoder decoder;
    decoder.feed(startup_packet(kPgCancelRequestCode, Body().i32(4242).i32(0xdeadbeef)));
    PgNext next = decoder.next();
    REQUIRE(next.ok());
    REQUIRE(next->has_value());
    const auto& cancel = std::get<PgCancelRequest>(**next);
    CHECK(cancel.process_id == 4242);
    CHECK(cancel.secret_key == 0xdeadbeefu);
    CHECK(to_string(cancel) == "CancelRequest pid=4242");  // the key is a secret
    CHECK(decoder.phase() == Phase::kCancelled);
}

TEST_CASE("protocol versions other than 3.0 are refused with the version named", "[pg][codec]") {
    const std::vector<std::pair<uint32_t, std::string>> cases = {
        {2u << 16, "unsupported frontend protocol 2.0: server supports 3.0 only"},
        {(3u << 16) | 1, "unsupported frontend protocol 3.1: server supports 3.0 only"},
        {(3u << 16) | 2, "unsupported frontend protocol 3.2: server supports 3.0 only"},
        {4u << 16, "unsupported frontend protocol 4.0: server supports 3.0 only"},
        {80877105, "unsupported frontend protocol 1234.5681: server supports 3.0 only"},
    };
    for (const auto& [code, error] : cases) {
        INFO("code " << code);
        CHECK(decode_error(startup_packet(code, Body().str("user").str("a").u8(0)), false) ==
              error);
    }
}

TEST_CASE("malformed startup packets are refused", "[pg][codec]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {Body().i32(7).i32(kPgProtocol3).bytes(), "invalid length of startup packet: 7"},
        {Body().i32(-1).bytes(), "invalid length of startup packet: -1"},
        {Body().i32(10001).bytes(),
         "startup packet of 10001 bytes exceeds the limit of 10000 bytes"},
        {startup_message({{"database", "x"}}),
         "StartupMessage: no PostgreSQL user name specified in startup packet"},
        {startup_message({{"user", ""}}),
         "StartupMessage: no PostgreSQL user name specified in startup packet"},
        {startup_packet(kPgProtocol3, Body().str("user").str("a")),
         "StartupMessage: invalid startup packet layout: expected terminator as last byte"},
        {startup_packet(kPgProtocol3, Body().str("user").str("a").u8(0).u8('x')),
         "StartupMessage: invalid message format (1 byte after the last field)"},
        {startup_packet(kPgProtocol3, Body().str("user").raw("a")),
         "StartupMessage: invalid string in message (a parameter value has no terminating NUL)"},
        {startup_packet(kPgProtocol3, Body().raw("user")),
         "StartupMessage: invalid string in message (a parameter name has no terminating NUL)"},
        {startup_packet(kPgSslRequestCode, Body().i32(0)),
         "SSLRequest: invalid message format (4 bytes after the last field)"},
        {startup_packet(kPgGssEncRequestCode, Body().u8(0)),
         "GSSENCRequest: invalid message format (1 byte after the last field)"},
        {startup_packet(kPgCancelRequestCode, Body().i32(1)),
         "CancelRequest: insufficient data left in message (reading the secret key)"},
        {startup_packet(kPgCancelRequestCode, Body().i32(1).i32(2).i32(3)),
         "CancelRequest: invalid message format (4 bytes after the last field)"},
        {startup_packet(kPgSslRequestCode) + startup_packet(kPgSslRequestCode),
         "SSLRequest sent twice"},
        {startup_packet(kPgGssEncRequestCode) + startup_packet(kPgSslRequestCode) +
             startup_packet(kPgGssEncRequestCode),
         "GSSENCRequest sent twice"},
    };
    for (const auto& [bytes, error] : cases) {
        INFO(error);
        CHECK(decode_error(bytes, false) == error);
    }
}

TEST_CASE("the startup packet and its pairs are limited", "[pg][codec][limits]") {
    // Exactly 10000 bytes: the value fills the packet up to the limit.
    const std::string value(10000 - 8 - 5 - 1 - 1, 'v');
    const std::string largest = startup_message({{"user", value}});
    REQUIRE(largest.size() == 10000);
    CHECK(std::get<PgStartup>(decode_one(largest, false)).user() == value);
    const std::string too_large = startup_message({{"user", value + "v"}});
    CHECK(decode_error(too_large, false) ==
          "startup packet of 10001 bytes exceeds the limit of 10000 bytes");

    std::vector<std::pair<std::string, std::string>> pairs = {{"user", "a"}};
    for (int i = 1; i < 64; ++i) {
        pairs.emplace_back("p" + std::to_string(i), "v");
    }
    CHECK(std::get<PgStartup>(decode_one(startup_message(pairs), false)).parameters.size() == 64);
    pairs.emplace_back("p64", "v");
    CHECK(decode_error(startup_message(pairs), false) == "StartupMessage: more than 64 parameters");
}

// ---------------------------------------------------------------------------------------------
// Regular messages

TEST_CASE("every regular message decodes from its documented layout", "[pg][codec]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {regular('Q', Body().str("SELECT pg_advisory_lock(1)")),
         "Query \"SELECT pg_advisory_lock(1)\""},
        {regular('Q', Body().str("")), "Query \"\""},
        {regular('P', Body().str("s1").str("SELECT $1, $2").i16(2).i32(23).i32(0)),
         "Parse statement=\"s1\" query=\"SELECT $1, $2\" types=[23 0]"},
        {regular('P', Body().str("").str("BEGIN").i16(0)),
         "Parse statement=\"\" query=\"BEGIN\" types=[]"},
        {regular('B', Body()
                          .str("")
                          .str("s1")
                          .i16(3)
                          .i16(1)
                          .i16(0)
                          .i16(0)
                          .i16(3)
                          .i32(4)
                          .i32(7)
                          .i32(-1)
                          .i32(3)
                          .raw("abc")
                          .i16(1)
                          .i16(0)),
         "Bind portal=\"\" statement=\"s1\" params=[bin(4) null text(3)] results=[text]"},
        {regular('D', Body().u8('S').str("s1")), "Describe statement=\"s1\""},
        {regular('D', Body().u8('P').str("")), "Describe portal=\"\""},
        {regular('E', Body().str("").i32(0)), "Execute portal=\"\" max_rows=0"},
        {regular('E', Body().str("p").i32(100)), "Execute portal=\"p\" max_rows=100"},
        {regular('S'), "Sync"},
        {regular('H'), "Flush"},
        {regular('C', Body().u8('S').str("s1")), "Close statement=\"s1\""},
        {regular('C', Body().u8('P').str("p1")), "Close portal=\"p1\""},
        {regular('X'), "Terminate"},
        {regular('p', Body().str("md5abc")), "PasswordMessage (6 bytes)"},
        {regular('d', Body().raw("1\t2\n")), "CopyData (4 bytes)"},
        {regular('d'), "CopyData (0 bytes)"},
        {regular('c'), "CopyDone"},
        {regular('f', Body().str("aborted")), "CopyFail \"aborted\""},
    };
    for (const auto& [bytes, text] : cases) {
        INFO(text);
        CHECK(to_string(decode_one(bytes)) == text);
    }
}

TEST_CASE("a Bind keeps its parameters' bytes, NULLs and formats", "[pg][codec]") {
    const std::string bytes = regular('B', Body()
                                               .str("portal")
                                               .str("stmt")
                                               .i16(1)
                                               .i16(1)  // one format for all: binary
                                               .i16(2)
                                               .i32(8)
                                               .raw("\x00\x00\x00\x00\x00\x00\x00\x2a"s)
                                               .i32(-1)
                                               .i16(2)
                                               .i16(1)
                                               .i16(0));
    const auto bind = std::get<PgBind>(decode_one(bytes));
    PgBind expected;
    expected.portal = "portal";
    expected.statement = "stmt";
    expected.param_formats = {PgFormat::kBinary};
    expected.params = {"\x00\x00\x00\x00\x00\x00\x00\x2a"s, std::nullopt};
    expected.result_formats = {PgFormat::kBinary, PgFormat::kText};
    CHECK(bind == expected);
    CHECK(bind.param_format(0) == PgFormat::kBinary);
    CHECK(bind.param_format(1) == PgFormat::kBinary);
    CHECK(bind.result_format(0) == PgFormat::kBinary);
    CHECK(bind.result_format(1) == PgFormat::kText);
    CHECK(decode_binary_int8(*bind.params[0]).value() == 42);

    // No format codes at all: every parameter and result is text.
    const auto text = std::get<PgBind>(
        decode_one(regular('B', Body().str("").str("").i16(0).i16(1).i32(1).raw("7").i16(0))));
    CHECK(text.param_format(0) == PgFormat::kText);
    CHECK(text.result_format(5) == PgFormat::kText);
    CHECK(text.params == std::vector<std::optional<std::string>>{"7"});
}

TEST_CASE("a Parse keeps its parameter type OIDs, all 32 bits of them", "[pg][codec]") {
    const auto parse = std::get<PgParse>(decode_one(
        regular('P', Body().str("").str("SELECT $1").i16(3).i32(20).i32(0).i32(0xffffffff))));
    CHECK(parse.param_type_oids == std::vector<uint32_t>{20, 0, 0xffffffffu});
}

TEST_CASE("several messages in one feed come out in order", "[pg][codec]") {
    const std::string stream =
        regular('P', Body().str("").str("SELECT pg_try_advisory_lock($1)").i16(1).i32(20)) +
        regular('B', Body().str("").str("").i16(0).i16(1).i32(2).raw("17").i16(0)) +
        regular('D', Body().u8('P').str("")) + regular('E', Body().str("").i32(0)) + regular('S');
    PgDecoder decoder;
    decoder.start_regular();
    decoder.feed(stream);
    Trace trace;
    drain(decoder, trace);
    CHECK(!trace.error);
    CHECK(trace.texts() ==
          std::vector<std::string>{
              "Parse statement=\"\" query=\"SELECT pg_try_advisory_lock($1)\" types=[20]",
              "Bind portal=\"\" statement=\"\" params=[text(2)] results=[]", "Describe portal=\"\"",
              "Execute portal=\"\" max_rows=0", "Sync"});
    CHECK(decoder.partial_bytes() == 0);
}

// A connection's whole life: startup, an SSL detour, authentication, simple and extended queries.
std::string conversation() {
    return startup_packet(kPgSslRequestCode) +
           startup_message({{"user", "alice"}, {"database", "locks"}}) +
           regular('p', Body().str("md5" + std::string(32, 'f'))) +
           regular('Q', Body().str("SELECT pg_advisory_lock(42)")) +
           regular('P', Body().str("s").str("SELECT $1::int8").i16(1).i32(20)) +
           regular('B', Body()
                            .str("")
                            .str("s")
                            .i16(1)
                            .i16(1)
                            .i16(1)
                            .i32(8)
                            .raw(std::string(8, 1))
                            .i16(1)
                            .i16(1)) +
           regular('E', Body().str("").i32(0)) + regular('S') +
           regular('C', Body().u8('S').str("s")) + regular('X');
}

TEST_CASE("a conversation fed in pieces of any size decodes as when fed whole", "[pg][codec]") {
    const std::string stream = conversation();
    const Trace whole = decode(stream, false);
    REQUIRE(!whole.error);
    REQUIRE(whole.messages.size() == 10);
    CHECK(whole.texts()[2] == "PasswordMessage (35 bytes)");
    for (size_t piece : {1, 2, 3, 5, 7, 13, 64}) {
        INFO("pieces of " << piece << " bytes");
        const Trace pieces = decode_in_pieces(stream, piece, false);
        CHECK(!pieces.error);
        CHECK(pieces.messages == whole.messages);
    }
}

TEST_CASE("partial_bytes counts the bytes of the incomplete message", "[pg][codec]") {
    const std::string query = regular('Q', Body().str("SELECT 1"));
    PgDecoder decoder;
    decoder.start_regular();
    decoder.feed(query.substr(0, 3));
    CHECK(decoder.partial_bytes() == 3);
    PgNext next = decoder.next();
    REQUIRE(next.ok());
    CHECK(!next->has_value());
    decoder.feed(query.substr(3) + query.substr(0, 6));
    CHECK(decoder.partial_bytes() == query.size() - 3 + 6 + 3);
    next = decoder.next();
    REQUIRE(next.ok());
    CHECK(to_string(next->value()) == "Query \"SELECT 1\"");
    CHECK(decoder.partial_bytes() == 6);
    next = decoder.next();
    REQUIRE(next.ok());
    CHECK(!next->has_value());
    CHECK(decoder.partial_bytes() == 6);
}

TEST_CASE("many pipelined messages drain with the buffer compacted along the way", "[pg][codec]") {
    // 10000 small messages fed in uneven pieces, drained after each: the decoder must hand back
    // exactly the messages sent, in order, whatever it does with its buffer meanwhile.
    std::string stream;
    for (int i = 0; i < 10000; ++i) {
        stream += regular('E', Body().str("p" + std::to_string(i % 10)).i32(i));
    }
    const Trace trace = decode_in_pieces(stream, 4093);
    REQUIRE(!trace.error);
    REQUIRE(trace.messages.size() == 10000);
    for (int i : {0, 1, 4999, 9999}) {
        const auto& execute = std::get<PgExecute>(trace.messages[static_cast<size_t>(i)]);
        CHECK(execute.portal == "p" + std::to_string(i % 10));
        CHECK(execute.max_rows == i);
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST_CASE("malformed regular messages are refused with a protocol violation", "[pg][codec]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"z"s, "invalid frontend message type 'z'"},
        {"\x00\x00\x00\x00\x04"s, "invalid frontend message type 0x00"},
        {"F" + Body().i32(4).bytes(), "invalid frontend message type 'F'"},
        {"Q" + Body().i32(3).bytes(), "Query: invalid message length 3"},
        {"S" + Body().i32(-5).bytes(), "Sync: invalid message length -5"},
        {"Q" + Body().i32((1 << 20) + 1).bytes(),
         "Query: message of 1048577 bytes exceeds the limit of 1048576 bytes"},
        // A body that ends inside a field.
        {regular('E', Body().str("").i16(0)),
         "Execute: insufficient data left in message (reading the row limit)"},
        {regular('D'), "Describe: insufficient data left in message (reading the target type)"},
        {regular('B', Body().str("").str("").i16(0).i16(1).i32(5).raw("abc")),
         "Bind: insufficient data left in message (reading a parameter value)"},
        {regular('B', Body().str("").str("").i16(0).i16(1).i16(0)),
         "Bind: insufficient data left in message (count of parameters: 1)"},
        {regular('B', Body().str("").str("").i16(0).i16(0)),
         "Bind: insufficient data left in message (reading the result format count)"},
        {regular('P', Body().str("").str("SELECT 1").i16(3).i32(23)),
         "Parse: insufficient data left in message (count of parameter types: 3)"},
        // Bytes after the last field.
        {regular('S', Body().u8(0)), "Sync: invalid message format (1 byte after the last field)"},
        {regular('Q', Body().str("SELECT 1").str("SELECT 2")),
         "Query: invalid message format (9 bytes after the last field)"},
        {regular('E', Body().str("").i32(0).i16(0)),
         "Execute: invalid message format (2 bytes after the last field)"},
        // C strings without their NUL.
        {regular('Q', Body().raw("SELECT 1")),
         "Query: invalid string in message (the query has no terminating NUL)"},
        {regular('C', Body().u8('S').raw("s1")),
         "Close: invalid string in message (the name has no terminating NUL)"},
        // Counts: 16-bit and unsigned on the wire, so what a signed reading calls -1 is 65535.
        {regular('B', Body().str("").str("").i16(0).i16(-1)),
         "Bind: 65535 parameters exceed the limit of 10000"},
        {regular('P', Body().str("").str("").i16(-1)),
         "Parse: 65535 parameter types exceed the limit of 10000"},
        {regular('B', Body().str("").str("").i16(-1)),
         "Bind: 65535 parameter formats exceed the limit of 10000"},
        // Format codes.
        {regular('B', Body().str("").str("").i16(1).i16(2).i16(0).i16(0)),
         "Bind: unsupported format code: 2"},
        {regular('B', Body().str("").str("").i16(0).i16(0).i16(1).i16(-1)),
         "Bind: unsupported format code: -1"},
        {regular('B',
                 Body().str("").str("").i16(2).i16(0).i16(1).i16(3).i32(-1).i32(-1).i32(-1).i16(0)),
         "Bind: bind message has 2 parameter formats but 3 parameters"},
        {regular('B', Body().str("").str("").i16(0).i16(1).i32(-2).i16(0)),
         "Bind: invalid parameter length -2"},
        // Describe and Close targets.
        {regular('D', Body().u8('X').str("s")),
         "Describe: invalid target type 'X' (expected 'S' or 'P')"},
        {regular('C', Body().u8(0).str("s")),
         "Close: invalid target type 0x00 (expected 'S' or 'P')"},
    };
    for (const auto& [bytes, error] : cases) {
        INFO(error);
        CHECK(decode_error(bytes) == error);
    }
}

TEST_CASE("a Bind with one format for no parameters is accepted, as PostgreSQL does",
          "[pg][codec]") {
    const auto bind = std::get<PgBind>(
        decode_one(regular('B', Body().str("").str("").i16(1).i16(1).i16(0).i16(0))));
    CHECK(bind.params.empty());
    CHECK(bind.param_formats == std::vector<PgFormat>{PgFormat::kBinary});
}

TEST_CASE("an oversized message is refused as soon as its length arrives", "[pg][codec][limits]") {
    PgLimits limits;
    limits.message_bytes_max = 100;
    PgDecoder decoder(limits);
    decoder.start_regular();
    decoder.feed("Q" + Body().i32(101).bytes());
    PgNext next = decoder.next();
    REQUIRE(!next.ok());
    CHECK(next.error().message == "Query: message of 101 bytes exceeds the limit of 100 bytes");
    CHECK(PgProtocolError::kSqlstate == "08P01");
}

TEST_CASE("messages up to the limits are accepted and one more is refused", "[pg][codec][limits]") {
    PgLimits limits;
    limits.message_bytes_max = 100;
    limits.params_max = 3;
    // 4 (length) + 95 + 1 (NUL) = 100.
    const std::string largest = regular('Q', Body().str(std::string(95, 'x')));
    CHECK(std::get<PgQuery>(decode(largest, true, limits).messages.at(0)).sql.size() == 95);
    CHECK(decode_error(regular('Q', Body().str(std::string(96, 'x'))), true, limits) ==
          "Query: message of 101 bytes exceeds the limit of 100 bytes");

    const auto bind_of = [](int n) {
        Body body;
        body.str("").str("").i16(0).i16(n);
        for (int i = 0; i < n; ++i) {
            body.i32(-1);
        }
        return regular('B', body.i16(0));
    };
    CHECK(std::get<PgBind>(decode(bind_of(3), true, limits).messages.at(0)).params.size() == 3);
    CHECK(decode_error(bind_of(4), true, limits) == "Bind: 4 parameters exceed the limit of 3");
    CHECK(decode_error(regular('P', Body().str("").str("").i16(4).i32(0).i32(0).i32(0).i32(0)),
                       true, limits) == "Parse: 4 parameter types exceed the limit of 3");
}

TEST_CASE("the largest Bind the protocol allows fits when the limit allows it",
          "[pg][codec][limits]") {
    PgLimits limits;
    limits.params_max = 65535;
    Body body;
    body.str("").str("").i16(0).i16(65535);
    for (int i = 0; i < 65535; ++i) {
        body.i32(-1);
    }
    const Trace trace = decode(regular('B', body.i16(0)), true, limits);
    REQUIRE(!trace.error);
    CHECK(std::get<PgBind>(trace.messages.at(0)).params.size() == 65535);
}

TEST_CASE("after an error the decoder is poisoned and drops what it is fed", "[pg][codec]") {
    PgDecoder decoder;
    decoder.start_regular();
    decoder.feed(regular('Q', Body().str("SELECT 1")) + "z" + regular('S'));
    PgNext first = decoder.next();
    REQUIRE(first.ok());
    CHECK(to_string(first->value()) == "Query \"SELECT 1\"");
    const std::string error = "invalid frontend message type 'z'";
    for (int i = 0; i < 3; ++i) {
        PgNext next = decoder.next();
        REQUIRE(!next.ok());
        CHECK(next.error().message == error);
        CHECK(decoder.poisoned());
        CHECK(decoder.partial_bytes() == 0);
        decoder.feed(regular('S'));
    }
}

TEST_CASE("an error is the same whether the bytes arrive whole or one at a time", "[pg][codec]") {
    const std::vector<std::string> streams = {
        regular('S') + regular('B', Body().str("").str("").i16(2).i16(0).i16(0).i16(3)),
        startup_message() + regular('D', Body().u8('Q').str("")),
        startup_packet(kPgSslRequestCode) + startup_packet(196609),
    };
    for (const std::string& stream : streams) {
        const Trace whole = decode(stream, false);
        const Trace bytes = decode_in_pieces(stream, 1, false);
        REQUIRE(whole.error);
        CHECK(bytes.error == whole.error);
        CHECK(bytes.messages == whole.messages);
    }
}

TEST_CASE("a 'p' message is a password when it is one C string, else a SASL message",
          "[pg][codec]") {
    CHECK(std::get<PgPassword>(decode_one(regular('p', Body().str("hunter2")))).password ==
          "hunter2");
    const std::string initial = Body().str("SCRAM-SHA-256").i32(9).raw("n,,n=,r=x").bytes();
    const PgFrontendMessage sasl = decode_one(regular('p', Body().raw(initial)));
    REQUIRE(std::holds_alternative<PgSaslMessage>(sasl));
    CHECK(std::get<PgSaslMessage>(sasl).body == initial);
    auto parsed = parse_sasl_initial_response(initial);
    REQUIRE(parsed.ok());
    CHECK(parsed->mechanism == "SCRAM-SHA-256");
    CHECK(parsed->data == "n,,n=,r=x");
    // A SASLResponse: the client-final-message, no NUL at all.
    CHECK(std::get<PgSaslMessage>(decode_one(regular('p', Body().raw("c=biws,r=x,p=y")))).body ==
          "c=biws,r=x,p=y");
    // A length that does not match the data, a negative one, a missing one: refused.
    for (const std::string& bad :
         {Body().str("SCRAM-SHA-256").i32(10).raw("n,,n=,r=x").bytes(),
          Body().str("SCRAM-SHA-256").i32(-1).bytes(), Body().str("SCRAM-SHA-256").bytes(),
          Body().raw("no terminator").bytes()}) {
        CHECK_FALSE(parse_sasl_initial_response(bad).ok());
    }
}

// ---------------------------------------------------------------------------------------------
// Text forms

TEST_CASE("text forms escape and shorten strings and hide secrets", "[pg][codec]") {
    CHECK(to_string(PgQuery{"say \"hi\"\\\n\x01\xc3\xa9"}) ==
          "Query \"say \\\"hi\\\"\\\\\\x0a\\x01\\xc3\\xa9\"");
    CHECK(to_string(PgQuery{std::string(70, 'a')}) ==
          "Query \"" + std::string(64, 'a') + "\"...(+6 bytes)");
    CHECK(to_string(PgPassword{"hunter2"}) == "PasswordMessage (7 bytes)");
    CHECK(to_string(PgCancelRequest{7, 12345}) == "CancelRequest pid=7");
    PgParse parse;
    parse.param_type_oids.assign(20, 23);
    CHECK(to_string(parse) ==
          "Parse statement=\"\" query=\"\" types=[23 23 23 23 23 23 23 23 23 23 23 23 23 23 23 23 "
          "+4]");
    CHECK(to_string(PgFrontendMessage(PgSync{})) == "Sync");
    CHECK(to_string(PgStartup{{{"us\"er", "a"}}}) == "StartupMessage 3.0 us\\\"er=\"a\"");
    CHECK(to_string(PgStartup{{{std::string(70, 'n'), "v"}}}) ==
          "StartupMessage 3.0 " + std::string(64, 'n') + "...(+6 bytes)=\"v\"");
}

// ---------------------------------------------------------------------------------------------
// Backend messages, byte for byte as the protocol documentation lays them out

TEST_CASE("authentication messages are byte-exact", "[pg][codec][backend]") {
    std::string out;
    encode_authentication_ok(out);
    CHECK(out == "R\x00\x00\x00\x08\x00\x00\x00\x00"s);
    out.clear();
    encode_authentication_cleartext_password(out);
    CHECK(out == "R\x00\x00\x00\x08\x00\x00\x00\x03"s);
    out.clear();
    encode_authentication_md5_password({0x01, 0x02, 0xfe, 0xff}, out);
    CHECK(out == "R\x00\x00\x00\x0c\x00\x00\x00\x05\x01\x02\xfe\xff"s);
}

TEST_CASE("session messages are byte-exact", "[pg][codec][backend]") {
    std::string out;
    encode_parameter_status("server_version", "16.0", out);
    CHECK(out ==
          "S\x00\x00\x00\x18server_version\x00"s
          "16.0\x00"s);
    out.clear();
    encode_backend_key_data(4242, 0xdeadbeef, out);
    CHECK(out == "K\x00\x00\x00\x0c\x00\x00\x10\x92\xde\xad\xbe\xef"s);
    out.clear();
    encode_ready_for_query(PgTransactionStatus::kIdle, out);
    encode_ready_for_query(PgTransactionStatus::kInTransaction, out);
    encode_ready_for_query(PgTransactionStatus::kFailedTransaction, out);
    CHECK(out ==
          "Z\x00\x00\x00\x05IZ\x00\x00\x00\x05TZ\x00\x00\x00\x05"
          "E"s);
}

TEST_CASE("a result set is byte-exact", "[pg][codec][backend]") {
    std::string out;
    const std::vector<PgField> fields = {pg_field("n", kPgOidInt4),
                                         pg_field("t", kPgOidText, PgFormat::kBinary)};
    encode_row_description(fields, out);
    CHECK(out ==
          "T\x00\x00\x00\x2e\x00\x02"s
          "n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x04\xff\xff\xff\xff\x00\x00"s
          "t\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x19\xff\xff\xff\xff\xff\xff\x00\x01"s);
    out.clear();
    const std::vector<std::optional<std::string>> row = {std::nullopt, "42", ""};
    encode_data_row(row, out);
    CHECK(out ==
          "D\x00\x00\x00\x14\x00\x03\xff\xff\xff\xff\x00\x00\x00\x02"s
          "42"
          "\x00\x00\x00\x00"s);
    out.clear();
    encode_command_complete("SELECT 1", out);
    CHECK(out == "C\x00\x00\x00\x0dSELECT 1\x00"s);
    out.clear();
    encode_empty_query_response(out);
    encode_parse_complete(out);
    encode_bind_complete(out);
    encode_close_complete(out);
    encode_no_data(out);
    encode_portal_suspended(out);
    CHECK(out ==
          "I\x00\x00\x00\x04"
          "1\x00\x00\x00\x04"
          "2\x00\x00\x00\x04"
          "3\x00\x00\x00\x04"
          "n\x00\x00\x00\x04s\x00\x00\x00\x04"s);
    out.clear();
    const std::vector<uint32_t> oids = {20, 1184};
    encode_parameter_description(oids, out);
    CHECK(out == "t\x00\x00\x00\x0e\x00\x02\x00\x00\x00\x14\x00\x00\x04\xa0"s);
}

TEST_CASE("errors and notices write their fields and skip the empty ones", "[pg][codec][backend]") {
    PgDiagnostic d;
    d.sqlstate = "55P03";
    d.message = "lock not available";
    std::string out;
    encode_error_response(d, out);
    CHECK(out ==
          "E\x00\x00\x00\x2eSERROR\x00VERROR\x00"
          "C55P03\x00Mlock not available\x00\x00"s);

    d.severity = PgSeverity::kNotice;
    d.detail = "held by 7";
    d.hint = "retry";
    d.position = 12;
    out.clear();
    encode_notice_response(d, out);
    CHECK(out ==
          "N\x00\x00\x00\x46SNOTICE\x00VNOTICE\x00"
          "C55P03\x00Mlock not available\x00"
          "Dheld by 7\x00Hretry\x00P12\x00\x00"s);

    d.severity = PgSeverity::kFatal;
    d.detail.clear();
    d.hint.clear();
    d.position = 0;
    d.message = "bad\0tail"s;  // a NUL cannot end the string early: it is cut there
    out.clear();
    encode_error_response(d, out);
    CHECK(out ==
          "E\x00\x00\x00\x1fSFATAL\x00VFATAL\x00"
          "C55P03\x00Mbad\x00\x00"s);
    CHECK(to_string(PgSeverity::kWarning) == "WARNING");
}

TEST_CASE("NegotiateProtocolVersion names the version and the unknown options",
          "[pg][codec][backend]") {
    std::string out;
    const std::vector<std::string> options = {"_pq_.a"};
    encode_negotiate_protocol_version(kPgProtocol3, options, out);
    CHECK(out == "v\x00\x00\x00\x13\x00\x03\x00\x00\x00\x00\x00\x01_pq_.a\x00"s);
}

TEST_CASE("replies append to one buffer", "[pg][codec][backend]") {
    std::string out = "x";
    encode_authentication_ok(out);
    encode_ready_for_query(PgTransactionStatus::kIdle, out);
    CHECK(out == "xR\x00\x00\x00\x08\x00\x00\x00\x00Z\x00\x00\x00\x05I"s);
}

TEST_CASE("type sizes follow pg_type.typlen", "[pg][codec][backend]") {
    const std::vector<std::pair<uint32_t, int16_t>> cases = {
        {kPgOidBool, 1},  {kPgOidInt2, 2},     {kPgOidInt4, 4},        {kPgOidInt8, 8},
        {kPgOidText, -1}, {kPgOidVarchar, -1}, {kPgOidTimestamptz, 8}, {kPgOidUnknown, -1},
    };
    for (const auto& [oid, size] : cases) {
        INFO("oid " << oid);
        CHECK(pg_type_size(oid) == size);
    }
    const PgField f = pg_field("ts", kPgOidTimestamptz, PgFormat::kBinary);
    CHECK(f.type_size == 8);
    CHECK(f.table_oid == 0);
    CHECK(f.column_attnum == 0);
    CHECK(f.type_modifier == -1);
    CHECK(f.format == PgFormat::kBinary);
}

// ---------------------------------------------------------------------------------------------
// Binary parameters

TEST_CASE("binary integers decode big-endian and encode back", "[pg][codec][binary]") {
    CHECK(decode_binary_int2("\x00\x2a"s).value() == 42);
    CHECK(decode_binary_int2("\xff\xfe"s).value() == -2);
    CHECK(decode_binary_int2("\x80\x00"s).value() == std::numeric_limits<int16_t>::min());
    CHECK(decode_binary_int4("\x00\x01\x00\x00"s).value() == 65536);
    CHECK(decode_binary_int4("\xff\xff\xff\xff"s).value() == -1);
    CHECK(decode_binary_int4("\x7f\xff\xff\xff"s).value() == std::numeric_limits<int32_t>::max());
    CHECK(decode_binary_int8("\x01\x02\x03\x04\x05\x06\x07\x08"s).value() == 0x0102030405060708);
    CHECK(decode_binary_int8("\x80\x00\x00\x00\x00\x00\x00\x00"s).value() ==
          std::numeric_limits<int64_t>::min());
    CHECK(encode_binary_int2(-2) == "\xff\xfe"s);
    CHECK(encode_binary_int4(65536) == "\x00\x01\x00\x00"s);
    CHECK(encode_binary_int8(-1) == std::string(8, '\xff'));
    for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, std::numeric_limits<int64_t>::max(),
                      std::numeric_limits<int64_t>::min(), int64_t{1234567890123}}) {
        CHECK(decode_binary_int8(encode_binary_int8(v)).value() == v);
    }
}

TEST_CASE("binary values of the wrong length name the type and the length", "[pg][codec][binary]") {
    const std::vector<std::pair<PgValueError, std::string>> cases = {
        {decode_binary_int2("\x01"s).error(),
         "incorrect binary data format for int2: 1 byte, expected 2"},
        {decode_binary_int4("\x00\x00\x01"s).error(),
         "incorrect binary data format for int4: 3 bytes, expected 4"},
        {decode_binary_int8("\x00\x00\x00\x01"s).error(),
         "incorrect binary data format for int8: 4 bytes, expected 8"},
        {decode_binary_bool(""s).error(),
         "incorrect binary data format for bool: 0 bytes, expected 1"},
        {decode_binary_bool("\x02"s).error(),
         "incorrect binary data format for bool: byte 0x02, expected 0x00 or 0x01"},
        {decode_binary_timestamptz("\x00"s).error(),
         "incorrect binary data format for timestamptz: 1 byte, expected 8"},
    };
    for (const auto& [error, message] : cases) {
        CHECK(error.message == message);
        CHECK(error.code == PgValueErrorCode::kInvalidBinaryRepresentation);
        CHECK(error.sqlstate() == "22P03");
    }
}

TEST_CASE("binary booleans are one byte, 0 or 1", "[pg][codec][binary]") {
    CHECK(decode_binary_bool("\x00"s).value() == false);
    CHECK(decode_binary_bool("\x01"s).value() == true);
    CHECK(encode_binary_bool(true) == "\x01"s);
    CHECK(encode_binary_bool(false) == "\x00"s);
}

TEST_CASE("binary timestamptz counts from 2000 and comes back counted from 1970",
          "[pg][codec][binary]") {
    // 2000-01-01 00:00:00 UTC.
    CHECK(decode_binary_timestamptz(std::string(8, '\0')).value() == 946684800000000);
    // 2024-01-01 00:00:00 UTC is 1704067200 s after 1970, 757382400 s after 2000.
    const int64_t unix_us = 1704067200LL * 1000000;
    const std::string wire = encode_binary_int8(757382400LL * 1000000);
    CHECK(decode_binary_timestamptz(wire).value() == unix_us);
    CHECK(encode_binary_timestamptz(unix_us).value() == wire);
    // 1969-12-31 23:59:59.999999 UTC, before both epochs.
    CHECK(decode_binary_timestamptz(encode_binary_timestamptz(-1).value()).value() == -1);
}

TEST_CASE("binary timestamptz out of range or infinite is refused", "[pg][codec][binary]") {
    constexpr int64_t kMinPgUs = -211813488000000000;  // 4714-11-24 BC
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    CHECK(decode_binary_timestamptz(encode_binary_int8(kMinPgUs)).value() ==
          kMinPgUs + kPgEpochUnixUs);
    CHECK(decode_binary_timestamptz(encode_binary_int8(kMax - kPgEpochUnixUs)).value() == kMax);
    CHECK(encode_binary_timestamptz(kMax).value() == encode_binary_int8(kMax - kPgEpochUnixUs));
    CHECK(encode_binary_timestamptz(kMinPgUs + kPgEpochUnixUs).value() ==
          encode_binary_int8(kMinPgUs));

    const std::vector<std::pair<PgValueError, std::string>> cases = {
        {decode_binary_timestamptz(encode_binary_int8(kMinPgUs - 1)).error(),
         "timestamptz out of range: -211813488000000001 microseconds since 2000-01-01"},
        {decode_binary_timestamptz(encode_binary_int8(kMax - kPgEpochUnixUs + 1)).error(),
         "timestamptz out of range: 9222425352054775808 microseconds since 2000-01-01"},
        {decode_binary_timestamptz(encode_binary_int8(kMax)).error(),
         "timestamptz out of range: infinity is not supported"},
        {decode_binary_timestamptz(encode_binary_int8(std::numeric_limits<int64_t>::min())).error(),
         "timestamptz out of range: infinity is not supported"},
        {encode_binary_timestamptz(kMinPgUs + kPgEpochUnixUs - 1).error(),
         "timestamptz out of range: -210866803200000001 microseconds since 1970-01-01"},
        {encode_binary_timestamptz(std::numeric_limits<int64_t>::min()).error(),
         "timestamptz out of range: -9223372036854775808 microseconds since 1970-01-01"},
    };
    for (const auto& [error, message] : cases) {
        CHECK(error.message == message);
        CHECK(error.code == PgValueErrorCode::kDatetimeOutOfRange);
        CHECK(error.sqlstate() == "22008");
    }
}

TEST_CASE("the PostgreSQL md5 password is md5 of the salted md5 of password and user",
          "[pg][md5]") {
    // md5("postgrespostgres") is what pg_authid holds for user postgres with password postgres;
    // the expected answers were computed with Python's hashlib.
    CHECK(pg_md5_password("postgres", "postgres", {0xde, 0xad, 0xbe, 0xef}) ==
          "md58ee245854025535aedb7b15709315318");
    CHECK(pg_md5_password("secret", "alice", {1, 2, 3, 4}) ==
          "md598a0412b9c31436fc53776e863350083");
    // The salt matters: the same password gives another answer for another salt.
    CHECK(pg_md5_password("secret", "alice", {1, 2, 3, 5}) !=
          pg_md5_password("secret", "alice", {1, 2, 3, 4}));
}

}  // namespace
}  // namespace raftlock::net
