#include "bench/http_client.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace raftlock::bench {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string trim(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t");
    const size_t b = s.find_last_not_of(" \t");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

}  // namespace

Status HttpClient::send_request(const std::string& path, const std::string& body) {
    if (!stream_.connected()) {
        if (Status s = stream_.connect(server_, io_timeout_); !s.ok()) {
            return s;
        }
    }
    request_.clear();
    fmt::format_to(std::back_inserter(request_),
                   "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n"
                   "Content-Length: {}\r\n\r\n",
                   path, server_.host, server_.port, body.size());
    request_.append(body);
    return stream_.write_all(request_);
}

Result<HttpClient::Head, std::string> HttpClient::read_head() {
    auto status_line = stream_.read_line();
    if (!status_line.ok()) {
        return status_line.error();
    }
    Head head;
    // "HTTP/1.1 200 OK"
    const std::string& status = status_line->text;
    const size_t space = status.find(' ');
    if (space == std::string::npos || status.size() < space + 4) {
        return "bad HTTP status line: " + status;
    }
    const char* digits = status.data() + space + 1;
    std::from_chars(digits, digits + 3, head.status);
    for (size_t i = 0;; ++i) {
        if (i > kHeadersMax) {
            return std::string("too many HTTP headers");
        }
        auto line = stream_.read_line();
        if (!line.ok()) {
            return line.error();
        }
        const std::string& header = line->text;
        if (header.empty()) {
            return head;
        }
        const size_t colon = header.find(':');
        if (colon == std::string::npos) {
            continue;
        }
        const std::string name = lower(header.substr(0, colon));
        const std::string value = lower(trim(header.substr(colon + 1)));
        if (name == "content-length") {
            std::from_chars(value.data(), value.data() + value.size(), head.content_length);
        } else if (name == "transfer-encoding") {
            head.chunked = value.find("chunked") != std::string::npos;
        } else if (name == "connection") {
            head.close = value == "close";
        }
    }
}

Status HttpClient::read_body(const Head& head, std::string& out) {
    if (!head.chunked) {
        if (head.content_length > kBodyBytesMax) {
            return std::string("HTTP body too large");
        }
        return stream_.read_exact(head.content_length, out);
    }
    for (;;) {
        auto chunk = next_chunk();
        if (!chunk.ok()) {
            return chunk.error();
        }
        if (chunk->text.empty()) {
            return Done{};
        }
        if (out.size() + chunk->text.size() > kBodyBytesMax) {
            return std::string("HTTP body too large");
        }
        out += chunk->text;
    }
}

Result<Text, std::string> HttpClient::next_chunk() {
    auto size_line = stream_.read_line();
    if (!size_line.ok()) {
        return size_line.error();
    }
    size_t size = 0;
    const auto [end, ec] = std::from_chars(
        size_line->text.data(), size_line->text.data() + size_line->text.size(), size, 16);
    if (ec != std::errc() || size > kBodyBytesMax) {
        return "bad chunk size line: " + size_line->text;
    }
    (void)end;  // chunk extensions after ';' are ignored
    Text data;
    if (Status s = stream_.read_exact(size, data.text); !s.ok()) {
        return s.error();
    }
    std::string crlf;
    if (Status s = stream_.read_exact(2, crlf); !s.ok()) {
        return s.error();
    }
    return data;  // empty: the last chunk
}

Result<HttpResponse, std::string> HttpClient::post(const std::string& path,
                                                   const std::string& body) {
    for (int attempt = 0;; ++attempt) {
        const bool reused = stream_.connected();
        if (Status s = send_request(path, body); !s.ok()) {
            if (reused && attempt == 0) {
                continue;
            }
            return s.error();
        }
        auto head = read_head();
        if (!head.ok()) {
            // The server may close an idle keep-alive connection just as we reuse it.
            if (reused && attempt == 0 && !stream_.connected()) {
                continue;
            }
            return head.error();
        }
        HttpResponse response;
        response.status = head->status;
        if (Status s = read_body(*head, response.body); !s.ok()) {
            return s.error();
        }
        if (head->close) {
            stream_.close();
        }
        return response;
    }
}

Result<int, std::string> HttpClient::post_stream(const std::string& path, const std::string& body) {
    if (Status s = send_request(path, body); !s.ok()) {
        return s.error();
    }
    auto head = read_head();
    if (!head.ok()) {
        return head.error();
    }
    if (!head->chunked) {
        return fmt::format("HTTP {} without a chunked body for a stream", head->status);
    }
    return head->status;
}

}  // namespace raftlock::bench
