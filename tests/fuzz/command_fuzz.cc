// libFuzzer: bytes -> statemachine::decode_command. Log entries come from the network (a leader's
// AppendEntries, a follower's ForwardWrite), so the decoder must survive anything; and whatever it
// accepts must re-encode to bytes that decode to an equal command.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/assert.h"
#include "statemachine/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    namespace sm = raftlock::statemachine;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    auto command = sm::decode_command(bytes);
    if (!command.ok()) {
        return 0;
    }
    auto encoded = sm::encode_command(*command);
    RL_ASSERT_MSG(encoded.ok(), "a decoded command must pass the encoder's validation");
    auto again = sm::decode_command(*encoded);
    RL_ASSERT(again.ok());
    RL_ASSERT(*again == *command);
    return 0;
}
