#include "net/client_codec.h"

#include <climits>

#include <fmt/format.h>

namespace raftlock::net {

Result<proto::Request, std::string> decode_request(std::string_view payload) {
    // ParseFromArray takes an int; frames are bounded far below this, but the fuzzer is not.
    if (payload.size() > static_cast<size_t>(INT_MAX)) {
        return fmt::format("the frame of {} bytes is too large", payload.size());
    }
    proto::Request request;
    if (!request.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
        return fmt::format("the frame of {} bytes is not a Request message", payload.size());
    }
    // A body this server does not know parses as an unknown field and leaves the oneof empty.
    if (request.body_case() == proto::Request::BODY_NOT_SET) {
        return fmt::format("request {} has no body (or a body this server does not know)",
                           request.request_id());
    }
    return request;
}

}  // namespace raftlock::net
