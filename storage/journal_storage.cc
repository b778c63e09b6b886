// JournalStorage: reading older entries, and closing. Opening is in journal_storage_open.cc,
// writing in journal_storage_write.cc; the rest is StoreCore's (store_core.h).

#include "storage/journal_storage.h"

#include <fmt/format.h>

#include "base/assert.h"
#include "storage/fatal.h"

namespace raftlock::storage {

JournalStorage::JournalStorage(std::string dir, const JournalStorageOptions& options)
    : StoreCore(std::move(dir),
                options.read_only,
                options.entry_cache_bytes_max,
                options.snapshot_chunk_bytes) {}

// Unsynced batches may be lost, as after a crash: the store promised durability only for synced
// ones.
JournalStorage::~JournalStorage() = default;

// Reads runs of entries that lie together in one segment with one pread each, then decodes each
// record (its own checksum) and checks it is the entry asked for.
void JournalStorage::read_older(raft::Index lo,
                                raft::Index hi,
                                uint64_t max_bytes,
                                uint64_t& total_bytes,
                                std::vector<raft::Entry>& out) const {
    constexpr uint64_t kReadSpanMax = 4 << 20;
    raft::Index i = lo;
    while (i < hi) {
        const EntryLocation& first = locations_[i - log_start_.index - 1];
        raft::Index end = i + 1;  // entries [i, end) are read together
        uint64_t span_end = first.offset + first.length;
        while (end < hi) {
            const EntryLocation& next = locations_[end - log_start_.index - 1];
            if (next.segment != first.segment || next.offset < span_end ||
                next.offset + next.length - first.offset > kReadSpanMax) {
                break;
            }
            span_end = next.offset + next.length;
            ++end;
        }
        auto bytes = journal_->read_at(first.segment, first.offset, span_end - first.offset);
        if (!bytes.ok()) {
            fatal_disk_error(
                fmt::format("read log entries {}..{}: {}", i, end - 1, bytes.error().message));
        }
        for (; i < end; i++) {
            const EntryLocation& at = locations_[i - log_start_.index - 1];
            auto entry =
                decode_entry(std::string_view(*bytes).substr(at.offset - first.offset, at.length));
            if (!entry.ok() || entry->index != i) {
                // Verified when the store opened, so this is the disk going bad underneath us.
                fatal_disk_error(
                    fmt::format("corrupt log record at index {} in {} at offset {}: {}", i,
                                journal_dir() + "/" + Journal::segment_name(at.segment), at.offset,
                                entry.ok() ? fmt::format("it holds index {}", entry->index)
                                           : entry.error().message));
            }
            const uint64_t size = raft::entry_size_bytes(*entry);
            if (!out.empty() && total_bytes + size > max_bytes) {
                return;
            }
            total_bytes += size;
            out.push_back(std::move(*entry));
        }
    }
}

}  // namespace raftlock::storage
