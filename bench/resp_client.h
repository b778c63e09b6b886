#pragma once

// A minimal RESP2 client (the Redis protocol) over one blocking TCP connection: commands are
// arrays of bulk strings, replies are parsed into a small tree. Enough for the benchmark's SET NX
// PX / EVALSHA / GET / SUBSCRIBE; no pipelining, no RESP3.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/tcp_stream.h"

namespace raftlock::bench {

struct RespReply {
    enum class Type : uint8_t { kSimple, kError, kInteger, kBulk, kNil, kArray };
    Type type = Type::kNil;
    std::string text;  // kSimple, kError, kBulk
    int64_t integer = 0;
    std::vector<RespReply> elements;  // kArray

    bool is_error() const { return type == Type::kError; }
};

class RespClient {
public:
    Status connect(const HostPort& to, std::chrono::milliseconds io_timeout);
    bool connected() const { return stream_.connected(); }
    void shutdown() { stream_.shutdown(); }

    // Sends one command and reads its reply (an error reply is a reply, not a failure).
    Result<RespReply, std::string> call(const std::vector<std::string_view>& args);
    Status send(const std::vector<std::string_view>& args);
    // The next reply from the server (for SUBSCRIBE's pushed messages).
    Result<RespReply, std::string> read_reply(int depth = 0);

    static constexpr int kDepthMax = 8;
    static constexpr int64_t kElementsMax = 1 << 20;
    static constexpr int64_t kBulkBytesMax = 64 << 20;

private:
    TcpStream stream_;
    std::string out_;
};

}  // namespace raftlock::bench
