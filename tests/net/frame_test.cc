#include "net/frame.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "net/client_codec.h"
#include "net/message_frame.h"
#include "proto/client.pb.h"

namespace raftlock::net {
namespace {

// Feeds `bytes` in pieces of `chunk` bytes and collects every frame; stops at kTooLarge.
std::vector<std::string> decode_in_chunks(FrameDecoder& d, std::string_view bytes, size_t chunk) {
    std::vector<std::string> frames;
    for (size_t at = 0; at < bytes.size(); at += chunk) {
        d.feed(bytes.substr(at, chunk));
        std::string_view payload;
        FrameDecoder::State state;
        while ((state = d.next(payload)) == FrameDecoder::State::kFrame) {
            frames.emplace_back(payload);
        }
        if (state == FrameDecoder::State::kTooLarge) {
            break;
        }
    }
    return frames;
}

TEST_CASE("append_frame writes a big-endian length and the payload", "[net][frame]") {
    std::string out;
    append_frame(out, "abc");
    CHECK(out == std::string("\0\0\0\3abc", 7));
    append_frame(out, "");
    CHECK(out.size() == 11);
    std::string big(0x010203, 'x');
    std::string framed;
    append_frame(framed, big);
    CHECK(framed.substr(0, 4) == std::string("\0\x01\x02\x03", 4));
}

TEST_CASE("frames come out whole and in order however the stream is split", "[net][frame]") {
    const std::vector<std::string> payloads = {"", "a", std::string(300, 'b'), "hello world",
                                               std::string(70000, 'c')};
    std::string stream;
    for (const std::string& p : payloads) {
        append_frame(stream, p);
    }
    for (size_t chunk : {size_t{1}, size_t{3}, size_t{4}, size_t{5}, size_t{4096}, stream.size()}) {
        FrameDecoder d(1u << 20);
        CHECK(decode_in_chunks(d, stream, chunk) == payloads);
        CHECK(d.buffered_bytes() == 0);
    }
}

TEST_CASE("a partial header or payload waits for more bytes", "[net][frame]") {
    FrameDecoder d(100);
    std::string_view payload;
    d.feed(std::string("\0\0", 2));
    CHECK(d.next(payload) == FrameDecoder::State::kNeedMore);
    d.feed(std::string("\0\5ab", 4));
    CHECK(d.next(payload) == FrameDecoder::State::kNeedMore);
    CHECK(d.buffered_bytes() == 6);
    d.feed("cde");
    REQUIRE(d.next(payload) == FrameDecoder::State::kFrame);
    CHECK(payload == "abcde");
    CHECK(d.next(payload) == FrameDecoder::State::kNeedMore);
}

TEST_CASE("a length above the bound is rejected before the payload arrives", "[net][frame]") {
    FrameDecoder d(10);
    std::string_view payload;
    std::string stream;
    append_frame(stream, std::string(10, 'a'));   // exactly the bound: fine
    stream.append(std::string("\0\0\0\x0b", 4));  // 11: one too many
    d.feed(stream);
    REQUIRE(d.next(payload) == FrameDecoder::State::kFrame);
    CHECK(payload.size() == 10);
    CHECK(d.next(payload) == FrameDecoder::State::kTooLarge);
    CHECK(d.rejected_length() == 11);
    CHECK(d.buffered_bytes() == 0);
    // Sticky: the stream is dead, and what follows is not buffered.
    d.feed(std::string(100, 'z'));
    CHECK(d.buffered_bytes() == 0);
    CHECK(d.next(payload) == FrameDecoder::State::kTooLarge);
}

TEST_CASE("a 4 GiB length claim does not allocate", "[net][frame]") {
    FrameDecoder d(1u << 20);
    std::string_view payload;
    d.feed(std::string("\xff\xff\xff\xff", 4));
    CHECK(d.next(payload) == FrameDecoder::State::kTooLarge);
    CHECK(d.rejected_length() == 0xffffffffu);
}

TEST_CASE("encode_message_frame equals append_frame of the serialized message", "[net][frame]") {
    proto::Request request;
    request.set_request_id(42);
    request.mutable_get()->set_path("/a/b");
    std::string expected;
    append_frame(expected, request.SerializeAsString());
    std::string out = "stale bytes are replaced";
    encode_message_frame(request, out);
    CHECK(out == expected);
}

TEST_CASE("decode_request accepts a request with a body and rejects the rest", "[net][frame]") {
    proto::Request request;
    request.set_request_id(7);
    request.mutable_create()->set_path("/x");
    auto ok = decode_request(request.SerializeAsString());
    REQUIRE(ok.ok());
    CHECK(ok->request_id() == 7);
    CHECK(ok->create().path() == "/x");

    proto::Request no_body;
    no_body.set_request_id(8);
    auto empty = decode_request(no_body.SerializeAsString());
    REQUIRE(!empty.ok());
    CHECK_THAT(empty.error(), Catch::Contains("no body"));

    auto garbage = decode_request("\xff\xff\xff\xff\xff");
    REQUIRE(!garbage.ok());
    CHECK_THAT(garbage.error(), Catch::Contains("not a Request"));

    CHECK(!decode_request("").ok());  // parses, but has no body
}

}  // namespace
}  // namespace raftlock::net
