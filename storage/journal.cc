// Journal: appending, syncing, reading, and the segments' life (journal.h). Recovery is in
// journal_open.cc.

#include "storage/journal.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/assert.h"
#include "storage/codec.h"
#include "storage/fatal.h"
#include "storage/file_util.h"
#include "storage/journal_format.h"

namespace raftlock::storage {
Journal::Journal(std::string dir, const JournalOptions& options)
    : dir_(std::move(dir)), options_(options) {
    RL_ASSERT(options_.segment_bytes > kSegmentHeaderBytes + kBatchHeaderBytes);
}

Journal::~Journal() {
    if (preparer_.joinable()) {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        preparer_cv_.notify_all();
        preparer_.join();
    }
    // Unsynced batches stay unsynced: a close is not a promise (the store syncs what it promised).
    close_all();
}

void Journal::close_all() {
    std::lock_guard lock(mutex_);
    for (auto& [seq, segment] : segments_) {
        ::close(segment.fd);
    }
    segments_.clear();
    if (prepared_) {
        ::close(prepared_->second.fd);
        prepared_.reset();
    }
}

std::string Journal::segment_name(uint64_t seq) {
    return fmt::format("{:016x}.seg", seq);
}

uint64_t Journal::room() const {
    std::lock_guard lock(mutex_);
    const uint64_t used = write_offset_ + kBatchHeaderBytes;
    const uint64_t size = segments_.at(current_).size;
    return used < size ? size - used : 0;
}

uint64_t Journal::current_segment() const {
    std::lock_guard lock(mutex_);
    return current_;
}

std::vector<uint64_t> Journal::segments() const {
    std::lock_guard lock(mutex_);
    std::vector<uint64_t> out;
    for (const auto& [seq, segment] : segments_) {
        out.push_back(seq);
    }
    return out;
}

// Zeros, then the header, then fdatasync, then the rename and the directory's sync: a segment
// under its final name is always whole and zero past its header, so appending into it is an
// overwrite and a crash can leave only a ".tmp" file behind.
Journal::Segment Journal::create_segment(uint64_t seq, uint64_t size) const {
    RL_ASSERT(!options_.read_only);
    RL_ASSERT(size > kSegmentHeaderBytes);
    const std::string name = segment_name(seq);
    const std::string tmp = dir_ + "/" + name + ".tmp";
    const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fatal_errno(fmt::format("create {}", tmp), errno);
    }
    const std::string zeros(1 << 20, '\0');
    for (uint64_t at = 0; at < size; at += zeros.size()) {
        pwrite_all(fd,
                   std::string_view(zeros).substr(0, std::min<uint64_t>(zeros.size(), size - at)),
                   at, tmp);
    }
    std::random_device random;
    const uint64_t salt = (uint64_t{random()} << 32) | random();
    const std::string header = encode_segment_header(seq, salt);
    pwrite_all(fd, header, 0, tmp);
    datasync_or_die(fd, tmp);
    const std::string path = dir_ + "/" + name;
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        fatal_errno(fmt::format("rename {} to {}", tmp, path), errno);
    }
    fsync_directory(dir_);
    return Segment{fd, size, salt};
}

JournalLocation Journal::append(std::string_view body, bool sync_now) {
    RL_ASSERT(!options_.read_only);
    RL_ASSERT(current_ != 0);
    RL_ASSERT_MSG(body.size() <= UINT32_MAX, "a journal batch above 4 GiB");
    Segment segment;
    {
        std::lock_guard lock(mutex_);
        segment = segments_.at(current_);
    }
    if (write_offset_ + kBatchHeaderBytes + body.size() > segment.size) {
        rotate(body.size());
        std::lock_guard lock(mutex_);
        segment = segments_.at(current_);
    }
    RL_ASSERT(write_offset_ + kBatchHeaderBytes + body.size() <= segment.size);
    char header[kBatchHeaderBytes];
    encode_batch_header(segment.salt, next_batch_seq_, body, header);
    iovec parts[2] = {{header, sizeof(header)}, {const_cast<char*>(body.data()), body.size()}};
    const size_t total = sizeof(header) + body.size();
    const ssize_t n = ::pwritev(segment.fd, parts, 2, static_cast<off_t>(write_offset_));
    if (n != static_cast<ssize_t>(total)) {
        const std::string path = dir_ + "/" + segment_name(current_);
        if (n < 0) {
            fatal_errno(fmt::format("write {} at offset {}", path, write_offset_), errno);
        }
        // A short write (rare; a signal or a full device): the rest, byte-exact after it.
        std::string whole(header, sizeof(header));
        whole.append(body);
        pwrite_all(segment.fd, std::string_view(whole).substr(static_cast<size_t>(n)),
                   write_offset_ + static_cast<uint64_t>(n), path);
    }
    const JournalLocation location{current_, write_offset_ + kBatchHeaderBytes, body.size(),
                                   next_batch_seq_};
    write_offset_ += total;
    ++next_batch_seq_;
    unsynced_ = true;
    if (sync_now) {
        sync();
    }
    return location;
}

void Journal::sync() {
    if (!unsynced_) {
        return;
    }
    int fd = -1;
    {
        std::lock_guard lock(mutex_);
        fd = segments_.at(current_).fd;
    }
    if (::fdatasync(fd) != 0) {  // (the path is formatted only for the message)
        fatal_errno(fmt::format("fdatasync {}/{}", dir_, segment_name(current_)), errno);
    }
    unsynced_ = false;
}

// The next segment becomes the current one. The old one is synced first, so that on disk a
// later segment never holds a batch while an earlier one may still lose one: damage can then be
// a torn tail only in the segment written last (journal_open.cc relies on it).
void Journal::rotate(uint64_t body_bytes) {
    sync();
    const uint64_t seq = current_ + 1;
    const uint64_t needed = kSegmentHeaderBytes + kBatchHeaderBytes + body_bytes;
    std::optional<Segment> next;
    {
        std::unique_lock lock(mutex_);
        if (preparer_.joinable()) {
            preparer_cv_.wait(lock, [&] { return prepared_.has_value() || prepare_seq_ != seq; });
        }
        if (prepared_ && prepared_->first == seq) {
            next = prepared_->second;
            prepared_.reset();
        }
    }
    if (next && next->size < needed) {
        // Too small for this one batch: replaced by a segment of the batch's size.
        ::close(next->fd);
        next.reset();
    }
    if (!next) {
        next = create_segment(seq, std::max(options_.segment_bytes, needed));
    }
    {
        std::lock_guard lock(mutex_);
        segments_[seq] = *next;
        current_ = seq;
        write_offset_ = kSegmentHeaderBytes;
        if (preparer_.joinable()) {
            prepare_seq_ = seq + 1;
        }
    }
    preparer_cv_.notify_all();
}

void Journal::preparer_main() {
    std::unique_lock lock(mutex_);
    while (true) {
        preparer_cv_.wait(lock, [&] { return stopping_ || (prepare_seq_ != 0 && !prepared_); });
        if (stopping_) {
            return;
        }
        const uint64_t seq = prepare_seq_;
        lock.unlock();
        Segment segment = create_segment(seq, options_.segment_bytes);
        lock.lock();
        prepared_ = std::make_pair(seq, segment);
        prepare_seq_ = 0;
        preparer_cv_.notify_all();
    }
}

Result<std::string, StorageError> Journal::read_at(uint64_t segment,
                                                   uint64_t offset,
                                                   uint64_t length) const {
    int fd = -1;
    {
        std::lock_guard lock(mutex_);
        auto it = segments_.find(segment);
        if (it == segments_.end()) {
            return StorageError{
                StorageErrorCode::kInvalidArgument,
                fmt::format("journal segment {} is not kept any more", segment_name(segment))};
        }
        if (offset + length > it->second.size) {
            return corruption(fmt::format("journal segment {}: bytes {}..{} are past its end",
                                          segment_name(segment), offset, offset + length));
        }
        fd = it->second.fd;
    }
    // The fd stays open meanwhile: only release_before() closes one, on the writer's thread,
    // and the store never releases a segment it still reads.
    std::string out(length, '\0');
    if (auto error =
            pread_exactly(fd, out.data(), length, offset, dir_ + "/" + segment_name(segment))) {
        return *error;
    }
    return out;
}

void Journal::release_before(uint64_t segment) {
    RL_ASSERT(!options_.read_only);
    RL_ASSERT(segment <= current_);
    std::vector<uint64_t> released;
    {
        std::lock_guard lock(mutex_);
        for (auto it = segments_.begin(); it != segments_.end() && it->first < segment;) {
            ::close(it->second.fd);
            released.push_back(it->first);
            it = segments_.erase(it);
        }
    }
    for (uint64_t seq : released) {
        const std::string path = dir_ + "/" + segment_name(seq);
        if (::unlink(path.c_str()) != 0) {
            fatal_errno(fmt::format("remove {}", path), errno);
        }
    }
    if (!released.empty()) {
        fsync_directory(dir_);
    }
}

}  // namespace raftlock::storage
