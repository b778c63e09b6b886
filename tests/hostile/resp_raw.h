#pragma once

// Just enough RESP for the hostile tests to act as a raw Redis client on loopback: encode a
// command, read one reply line, without any client library's buffering in the way.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace raftlock::hostile {

// A blocking TCP connection to 127.0.0.1:port (REQUIRE fails the test otherwise).
int connect_loopback(uint16_t port);

// The RESP array of bulk strings for argv.
std::string resp_command(const std::vector<std::string>& argv);

// Sends `argv` on fd and reads one reply of a single line ("+OK", ":5050", "-ERR ..."), without
// its CRLF; empty when nothing whole arrived within timeout_ms.
std::optional<std::string> resp_call(int fd, const std::vector<std::string>& argv, int timeout_ms);

}  // namespace raftlock::hostile
