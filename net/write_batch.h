#pragma once

// What the byte-stream ports (stream_listener.cc) and the peer transport (peer_transport.cc) share
// about moving bytes: how much one read takes, and one gathered write of queued messages. Included
// by those .cc files only (it brings Asio's buffers).

#include <cstddef>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>

namespace raftlock::net {

// One read's worth: bounds what a connection hands on per turn of the event loop.
inline constexpr size_t kReadChunkBytes = 64 * 1024;
// One gathered write takes at most this much of the queue: a long queue goes out in steps, and
// the memory one write pins stays bounded.
inline constexpr size_t kWriteBatchFramesMax = 1024;
inline constexpr size_t kWriteBatchBytesMax = 8u << 20;

// The messages of one gathered write, kept alive until it completes.
struct WriteBatch {
    std::vector<std::string> frames;
    std::vector<boost::asio::const_buffer> buffers;
    size_t bytes = 0;
};

}  // namespace raftlock::net
