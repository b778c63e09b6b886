// Journal: opening and recovery (journal.h has the rules for a torn tail and for corruption).

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/assert.h"
#include "storage/fatal.h"
#include "storage/file_util.h"
#include "storage/journal.h"
#include "storage/journal_format.h"

namespace raftlock::storage {
namespace {

struct SegmentFile {
    uint64_t seq = 0;
    int fd = -1;
    std::string path;
    uint64_t size = 0;
    uint64_t salt = 0;
    std::string bytes;  // the whole file while it is being read
};

StorageError io_error(const std::string& what, int errno_value) {
    return StorageError{StorageErrorCode::kIo,
                        fmt::format("{}: {}", what, std::strerror(errno_value))};
}

// Opens the file and checks its header.
std::optional<StorageError> open_segment(SegmentFile& file, bool read_only) {
    file.fd = ::open(file.path.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (file.fd < 0) {
        return io_error("open " + file.path, errno);
    }
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) {
        return io_error("stat " + file.path, errno);
    }
    file.size = static_cast<uint64_t>(st.st_size);
    std::string header(std::min<uint64_t>(file.size, kSegmentHeaderBytes), '\0');
    if (auto error = pread_exactly(file.fd, header.data(), header.size(), 0, file.path)) {
        return error;
    }
    auto decoded = decode_segment_header(header);
    if (!decoded.ok() || decoded->seq != file.seq) {
        return corruption(fmt::format(
            "{}: {}", file.path,
            decoded.ok() ? "its header names another segment" : decoded.error().message));
    }
    file.salt = decoded->salt;
    return std::nullopt;
}

std::optional<StorageError> read_whole(SegmentFile& file) {
    file.bytes.resize(file.size);
    return pread_exactly(file.fd, file.bytes.data(), file.bytes.size(), 0, file.path);
}

// The first non-zero byte at or after `from`, or npos.
size_t first_nonzero(std::string_view bytes, size_t from) {
    for (size_t i = from; i < bytes.size(); i++) {
        if (bytes[i] != '\0') {
            return i;
        }
    }
    return std::string_view::npos;
}

// An intact batch starting anywhere in (after, end): proof that the damage at `after` is not the
// tail of the journal. The salt makes a chance match (or a client's crafted bytes) impossible.
std::optional<size_t> intact_batch_after(const SegmentFile& file, size_t after) {
    const std::string_view bytes = file.bytes;
    for (size_t at = after + 1; at + kBatchHeaderBytes <= bytes.size(); at++) {
        if (check_batch(file.salt, bytes.substr(at))) {
            return at;
        }
    }
    return std::nullopt;
}

// Whether damage at `from` can be a write the crash tore: disks write a sector (512 bytes at
// least) whole or not at all, and the segment was zero before the write, so a torn batch has some
// sector whose share of the batch still reads as zero. A batch damaged in every sector (a flipped
// bit in synced data) is corruption. The extent is the batch's own length when its header holds,
// else up to the last byte written.
bool torn_write_shape(std::string_view bytes, size_t from) {
    constexpr size_t kSector = 512;
    size_t end = bytes.size();
    while (end > from && bytes[end - 1] == '\0') {
        --end;
    }
    if (from + kBatchHeaderBytes <= bytes.size()) {
        const uint64_t length = get_u32(bytes.data() + from + 4);
        if (get_u32(bytes.data() + from) == kBatchMagic &&
            length <= bytes.size() - from - kBatchHeaderBytes) {
            end = from + kBatchHeaderBytes + length;
        }
    }
    if (end <= from) {
        return true;  // nothing of it reached the disk
    }
    for (size_t sector = from / kSector * kSector; sector < end; sector += kSector) {
        const size_t lo = std::max(sector, from);
        const size_t hi = std::min(sector + kSector, end);
        if (first_nonzero(bytes.substr(0, hi), lo) == std::string_view::npos) {
            return true;
        }
    }
    return false;
}

// A write the crash tore before its sync: never acknowledged. Zeroed (and synced), so that
// nothing of it can be read as a batch once later appends end before it does.
void zero_torn_tail(const SegmentFile& file, size_t from, bool read_only) {
    size_t end = file.bytes.size();
    while (end > from && file.bytes[end - 1] == '\0') {
        --end;
    }
    spdlog::warn("journal {}: dropping a torn final write at offset {} ({} bytes), never synced",
                 file.path, from, end - from);
    if (read_only) {
        return;
    }
    pwrite_all(file.fd, std::string(end - from, '\0'), from, file.path);
    datasync_or_die(file.fd, file.path);
}

}  // namespace

Result<std::unique_ptr<Journal>, StorageError> Journal::open(const std::string& dir,
                                                             const JournalOptions& options,
                                                             const BatchVisitor& visit) {
    if (!options.read_only) {
        if (auto error = ensure_directory(dir)) {
            return *error;
        }
    }
    std::unique_ptr<Journal> journal(new Journal(dir, options));
    if (auto error = journal->recover(visit)) {
        journal->close_all();
        return *error;
    }
    if (!options.read_only && options.prepare_in_background) {
        journal->prepare_seq_ = journal->prepared_ ? 0 : journal->current_ + 1;
        journal->preparer_ = std::thread([j = journal.get()] { j->preparer_main(); });
    }
    return journal;
}

std::optional<StorageError> Journal::recover(const BatchVisitor& visit) {
    auto names = list_directory(dir_);
    if (!names.ok()) {
        return names.error();
    }
    std::vector<SegmentFile> files;
    for (const std::string& name : *names) {
        if (name.ends_with(".seg.tmp")) {
            // A segment whose preparation a crash cut short: it never held a batch.
            if (!options_.read_only) {
                remove_file_durably(dir_, name);
            }
            continue;
        }
        uint64_t seq = 0;
        if (name.size() != 20 || !name.ends_with(".seg") ||
            std::sscanf(name.c_str(), "%16" SCNx64, &seq) != 1 || segment_name(seq) != name ||
            seq == 0) {
            return corruption(
                fmt::format("{}/{}: not a journal file (the journal directory holds "
                            "only <16 hex digits>.seg files)",
                            dir_, name));
        }
        files.push_back(SegmentFile{seq, -1, dir_ + "/" + name, 0, 0, {}});
    }
    std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
    for (size_t i = 1; i < files.size(); i++) {
        if (files[i].seq != files[i - 1].seq + 1) {
            return corruption(fmt::format("{}: journal segment {} is missing (found {} and {})",
                                          dir_, segment_name(files[i - 1].seq + 1),
                                          segment_name(files[i - 1].seq),
                                          segment_name(files[i].seq)));
        }
    }
    // Every file stays open from here: on success they become the segment table.
    auto keep_open = [&]() {
        for (SegmentFile& f : files) {
            if (f.fd >= 0) {
                segments_[f.seq] = Segment{f.fd, f.size, f.salt};
            }
        }
    };
    for (SegmentFile& f : files) {
        if (auto error = open_segment(f, options_.read_only)) {
            keep_open();
            return error;
        }
    }
    // A file is read whole while its batches are visited, then let go: one segment in memory.
    auto written_after = [&](size_t i) -> Result<bool, StorageError> {
        for (size_t j = i + 1; j < files.size(); j++) {
            if (auto error = read_whole(files[j])) {
                return *error;
            }
            const bool written =
                first_nonzero(files[j].bytes, kSegmentHeaderBytes) != std::string_view::npos;
            files[j].bytes = std::string();
            if (written) {
                return true;
            }
        }
        return false;
    };
    size_t current_file = 0;
    bool first_batch = true;
    for (size_t i = 0; i < files.size(); i++) {
        SegmentFile& f = files[i];
        if (auto error = read_whole(f)) {
            keep_open();
            return error;
        }
        const std::string_view bytes = f.bytes;
        size_t at = kSegmentHeaderBytes;
        std::optional<size_t> damage;
        while (at + kBatchHeaderBytes <= bytes.size()) {
            const std::string_view rest = bytes.substr(at);
            if (first_nonzero(rest.substr(0, kBatchHeaderBytes), 0) == std::string_view::npos) {
                break;  // the end of this segment's batches
            }
            std::optional<BatchHeader> batch = check_batch(f.salt, rest);
            if (!batch || (!first_batch && batch->seq != next_batch_seq_)) {
                damage = at;
                break;
            }
            if (first_batch) {
                next_batch_seq_ = batch->seq;  // released segments took the earlier ones
                first_batch = false;
            }
            const JournalLocation location{f.seq, at + kBatchHeaderBytes, batch->length,
                                           batch->seq};
            if (auto error = visit(location, rest.substr(kBatchHeaderBytes, batch->length))) {
                keep_open();
                return error;
            }
            ++next_batch_seq_;
            at += kBatchHeaderBytes + batch->length;
        }
        if (!damage && first_nonzero(bytes, at) != std::string_view::npos) {
            damage = at;  // bytes after the end: a batch whose header never reached the disk?
        }
        if (at > kSegmentHeaderBytes || damage) {
            current_file = i;
            current_ = f.seq;
            write_offset_ = damage.value_or(at);
        }
        if (!damage) {
            f.bytes = std::string();
            continue;
        }
        const std::optional<size_t> intact = intact_batch_after(f, *damage);
        auto later = intact ? Result<bool, StorageError>(false) : written_after(i);
        if (!later.ok()) {
            keep_open();
            return later.error();
        }
        const bool torn_shape = torn_write_shape(bytes, *damage);
        if (intact || *later || !torn_shape) {
            keep_open();
            return corruption(fmt::format(
                "{}: damaged batch at offset {} (batch seq {}){}; the journal cannot be read past "
                "it, and it is not a torn final write",
                f.path, *damage, next_batch_seq_,
                intact   ? fmt::format(", with an intact batch after it at offset {}", *intact)
                : *later ? std::string(", and a later segment holds batches")
                         : std::string(", data in every sector (not a write cut short)")));
        }
        zero_torn_tail(f, *damage, options_.read_only);
        f.bytes = std::string();
        break;  // every later segment is empty (written_after)
    }
    if (current_ == 0 && !files.empty()) {
        current_ = files[0].seq;
        write_offset_ = kSegmentHeaderBytes;
    }
    // Prepared segments after the current one: the next is kept as the spare, others go.
    for (size_t i = current_file + 1; i < files.size(); i++) {
        if (files[i].seq == current_ + 1) {
            prepared_ =
                std::make_pair(files[i].seq, Segment{files[i].fd, files[i].size, files[i].salt});
            files[i].fd = -1;
        } else if (!options_.read_only) {
            ::close(files[i].fd);
            files[i].fd = -1;
            remove_file_durably(dir_, segment_name(files[i].seq));
        }
    }
    keep_open();
    if (files.empty() && !options_.read_only) {
        segments_[1] = create_segment(1, options_.segment_bytes);
        current_ = 1;
        write_offset_ = kSegmentHeaderBytes;
    }
    if (!options_.read_only) {
        // The spare was zero when prepared; the current segment may be left as found.
        RL_ASSERT(current_ != 0 && write_offset_ >= kSegmentHeaderBytes);
    }
    return std::nullopt;
}

}  // namespace raftlock::storage
