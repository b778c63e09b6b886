#include "storage/snapshot_file.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/crc32c.h"
#include "storage/file_util.h"

namespace raftlock::storage {
namespace {

constexpr std::string_view kMagic = "RLSNAP01";
constexpr size_t kHeaderBytes = 8 + 8 + 8 + 8 + 4 + 4;
constexpr size_t kChunkHeaderBytes = 4 + 4;

uint32_t chunk_crc(uint64_t offset, std::string_view data) {
    std::string prefix;
    put_u64(prefix, offset);
    return crc32c_extend(crc32c(prefix), data);
}

StorageError corrupt_at(std::string_view path, uint64_t offset, std::string_view what) {
    return StorageError{
        StorageErrorCode::kCorruption,
        fmt::format("corrupt snapshot file {} at file offset {}: {}", path, offset, what)};
}

}  // namespace

std::string snapshot_file_name(const raft::SnapshotMetadata& meta) {
    return fmt::format("snap-{:020}-{:020}.snap", meta.index, meta.term);
}

std::string encode_snapshot_file(const raft::SnapshotMetadata& meta,
                                 std::string_view data,
                                 uint32_t chunk_bytes) {
    RL_ASSERT(chunk_bytes > 0);
    const size_t chunks = (data.size() + chunk_bytes - 1) / chunk_bytes;
    std::string out;
    out.reserve(kHeaderBytes + data.size() + chunks * kChunkHeaderBytes);
    out.append(kMagic);
    put_u64(out, meta.index);
    put_u64(out, meta.term);
    put_u64(out, data.size());
    put_u32(out, chunk_bytes);
    put_u32(out, crc32c(out));
    for (uint64_t offset = 0; offset < data.size(); offset += chunk_bytes) {
        const std::string_view chunk = data.substr(offset, chunk_bytes);
        put_u32(out, static_cast<uint32_t>(chunk.size()));
        put_u32(out, chunk_crc(offset, chunk));
        out.append(chunk);
    }
    RL_ASSERT(out.size() == kHeaderBytes + data.size() + chunks * kChunkHeaderBytes);
    return out;
}

Decoded<std::string> decode_snapshot_file(std::string_view file,
                                          const SnapshotRecord& expected,
                                          std::string_view path) {
    if (file.size() < kHeaderBytes || file.substr(0, kMagic.size()) != kMagic) {
        return corrupt_at(path, 0, "missing or damaged header");
    }
    const char* h = file.data() + kMagic.size();
    if (get_u32(h + 28) != crc32c(file.substr(0, kHeaderBytes - 4))) {
        return corrupt_at(path, 0, "header checksum mismatch");
    }
    const uint64_t index = get_u64(h);
    const uint64_t term = get_u64(h + 8);
    const uint64_t size = get_u64(h + 16);
    const uint32_t chunk_bytes = get_u32(h + 24);
    if (index != expected.meta.index || term != expected.meta.term || size != expected.size_bytes ||
        chunk_bytes == 0) {
        return corrupt_at(path, 0, "header does not match the snapshot metadata");
    }
    std::string data;
    data.reserve(size);
    size_t pos = kHeaderBytes;
    // Each pass consumes one non-empty chunk, so the loop ends within size / 1 passes.
    while (data.size() < size) {
        if (file.size() - pos < kChunkHeaderBytes) {
            return corrupt_at(path, pos, "truncated chunk header");
        }
        const uint32_t length = get_u32(file.data() + pos);
        const uint32_t crc = get_u32(file.data() + pos + 4);
        const uint64_t want = std::min<uint64_t>(chunk_bytes, size - data.size());
        if (length != want || file.size() - pos - kChunkHeaderBytes < length) {
            return corrupt_at(path, pos, fmt::format("bad chunk length {}", length));
        }
        const std::string_view chunk = file.substr(pos + kChunkHeaderBytes, length);
        if (chunk_crc(data.size(), chunk) != crc) {
            return corrupt_at(
                path, pos,
                fmt::format("checksum mismatch in the chunk at data offset {}", data.size()));
        }
        data.append(chunk);
        pos += kChunkHeaderBytes + length;
    }
    if (pos != file.size()) {
        return corrupt_at(path, pos, "trailing bytes after the last chunk");
    }
    if (crc32c(data) != expected.data_crc) {
        return corrupt_at(path, 0, "data checksum does not match the snapshot metadata");
    }
    return data;
}

SnapshotRecord write_snapshot_file(const std::string& dir,
                                   const raft::Snapshot& snapshot,
                                   uint32_t chunk_bytes) {
    SnapshotRecord record;
    record.meta = snapshot.metadata;
    record.file_name = snapshot_file_name(snapshot.metadata);
    record.size_bytes = snapshot.data.size();
    record.data_crc = crc32c(snapshot.data);
    write_file_durably(dir, record.file_name,
                       encode_snapshot_file(snapshot.metadata, snapshot.data, chunk_bytes));
    return record;
}

Decoded<std::string> read_snapshot_file(const std::string& dir, const SnapshotRecord& record) {
    const std::string path = dir + "/" + record.file_name;
    auto file = read_whole_file(path);
    if (!file.ok()) {
        return file.error();
    }
    return decode_snapshot_file(*file, record, path);
}

}  // namespace raftlock::storage
