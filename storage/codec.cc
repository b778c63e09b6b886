#include "storage/codec.h"

#include <vector>

#include <fmt/format.h>

#include "base/assert.h"
#include "base/crc32c.h"

namespace raftlock::storage {
namespace {

constexpr uint8_t kFormatVersion = 1;
constexpr size_t kCrcBytes = 4;
// Lists inside a snapshot record are cluster members: far fewer than this.
constexpr uint32_t kMembersMax = 1024;
constexpr uint32_t kFileNameBytesMax = 255;
constexpr uint32_t kAddressBytesMax = 1024;

// Bounds-checked sequential reads over a value whose checksum has been verified. A short value
// sets `failed` instead of reading past the end.
class Reader {
public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}

    uint8_t u8() { return take(1) ? static_cast<uint8_t>(bytes_[pos_ - 1]) : 0; }
    uint32_t u32() { return take(4) ? get_u32(bytes_.data() + pos_ - 4) : 0; }
    uint64_t u64() { return take(8) ? get_u64(bytes_.data() + pos_ - 8) : 0; }
    std::string_view bytes(size_t n) {
        return take(n) ? bytes_.substr(pos_ - n, n) : std::string_view();
    }
    std::string_view rest() {
        std::string_view r = bytes_.substr(pos_);
        pos_ = bytes_.size();
        return r;
    }
    bool failed() const { return failed_; }
    bool at_end() const { return pos_ == bytes_.size(); }

private:
    bool take(size_t n) {
        if (failed_ || bytes_.size() - pos_ < n) {
            failed_ = true;
            return false;
        }
        pos_ += n;
        return true;
    }

    std::string_view bytes_;
    size_t pos_ = 0;
    bool failed_ = false;
};

// Starts a value at the end of `out`: room for the checksum, then the version.
void begin_value_in(std::string& out) {
    put_u32(out, 0);
    out.push_back(static_cast<char>(kFormatVersion));
}

// Fills in the checksum of the value that starts at `start` and runs to the end of `out`.
void seal_value_in(std::string& out, size_t start) {
    const uint32_t crc = crc32c(std::string_view(out).substr(start + kCrcBytes));
    for (size_t i = 0; i < kCrcBytes; i++) {
        out[start + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
    }
}

std::string begin_value(size_t payload_bytes) {
    std::string out;
    out.reserve(kCrcBytes + 1 + payload_bytes);
    begin_value_in(out);
    return out;
}

std::string seal_value(std::string out) {
    seal_value_in(out, 0);
    return out;
}

// Verifies checksum and version and returns a reader positioned after them.
Decoded<Reader> open_value(std::string_view value, std::string_view what) {
    if (value.size() < kCrcBytes + 1) {
        return corruption(fmt::format("{} record is {} bytes, too short", what, value.size()));
    }
    const uint32_t stored = get_u32(value.data());
    const uint32_t computed = crc32c(value.substr(kCrcBytes));
    if (stored != computed) {
        return corruption(
            fmt::format("{} record checksum mismatch (stored {:08x}, computed {:08x})", what,
                        stored, computed));
    }
    Reader reader(value.substr(kCrcBytes));
    const uint8_t version = reader.u8();
    if (version != kFormatVersion) {
        return corruption(fmt::format("{} record has unknown format version {}", what, version));
    }
    return reader;
}

template <typename T>
Decoded<T> finish(const Reader& reader, T value, std::string_view what) {
    if (reader.failed() || !reader.at_end()) {
        return corruption(fmt::format("{} record has a bad length", what));
    }
    return value;
}

void put_ids(std::string& out, const std::vector<raft::NodeId>& ids) {
    put_u32(out, static_cast<uint32_t>(ids.size()));
    for (raft::NodeId id : ids) {
        put_u64(out, id);
    }
}

bool get_ids(Reader& reader, std::vector<raft::NodeId>& ids) {
    const uint32_t n = reader.u32();
    if (reader.failed() || n > kMembersMax) {
        return false;
    }
    for (uint32_t i = 0; i < n && !reader.failed(); i++) {
        ids.push_back(reader.u64());
    }
    return !reader.failed();
}

}  // namespace

void put_u32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; i++) {
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
}

void put_u64(std::string& out, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
}

uint32_t get_u32(const char* p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) {
        v = (v << 8) | static_cast<uint8_t>(p[i]);
    }
    return v;
}

uint64_t get_u64(const char* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | static_cast<uint8_t>(p[i]);
    }
    return v;
}

std::string encode_log_key(raft::Index index) {
    std::string key(8, '\0');
    for (int i = 0; i < 8; i++) {
        key[7 - i] = static_cast<char>((index >> (8 * i)) & 0xff);
    }
    return key;
}

Decoded<raft::Index> decode_log_key(std::string_view key) {
    if (key.size() != 8) {
        return corruption(fmt::format("log key is {} bytes, expected 8", key.size()));
    }
    raft::Index index = 0;
    for (char c : key) {
        index = (index << 8) | static_cast<uint8_t>(c);
    }
    return index;
}

std::string encode_entry(const raft::Entry& entry) {
    std::string out;
    append_entry(out, entry);
    return out;
}

size_t append_entry(std::string& out, const raft::Entry& entry) {
    const size_t start = out.size();
    begin_value_in(out);
    put_u64(out, entry.term);
    put_u64(out, entry.index);
    out.push_back(static_cast<char>(entry.type));
    out.append(entry.data);
    seal_value_in(out, start);
    RL_ASSERT(out.size() - start == kEncodedEntryOverheadBytes + entry.data.size());
    return out.size() - start;
}

Decoded<raft::Entry> decode_entry(std::string_view value) {
    auto reader = open_value(value, "log entry");
    if (!reader.ok()) {
        return reader.error();
    }
    raft::Entry entry;
    entry.term = reader->u64();
    entry.index = reader->u64();
    const uint8_t type = reader->u8();
    if (type > static_cast<uint8_t>(raft::EntryType::kConfChange)) {
        return corruption(fmt::format("log entry has unknown type {}", type));
    }
    entry.type = static_cast<raft::EntryType>(type);
    entry.data = std::string(reader->rest());
    return finish(*reader, std::move(entry), "log entry");
}

Decoded<raft::Entry> decode_log_record(raft::Index key,
                                       raft::Term prev_term,
                                       std::string_view value) {
    Decoded<raft::Entry> entry = decode_entry(value);
    if (!entry.ok()) {
        return corruption(
            fmt::format("corrupt log record at index {}: {}", key, entry.error().message));
    }
    if (entry->index != key || entry->term < prev_term) {
        return corruption(fmt::format("log record at index {} holds entry {}/{} after term {}", key,
                                      entry->term, entry->index, prev_term));
    }
    return entry;
}

std::string encode_hard_state(const raft::HardState& hs) {
    std::string out = begin_value(24);
    put_u64(out, hs.term);
    put_u64(out, hs.vote);
    put_u64(out, hs.commit);
    return seal_value(std::move(out));
}

Decoded<raft::HardState> decode_hard_state(std::string_view value) {
    auto reader = open_value(value, "hard state");
    if (!reader.ok()) {
        return reader.error();
    }
    raft::HardState hs;
    hs.term = reader->u64();
    hs.vote = reader->u64();
    hs.commit = reader->u64();
    return finish(*reader, hs, "hard state");
}

std::string encode_log_start(const LogStart& start) {
    std::string out = begin_value(16);
    put_u64(out, start.index);
    put_u64(out, start.term);
    return seal_value(std::move(out));
}

Decoded<LogStart> decode_log_start(std::string_view value) {
    auto reader = open_value(value, "log start");
    if (!reader.ok()) {
        return reader.error();
    }
    LogStart start;
    start.index = reader->u64();
    start.term = reader->u64();
    return finish(*reader, start, "log start");
}

std::string encode_snapshot_record(const SnapshotRecord& record) {
    RL_ASSERT(record.file_name.size() <= kFileNameBytesMax);
    RL_ASSERT(record.meta.conf_state.voters.size() <= kMembersMax);
    RL_ASSERT(record.meta.conf_state.learners.size() <= kMembersMax);
    std::string out = begin_value(64 + record.file_name.size());
    put_u64(out, record.meta.index);
    put_u64(out, record.meta.term);
    put_ids(out, record.meta.conf_state.voters);
    put_ids(out, record.meta.conf_state.learners);
    put_u32(out, static_cast<uint32_t>(record.file_name.size()));
    out.append(record.file_name);
    put_u64(out, record.size_bytes);
    put_u32(out, record.data_crc);
    // The members' addresses come last: records written before they existed end here.
    const auto& addresses = record.meta.conf_state.addresses;
    RL_ASSERT(addresses.size() <= kMembersMax);
    put_u32(out, static_cast<uint32_t>(addresses.size()));
    for (const auto& [id, address] : addresses) {
        RL_ASSERT(address.size() <= kAddressBytesMax);
        put_u64(out, id);
        put_u32(out, static_cast<uint32_t>(address.size()));
        out.append(address);
    }
    return seal_value(std::move(out));
}

Decoded<SnapshotRecord> decode_snapshot_record(std::string_view value) {
    auto reader = open_value(value, "snapshot metadata");
    if (!reader.ok()) {
        return reader.error();
    }
    SnapshotRecord record;
    record.meta.index = reader->u64();
    record.meta.term = reader->u64();
    const bool ids_ok = get_ids(*reader, record.meta.conf_state.voters) &&
                        get_ids(*reader, record.meta.conf_state.learners);
    const uint32_t name_bytes = reader->u32();
    if (!ids_ok || name_bytes > kFileNameBytesMax) {
        return corruption("snapshot metadata record has a bad member list or file name");
    }
    record.file_name = std::string(reader->bytes(name_bytes));
    record.size_bytes = reader->u64();
    record.data_crc = reader->u32();
    if (!reader->failed() && !reader->at_end()) {
        const uint32_t n = reader->u32();
        if (n > kMembersMax) {
            return corruption("snapshot metadata record has a bad address list");
        }
        for (uint32_t i = 0; i < n && !reader->failed(); ++i) {
            const raft::NodeId id = reader->u64();
            const uint32_t bytes = reader->u32();
            if (bytes > kAddressBytesMax) {
                return corruption("snapshot metadata record has a bad address");
            }
            record.meta.conf_state.addresses[id] = std::string(reader->bytes(bytes));
        }
    }
    return finish(*reader, std::move(record), "snapshot metadata");
}

}  // namespace raftlock::storage
