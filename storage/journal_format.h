#pragma once

// The byte forms of the journal's segment header and batch header (journal.h has the layout).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/codec.h"

namespace raftlock::storage {

inline constexpr std::string_view kSegmentMagic = "RLJSEG01";
inline constexpr uint32_t kBatchMagic = 0x424a4c52;  // "RLJB" in file order

struct SegmentHeader {
    uint64_t seq = 0;
    uint64_t salt = 0;
};

// kSegmentHeaderBytes bytes.
std::string encode_segment_header(uint64_t seq, uint64_t salt);
// The error says which check failed; the caller adds the file.
Decoded<SegmentHeader> decode_segment_header(std::string_view bytes);

// Writes the kBatchHeaderBytes bytes of a batch header to `out`, its crc covering the salt,
// itself and `body`. (An array, not a string: one is made for every append.)
void encode_batch_header(uint64_t salt, uint64_t batch_seq, std::string_view body, char* out);

struct BatchHeader {
    uint64_t length = 0;
    uint64_t seq = 0;
};
// The batch at the start of `rest` (the segment's bytes from there to its end), when it is whole
// and its checksum holds with this segment's salt; nullopt otherwise.
std::optional<BatchHeader> check_batch(uint64_t salt, std::string_view rest);

}  // namespace raftlock::storage
