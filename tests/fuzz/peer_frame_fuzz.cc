// libFuzzer: a peer frame's payload -> proto::PeerFrame -> from_proto for Raft messages, the path
// of every frame a peer sends (net/peer_transport.cc, then the server's dispatch).

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "base/assert.h"
#include "net/raft_codec.h"
#include "proto/peer.pb.h"

namespace {

// Map fields (the configuration's addresses) serialize in an unspecified order unless asked for
// a deterministic one, so two equal messages can differ in bytes otherwise.
std::string deterministic_bytes(const raftlock::proto::RaftMessage& message) {
    std::string out;
    {
        google::protobuf::io::StringOutputStream stream(&out);
        google::protobuf::io::CodedOutputStream coded(&stream);
        coded.SetSerializationDeterministic(true);
        message.SerializeToCodedStream(&coded);
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > INT_MAX) {
        return 0;
    }
    raftlock::proto::PeerFrame frame;
    if (!frame.ParseFromArray(data, static_cast<int>(size)) || !frame.has_raft()) {
        return 0;
    }
    auto message = raftlock::net::from_proto(frame.raft());
    if (!message.ok()) {
        RL_ASSERT(!message.error().empty());
        return 0;
    }
    // A decoded message encodes and decodes to itself: compare the two encodings, since
    // raft::Message has no operator==.
    raftlock::proto::RaftMessage first;
    raftlock::net::to_proto(*message, first);
    auto again = raftlock::net::from_proto(first);
    RL_ASSERT(again.ok());
    raftlock::proto::RaftMessage second;
    raftlock::net::to_proto(*again, second);
    RL_ASSERT(deterministic_bytes(first) == deterministic_bytes(second));
    RL_ASSERT(again->entries.size() == message->entries.size());
    return 0;
}
