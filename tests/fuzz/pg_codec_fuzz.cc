// libFuzzer: bytes from a PostgreSQL client -> PgDecoder, message after message, exactly as the
// PostgreSQL listener drains it (start_regular() after a StartupMessage, stop after a
// CancelRequest). The first input byte picks the limits (the defaults, or small ones the fuzzer
// can reach), whether to start in the regular phase, and the size of the pieces for the split
// check.
//
// Invariants: the stream fed whole and fed in pieces gives the same messages and the same error;
// every message, encoded again by the frontend encoder below, is exactly the bytes it was decoded
// from (the encoding is canonical: no field may be padded, re-ordered or left over); decoded
// lists fit the limits; a poisoned decoder repeats its error; every binary parameter that decodes
// as int2, int4, int8, bool or timestamptz encodes back to the same bytes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/assert.h"
#include "net/pg_codec.h"

namespace {

using namespace raftlock::net;

// ---------------------------------------------------------------------------------------------
// A frontend encoder (the client's side), for the re-encoding check only.

void put_i16(int64_t v, std::string& out) {
    out.push_back(static_cast<char>((v >> 8) & 0xff));
    out.push_back(static_cast<char>(v & 0xff));
}

void put_i32(int64_t v, std::string& out) {
    put_i16(v >> 16, out);
    put_i16(v, out);
}

void put_str(std::string_view s, std::string& out) {
    out.append(s);
    out.push_back('\0');
}

// The body of each message, and its type byte (0 for the startup packets, whose code is put in
// the body here).
char body_of(const PgStartup& m, std::string& out) {
    put_i32(kPgProtocol3, out);
    for (const auto& [name, value] : m.parameters) {
        put_str(name, out);
        put_str(value, out);
    }
    out.push_back('\0');
    return 0;
}
char body_of(const PgSslRequest&, std::string& out) {
    put_i32(kPgSslRequestCode, out);
    return 0;
}
char body_of(const PgGssEncRequest&, std::string& out) {
    put_i32(kPgGssEncRequestCode, out);
    return 0;
}
char body_of(const PgCancelRequest& m, std::string& out) {
    put_i32(kPgCancelRequestCode, out);
    put_i32(m.process_id, out);
    put_i32(m.secret_key, out);
    return 0;
}
char body_of(const PgQuery& m, std::string& out) {
    put_str(m.sql, out);
    return 'Q';
}
char body_of(const PgParse& m, std::string& out) {
    put_str(m.statement, out);
    put_str(m.sql, out);
    put_i16(static_cast<int64_t>(m.param_type_oids.size()), out);
    for (uint32_t oid : m.param_type_oids) {
        put_i32(oid, out);
    }
    return 'P';
}
void put_formats(const std::vector<PgFormat>& formats, std::string& out) {
    put_i16(static_cast<int64_t>(formats.size()), out);
    for (PgFormat f : formats) {
        put_i16(static_cast<int16_t>(f), out);
    }
}
char body_of(const PgBind& m, std::string& out) {
    put_str(m.portal, out);
    put_str(m.statement, out);
    put_formats(m.param_formats, out);
    put_i16(static_cast<int64_t>(m.params.size()), out);
    for (const std::optional<std::string>& p : m.params) {
        put_i32(p ? static_cast<int64_t>(p->size()) : -1, out);
        if (p) {
            out.append(*p);
        }
    }
    put_formats(m.result_formats, out);
    return 'B';
}
char body_of(const PgDescribe& m, std::string& out) {
    out.push_back(static_cast<char>(m.target));
    put_str(m.name, out);
    return 'D';
}
char body_of(const PgExecute& m, std::string& out) {
    put_str(m.portal, out);
    put_i32(m.max_rows, out);
    return 'E';
}
char body_of(const PgSync&, std::string&) {
    return 'S';
}
char body_of(const PgFlush&, std::string&) {
    return 'H';
}
char body_of(const PgClose& m, std::string& out) {
    out.push_back(static_cast<char>(m.target));
    put_str(m.name, out);
    return 'C';
}
char body_of(const PgTerminate&, std::string&) {
    return 'X';
}
char body_of(const PgPassword& m, std::string& out) {
    put_str(m.password, out);
    return 'p';
}
char body_of(const PgSaslMessage& m, std::string& out) {
    out.append(m.body);
    return 'p';
}
char body_of(const PgCopyData& m, std::string& out) {
    out.append(m.data);
    return 'd';
}
char body_of(const PgCopyDone&, std::string&) {
    return 'c';
}
char body_of(const PgCopyFail& m, std::string& out) {
    put_str(m.message, out);
    return 'f';
}

std::string encode_frontend(const PgFrontendMessage& m) {
    std::string body;
    const char type =
        std::visit([&body](const auto& message) { return body_of(message, body); }, m);
    std::string out;
    if (type != 0) {
        out.push_back(type);
    }
    put_i32(static_cast<int64_t>(body.size()) + 4, out);
    return out + body;
}

// ---------------------------------------------------------------------------------------------
// Checks

void check_binary(std::string_view bytes) {
    if (auto v = decode_binary_int2(bytes); v.ok()) {
        RL_ASSERT(encode_binary_int2(*v) == bytes);
    }
    if (auto v = decode_binary_int4(bytes); v.ok()) {
        RL_ASSERT(encode_binary_int4(*v) == bytes);
    }
    if (auto v = decode_binary_int8(bytes); v.ok()) {
        RL_ASSERT(encode_binary_int8(*v) == bytes);
    }
    if (auto v = decode_binary_bool(bytes); v.ok()) {
        RL_ASSERT(encode_binary_bool(*v) == bytes);
    }
    if (auto v = decode_binary_timestamptz(bytes); v.ok()) {
        auto back = encode_binary_timestamptz(*v);
        RL_ASSERT(back.ok());
        RL_ASSERT(*back == bytes);
    } else {
        RL_ASSERT(!v.error().message.empty());
    }
}

void check_message(const PgFrontendMessage& m,
                   std::string_view bytes,
                   bool regular,
                   const PgLimits& limits) {
    RL_ASSERT(encode_frontend(m) == bytes);
    RL_ASSERT(!to_string(m).empty());
    if (const auto* parse = std::get_if<PgParse>(&m)) {
        RL_ASSERT(parse->param_type_oids.size() <= limits.params_max);
    }
    if (const auto* bind = std::get_if<PgBind>(&m)) {
        RL_ASSERT(bind->params.size() <= limits.params_max);
        RL_ASSERT(bind->result_formats.size() <= limits.params_max);
        for (size_t i = 0; i < bind->params.size(); ++i) {
            (void)bind->param_format(i);  // asserts the 0/1/n rule
            if (bind->params[i]) {
                check_binary(*bind->params[i]);
            }
        }
    }
    if (const auto* startup = std::get_if<PgStartup>(&m)) {
        RL_ASSERT(startup->parameters.size() <= limits.startup_pairs_max);
        RL_ASSERT(!startup->user().empty());
    }
    if (regular) {
        RL_ASSERT(bytes.size() >= 5);
        RL_ASSERT(bytes.size() <= limits.message_bytes_max + 1);  // the type byte is not counted
    } else {
        RL_ASSERT(bytes.size() >= 8);
        RL_ASSERT(bytes.size() <= limits.startup_bytes_max);
    }
}

struct Trace {
    std::vector<PgFrontendMessage> messages;
    std::optional<PgProtocolError> error;
};

// Takes messages until the decoder needs more or fails; with `stream` set (the decoder was fed
// exactly `stream`, whole), also checks each message against the bytes it came from.
void drain(
    PgDecoder& decoder, Trace& trace, const PgLimits& limits, std::string_view stream, size_t& at) {
    while (!trace.error && decoder.phase() != PgDecoder::Phase::kCancelled) {
        const size_t before = decoder.partial_bytes();
        const bool regular = decoder.phase() == PgDecoder::Phase::kRegular;
        PgNext next = decoder.next();
        if (!next.ok()) {
            RL_ASSERT(!next.error().message.empty());
            RL_ASSERT(decoder.poisoned());
            RL_ASSERT(decoder.partial_bytes() == 0);
            const PgNext again = decoder.next();
            RL_ASSERT(!again.ok());
            RL_ASSERT(again.error() == next.error());
            trace.error = next.error();
            return;
        }
        if (!next->has_value()) {
            RL_ASSERT(decoder.partial_bytes() == before);
            return;
        }
        const size_t consumed = before - decoder.partial_bytes();
        RL_ASSERT(consumed > 0);
        if (!stream.empty()) {
            RL_ASSERT(at + consumed <= stream.size());
            check_message(**next, stream.substr(at, consumed), regular, limits);
            at += consumed;
        }
        if (std::holds_alternative<PgStartup>(**next)) {
            decoder.start_regular();
        }
        trace.messages.push_back(std::move(**next));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) {
        return 0;
    }
    PgLimits limits;
    if (data[0] & 1) {
        limits.message_bytes_max = 64;
        limits.startup_bytes_max = 48;
        limits.params_max = 4;
        limits.startup_pairs_max = 3;
    }
    const bool regular = (data[0] & 2) != 0;
    const size_t piece_bytes = 1 + (data[0] >> 2);
    const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

    PgDecoder whole(limits);
    PgDecoder pieces(limits);
    if (regular) {
        whole.start_regular();
        pieces.start_regular();
    }
    Trace whole_trace;
    size_t at = 0;
    whole.feed(stream);
    drain(whole, whole_trace, limits, stream, at);

    Trace pieces_trace;
    size_t unused = 0;
    for (size_t i = 0; i < stream.size(); i += piece_bytes) {
        pieces.feed(stream.substr(i, piece_bytes));
        drain(pieces, pieces_trace, limits, {}, unused);
    }
    RL_ASSERT(pieces_trace.messages == whole_trace.messages);
    RL_ASSERT(pieces_trace.error == whole_trace.error);
    return 0;
}
