#include "statemachine/sql/lexer.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "base/assert.h"
#include "statemachine/sql/chars.h"

namespace raftlock::statemachine::sql {

namespace {

bool is_newline(char c) {
    return c == '\n' || c == '\r';
}

// PostgreSQL's ident_start: ASCII letters, '_' and every byte of a multibyte character.
bool is_ident_start(char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '_' || u >= 0x80;
}

bool is_ident_cont(char c) {
    return is_ident_start(c) || is_digit(c) || c == '$';
}

bool is_op_char(char c) {
    return std::string_view("~!@#^&|`?+-*/%<>=").find(c) != std::string_view::npos && c != '\0';
}

// Whether `digit` can follow the prefix 0x, 0o or 0b (`radix` is the prefix's letter).
bool is_radix_digit(char radix, char digit) {
    switch (radix) {
        case 'x':
        case 'X':
            return is_digit(digit) || (digit >= 'a' && digit <= 'f') ||
                   (digit >= 'A' && digit <= 'F');
        case 'o':
        case 'O':
            return digit >= '0' && digit <= '7';
        case 'b':
        case 'B':
            return digit == '0' || digit == '1';
        default:
            return false;
    }
}

bool is_continuation_byte(char c) {
    return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// Cuts `s` to at most kIdentifierBytesMax bytes without splitting a UTF-8 character, as
// PostgreSQL's truncate_identifier does (it also raises a NOTICE, which a parser cannot).
void truncate_identifier(std::string& s) {
    if (s.size() <= kIdentifierBytesMax) {
        return;
    }
    size_t n = kIdentifierBytesMax;
    while (n > 0 && is_continuation_byte(s[n])) {
        --n;
    }
    s.resize(n);
}

class Lexer {
public:
    Lexer(std::string_view query, size_t tokens_max) : q_(query), tokens_max_(tokens_max) {}

    Lexed run() {
        for (;;) {
            if (!skip_blanks()) {
                break;
            }
            if (at_ == q_.size()) {
                emit(TokenKind::kEnd, {}, at_);
                break;
            }
            if (tokens_.size() >= tokens_max_) {
                fail("54000",
                     fmt::format("the query has more than {} tokens, the limit of the SQL mode",
                                 tokens_max_),
                     at_);
                break;
            }
            if (!next_token()) {
                break;
            }
        }
        return Lexed{std::move(tokens_), std::move(error_)};
    }

private:
    char at(size_t i) const { return i < q_.size() ? q_[i] : '\0'; }

    // The 1-based character position of byte `offset`; offsets only grow, so counting goes on
    // from the last call and the whole lexing stays linear.
    uint32_t pos_of(size_t offset) {
        RL_ASSERT(offset >= counted_bytes_);
        for (; counted_bytes_ < offset; ++counted_bytes_) {
            if (!is_continuation_byte(q_[counted_bytes_])) {
                ++counted_chars_;
            }
        }
        return static_cast<uint32_t>(counted_chars_ + 1);
    }

    void emit(TokenKind kind, std::string text, size_t begin) {
        Token t;
        t.kind = kind;
        t.text = std::move(text);
        t.begin = static_cast<uint32_t>(begin);
        t.end = static_cast<uint32_t>(at_);
        t.pos = pos_of(begin);
        tokens_.push_back(std::move(t));
    }

    // Ends the token list with an error at byte `begin`. Always returns false.
    bool fail(std::string_view sqlstate, std::string message, size_t begin) {
        Token t;
        t.kind = TokenKind::kError;
        t.begin = static_cast<uint32_t>(begin);
        t.end = static_cast<uint32_t>(q_.size());
        t.pos = pos_of(begin);
        error_ = SyntaxError{std::string(sqlstate), std::move(message), t.pos};
        tokens_.push_back(std::move(t));
        return false;
    }

    // PostgreSQL's form of a lexical error: the message, then the text from the error's start up
    // to `end` (the end of the query for something unterminated).
    bool fail_near(std::string_view what, size_t begin, size_t end) {
        return fail(kSyntaxError,
                    fmt::format("{} at or near \"{}\"", what, q_.substr(begin, end - begin)),
                    begin);
    }

    bool skip_blanks();
    bool next_token();
    bool lex_identifier();
    bool lex_quoted_identifier();
    bool lex_string();
    size_t string_continues(size_t from) const;
    bool lex_number();
    size_t skip_decinteger(size_t from) const;
    bool lex_param();
    bool lex_operator();

    std::string_view q_;
    size_t tokens_max_;
    size_t at_ = 0;
    size_t counted_bytes_ = 0;
    size_t counted_chars_ = 0;
    std::vector<Token> tokens_;
    SyntaxError error_;
};

// Whitespace, "--" comments up to the end of the line, and /* */ comments, which nest.
bool Lexer::skip_blanks() {
    while (at_ < q_.size()) {
        const char c = q_[at_];
        if (is_space(c)) {
            ++at_;
        } else if (c == '-' && at(at_ + 1) == '-') {
            while (at_ < q_.size() && !is_newline(q_[at_])) {
                ++at_;
            }
        } else if (c == '/' && at(at_ + 1) == '*') {
            const size_t begin = at_;
            size_t depth = 0;
            do {
                if (q_[at_] == '/' && at(at_ + 1) == '*') {
                    ++depth;
                    at_ += 2;
                } else if (q_[at_] == '*' && at(at_ + 1) == '/') {
                    --depth;
                    at_ += 2;
                } else {
                    ++at_;
                }
            } while (depth > 0 && at_ < q_.size());
            if (depth > 0) {
                return fail_near("unterminated /* comment", begin, q_.size());
            }
        } else {
            return true;
        }
    }
    return true;
}

bool Lexer::next_token() {
    const char c = q_[at_];
    if (c == '"') {
        return lex_quoted_identifier();
    }
    if (c == '\'') {
        return lex_string();
    }
    if (is_digit(c) || (c == '.' && is_digit(at(at_ + 1)))) {
        return lex_number();
    }
    if (c == '$') {
        return lex_param();
    }
    if (is_ident_start(c)) {
        return lex_identifier();
    }
    return lex_operator();
}

bool Lexer::lex_identifier() {
    const size_t begin = at_;
    const char first = q_[at_];
    const char after = at(at_ + 1);
    // Prefixed constants PostgreSQL has and the subset lacks. An identifier of more than one
    // character before a quote is just an identifier, as in scan.l (longest match).
    if (after == '\'') {
        switch (first) {
            case 'e':
            case 'E':
                return fail(kNotSupported,
                            "E'...' string constants are not supported in the SQL mode; use "
                            "standard '...' strings",
                            begin);
            case 'b':
            case 'B':
            case 'x':
            case 'X':
                return fail(kNotSupported, "bit-string constants are not supported in the SQL mode",
                            begin);
            case 'n':
            case 'N':
                return fail(kNotSupported,
                            "national character constants (N'...') are not supported in the SQL "
                            "mode; use '...'",
                            begin);
            default:
                break;
        }
    }
    if ((first == 'u' || first == 'U') && after == '&' &&
        (at(at_ + 2) == '\'' || at(at_ + 2) == '"')) {
        return fail(kNotSupported, "Unicode escapes (U&) are not supported in the SQL mode", begin);
    }
    std::string text;
    while (at_ < q_.size() && is_ident_cont(q_[at_])) {
        const char ch = q_[at_];
        text.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
        ++at_;
    }
    truncate_identifier(text);
    emit(TokenKind::kIdent, std::move(text), begin);
    return true;
}

bool Lexer::lex_quoted_identifier() {
    const size_t begin = at_;
    std::string text;
    ++at_;
    for (;;) {
        const size_t quote = q_.find('"', at_);
        if (quote == std::string_view::npos) {
            return fail_near("unterminated quoted identifier", begin, q_.size());
        }
        text.append(q_.substr(at_, quote - at_));
        at_ = quote + 1;
        if (at(at_) != '"') {
            break;
        }
        text.push_back('"');
        ++at_;
    }
    if (text.empty()) {
        return fail_near("zero-length delimited identifier", begin, at_);
    }
    truncate_identifier(text);
    emit(TokenKind::kQuotedIdent, std::move(text), begin);
    return true;
}

// If a string constant ending just before `from` continues with another one (PostgreSQL's
// quotecontinue: horizontal space and "--" comments, a newline, then any whitespace and comments,
// then a quote), the offset of that quote; npos otherwise.
size_t Lexer::string_continues(size_t from) const {
    size_t i = from;
    bool newline = false;
    while (i < q_.size()) {
        const char c = q_[i];
        if (is_newline(c)) {
            newline = true;
            ++i;
        } else if (c == ' ' || c == '\t' || c == '\f' || (newline && c == '\v')) {
            ++i;
        } else if (c == '-' && at(i + 1) == '-') {
            while (i < q_.size() && !is_newline(q_[i])) {
                ++i;
            }
        } else {
            break;
        }
    }
    return newline && at(i) == '\'' ? i : std::string_view::npos;
}

bool Lexer::lex_string() {
    const size_t begin = at_;
    std::string text;
    for (;;) {
        ++at_;  // the opening quote
        for (;;) {
            const size_t quote = q_.find('\'', at_);
            if (quote == std::string_view::npos) {
                return fail_near("unterminated quoted string", begin, q_.size());
            }
            text.append(q_.substr(at_, quote - at_));
            at_ = quote + 1;
            if (at(at_) != '\'') {
                break;
            }
            text.push_back('\'');
            ++at_;
        }
        const size_t next = string_continues(at_);
        if (next == std::string_view::npos) {
            break;
        }
        at_ = next;
    }
    emit(TokenKind::kString, std::move(text), begin);
    return true;
}

// The end of PostgreSQL 16's decinteger at `from`: digits with single underscores between them.
// `from` must be at a digit.
size_t Lexer::skip_decinteger(size_t from) const {
    RL_ASSERT(is_digit(at(from)));
    size_t i = from + 1;
    for (;;) {
        if (is_digit(at(i))) {
            ++i;
        } else if (at(i) == '_' && is_digit(at(i + 1))) {
            i += 2;
        } else {
            return i;
        }
    }
}

bool Lexer::lex_number() {
    const size_t begin = at_;
    bool numeric = false;
    size_t i = at_;
    if (is_digit(at(i))) {
        i = skip_decinteger(i);
        // Non-decimal integers (0x1F, 0o17, 0b101) are PostgreSQL 16 syntax the subset lacks.
        const char radix = at(i);
        if (i == begin + 1 && q_[begin] == '0' && radix != '\0' &&
            is_radix_digit(radix, at(i + 1))) {
            return fail(kNotSupported,
                        "hexadecimal, octal and binary integer constants are not supported in the "
                        "SQL mode",
                        begin);
        }
    }
    // A point starts a fraction, except in "1..2" (PostgreSQL's DOT_DOT).
    if (at(i) == '.' && at(i + 1) != '.') {
        numeric = true;
        ++i;
        if (is_digit(at(i))) {
            i = skip_decinteger(i);
        }
    }
    if ((at(i) == 'e' || at(i) == 'E') &&
        (is_digit(at(i + 1)) || ((at(i + 1) == '+' || at(i + 1) == '-') && is_digit(at(i + 2))))) {
        numeric = true;
        i += is_digit(at(i + 1)) ? 1 : 2;
        i = skip_decinteger(i);
    }
    if (is_ident_start(at(i))) {
        while (is_ident_cont(at(i))) {
            ++i;
        }
        return fail_near("trailing junk after numeric literal", begin, i);
    }
    at_ = i;
    std::string text;
    for (size_t k = begin; k < i; ++k) {
        if (numeric || q_[k] != '_') {
            text.push_back(q_[k]);
        }
    }
    emit(numeric ? TokenKind::kNumeric : TokenKind::kInteger, std::move(text), begin);
    return true;
}

bool Lexer::lex_param() {
    const size_t begin = at_;
    if (!is_digit(at(at_ + 1))) {
        // $$...$$ and $tag$...$tag$ open dollar-quoted strings; a lone '$' is a stray character.
        size_t i = at_ + 1;
        if (is_ident_start(at(i))) {
            while (is_ident_start(at(i)) || is_digit(at(i))) {
                ++i;
            }
        }
        if (at(i) == '$') {
            return fail(kNotSupported, "dollar-quoted strings are not supported in the SQL mode",
                        begin);
        }
        ++at_;
        emit(TokenKind::kOp, "$", begin);
        return true;
    }
    const size_t end = skip_decinteger(at_ + 1);
    if (is_ident_cont(at(end))) {
        size_t i = end;
        while (is_ident_cont(at(i))) {
            ++i;
        }
        return fail_near("trailing junk after parameter", begin, i);
    }
    uint64_t n = 0;
    for (size_t k = at_ + 1; k < end; ++k) {
        if (q_[k] != '_') {
            n = std::min<uint64_t>(n * 10 + static_cast<uint64_t>(q_[k] - '0'),
                                   std::numeric_limits<uint32_t>::max());
        }
    }
    at_ = end;
    emit(TokenKind::kParam, std::string(q_.substr(begin, end - begin)), begin);
    tokens_.back().param = static_cast<uint32_t>(n);
    return true;
}

// Punctuation, and PostgreSQL's operator rule: the longest run of operator characters, cut before
// a comment start inside it, and not ending in + or - unless it holds a character that SQL's own
// operators lack (so "=-" is "=" then "-", while "@-" stays one operator).
bool Lexer::lex_operator() {
    const size_t begin = at_;
    const char c = q_[at_];
    if (c == ':') {
        const char next = at(at_ + 1);
        at_ += (next == ':' || next == '=') ? 2 : 1;
        emit(TokenKind::kOp, std::string(q_.substr(begin, at_ - begin)), begin);
        return true;
    }
    if (c == '.') {
        at_ += at(at_ + 1) == '.' ? 2 : 1;
        emit(TokenKind::kOp, std::string(q_.substr(begin, at_ - begin)), begin);
        return true;
    }
    if (!is_op_char(c)) {
        ++at_;  // punctuation , ( ) [ ] ; and any stray ASCII character
        emit(TokenKind::kOp, std::string(1, c), begin);
        return true;
    }
    size_t end = at_;
    while (end < q_.size() && is_op_char(q_[end])) {
        if (end > at_ &&
            ((q_[end] == '-' && q_[end - 1] == '-') || (q_[end] == '*' && q_[end - 1] == '/'))) {
            --end;  // a comment starts at end - 1
            break;
        }
        ++end;
    }
    size_t n = end - at_;
    if (n > 1 && (q_[at_ + n - 1] == '+' || q_[at_ + n - 1] == '-')) {
        const std::string_view run = q_.substr(at_, n - 1);
        if (run.find_first_of("~!@#^&|`?%") == std::string_view::npos) {
            while (n > 1 && (q_[at_ + n - 1] == '+' || q_[at_ + n - 1] == '-')) {
                --n;
            }
        }
    }
    at_ += n;
    std::string text(q_.substr(begin, n));
    if (text == "!=") {
        text = "<>";
    }
    emit(TokenKind::kOp, std::move(text), begin);
    return true;
}

}  // namespace

Lexed lex(std::string_view query, size_t tokens_max) {
    RL_ASSERT(query.size() < std::numeric_limits<uint32_t>::max());
    return Lexer(query, tokens_max).run();
}

uint32_t char_pos(std::string_view query, size_t offset) {
    RL_ASSERT(offset <= query.size());
    size_t chars = 0;
    for (size_t i = 0; i < offset; ++i) {
        if (!is_continuation_byte(query[i])) {
            ++chars;
        }
    }
    return static_cast<uint32_t>(chars + 1);
}

// UTF-8 as PostgreSQL's pg_utf8_islegal accepts it: shortest forms only, no surrogates, nothing
// above U+10FFFF. The message lists the bytes of the bad character as PostgreSQL does.
std::optional<SyntaxError> check_encoding(std::string_view query) {
    size_t i = 0;
    while (i < query.size()) {
        const auto b0 = static_cast<unsigned char>(query[i]);
        size_t len = 1;
        if (b0 >= 0xC2 && b0 <= 0xDF) {
            len = 2;
        } else if (b0 >= 0xE0 && b0 <= 0xEF) {
            len = 3;
        } else if (b0 >= 0xF0 && b0 <= 0xF4) {
            len = 4;
        }
        bool ok = b0 != 0 && (b0 < 0x80 || len > 1) && i + len <= query.size();
        for (size_t k = 1; ok && k < len; ++k) {
            const auto b = static_cast<unsigned char>(query[i + k]);
            ok = (b & 0xC0) == 0x80;
            if (k == 1) {
                ok = ok && !(b0 == 0xE0 && b < 0xA0) && !(b0 == 0xED && b > 0x9F) &&
                     !(b0 == 0xF0 && b < 0x90) && !(b0 == 0xF4 && b > 0x8F);
            }
        }
        if (!ok) {
            std::string bytes;
            const size_t shown = std::min(len, query.size() - i);
            for (size_t k = 0; k < shown; ++k) {
                bytes += fmt::format("{}0x{:02x}", k == 0 ? "" : " ",
                                     static_cast<unsigned char>(query[i + k]));
            }
            return SyntaxError{
                "22021", fmt::format("invalid byte sequence for encoding \"UTF8\": {}", bytes), 0};
        }
        i += len;
    }
    return std::nullopt;
}

}  // namespace raftlock::statemachine::sql
