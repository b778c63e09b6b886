#include "bench/resp_client.h"

#include <charconv>

#include <fmt/format.h>

namespace raftlock::bench {

namespace {

Result<int64_t, std::string> parse_int(std::string_view text) {
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
        return fmt::format("bad RESP integer '{}'", text);
    }
    return value;
}

}  // namespace

Status RespClient::connect(const HostPort& to, std::chrono::milliseconds io_timeout) {
    return stream_.connect(to, io_timeout);
}

Status RespClient::send(const std::vector<std::string_view>& args) {
    out_.clear();
    fmt::format_to(std::back_inserter(out_), "*{}\r\n", args.size());
    for (std::string_view a : args) {
        fmt::format_to(std::back_inserter(out_), "${}\r\n", a.size());
        out_.append(a);
        out_.append("\r\n");
    }
    return stream_.write_all(out_);
}

Result<RespReply, std::string> RespClient::call(const std::vector<std::string_view>& args) {
    if (Status s = send(args); !s.ok()) {
        return s.error();
    }
    return read_reply();
}

Result<RespReply, std::string> RespClient::read_reply(int depth) {
    if (depth > kDepthMax) {
        return std::string("RESP reply nested too deep");
    }
    auto line = stream_.read_line();
    if (!line.ok()) {
        return line.error();
    }
    if (line->text.empty()) {
        return std::string("empty RESP line");
    }
    RespReply reply;
    const std::string_view rest = std::string_view(line->text).substr(1);
    switch (line->text[0]) {
        case '+':
            reply.type = RespReply::Type::kSimple;
            reply.text = rest;
            return reply;
        case '-':
            reply.type = RespReply::Type::kError;
            reply.text = rest;
            return reply;
        case ':': {
            auto n = parse_int(rest);
            if (!n.ok()) {
                return n.error();
            }
            reply.type = RespReply::Type::kInteger;
            reply.integer = *n;
            return reply;
        }
        case '$': {
            auto n = parse_int(rest);
            if (!n.ok()) {
                return n.error();
            }
            if (*n < 0) {
                return reply;  // nil
            }
            if (*n > kBulkBytesMax) {
                return fmt::format("RESP bulk string of {} bytes is too large", *n);
            }
            reply.type = RespReply::Type::kBulk;
            std::string crlf;
            if (Status s = stream_.read_exact(static_cast<size_t>(*n), reply.text); !s.ok()) {
                return s.error();
            }
            if (Status s = stream_.read_exact(2, crlf); !s.ok()) {
                return s.error();
            }
            return reply;
        }
        case '*': {
            auto n = parse_int(rest);
            if (!n.ok()) {
                return n.error();
            }
            if (*n < 0) {
                return reply;  // nil array
            }
            if (*n > kElementsMax) {
                return fmt::format("RESP array of {} elements is too large", *n);
            }
            reply.type = RespReply::Type::kArray;
            for (int64_t i = 0; i < *n; ++i) {
                auto element = read_reply(depth + 1);
                if (!element.ok()) {
                    return element.error();
                }
                reply.elements.push_back(std::move(*element));
            }
            return reply;
        }
        default:
            return fmt::format("unexpected RESP type byte '{}'", line->text[0]);
    }
}

}  // namespace raftlock::bench
