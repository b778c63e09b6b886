#include "storage/journal_format.h"

#include <cstring>

#include <fmt/format.h>

#include "base/crc32c.h"
#include "storage/journal.h"

namespace raftlock::storage {
namespace {

constexpr size_t kSegmentCrcOffset = 32;  // magic 8, version 4, reserved 4, seq 8, salt 8
constexpr size_t kBatchCrcOffset = 16;    // magic 4, length 4, seq 8

uint32_t batch_crc(uint64_t salt, std::string_view header_without_crc, std::string_view body) {
    std::string seed;
    put_u64(seed, salt);
    uint32_t crc = crc32c(seed);
    crc = crc32c_extend(crc, header_without_crc);
    return crc32c_extend(crc, body);
}

}  // namespace

std::string encode_segment_header(uint64_t seq, uint64_t salt) {
    std::string out(kSegmentMagic);
    put_u32(out, kJournalVersion);
    put_u32(out, 0);
    put_u64(out, seq);
    put_u64(out, salt);
    put_u32(out, crc32c(out));
    out.resize(kSegmentHeaderBytes, '\0');
    return out;
}

Decoded<SegmentHeader> decode_segment_header(std::string_view bytes) {
    if (bytes.size() < kSegmentHeaderBytes) {
        return corruption(fmt::format("segment header cut short ({} bytes)", bytes.size()));
    }
    if (bytes.substr(0, kSegmentMagic.size()) != kSegmentMagic) {
        return corruption("not a journal segment (bad magic)");
    }
    if (get_u32(bytes.data() + kSegmentCrcOffset) != crc32c(bytes.substr(0, kSegmentCrcOffset))) {
        return corruption("segment header checksum mismatch");
    }
    const uint32_t version = get_u32(bytes.data() + 8);
    if (version != kJournalVersion) {
        return corruption(fmt::format(
            "segment format version {}; this build reads version {} (a newer raftlock wrote it?)",
            version, kJournalVersion));
    }
    return SegmentHeader{get_u64(bytes.data() + 16), get_u64(bytes.data() + 24)};
}

void encode_batch_header(uint64_t salt, uint64_t batch_seq, std::string_view body, char* out) {
    std::string header;
    header.reserve(kBatchHeaderBytes);
    put_u32(header, kBatchMagic);
    put_u32(header, static_cast<uint32_t>(body.size()));
    put_u64(header, batch_seq);
    const uint32_t crc = batch_crc(salt, header, body);
    put_u32(header, crc);
    put_u32(header, 0);
    std::memcpy(out, header.data(), kBatchHeaderBytes);
}

std::optional<BatchHeader> check_batch(uint64_t salt, std::string_view rest) {
    if (rest.size() < kBatchHeaderBytes || get_u32(rest.data()) != kBatchMagic ||
        get_u32(rest.data() + 20) != 0) {
        return std::nullopt;
    }
    const uint64_t length = get_u32(rest.data() + 4);
    if (length > rest.size() - kBatchHeaderBytes) {
        return std::nullopt;
    }
    const std::string_view body = rest.substr(kBatchHeaderBytes, length);
    if (get_u32(rest.data() + kBatchCrcOffset) !=
        batch_crc(salt, rest.substr(0, kBatchCrcOffset), body)) {
        return std::nullopt;
    }
    return BatchHeader{length, get_u64(rest.data() + 8)};
}

}  // namespace raftlock::storage
