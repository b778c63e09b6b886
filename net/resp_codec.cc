#include "net/resp_codec.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "base/assert.h"

namespace raftlock::net {

namespace {

using statemachine::redis::Argv;
using statemachine::redis::Value;

// Redis's LONG_STR_SIZE: string2ll refuses a string this long or longer without reading it.
constexpr size_t kLongStrBytes = 21;
// How deep parse_resp_reply follows nested aggregates: deeper than any reply Redis builds, and
// shallow enough that the recursion cannot exhaust the stack on hostile input.
constexpr size_t kReplyDepthMax = 128;

// Redis's string2ll (util.c): an optional '-', then either "0" or digits without a leading zero;
// no '+', no spaces, and the value must fit in 64 bits. "-0" is refused, as in Redis.
bool string_to_ll(std::string_view s, int64_t& value) {
    if (s.empty() || s.size() >= kLongStrBytes) {
        return false;
    }
    if (s == "0") {
        value = 0;
        return true;
    }
    size_t i = 0;
    const bool negative = s[0] == '-';
    if (negative) {
        i = 1;
    }
    if (i == s.size() || s[i] < '1' || s[i] > '9') {
        return false;
    }
    uint64_t v = 0;
    for (; i < s.size(); ++i) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        const auto digit = static_cast<uint64_t>(s[i] - '0');
        if (v > std::numeric_limits<uint64_t>::max() / 10) {
            return false;
        }
        v *= 10;
        if (v > std::numeric_limits<uint64_t>::max() - digit) {
            return false;
        }
        v += digit;
    }
    constexpr auto kPositiveMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (negative) {
        if (v > kPositiveMax + 1) {
            return false;
        }
        // -v computed in unsigned arithmetic, so INT64_MIN does not overflow.
        value = static_cast<int64_t>(~v + 1);
        return true;
    }
    if (v > kPositiveMax) {
        return false;
    }
    value = static_cast<int64_t>(v);
    return true;
}

// ---------------------------------------------------------------------------------------------
// Commands

RespCommand no_command_yet() {
    return RespCommand{RespParse::kNeedMore, 0, {}, {}};
}

RespCommand command_error(std::string error) {
    return RespCommand{RespParse::kError, 0, {}, std::move(error)};
}

enum class Line : uint8_t { kFound, kNeedMore, kTooBig };

// Finds the end of the count line that starts at `at` as processMultibulkBuffer does: its first
// '\r' (returned in `cr`), with at least one more byte after it. Without a '\r', more than
// `inline_bytes_max` waiting bytes are too many.
Line find_count_line(std::string_view in, size_t at, size_t inline_bytes_max, size_t& cr) {
    RL_ASSERT(at <= in.size());
    const size_t pos = in.find('\r', at);
    if (pos == std::string_view::npos) {
        return in.size() - at > inline_bytes_max ? Line::kTooBig : Line::kNeedMore;
    }
    if (pos + 1 >= in.size()) {
        return Line::kNeedMore;  // Redis waits for the byte after '\r' too
    }
    cr = pos;
    return Line::kFound;
}

// One multibulk command from the front of `in` (in[0] == '*'). With `argv` null it only checks
// the framing and finds the command's end, allocating nothing: the caller parses a partial
// command again on every read, and a declared count or length is not a reason to allocate. With
// `argv` set it also copies the arguments; the caller does that only once the framing proved that
// every argument's bytes are present, so the reservation is bounded by the input.
RespCommand parse_multibulk(std::string_view in, const RespLimits& limits, Argv* argv) {
    RL_ASSERT(!in.empty());
    RL_ASSERT(in[0] == '*');
    size_t cr = 0;
    switch (find_count_line(in, 0, limits.inline_bytes_max, cr)) {
        case Line::kNeedMore:
            return no_command_yet();
        case Line::kTooBig:
            return command_error("Protocol error: too big mbulk count string");
        case Line::kFound:
            break;
    }
    int64_t count = 0;
    if (!string_to_ll(in.substr(1, cr - 1), count) ||
        (count > 0 && static_cast<uint64_t>(count) > limits.array_items_max)) {
        return command_error("Protocol error: invalid multibulk length");
    }
    size_t at = cr + 2;
    if (count <= 0) {
        return RespCommand{RespParse::kCommand, at, {}, {}};  // Redis skips an empty command
    }
    if (argv != nullptr) {
        argv->reserve(static_cast<size_t>(count));
    }
    for (int64_t i = 0; i < count; ++i) {
        switch (find_count_line(in, at, limits.inline_bytes_max, cr)) {
            case Line::kNeedMore:
                return no_command_yet();
            case Line::kTooBig:
                return command_error("Protocol error: too big bulk count string");
            case Line::kFound:
                break;
        }
        if (in[at] != '$') {
            return command_error(fmt::format("Protocol error: expected '$', got '{}'", in[at]));
        }
        int64_t length = 0;
        if (!string_to_ll(in.substr(at + 1, cr - at - 1), length) || length < 0 ||
            static_cast<uint64_t>(length) > limits.bulk_bytes_max) {
            return command_error("Protocol error: invalid bulk length");
        }
        at = cr + 2;
        RL_ASSERT(at <= in.size());
        const auto bytes = static_cast<size_t>(length);
        if (in.size() - at < bytes + 2) {
            return no_command_yet();
        }
        if (argv != nullptr) {
            argv->emplace_back(in.substr(at, bytes));
        }
        at += bytes + 2;  // Redis skips the two bytes after the data without looking at them
    }
    if (argv != nullptr) {
        RL_ASSERT(argv->size() == static_cast<size_t>(count));
    }
    return RespCommand{RespParse::kCommand, at, {}, {}};
}

// isspace() in the C locale, which sdssplitargs uses to skip blanks and to end a quoted argument.
bool is_c_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_hex_digit(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hex_digit_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    RL_ASSERT(c >= 'A' && c <= 'F');
    return c - 'A' + 10;
}

// What a backslash escape inside double quotes stands for: C's \n \r \t \b \a, else the byte.
char unescape(char c) {
    switch (c) {
        case 'n':
            return '\n';
        case 'r':
            return '\r';
        case 't':
            return '\t';
        case 'b':
            return '\b';
        case 'a':
            return '\a';
        default:
            return c;
    }
}

// The byte at `i`, or '\0' past the end: sdssplitargs reads a C string, and this keeps the
// translation of its look-aheads (*(p+1), *(p+3)) both faithful and in bounds.
char char_at(std::string_view line, size_t i) {
    return i < line.size() ? line[i] : '\0';
}

// One argument of sdssplitargs that starts at a non-blank byte `p` (a bare word, "double" or
// 'single' quoted, or a mix such as a"b c"). Returns false for unbalanced quotes or a closing quote
// followed by something other than a blank; otherwise `p` ends after the argument.
bool split_one_arg(std::string_view line, size_t& p, std::string& arg) {
    bool in_double = false;
    bool in_single = false;
    for (bool done = false; !done;) {
        const char c = char_at(line, p);
        if (in_double) {
            if (c == '\\' && char_at(line, p + 1) == 'x' && is_hex_digit(char_at(line, p + 2)) &&
                is_hex_digit(char_at(line, p + 3))) {
                arg.push_back(static_cast<char>(hex_digit_value(char_at(line, p + 2)) * 16 +
                                                hex_digit_value(char_at(line, p + 3))));
                p += 3;
            } else if (c == '\\' && char_at(line, p + 1) != '\0') {
                ++p;
                arg.push_back(unescape(line[p]));
            } else if (c == '"') {
                const char next = char_at(line, p + 1);
                if (next != '\0' && !is_c_space(next)) {
                    return false;
                }
                done = true;
            } else if (c == '\0') {
                return false;
            } else {
                arg.push_back(c);
            }
        } else if (in_single) {
            if (c == '\\' && char_at(line, p + 1) == '\'') {
                ++p;
                arg.push_back('\'');
            } else if (c == '\'') {
                const char next = char_at(line, p + 1);
                if (next != '\0' && !is_c_space(next)) {
                    return false;
                }
                done = true;
            } else if (c == '\0') {
                return false;
            } else {
                arg.push_back(c);
            }
        } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0') {
            done = true;
        } else if (c == '"') {
            in_double = true;
        } else if (c == '\'') {
            in_single = true;
        } else {
            arg.push_back(c);
        }
        if (p < line.size()) {
            ++p;
        }
    }
    return true;
}

// Redis's sdssplitargs over one line, keeping only non-empty arguments as processInlineBuffer
// does. A NUL ends the line (sdssplitargs reads a C string).
bool split_args(std::string_view line, Argv& argv) {
    line = line.substr(0, line.find('\0'));
    size_t p = 0;
    for (;;) {
        while (p < line.size() && is_c_space(line[p])) {
            ++p;
        }
        if (p == line.size()) {
            return true;
        }
        std::string arg;
        const size_t start = p;
        if (!split_one_arg(line, p, arg)) {
            return false;
        }
        RL_ASSERT(p > start);
        if (!arg.empty()) {
            argv.push_back(std::move(arg));
        }
    }
}

// One inline command from the front of `in` (in[0] != '*'): a line ending in '\n' or "\r\n".
RespCommand parse_inline(std::string_view in, const RespLimits& limits) {
    const size_t newline = in.find('\n');
    if (newline == std::string_view::npos) {
        if (in.size() > limits.inline_bytes_max) {
            return command_error("Protocol error: too big inline request");
        }
        return no_command_yet();
    }
    size_t line_bytes = newline;
    if (line_bytes > 0 && in[line_bytes - 1] == '\r') {
        --line_bytes;
    }
    RespCommand command{RespParse::kCommand, newline + 1, {}, {}};
    if (!split_args(in.substr(0, line_bytes), command.argv)) {
        return command_error("Protocol error: unbalanced quotes in request");
    }
    return command;
}

// ---------------------------------------------------------------------------------------------
// Replies out

// A simple string or error: its text on one line, line breaks written as spaces (Redis does this
// for error texts; a break would end the reply early and desynchronize the client).
void append_line(char type, std::string_view text, std::string& out) {
    out.push_back(type);
    const size_t start = out.size();
    out.append(text);
    std::replace_if(
        out.begin() + static_cast<std::ptrdiff_t>(start), out.end(),
        [](char c) { return c == '\r' || c == '\n'; }, ' ');
    out.append("\r\n");
}

void append_header(char type, size_t n, std::string& out) {
    fmt::format_to(std::back_inserter(out), "{}{}\r\n", type, n);
}

}  // namespace

RespCommand parse_resp_command(std::string_view input, const RespLimits& limits) {
    if (input.empty()) {
        return no_command_yet();
    }
    if (input[0] != '*') {
        RespCommand command = parse_inline(input, limits);
        if (command.status == RespParse::kCommand) {
            RL_ASSERT(command.consumed > 0);
            RL_ASSERT(command.consumed <= input.size());
        }
        return command;
    }
    const RespCommand framing = parse_multibulk(input, limits, nullptr);
    if (framing.status != RespParse::kCommand) {
        RL_ASSERT(framing.consumed == 0);
        if (framing.status == RespParse::kError) {
            RL_ASSERT(!framing.error.empty());
        }
        return framing;
    }
    Argv argv;
    RespCommand command = parse_multibulk(input, limits, &argv);
    RL_ASSERT(command.status == RespParse::kCommand);
    RL_ASSERT(command.consumed == framing.consumed);
    RL_ASSERT(command.consumed > 0);
    RL_ASSERT(command.consumed <= input.size());
    command.argv = std::move(argv);
    return command;
}

void encode_resp(const Value& value, int protocol, std::string& out) {
    RL_ASSERT(protocol == 2 || protocol == 3);
    switch (value.kind) {
        case Value::Kind::kNull:
            out.append(protocol == 2 ? "$-1\r\n" : "_\r\n");
            return;
        case Value::Kind::kNullArray:
            out.append(protocol == 2 ? "*-1\r\n" : "_\r\n");
            return;
        case Value::Kind::kSimple:
            append_line('+', value.text, out);
            return;
        case Value::Kind::kError:
            append_line('-', value.text, out);
            return;
        case Value::Kind::kInteger:
            fmt::format_to(std::back_inserter(out), ":{}\r\n", value.integer);
            return;
        case Value::Kind::kBulk:
            append_header('$', value.text.size(), out);
            out.append(value.text);
            out.append("\r\n");
            return;
        case Value::Kind::kArray:
            append_header('*', value.items.size(), out);
            break;
        case Value::Kind::kMap:
            RL_ASSERT_MSG(value.items.size() % 2 == 0, "a map's items alternate key, value");
            if (protocol == 2) {
                append_header('*', value.items.size(), out);
            } else {
                append_header('%', value.items.size() / 2, out);
            }
            break;
        case Value::Kind::kPush:
            append_header(protocol == 2 ? '*' : '>', value.items.size(), out);
            break;
        case Value::Kind::kDouble:
            if (protocol == 2) {
                append_header('$', value.text.size(), out);
                out.append(value.text);
                out.append("\r\n");
            } else {
                append_line(',', value.text, out);
            }
            return;
        case Value::Kind::kSet:
            append_header(protocol == 2 ? '*' : '~', value.items.size(), out);
            break;
        case Value::Kind::kPairs:
            RL_ASSERT_MSG(value.items.size() % 2 == 0, "pairs alternate member, score");
            if (protocol == 2) {
                append_header('*', value.items.size(), out);
                break;
            }
            append_header('*', value.items.size() / 2, out);
            for (size_t i = 0; i < value.items.size(); i += 2) {
                append_header('*', 2, out);
                encode_resp(value.items[i], protocol, out);
                encode_resp(value.items[i + 1], protocol, out);
            }
            return;
        default:
            RL_PANIC("encode_resp: a Value of an unknown kind");
    }
    for (const Value& item : value.items) {
        encode_resp(item, protocol, out);
    }
}

// ---------------------------------------------------------------------------------------------
// Replies in

namespace {

// A recursive-descent reader of one reply. Every read checks the bounds; `at_` only moves forward.
class ReplyReader {
public:
    ReplyReader(std::string_view in, const RespLimits& limits) : in_(in), limits_(limits) {}

    RespParse read(Value& out, size_t depth);
    size_t at() const { return at_; }
    std::string& error() { return error_; }

private:
    RespParse fail(std::string error) {
        error_ = std::move(error);
        return RespParse::kError;
    }
    RespParse read_line(std::string_view& line);
    RespParse read_blob(char type, std::string_view header, Value& out);
    RespParse read_aggregate(char type, std::string_view header, Value& out, size_t depth);

    std::string_view in_;
    const RespLimits& limits_;
    size_t at_ = 0;
    std::string error_;
};

// The rest of the line at `at_`, which must end in "\r\n".
RespParse ReplyReader::read_line(std::string_view& line) {
    const size_t cr = in_.find('\r', at_);
    if (cr == std::string_view::npos) {
        if (in_.size() - at_ > limits_.inline_bytes_max) {
            return fail("Protocol error: too big reply line");
        }
        return RespParse::kNeedMore;
    }
    if (cr + 1 == in_.size()) {
        return RespParse::kNeedMore;
    }
    if (in_[cr + 1] != '\n') {
        return fail("Protocol error: a reply line's '\\r' is not followed by '\\n'");
    }
    line = in_.substr(at_, cr - at_);
    at_ = cr + 2;
    return RespParse::kCommand;
}

// '$' bulk, '=' verbatim string, '!' blob error: a length line, then that many bytes and "\r\n".
RespParse ReplyReader::read_blob(char type, std::string_view header, Value& out) {
    int64_t length = 0;
    if (!string_to_ll(header, length)) {
        return fail("Protocol error: invalid bulk length");
    }
    if (type == '$' && length == -1) {
        out = Value::null();
        return RespParse::kCommand;
    }
    if (length < 0 || static_cast<uint64_t>(length) > limits_.bulk_bytes_max) {
        return fail("Protocol error: invalid bulk length");
    }
    const auto bytes = static_cast<size_t>(length);
    if (in_.size() - at_ < bytes + 2) {
        return RespParse::kNeedMore;
    }
    if (in_[at_ + bytes] != '\r' || in_[at_ + bytes + 1] != '\n') {
        return fail("Protocol error: bulk data is not followed by \"\\r\\n\"");
    }
    std::string_view text = in_.substr(at_, bytes);
    at_ += bytes + 2;
    if (type == '=') {
        // "txt:..." or "mkd:...": the three-letter format and ':' are not part of the text.
        if (text.size() < 4 || text[3] != ':') {
            return fail("Protocol error: a verbatim string without its format prefix");
        }
        text.remove_prefix(4);
    }
    out = type == '!' ? Value::error(std::string(text)) : Value::bulk(std::string(text));
    return RespParse::kCommand;
}

// '*' array, '~' set, '>' push, '%' map, '|' attribute: a count line, then that many items (pairs
// for a map or an attribute). An attribute is read and dropped; the reply is the value after it.
RespParse ReplyReader::read_aggregate(char type,
                                      std::string_view header,
                                      Value& out,
                                      size_t depth) {
    int64_t count = 0;
    if (!string_to_ll(header, count)) {
        return fail("Protocol error: invalid multibulk length");
    }
    if (type == '*' && count == -1) {
        out = Value::null_array();
        return RespParse::kCommand;
    }
    if (count < 0 || static_cast<uint64_t>(count) > limits_.array_items_max) {
        return fail("Protocol error: invalid multibulk length");
    }
    const bool pairs = type == '%' || type == '|';
    const size_t items = static_cast<size_t>(count) * (pairs ? 2 : 1);
    // Not reserved from the declared count: every level of a nested reply would reserve for the
    // whole input. Growing as items arrive keeps the memory proportional to the items read.
    std::vector<Value> values;
    for (size_t i = 0; i < items; ++i) {
        Value item;
        const RespParse status = read(item, depth + 1);
        if (status != RespParse::kCommand) {
            return status;
        }
        values.push_back(std::move(item));
    }
    switch (type) {
        case '*':
            out = Value::array(std::move(values));
            return RespParse::kCommand;
        case '~':
            out = Value::set(std::move(values));
            return RespParse::kCommand;
        case '>':
            out = Value::push(std::move(values));
            return RespParse::kCommand;
        case '%':
            out = Value::map(std::move(values));
            return RespParse::kCommand;
        default:
            RL_ASSERT(type == '|');
            return read(out, depth + 1);
    }
}

RespParse ReplyReader::read(Value& out, size_t depth) {
    if (depth > kReplyDepthMax) {
        return fail("Protocol error: reply nested too deep");
    }
    if (at_ == in_.size()) {
        return RespParse::kNeedMore;
    }
    const char type = in_[at_];
    ++at_;
    std::string_view line;
    if (const RespParse status = read_line(line); status != RespParse::kCommand) {
        return status;
    }
    switch (type) {
        case '+':
            out = Value::simple(std::string(line));
            return RespParse::kCommand;
        case '-':
            out = Value::error(std::string(line));
            return RespParse::kCommand;
        case ':': {
            int64_t n = 0;
            if (!string_to_ll(line, n)) {
                return fail("Protocol error: invalid integer");
            }
            out = Value::integer_of(n);
            return RespParse::kCommand;
        }
        case '_':
            if (!line.empty()) {
                return fail("Protocol error: a null with text");
            }
            out = Value::null();
            return RespParse::kCommand;
        case '#':
            if (line != "t" && line != "f") {
                return fail("Protocol error: invalid boolean");
            }
            out = Value::integer_of(line == "t" ? 1 : 0);
            return RespParse::kCommand;
        case ',':
            out = Value{Value::Kind::kDouble, 0, std::string(line), {}};
            return RespParse::kCommand;
        case '(':
            out = Value::bulk(std::string(line));
            return RespParse::kCommand;
        case '$':
        case '=':
        case '!':
            return read_blob(type, line, out);
        case '*':
        case '~':
        case '>':
        case '%':
        case '|':
            return read_aggregate(type, line, out, depth);
        default:
            return fail(fmt::format("Protocol error: invalid reply type '{}'", type));
    }
}

}  // namespace

RespReply parse_resp_reply(std::string_view input, const RespLimits& limits) {
    ReplyReader reader(input, limits);
    RespReply reply;
    reply.status = reader.read(reply.value, 0);
    switch (reply.status) {
        case RespParse::kCommand:
            RL_ASSERT(reader.at() > 0);
            RL_ASSERT(reader.at() <= input.size());
            reply.consumed = reader.at();
            break;
        case RespParse::kNeedMore:
            reply.value = Value{};
            break;
        case RespParse::kError:
            RL_ASSERT(!reader.error().empty());
            reply.value = Value{};
            reply.error = std::move(reader.error());
            break;
    }
    return reply;
}

}  // namespace raftlock::net
