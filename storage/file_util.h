#pragma once

// Thin POSIX helpers for the files the store writes itself (snapshot data). Writes and syncs panic
// on failure (fatal.h); reads return a Status-like error because they happen while opening, where
// the caller reports them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "storage/error.h"

namespace raftlock::storage {

// Whether `path` is a directory (false when missing or unreadable).
bool is_directory(const std::string& path);

// Creates the directory if it is missing (not its parents).
std::optional<StorageError> ensure_directory(const std::string& path);

// Writes `bytes` to `path` durably and atomically: to `path + ".tmp"`, fsync, rename over
// `path`, fsync the directory. After a crash either the old file (or none) or the complete new
// one exists, plus possibly a stray ".tmp" that the store removes when it opens.
void write_file_durably(const std::string& dir, const std::string& name, std::string_view bytes);

// Removes a file (missing is fine) and syncs the directory. Panics on other failures.
void remove_file_durably(const std::string& dir, const std::string& name);

// Syncs a directory's entries (after a rename, create or unlink in it).
void fsync_directory(const std::string& dir);

Result<std::string, StorageError> read_whole_file(const std::string& path);

// Writes all of `bytes` at `offset`, retrying interrupted and short writes. Panics on failure,
// naming `path`.
void pwrite_all(int fd, std::string_view bytes, uint64_t offset, const std::string& path);
// fdatasync, panicking on failure with `path` in the message.
void datasync_or_die(int fd, const std::string& path);
// Reads exactly `size` bytes at `offset` into `out`; an error (kIo, naming `path`) when the
// system refuses or the file ends first.
std::optional<StorageError> pread_exactly(
    int fd, char* out, size_t size, uint64_t offset, const std::string& path);

// File names in a directory (no "." or ".."), sorted.
Result<std::vector<std::string>, StorageError> list_directory(const std::string& dir);

}  // namespace raftlock::storage
