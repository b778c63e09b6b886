#pragma once

// Just enough of the PostgreSQL protocol (version 3.0, simple query, trust authentication) for the
// hostile tests to act as a raw psql on loopback, without a client library's buffering in the way.

#include <cstdint>
#include <optional>
#include <string>

namespace raftlock::hostile {

class RawPg {
public:
    // Connects and logs in as `user`; REQUIRE fails the test when the server does not let it in.
    RawPg(uint16_t port, int timeout_ms);
    ~RawPg();
    RawPg(const RawPg&) = delete;
    RawPg& operator=(const RawPg&) = delete;

    // Sends one simple Query message without waiting for its result.
    void send_query(const std::string& sql);
    // Reads until ReadyForQuery, up to timeout_ms: the last CommandComplete tag ("INSERT 0 5"),
    // or "ERROR <sqlstate> <message>"; nullopt when ReadyForQuery did not arrive in time (call
    // again to go on waiting: what arrived so far is kept).
    std::optional<std::string> result(int timeout_ms);
    // send_query, then result.
    std::optional<std::string> query(const std::string& sql, int timeout_ms);

private:
    // The next whole message (type, body) within the deadline.
    bool next_message(char& type, std::string& body, int timeout_ms);

    int fd_ = -1;
    std::string in_;
    std::string outcome_;  // of the query being read
};

}  // namespace raftlock::hostile
