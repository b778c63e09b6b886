#pragma once

// Helpers shared by the storage tests: a scratch directory removed at the end, entry makers, and
// byte flipping in files.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "raft/types.h"
#include "storage/rocks_storage.h"

namespace raftlock::storage::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string sub(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

// Data derived from index and term, so a reader can tell a right entry from a stale one.
std::string entry_data(raft::Index index, raft::Term term, size_t size_bytes = 32);
raft::Entry make_entry(raft::Index index, raft::Term term, size_t size_bytes = 32);
// Entries [lo, hi) of one term.
std::vector<raft::Entry> make_entries(raft::Index lo, raft::Index hi, raft::Term term);

// Opens a store and fails the test (REQUIRE) when it cannot.
std::unique_ptr<RocksStorage> open_store(const std::string& dir, RocksStorageOptions options = {});

// All entries of the store, read through the raft::Storage interface.
std::vector<raft::Entry> all_entries(const RocksStorage& store);

// Files in `dir` (recursively) whose name ends with `suffix`, sorted.
std::vector<std::string> files_with_suffix(const std::string& dir, const std::string& suffix);
uint64_t file_size(const std::string& path);
// XORs the byte at `offset` with 0xff.
void flip_byte(const std::string& path, uint64_t offset);

}  // namespace raftlock::storage::test
