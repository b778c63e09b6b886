#pragma once

// A hand-driven peer connection for the hostile tests: it dials a node's Raft port, says Hello as
// the node it claims to be (as an authenticated but broken peer would: the peer protocol has no
// authentication yet, DESIGN §5), and then sends whatever Raft messages a test builds, encoded as
// the real transport encodes them (net/raft_codec.h) but never checked.

#include <cstdint>
#include <string>
#include <vector>

#include "raft/types.h"

namespace raftlock::hostile {

class RawPeer {
public:
    // Connects to 127.0.0.1:port and REQUIREs that node `to` of cluster `cluster_id` accepts this
    // connection as coming from node `from`.
    RawPeer(uint16_t port, uint64_t cluster_id, uint64_t from, uint64_t to);
    ~RawPeer();
    RawPeer(const RawPeer&) = delete;
    RawPeer& operator=(const RawPeer&) = delete;

    // Frames `messages` as the transport would; encode before dialling, so that the messages go
    // out together (a message at the entry bound takes tens of milliseconds to encode).
    static std::string encode(const std::vector<raft::Message>& messages);
    // Sends bytes from encode() in one write. False when the node closed the connection.
    bool send_encoded(const std::string& bytes);

private:
    int fd_ = -1;
};

}  // namespace raftlock::hostile
