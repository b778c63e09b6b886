#pragma once

// The journal: an append-only sequence of batches in preallocated, zero-filled segment files, so
// that appending is an overwrite of blocks the file already owns and `fdatasync` commits data
// only, with no file-size or extent metadata (docs/decisions/0021-journal-segments.md: on this
// machine a synced 4 KiB overwrite takes 60 % of the time of a synced append to a growing file).
// The store built on it decides what a batch holds; the journal keeps batches whole and in order.
//
// Layout of `dir` (integers little-endian):
//
//   <seq, 16 hex digits>.seg   a segment of fixed size, zero-filled before its first use
//     header  "RLJSEG01" | u32 version | u32 0 | u64 seq | u64 salt | u32 crc | zeros to 64 bytes
//     batch   u32 "RLJB" | u32 body length | u64 batch seq | u32 crc | u32 0 | body
//             (crc = CRC32C of the salt, then the batch header with crc 0, then the body)
//     zeros   after the last batch, to the end of the file
//   <seq>.seg.tmp              a segment being prepared (removed when found at open)
//
// Batch seqs run on from one segment to the next; segment seqs are consecutive. The salt, random
// per segment, keeps bytes that happen to look like a batch (a client's data, an old file) from
// ever checking as one.
//
// Recovery (open) reads every segment and hands each intact batch to the caller, in order. Damage
// is either a torn tail or corruption, never skipped:
//   - torn tail: in the segment written last, a batch that does not check (or a header that reads
//     as zero) after which no intact batch follows: the crash caught a write that was never
//     synced, so never acknowledged. Its bytes are zeroed (synced) and appending resumes there.
//   - corruption: anything else (a bad segment header, an intact batch after a damaged one, a gap
//     in segment or batch seqs, stray bytes after a segment's end): open fails naming the file and
//     the offset.
//
// Threads: append(), sync(), release_before() from one writer thread; read_at() from any thread.
// A background thread prepares the next segment while the current one fills.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "base/result.h"
#include "storage/error.h"

namespace raftlock::storage {

inline constexpr uint32_t kJournalVersion = 1;
inline constexpr uint64_t kSegmentHeaderBytes = 64;
inline constexpr uint64_t kBatchHeaderBytes = 24;

struct JournalOptions {
    uint64_t segment_bytes = 64ull << 20;  // a batch larger than a segment gets a segment its size
    bool read_only = false;                // open and read; no file created, changed or removed
    // Prepare the next segment on a thread of its own (else when the current one is full).
    bool prepare_in_background = true;
};

// Where a batch's body lies.
struct JournalLocation {
    uint64_t segment = 0;
    uint64_t offset = 0;  // of the body, from the start of the segment file
    uint64_t length = 0;
    uint64_t batch_seq = 0;
};

class Journal {
public:
    // Called for every intact batch, in order; an error stops the open and is returned.
    using BatchVisitor =
        std::function<std::optional<StorageError>(const JournalLocation&, std::string_view body)>;

    static Result<std::unique_ptr<Journal>, StorageError> open(const std::string& dir,
                                                               const JournalOptions& options,
                                                               const BatchVisitor& visit);
    ~Journal();
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    // Writes one batch after the last; durable on return when `sync` (with every earlier batch).
    // Panics on I/O failure (fatal.h): a node that cannot write its journal stops.
    JournalLocation append(std::string_view body, bool sync);
    // Makes every appended batch durable.
    void sync();
    // Bytes [offset, offset + length) of a segment, as written (the caller checks what it reads).
    Result<std::string, StorageError> read_at(uint64_t segment,
                                              uint64_t offset,
                                              uint64_t length) const;
    // Deletes the segments before `segment` (never the one being written). Their batches must no
    // longer be needed: the store wrote what it still needs of them into later ones.
    void release_before(uint64_t segment);

    // The largest body that still fits in the current segment.
    uint64_t room() const;
    // Whether nothing was appended to the current segment yet.
    bool at_segment_start() const { return write_offset_ == kSegmentHeaderBytes; }
    // Ends the current segment: the next batch (of `body_bytes`) goes at the start of the next.
    void start_next_segment(uint64_t body_bytes) { rotate(body_bytes); }

    uint64_t current_segment() const;
    uint64_t next_batch_seq() const { return next_batch_seq_; }
    // Segments on disk, oldest first (for inspection and tests).
    std::vector<uint64_t> segments() const;
    const std::string& dir() const { return dir_; }
    static std::string segment_name(uint64_t seq);

private:
    struct Segment {
        int fd = -1;
        uint64_t size = 0;
        uint64_t salt = 0;
    };

    Journal(std::string dir, const JournalOptions& options);

    // journal_open.cc
    std::optional<StorageError> recover(const BatchVisitor& visit);
    // journal.cc
    void rotate(uint64_t body_bytes);
    Segment create_segment(uint64_t seq, uint64_t size) const;
    void preparer_main();
    void close_all();

    std::string dir_;
    JournalOptions options_;
    // Guards the segment table: read_at() runs on other threads than the writer.
    mutable std::mutex mutex_;
    std::map<uint64_t, Segment> segments_;
    uint64_t current_ = 0;         // seq of the segment being written
    uint64_t write_offset_ = 0;    // in the current segment
    uint64_t next_batch_seq_ = 1;  // the seq the next batch gets
    bool unsynced_ = false;        // a batch was appended since the last sync

    // The background preparer: makes segment `prepare_seq_` and hands it over in `prepared_`.
    std::thread preparer_;
    std::condition_variable preparer_cv_;
    bool stopping_ = false;
    uint64_t prepare_seq_ = 0;  // 0: nothing asked
    std::optional<std::pair<uint64_t, Segment>> prepared_;
};

}  // namespace raftlock::storage
