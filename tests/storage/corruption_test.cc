// Damage in a closed store is found when it opens, the open is refused, and the message names the
// file and the log index. Also checks the inspection tool's `verify` against the same damage.

#include <cstdio>

#include <catch2/catch.hpp>
#include <rocksdb/db.h>
#include <sys/wait.h>

#include "storage/codec.h"
#include "storage/rocks_storage.h"
#include "tests/storage/test_util.h"

namespace raftlock::storage {
namespace {

using test::make_entries;

// Builds a store with a log, a hard state and a snapshot, then closes it.
void build_store(const std::string& dir, bool flush_on_close) {
    RocksStorageOptions options;
    options.flush_on_close = flush_on_close;
    auto store = test::open_store(dir, options);
    for (raft::Index i = 1; i < 201; i += 10) {
        store->append(make_entries(i, i + 10, 1));  // one WAL record each
    }
    store->set_hard_state(raft::HardState{1, 1, 150});
    store->create_snapshot(100, raft::ConfState{{1, 2, 3}, {}}, std::string(10000, 's'));
}

StorageError open_must_fail(const std::string& dir) {
    auto store = RocksStorage::open(dir);
    REQUIRE_FALSE(store.ok());
    INFO(store.error().message);
    CHECK(store.error().code == StorageErrorCode::kCorruption);
    return store.error();
}

// Runs the inspection tool; returns its exit status and what it printed.
std::pair<int, std::string> run_tool(const std::string& args) {
    const std::string command = std::string(RAFTLOCK_STORAGE_TOOL) + " " + args + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char buffer[512];
    while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) {
        output.append(buffer, n);
    }
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Writes `value` under a log key straight into RocksDB, behind the store's back.
void put_raw_log_value(const std::string& db_dir, raft::Index index, const std::string* value) {
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, {}}, {"log", {}}, {"state", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), db_dir, families, &handles, &db).ok());
    const std::string key = encode_log_key(index);
    REQUIRE((value ? db->Put({}, handles[1], key, *value) : db->Delete({}, handles[1], key)).ok());
    for (auto* handle : handles) {
        REQUIRE(db->DestroyColumnFamilyHandle(handle).ok());
    }
    REQUIRE(db->Close().ok());
    delete db;
}

TEST_CASE("a good store verifies with the inspection tool", "[storage][corruption]") {
    test::TempDir dir;
    build_store(dir.path(), true);
    auto [status, output] = run_tool("verify " + dir.path());
    INFO(output);
    CHECK(status == 0);
    CHECK_THAT(output, Catch::Contains("last index 200"));
    CHECK(run_tool("hard-state " + dir.path()).second == "term=1 vote=1 commit=150\n");
    CHECK_THAT(run_tool("snapshot " + dir.path()).second, Catch::Contains("10000 bytes"));
    CHECK_THAT(run_tool("log " + dir.path() + " 5 7").second, Catch::Contains("1/6"));
}

TEST_CASE("a flipped byte in a log table file refuses the open and names the file",
          "[storage][corruption]") {
    test::TempDir dir;
    build_store(dir.path(), true);
    // The log column family's table file is the largest one; its data blocks come first.
    std::vector<std::string> tables = test::files_with_suffix(dir.path(), ".sst");
    REQUIRE_FALSE(tables.empty());
    std::sort(tables.begin(), tables.end(),
              [](const auto& a, const auto& b) { return test::file_size(a) > test::file_size(b); });
    test::flip_byte(tables[0], 1000);
    const StorageError error = open_must_fail(dir.path());
    CHECK_THAT(error.message, Catch::Contains(tables[0].substr(tables[0].rfind('/') + 1)));
    CHECK_THAT(error.message, Catch::Contains("index"));
    auto [status, output] = run_tool("verify " + dir.path());
    CHECK(status == 1);
    CHECK_THAT(output, Catch::Contains("orruption"));
}

TEST_CASE("a flipped byte in the write-ahead log refuses the open", "[storage][corruption]") {
    test::TempDir dir;
    build_store(dir.path(), false);
    const std::vector<std::string> logs = test::files_with_suffix(dir.path(), ".log");
    REQUIRE(logs.size() == 1);
    const uint64_t size = test::file_size(logs[0]);
    REQUIRE(size > 1000);
    test::flip_byte(logs[0], size / 2);
    const StorageError error = open_must_fail(dir.path());
    CHECK_THAT(error.message, Catch::Contains(logs[0]));
    CHECK_THAT(error.message, Catch::Contains("damaged record follows index"));
}

TEST_CASE("a flipped byte in a snapshot file refuses the open and names the file",
          "[storage][corruption]") {
    test::TempDir dir;
    build_store(dir.path(), true);
    const std::vector<std::string> snaps = test::files_with_suffix(dir.path(), ".snap");
    REQUIRE(snaps.size() == 1);
    test::flip_byte(snaps[0], test::file_size(snaps[0]) / 2);
    const StorageError error = open_must_fail(dir.path());
    CHECK_THAT(error.message, Catch::Contains(snaps[0]));
    CHECK_THAT(error.message, Catch::Contains("checksum mismatch"));
    CHECK(run_tool("verify " + dir.path()).first == 1);
}

TEST_CASE("a damaged record under a valid RocksDB checksum is caught by the record checksum",
          "[storage][corruption]") {
    test::TempDir dir;
    build_store(dir.path(), true);
    std::string damaged = encode_entry(test::make_entry(57, 1));
    damaged[damaged.size() - 1] ^= 1;
    put_raw_log_value(dir.sub("db"), 57, &damaged);
    const StorageError error = open_must_fail(dir.path());
    CHECK_THAT(error.message, Catch::Contains("index 57"));
    CHECK_THAT(error.message, Catch::Contains("checksum mismatch"));
}

TEST_CASE("a hole in the log or a record under the wrong key refuses the open",
          "[storage][corruption]") {
    test::TempDir dir;
    build_store(dir.path(), true);
    SECTION("hole") {
        put_raw_log_value(dir.sub("db"), 120, nullptr);
        CHECK_THAT(open_must_fail(dir.path()).message, Catch::Contains("expected index 120"));
        // A refused open changes nothing: it is refused again.
        CHECK_THAT(open_must_fail(dir.path()).message, Catch::Contains("expected index 120"));
    }
    SECTION("wrong key") {
        const std::string moved = encode_entry(test::make_entry(121, 1));
        put_raw_log_value(dir.sub("db"), 120, &moved);
        CHECK_THAT(open_must_fail(dir.path()).message, Catch::Contains("index 120"));
    }
}

}  // namespace
}  // namespace raftlock::storage
