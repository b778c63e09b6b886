#include "net/pg_codec.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "base/digest.h"
#include "net/big_endian.h"

namespace raftlock::net {

namespace {

constexpr size_t kTypeBytes = 1;
constexpr size_t kLengthBytes = 4;
constexpr size_t kStartupHeaderBytes = 8;  // the length and the request code
constexpr size_t kRegularHeaderBytes = kTypeBytes + kLengthBytes;
constexpr size_t kCancelBodyBytes = 8;  // process id and secret key
// The protocol counts list entries in 16 bits, unsigned as PostgreSQL and libpq read them.
constexpr size_t kCountMax = std::numeric_limits<uint16_t>::max();
constexpr size_t kInt32Max = static_cast<size_t>(std::numeric_limits<int32_t>::max());
// A drained buffer keeps at most this much capacity, so that one large message does not pin its
// memory for the rest of a long-lived connection.
constexpr size_t kRetainBytesMax = 64u << 10;
// How much of a string, and how many list items, to_string shows.
constexpr size_t kQuoteBytesMax = 64;
constexpr size_t kListItemsMax = 16;
// PostgreSQL's MIN_TIMESTAMP: 4714-11-24 BC 00:00 UTC (Julian day 0), in microseconds since 2000.
constexpr int64_t kPgTimestampMinUs = -211'813'488'000'000'000;

// A type or target byte in an error: 'Q' when printable, 0x00 otherwise.
std::string byte_text(uint8_t c) {
    if (c > 0x20 && c < 0x7f) {
        return fmt::format("'{}'", static_cast<char>(c));
    }
    return fmt::format("0x{:02x}", c);
}

// The documentation's name of a frontend message type, or empty for a type a client cannot send.
std::string_view frontend_message_name(char type) {
    switch (type) {
        case 'Q':
            return "Query";
        case 'P':
            return "Parse";
        case 'B':
            return "Bind";
        case 'D':
            return "Describe";
        case 'E':
            return "Execute";
        case 'S':
            return "Sync";
        case 'H':
            return "Flush";
        case 'C':
            return "Close";
        case 'X':
            return "Terminate";
        case 'p':
            return "PasswordMessage";
        case 'd':
            return "CopyData";
        case 'c':
            return "CopyDone";
        case 'f':
            return "CopyFail";
        default:
            return {};
    }
}

// Reads the fields of one message body front to back. The first failure sticks (later reads
// yield empty values), so a decoder reads all its fields and checks once, in finish(). Field
// names complete the sentence "insufficient data left in message (reading ...)".
class BodyReader {
public:
    BodyReader(std::string_view body, std::string_view message) : body_(body), message_(message) {}

    bool ok() const { return !error_.has_value(); }
    size_t remaining() const { return body_.size() - at_; }
    std::string_view message() const { return message_; }

    uint8_t u8(std::string_view field) {
        return take(1, field) ? static_cast<uint8_t>(body_[at_ - 1]) : 0;
    }
    uint16_t u16(std::string_view field) { return take(2, field) ? load_u16(body_, at_ - 2) : 0; }
    uint32_t u32(std::string_view field) { return take(4, field) ? load_u32(body_, at_ - 4) : 0; }
    int16_t i16(std::string_view field) { return static_cast<int16_t>(u16(field)); }
    int32_t i32(std::string_view field) { return static_cast<int32_t>(u32(field)); }

    std::string bytes(size_t n, std::string_view field) {
        return take(n, field) ? std::string(body_.substr(at_ - n, n)) : std::string();
    }

    std::string cstring(std::string_view field) {
        if (!ok()) {
            return {};
        }
        const size_t nul = body_.find('\0', at_);
        if (nul == std::string_view::npos) {
            fail(fmt::format("{}: invalid string in message ({} has no terminating NUL)", message_,
                             field));
            return {};
        }
        std::string s(body_.substr(at_, nul - at_));
        at_ = nul + 1;
        return s;
    }

    void fail(std::string text) {
        if (ok()) {
            error_ = PgProtocolError{std::move(text)};
        }
    }

    // The error of a failed read, or of bytes left after the last field; nullopt when neither.
    std::optional<PgProtocolError> finish() {
        if (ok() && remaining() > 0) {
            const size_t n = remaining();
            fail(fmt::format("{}: invalid message format ({} byte{} after the last field)",
                             message_, n, n == 1 ? "" : "s"));
        }
        return error_;
    }

private:
    bool take(size_t n, std::string_view field) {
        if (!ok()) {
            return false;
        }
        if (remaining() < n) {
            fail(
                fmt::format("{}: insufficient data left in message (reading {})", message_, field));
            return false;
        }
        at_ += n;
        RL_ASSERT(at_ <= body_.size());
        return true;
    }

    std::string_view body_;
    std::string_view message_;
    size_t at_ = 0;
    std::optional<PgProtocolError> error_;
};

using Decoded = Result<PgFrontendMessage, PgProtocolError>;

template <typename Message>
Decoded finish(BodyReader& r, Message message) {
    if (std::optional<PgProtocolError> error = r.finish()) {
        return std::move(*error);
    }
    return PgFrontendMessage(std::move(message));
}

// A list count: at most `max`, and no more entries than the rest of the body can hold at
// `entry_bytes_min` each, so that a reservation for the entries is bounded by the message.
size_t read_count(BodyReader& r,
                  std::string_view entries,
                  std::string_view field,
                  size_t max,
                  size_t entry_bytes_min) {
    const size_t n = r.u16(field);
    if (!r.ok()) {
        return 0;
    }
    if (n > max) {
        r.fail(fmt::format("{}: {} {} exceed the limit of {}", r.message(), n, entries, max));
        return 0;
    }
    if (n * entry_bytes_min > r.remaining()) {
        r.fail(fmt::format("{}: insufficient data left in message (count of {}: {})", r.message(),
                           entries, n));
        return 0;
    }
    return n;
}

void read_formats(BodyReader& r,
                  std::string_view entries,
                  std::string_view field,
                  const PgLimits& limits,
                  std::vector<PgFormat>& formats) {
    const size_t n = read_count(r, entries, field, limits.params_max, 2);
    formats.reserve(n);
    for (size_t i = 0; i < n && r.ok(); ++i) {
        const int16_t code = r.i16("a format code");
        if (code != 0 && code != 1) {
            r.fail(fmt::format("{}: unsupported format code: {}", r.message(), code));
        }
        formats.push_back(code == 1 ? PgFormat::kBinary : PgFormat::kText);
    }
}

std::optional<std::string> read_param(BodyReader& r) {
    const int32_t length = r.i32("a parameter length");
    if (!r.ok() || length == -1) {
        return std::nullopt;
    }
    if (length < 0) {
        r.fail(fmt::format("{}: invalid parameter length {}", r.message(), length));
        return std::nullopt;
    }
    return r.bytes(static_cast<size_t>(length), "a parameter value");
}

Decoded decode_parse(BodyReader& r, const PgLimits& limits) {
    PgParse m;
    m.statement = r.cstring("the statement name");
    m.sql = r.cstring("the query");
    const size_t n =
        read_count(r, "parameter types", "the parameter type count", limits.params_max, 4);
    m.param_type_oids.reserve(n);
    for (size_t i = 0; i < n && r.ok(); ++i) {
        m.param_type_oids.push_back(r.u32("a parameter type"));
    }
    return finish(r, std::move(m));
}

Decoded decode_bind(BodyReader& r, const PgLimits& limits) {
    PgBind m;
    m.portal = r.cstring("the portal name");
    m.statement = r.cstring("the statement name");
    read_formats(r, "parameter formats", "the parameter format count", limits, m.param_formats);
    const size_t n = read_count(r, "parameters", "the parameter count", limits.params_max, 4);
    if (r.ok() && m.param_formats.size() > 1 && m.param_formats.size() != n) {
        r.fail(fmt::format("Bind: bind message has {} parameter formats but {} parameters",
                           m.param_formats.size(), n));
    }
    m.params.reserve(n);
    for (size_t i = 0; i < n && r.ok(); ++i) {
        m.params.push_back(read_param(r));
    }
    read_formats(r, "result formats", "the result format count", limits, m.result_formats);
    return finish(r, std::move(m));
}

// Describe and Close: 'S' (statement) or 'P' (portal), then the name.
template <typename Message>
Decoded decode_target(BodyReader& r) {
    Message m;
    const uint8_t target = r.u8("the target type");
    if (r.ok() && target != 'S' && target != 'P') {
        r.fail(fmt::format("{}: invalid target type {} (expected 'S' or 'P')", r.message(),
                           byte_text(target)));
    }
    m.target = target == 'P' ? PgTarget::kPortal : PgTarget::kStatement;
    m.name = r.cstring("the name");
    return finish(r, std::move(m));
}

// The body of a regular message whose type frontend_message_name knows.
Decoded decode_regular(char type, std::string_view body, const PgLimits& limits) {
    BodyReader r(body, frontend_message_name(type));
    switch (type) {
        case 'Q':
            return finish(r, PgQuery{r.cstring("the query")});
        case 'P':
            return decode_parse(r, limits);
        case 'B':
            return decode_bind(r, limits);
        case 'D':
            return decode_target<PgDescribe>(r);
        case 'E': {
            PgExecute m;
            m.portal = r.cstring("the portal name");
            m.max_rows = r.i32("the row limit");
            return finish(r, std::move(m));
        }
        case 'S':
            return finish(r, PgSync{});
        case 'H':
            return finish(r, PgFlush{});
        case 'C':
            return decode_target<PgClose>(r);
        case 'X':
            return finish(r, PgTerminate{});
        case 'p': {
            std::string body = r.bytes(r.remaining(), "the body");
            if (const size_t nul = body.find('\0');
                nul != std::string::npos && nul + 1 == body.size()) {
                body.pop_back();
                return finish(r, PgPassword{std::move(body)});
            }
            return finish(r, PgSaslMessage{std::move(body)});
        }
        case 'd':
            return finish(r, PgCopyData{r.bytes(r.remaining(), "the data")});
        case 'c':
            return finish(r, PgCopyDone{});
        case 'f':
            return finish(r, PgCopyFail{r.cstring("the error message")});
        default:
            RL_PANIC("decode_regular: a type frontend_message_name does not know");
    }
}

// A StartupMessage's body after the version: name/value pairs, then an empty name.
Decoded decode_startup_message(std::string_view body, const PgLimits& limits) {
    BodyReader r(body, "StartupMessage");
    PgStartup m;
    while (r.ok()) {
        if (r.remaining() == 0) {
            r.fail(
                "StartupMessage: invalid startup packet layout: expected terminator as last byte");
            break;
        }
        std::string name = r.cstring("a parameter name");
        if (!r.ok() || name.empty()) {
            break;
        }
        std::string value = r.cstring("a parameter value");
        if (r.ok() && m.parameters.size() == limits.startup_pairs_max) {
            r.fail(
                fmt::format("StartupMessage: more than {} parameters", limits.startup_pairs_max));
        }
        m.parameters.emplace_back(std::move(name), std::move(value));
    }
    if (r.ok() && m.user().empty()) {
        r.fail("StartupMessage: no PostgreSQL user name specified in startup packet");
    }
    return finish(r, std::move(m));
}

std::string unsupported_protocol(uint32_t code) {
    return fmt::format("unsupported frontend protocol {}.{}: server supports 3.0 only", code >> 16,
                       code & 0xffff);
}

// A complete startup packet's body (after the length and the code).
Decoded decode_startup_packet(uint32_t code, std::string_view body, const PgLimits& limits) {
    switch (code) {
        case kPgProtocol3:
            return decode_startup_message(body, limits);
        case kPgSslRequestCode: {
            BodyReader r(body, "SSLRequest");
            return finish(r, PgSslRequest{});
        }
        case kPgGssEncRequestCode: {
            BodyReader r(body, "GSSENCRequest");
            return finish(r, PgGssEncRequest{});
        }
        case kPgCancelRequestCode: {
            BodyReader r(body, "CancelRequest");
            PgCancelRequest m;
            m.process_id = r.i32("the process id");
            m.secret_key = r.u32("the secret key");
            return finish(r, m);
        }
        default:
            return PgProtocolError{unsupported_protocol(code)};
    }
}

PgNext need_more() {
    return PgNext(std::optional<PgFrontendMessage>());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Frontend messages

std::optional<std::string_view> PgStartup::parameter(std::string_view name) const {
    for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {
        if (it->first == name) {
            return std::string_view(it->second);
        }
    }
    return std::nullopt;
}

std::string_view PgStartup::user() const {
    return parameter("user").value_or(std::string_view());
}

PgFormat PgBind::param_format(size_t i) const {
    RL_ASSERT(i < params.size());
    if (param_formats.empty()) {
        return PgFormat::kText;
    }
    RL_ASSERT(param_formats.size() == 1 || param_formats.size() == params.size());
    return param_formats.size() == 1 ? param_formats[0] : param_formats[i];
}

PgFormat PgBind::result_format(size_t i) const {
    if (result_formats.empty()) {
        return PgFormat::kText;
    }
    if (result_formats.size() == 1) {
        return result_formats[0];
    }
    RL_ASSERT(i < result_formats.size());
    return result_formats[i];
}

PgDecoder::PgDecoder(PgLimits limits) : limits_(limits) {
    RL_ASSERT(limits_.message_bytes_max >= kLengthBytes);
    RL_ASSERT(limits_.message_bytes_max <= kInt32Max);
    RL_ASSERT(limits_.startup_bytes_max >= kStartupHeaderBytes + kCancelBodyBytes);
    RL_ASSERT(limits_.startup_bytes_max <= kInt32Max);
    RL_ASSERT(limits_.params_max <= kCountMax);
    RL_ASSERT(limits_.startup_pairs_max >= 1);
}

void PgDecoder::feed(std::string_view bytes) {
    if (error_ || bytes.empty()) {
        return;
    }
    // Drop the taken bytes once they are at least as many as the rest: each byte is then moved
    // at most once per time it is taken, which keeps consumption amortised linear.
    if (read_pos_ > 0 && read_pos_ >= buffer_.size() - read_pos_) {
        buffer_.erase(0, read_pos_);
        read_pos_ = 0;
    }
    buffer_.append(bytes);
}

PgNext PgDecoder::next() {
    if (error_) {
        return *error_;
    }
    RL_ASSERT(phase_ == Phase::kStartup || phase_ == Phase::kRegular);
    PgNext result = phase_ == Phase::kStartup ? next_startup() : next_regular();
    RL_ASSERT(read_pos_ <= buffer_.size());
    if (read_pos_ == buffer_.size()) {
        read_pos_ = 0;
        if (buffer_.capacity() > kRetainBytesMax) {
            std::string().swap(buffer_);
        } else {
            buffer_.clear();
        }
    }
    return result;
}

void PgDecoder::start_regular() {
    RL_ASSERT(phase_ == Phase::kStartup || phase_ == Phase::kStartupDone);
    phase_ = Phase::kRegular;
}

PgNext PgDecoder::fail(PgProtocolError error) {
    RL_ASSERT(!error_);
    RL_ASSERT(!error.message.empty());
    error_ = error;
    std::string().swap(buffer_);
    read_pos_ = 0;
    return error;
}

PgNext PgDecoder::next_startup() {
    const std::string_view in = std::string_view(buffer_).substr(read_pos_);
    if (in.size() < kLengthBytes) {
        return need_more();
    }
    const auto length = static_cast<int32_t>(load_u32(in, 0));
    if (length < static_cast<int32_t>(kStartupHeaderBytes)) {
        return fail({fmt::format("invalid length of startup packet: {}", length)});
    }
    const auto bytes = static_cast<size_t>(length);
    if (bytes > limits_.startup_bytes_max) {
        return fail({fmt::format("startup packet of {} bytes exceeds the limit of {} bytes", bytes,
                                 limits_.startup_bytes_max)});
    }
    if (in.size() < bytes) {
        return need_more();
    }
    const uint32_t code = load_u32(in, kLengthBytes);
    if ((code == kPgSslRequestCode && ssl_requested_) ||
        (code == kPgGssEncRequestCode && gss_requested_)) {
        return fail({fmt::format("{} sent twice",
                                 code == kPgSslRequestCode ? "SSLRequest" : "GSSENCRequest")});
    }
    Decoded decoded = decode_startup_packet(
        code, in.substr(kStartupHeaderBytes, bytes - kStartupHeaderBytes), limits_);
    if (!decoded.ok()) {
        return fail(decoded.error());
    }
    read_pos_ += bytes;
    switch (code) {
        case kPgSslRequestCode:
            ssl_requested_ = true;
            break;
        case kPgGssEncRequestCode:
            gss_requested_ = true;
            break;
        case kPgCancelRequestCode:
            phase_ = Phase::kCancelled;
            break;
        default:
            RL_ASSERT(code == kPgProtocol3);
            phase_ = Phase::kStartupDone;
            break;
    }
    return PgNext(std::optional<PgFrontendMessage>(std::move(decoded).value()));
}

PgNext PgDecoder::next_regular() {
    const std::string_view in = std::string_view(buffer_).substr(read_pos_);
    if (in.empty()) {
        return need_more();
    }
    // The type is checked before the length arrives, as PostgreSQL does: a client speaking
    // something else entirely is told so at once.
    const char type = in[0];
    const std::string_view name = frontend_message_name(type);
    if (name.empty()) {
        return fail({fmt::format("invalid frontend message type {}",
                                 byte_text(static_cast<uint8_t>(type)))});
    }
    if (in.size() < kRegularHeaderBytes) {
        return need_more();
    }
    const auto length = static_cast<int32_t>(load_u32(in, kTypeBytes));
    if (length < static_cast<int32_t>(kLengthBytes)) {
        return fail({fmt::format("{}: invalid message length {}", name, length)});
    }
    const auto bytes = static_cast<size_t>(length);
    if (bytes > limits_.message_bytes_max) {
        return fail({fmt::format("{}: message of {} bytes exceeds the limit of {} bytes", name,
                                 bytes, limits_.message_bytes_max)});
    }
    if (in.size() < kTypeBytes + bytes) {
        return need_more();
    }
    Decoded decoded =
        decode_regular(type, in.substr(kRegularHeaderBytes, bytes - kLengthBytes), limits_);
    if (!decoded.ok()) {
        return fail(decoded.error());
    }
    read_pos_ += kTypeBytes + bytes;
    return PgNext(std::optional<PgFrontendMessage>(std::move(decoded).value()));
}

// ---------------------------------------------------------------------------------------------
// Text forms

namespace {

// Appends `s` with \" \\ and \xNN escapes, cut after kQuoteBytesMax bytes, and "...(+N bytes)"
// if it was cut. With `quote`, the escaped bytes are put between double quotes.
void append_escaped(std::string_view s, bool quote, std::string& out) {
    if (quote) {
        out.push_back('"');
    }
    const size_t shown = std::min(s.size(), kQuoteBytesMax);
    for (size_t i = 0; i < shown; ++i) {
        const auto c = static_cast<uint8_t>(s[i]);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c >= 0x7f) {
            fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    if (quote) {
        out.push_back('"');
    }
    if (s.size() > shown) {
        fmt::format_to(std::back_inserter(out), "...(+{} bytes)", s.size() - shown);
    }
}

void append_quoted(std::string_view s, std::string& out) {
    append_escaped(s, true, out);
}

std::string quoted(std::string_view s) {
    std::string out;
    append_quoted(s, out);
    return out;
}

std::string_view format_text(PgFormat format) {
    return format == PgFormat::kBinary ? "bin" : "text";
}

std::string_view target_text(PgTarget target) {
    return target == PgTarget::kPortal ? "portal" : "statement";
}

// "[a b c]", with the first kListItemsMax items and "+N" for the rest.
template <typename Item, typename Print>
std::string list_text(const std::vector<Item>& items, Print print) {
    std::string out = "[";
    const size_t shown = std::min(items.size(), kListItemsMax);
    for (size_t i = 0; i < shown; ++i) {
        if (i > 0) {
            out.push_back(' ');
        }
        out += print(i, items[i]);
    }
    if (items.size() > shown) {
        fmt::format_to(std::back_inserter(out), " +{}", items.size() - shown);
    }
    out.push_back(']');
    return out;
}

}  // namespace

std::string to_string(const PgStartup& m) {
    std::string out = "StartupMessage 3.0";
    for (const auto& [name, value] : m.parameters) {
        out.push_back(' ');
        // The name unquoted reads better and cannot be confused: the value after '=' is quoted.
        append_escaped(name, false, out);
        out.push_back('=');
        append_quoted(value, out);
    }
    return out;
}

std::string to_string(const PgSslRequest&) {
    return "SSLRequest";
}

std::string to_string(const PgGssEncRequest&) {
    return "GSSENCRequest";
}

std::string to_string(const PgCancelRequest& m) {
    return fmt::format("CancelRequest pid={}", m.process_id);
}

std::string to_string(const PgQuery& m) {
    return "Query " + quoted(m.sql);
}

std::string to_string(const PgParse& m) {
    return fmt::format(
        "Parse statement={} query={} types={}", quoted(m.statement), quoted(m.sql),
        list_text(m.param_type_oids, [](size_t, uint32_t oid) { return std::to_string(oid); }));
}

std::string to_string(const PgBind& m) {
    const auto param = [&m](size_t i, const std::optional<std::string>& value) {
        if (!value) {
            return std::string("null");
        }
        return fmt::format("{}({})", format_text(m.param_format(i)), value->size());
    };
    const auto result = [](size_t, PgFormat format) { return std::string(format_text(format)); };
    return fmt::format("Bind portal={} statement={} params={} results={}", quoted(m.portal),
                       quoted(m.statement), list_text(m.params, param),
                       list_text(m.result_formats, result));
}

std::string to_string(const PgDescribe& m) {
    return fmt::format("Describe {}={}", target_text(m.target), quoted(m.name));
}

std::string to_string(const PgExecute& m) {
    return fmt::format("Execute portal={} max_rows={}", quoted(m.portal), m.max_rows);
}

std::string to_string(const PgSync&) {
    return "Sync";
}

std::string to_string(const PgFlush&) {
    return "Flush";
}

std::string to_string(const PgClose& m) {
    return fmt::format("Close {}={}", target_text(m.target), quoted(m.name));
}

std::string to_string(const PgTerminate&) {
    return "Terminate";
}

std::string to_string(const PgPassword& m) {
    return fmt::format("PasswordMessage ({} bytes)", m.password.size());
}

std::string to_string(const PgSaslMessage& m) {
    return fmt::format("SASL message ({} bytes)", m.body.size());
}

Result<PgSaslInitialResponse, std::string> parse_sasl_initial_response(std::string_view body) {
    BodyReader r(body, "SASLInitialResponse");
    PgSaslInitialResponse out;
    out.mechanism = r.cstring("the mechanism");
    const int32_t length = r.i32("the data's length");
    if (r.ok() && (length < 0 || static_cast<size_t>(length) != r.remaining())) {
        r.fail(fmt::format("SASLInitialResponse: a data length of {} with {} bytes left", length,
                           r.remaining()));
    }
    out.data = r.bytes(r.remaining(), "the data");
    if (std::optional<PgProtocolError> error = r.finish()) {
        return error->message;
    }
    return out;
}

std::string to_string(const PgCopyData& m) {
    return fmt::format("CopyData ({} bytes)", m.data.size());
}

std::string to_string(const PgCopyDone&) {
    return "CopyDone";
}

std::string to_string(const PgCopyFail& m) {
    return "CopyFail " + quoted(m.message);
}

std::string to_string(const PgFrontendMessage& m) {
    return std::visit([](const auto& message) { return to_string(message); }, m);
}

// ---------------------------------------------------------------------------------------------
// Backend messages

namespace {

// Starts a message: its type and a placeholder for the length; returns where the length goes.
size_t begin_message(char type, std::string& out) {
    out.push_back(type);
    const size_t at = out.size();
    out.append(kLengthBytes, '\0');
    return at;
}

// Writes the length of the message whose length field is at `at`: everything after the type.
void end_message(size_t at, std::string& out) {
    RL_ASSERT(at + kLengthBytes <= out.size());
    const size_t length = out.size() - at;
    RL_ASSERT(length <= kInt32Max);
    for (size_t i = 0; i < kLengthBytes; ++i) {
        out[at + i] = static_cast<char>(length >> (8 * (kLengthBytes - 1 - i)));
    }
}

// A C string, cut at its first NUL so that it cannot end early on the wire.
void put_cstring(std::string_view s, std::string& out) {
    out.append(s.substr(0, s.find('\0')));
    out.push_back('\0');
}

void put_count(size_t n, std::string& out) {
    RL_ASSERT(n <= kCountMax);
    put_u16(static_cast<uint16_t>(n), out);
}

// A message with only a type and a length.
void encode_empty(char type, std::string& out) {
    end_message(begin_message(type, out), out);
}

void encode_authentication(uint32_t code, std::string& out) {
    const size_t at = begin_message('R', out);
    put_u32(code, out);
    end_message(at, out);
}

void encode_diagnostic(char type, const PgDiagnostic& d, std::string& out) {
    RL_ASSERT(d.sqlstate.size() == 5);
    const size_t at = begin_message(type, out);
    const auto field = [&out](char code, std::string_view value) {
        out.push_back(code);
        put_cstring(value, out);
    };
    field('S', to_string(d.severity));
    field('V', to_string(d.severity));
    field('C', d.sqlstate);
    field('M', d.message);
    if (!d.detail.empty()) {
        field('D', d.detail);
    }
    if (!d.hint.empty()) {
        field('H', d.hint);
    }
    if (d.position > 0) {
        field('P', std::to_string(d.position));
    }
    out.push_back('\0');
    end_message(at, out);
}

}  // namespace

std::string_view to_string(PgSeverity severity) {
    switch (severity) {
        case PgSeverity::kFatal:
            return "FATAL";
        case PgSeverity::kError:
            return "ERROR";
        case PgSeverity::kWarning:
            return "WARNING";
        case PgSeverity::kNotice:
            return "NOTICE";
    }
    RL_PANIC("to_string: a PgSeverity out of range");
}

int16_t pg_type_size(uint32_t type_oid) {
    switch (type_oid) {
        case kPgOidBool:
            return 1;
        case kPgOidInt2:
            return 2;
        case kPgOidInt4:
            return 4;
        case kPgOidInt8:
        case kPgOidTimestamptz:
            return 8;
        default:
            return -1;
    }
}

PgField pg_field(std::string name, uint32_t type_oid, PgFormat format) {
    PgField field;
    field.name = std::move(name);
    field.type_oid = type_oid;
    field.type_size = pg_type_size(type_oid);
    field.format = format;
    return field;
}

void encode_authentication_ok(std::string& out) {
    encode_authentication(0, out);
}

void encode_authentication_cleartext_password(std::string& out) {
    encode_authentication(3, out);
}

void encode_authentication_sasl_scram(std::string& out) {
    const size_t at = begin_message('R', out);
    put_u32(10, out);
    out.append("SCRAM-SHA-256");
    out.push_back('\0');
    out.push_back('\0');  // the end of the list
    end_message(at, out);
}

void encode_authentication_sasl_continue(std::string_view data, std::string& out) {
    const size_t at = begin_message('R', out);
    put_u32(11, out);
    out.append(data);
    end_message(at, out);
}

void encode_authentication_sasl_final(std::string_view data, std::string& out) {
    const size_t at = begin_message('R', out);
    put_u32(12, out);
    out.append(data);
    end_message(at, out);
}

void encode_authentication_md5_password(std::array<uint8_t, 4> salt, std::string& out) {
    const size_t at = begin_message('R', out);
    put_u32(5, out);
    for (uint8_t byte : salt) {
        out.push_back(static_cast<char>(byte));
    }
    end_message(at, out);
}

std::string pg_md5_password(std::string_view password,
                            std::string_view user,
                            std::array<uint8_t, 4> salt) {
    std::string inner(password);
    inner.append(user);
    std::string outer = base::hex(base::md5(inner));
    outer.append(reinterpret_cast<const char*>(salt.data()), salt.size());
    std::string out = "md5" + base::hex(base::md5(outer));
    RL_ASSERT(out.size() == 35);
    return out;
}

void encode_parameter_status(std::string_view name, std::string_view value, std::string& out) {
    const size_t at = begin_message('S', out);
    put_cstring(name, out);
    put_cstring(value, out);
    end_message(at, out);
}

void encode_backend_key_data(int32_t process_id, uint32_t secret_key, std::string& out) {
    const size_t at = begin_message('K', out);
    put_u32(static_cast<uint32_t>(process_id), out);
    put_u32(secret_key, out);
    end_message(at, out);
}

void encode_ready_for_query(PgTransactionStatus status, std::string& out) {
    RL_ASSERT(status == PgTransactionStatus::kIdle ||
              status == PgTransactionStatus::kInTransaction ||
              status == PgTransactionStatus::kFailedTransaction);
    const size_t at = begin_message('Z', out);
    out.push_back(static_cast<char>(status));
    end_message(at, out);
}

void encode_row_description(std::span<const PgField> fields, std::string& out) {
    const size_t at = begin_message('T', out);
    put_count(fields.size(), out);
    for (const PgField& f : fields) {
        put_cstring(f.name, out);
        put_u32(f.table_oid, out);
        put_u16(static_cast<uint16_t>(f.column_attnum), out);
        put_u32(f.type_oid, out);
        put_u16(static_cast<uint16_t>(f.type_size), out);
        put_u32(static_cast<uint32_t>(f.type_modifier), out);
        put_u16(static_cast<uint16_t>(f.format), out);
    }
    end_message(at, out);
}

void encode_data_row(std::span<const std::optional<std::string>> values, std::string& out) {
    const size_t at = begin_message('D', out);
    put_count(values.size(), out);
    for (const std::optional<std::string>& value : values) {
        if (!value) {
            put_u32(static_cast<uint32_t>(-1), out);
            continue;
        }
        RL_ASSERT(value->size() <= kInt32Max);
        put_u32(static_cast<uint32_t>(value->size()), out);
        out.append(*value);
    }
    end_message(at, out);
}

void encode_command_complete(std::string_view tag, std::string& out) {
    const size_t at = begin_message('C', out);
    put_cstring(tag, out);
    end_message(at, out);
}

void encode_empty_query_response(std::string& out) {
    encode_empty('I', out);
}

void encode_error_response(const PgDiagnostic& diagnostic, std::string& out) {
    encode_diagnostic('E', diagnostic, out);
}

void encode_notice_response(const PgDiagnostic& diagnostic, std::string& out) {
    encode_diagnostic('N', diagnostic, out);
}

void encode_parse_complete(std::string& out) {
    encode_empty('1', out);
}

void encode_bind_complete(std::string& out) {
    encode_empty('2', out);
}

void encode_close_complete(std::string& out) {
    encode_empty('3', out);
}

void encode_no_data(std::string& out) {
    encode_empty('n', out);
}

void encode_portal_suspended(std::string& out) {
    encode_empty('s', out);
}

void encode_parameter_description(std::span<const uint32_t> type_oids, std::string& out) {
    const size_t at = begin_message('t', out);
    put_count(type_oids.size(), out);
    for (uint32_t oid : type_oids) {
        put_u32(oid, out);
    }
    end_message(at, out);
}

void encode_negotiate_protocol_version(uint32_t newest_version,
                                       std::span<const std::string> unrecognized_options,
                                       std::string& out) {
    const size_t at = begin_message('v', out);
    put_u32(newest_version, out);
    RL_ASSERT(unrecognized_options.size() <= kInt32Max);
    put_u32(static_cast<uint32_t>(unrecognized_options.size()), out);
    for (const std::string& option : unrecognized_options) {
        put_cstring(option, out);
    }
    end_message(at, out);
}

// ---------------------------------------------------------------------------------------------
// Binary formats

namespace {

PgValueError wrong_length(std::string_view type, size_t bytes, size_t expected_bytes) {
    return {PgValueErrorCode::kInvalidBinaryRepresentation,
            fmt::format("incorrect binary data format for {}: {} byte{}, expected {}", type, bytes,
                        bytes == 1 ? "" : "s", expected_bytes)};
}

// `us` microseconds since `epoch`.
PgValueError timestamptz_out_of_range(int64_t us, std::string_view epoch) {
    return {PgValueErrorCode::kDatetimeOutOfRange,
            fmt::format("timestamptz out of range: {} microseconds since {}", us, epoch)};
}

std::string big_endian(uint64_t v, size_t bytes) {
    RL_ASSERT(bytes == 2 || bytes == 4 || bytes == 8);
    std::string out;
    out.reserve(bytes);
    for (size_t i = 0; i < bytes; ++i) {
        out.push_back(static_cast<char>(v >> (8 * (bytes - 1 - i))));
    }
    return out;
}

}  // namespace

std::string_view PgValueError::sqlstate() const {
    switch (code) {
        case PgValueErrorCode::kInvalidBinaryRepresentation:
            return "22P03";
        case PgValueErrorCode::kDatetimeOutOfRange:
            return "22008";
    }
    RL_PANIC("PgValueError: a code out of range");
}

Result<int16_t, PgValueError> decode_binary_int2(std::string_view bytes) {
    if (bytes.size() != 2) {
        return wrong_length("int2", bytes.size(), 2);
    }
    return static_cast<int16_t>(load_u16(bytes, 0));
}

Result<int32_t, PgValueError> decode_binary_int4(std::string_view bytes) {
    if (bytes.size() != 4) {
        return wrong_length("int4", bytes.size(), 4);
    }
    return static_cast<int32_t>(load_u32(bytes, 0));
}

Result<int64_t, PgValueError> decode_binary_int8(std::string_view bytes) {
    if (bytes.size() != 8) {
        return wrong_length("int8", bytes.size(), 8);
    }
    return static_cast<int64_t>(load_u64(bytes, 0));
}

Result<bool, PgValueError> decode_binary_bool(std::string_view bytes) {
    if (bytes.size() != 1) {
        return wrong_length("bool", bytes.size(), 1);
    }
    const auto byte = static_cast<uint8_t>(bytes[0]);
    if (byte > 1) {
        return PgValueError{PgValueErrorCode::kInvalidBinaryRepresentation,
                            fmt::format("incorrect binary data format for bool: byte 0x{:02x}, "
                                        "expected 0x00 or 0x01",
                                        byte)};
    }
    return byte == 1;
}

Result<int64_t, PgValueError> decode_binary_timestamptz(std::string_view bytes) {
    if (bytes.size() != 8) {
        return wrong_length("timestamptz", bytes.size(), 8);
    }
    const auto pg_us = static_cast<int64_t>(load_u64(bytes, 0));
    if (pg_us == std::numeric_limits<int64_t>::min() ||
        pg_us == std::numeric_limits<int64_t>::max()) {
        return PgValueError{PgValueErrorCode::kDatetimeOutOfRange,
                            "timestamptz out of range: infinity is not supported"};
    }
    if (pg_us < kPgTimestampMinUs || pg_us > std::numeric_limits<int64_t>::max() - kPgEpochUnixUs) {
        return timestamptz_out_of_range(pg_us, "2000-01-01");
    }
    return pg_us + kPgEpochUnixUs;
}

std::string encode_binary_int2(int16_t value) {
    return big_endian(static_cast<uint16_t>(value), 2);
}

std::string encode_binary_int4(int32_t value) {
    return big_endian(static_cast<uint32_t>(value), 4);
}

std::string encode_binary_int8(int64_t value) {
    return big_endian(static_cast<uint64_t>(value), 8);
}

std::string encode_binary_bool(bool value) {
    return std::string(1, value ? '\x01' : '\x00');
}

Result<std::string, PgValueError> encode_binary_timestamptz(int64_t unix_us) {
    // Checked before subtracting, which therefore cannot overflow.
    if (unix_us < kPgTimestampMinUs + kPgEpochUnixUs) {
        return timestamptz_out_of_range(unix_us, "1970-01-01");
    }
    const int64_t pg_us = unix_us - kPgEpochUnixUs;
    RL_ASSERT(pg_us >= kPgTimestampMinUs);
    RL_ASSERT(pg_us < std::numeric_limits<int64_t>::max());
    return big_endian(static_cast<uint64_t>(pg_us), 8);
}

}  // namespace raftlock::net
