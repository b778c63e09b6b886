#pragma once

// A hand-driven peer connection for the hostile tests: it dials a node's Raft port, says Hello as
// the node it claims to be (as an authenticated but broken peer would: the peer protocol has no
// authentication yet, DESIGN §5), and then sends whatever Raft messages a test builds, encoded as
// the real transport encodes them (net/raft_codec.h) but never checked.

#include <cstdint>

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

    // Sends `message` as one PeerFrame. False when the node closed the connection.
    bool send(const raft::Message& message);

private:
    int fd_ = -1;
};

}  // namespace raftlock::hostile
