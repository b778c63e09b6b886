#include "tests/storage/test_util.h"

#include <cstdlib>
#include <filesystem>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace raftlock::storage::test {

TempDir::TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/raftlock-storage-XXXXXX";
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::string entry_data(raft::Index index, raft::Term term, size_t size_bytes) {
    std::string data = fmt::format("entry {} of term {};", index, term);
    // Fill with a pattern that depends on the index, so shifted data does not look right.
    for (size_t i = 0; data.size() < size_bytes; i++) {
        data.push_back(static_cast<char>('a' + (index + i) % 26));
    }
    return data;
}

raft::Entry make_entry(raft::Index index, raft::Term term, size_t size_bytes) {
    raft::Entry entry;
    entry.index = index;
    entry.term = term;
    entry.data = entry_data(index, term, size_bytes);
    return entry;
}

std::vector<raft::Entry> make_entries(raft::Index lo, raft::Index hi, raft::Term term) {
    std::vector<raft::Entry> out;
    for (raft::Index i = lo; i < hi; i++) {
        out.push_back(make_entry(i, term));
    }
    return out;
}

std::unique_ptr<RocksStorage> open_store(const std::string& dir, RocksStorageOptions options) {
    auto store = RocksStorage::open(dir, options);
    if (!store.ok()) {
        FAIL("open " << dir << ": " << store.error().message);
    }
    return std::move(*store);
}

std::vector<raft::Entry> all_entries(const RocksStorage& store) {
    auto entries = store.entries(store.first_index(), store.last_index() + 1, UINT64_MAX);
    REQUIRE(entries.ok());
    return *entries;
}

std::vector<std::string> files_with_suffix(const std::string& dir, const std::string& suffix) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (e.is_regular_file() && name.size() >= suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            out.push_back(e.path().string());
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

uint64_t file_size(const std::string& path) {
    return std::filesystem::file_size(path);
}

void flip_byte(const std::string& path, uint64_t offset) {
    const int fd = ::open(path.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    unsigned char byte = 0;
    REQUIRE(::pread(fd, &byte, 1, static_cast<off_t>(offset)) == 1);
    byte ^= 0xff;
    REQUIRE(::pwrite(fd, &byte, 1, static_cast<off_t>(offset)) == 1);
    REQUIRE(::fsync(fd) == 0);
    ::close(fd);
}

}  // namespace raftlock::storage::test
