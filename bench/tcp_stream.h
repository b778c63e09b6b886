#pragma once

// A blocking TCP connection with a read buffer: what the hand-written Redis (RESP2) and etcd
// (HTTP/1.1) clients of the benchmark run on. One thread uses a stream at a time; shutdown() may be
// called from another thread to wake a blocked reader.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "bench/driver.h"

namespace raftlock::bench {

class TcpStream {
public:
    TcpStream() = default;
    ~TcpStream();
    TcpStream(const TcpStream&) = delete;
    TcpStream& operator=(const TcpStream&) = delete;

    // Connects with TCP_NODELAY. `io_timeout` bounds every later read and write (0: no bound).
    Status connect(const HostPort& to, std::chrono::milliseconds io_timeout);
    bool connected() const { return fd_ >= 0; }
    void close();
    // Ends both directions; a read blocked in another thread returns an error.
    void shutdown();

    Status write_all(std::string_view bytes);
    // The next line without its "\r\n"; lines longer than kLineBytesMax are an error.
    Result<Text, std::string> read_line();
    // Appends exactly `n` more bytes to `out`.
    Status read_exact(size_t n, std::string& out);

    static constexpr size_t kLineBytesMax = 64 * 1024;

private:
    Status fill();

    int fd_ = -1;
    std::string buffer_;
    size_t read_pos_ = 0;
};

}  // namespace raftlock::bench
