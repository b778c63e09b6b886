#include "storage/snapshot_file.h"

#include <catch2/catch.hpp>

#include "base/crc32c.h"
#include "tests/storage/test_util.h"

namespace raftlock::storage {
namespace {

SnapshotRecord record_for(const raft::SnapshotMetadata& meta, const std::string& data) {
    return SnapshotRecord{meta, snapshot_file_name(meta), data.size(), crc32c(data)};
}

TEST_CASE("snapshot files round-trip for every chunking", "[storage][snapshot]") {
    const raft::SnapshotMetadata meta{12, 3, raft::ConfState{{1, 2, 3}, {}}};
    for (size_t size : {0, 1, 9, 10, 11, 100}) {
        const std::string data = test::entry_data(12, 3, size).substr(0, size);
        for (uint32_t chunk : {1u, 10u, 1024u}) {
            const std::string file = encode_snapshot_file(meta, data, chunk);
            CHECK(decode_snapshot_file(file, record_for(meta, data), "f").value() == data);
        }
    }
}

TEST_CASE("a damaged snapshot file is reported with its path and offset", "[storage][snapshot]") {
    const raft::SnapshotMetadata meta{12, 3, {}};
    const std::string data = test::entry_data(12, 3, 100);
    const std::string file = encode_snapshot_file(meta, data, 32);
    for (size_t byte = 0; byte < file.size(); byte++) {
        std::string damaged = file;
        damaged[byte] = static_cast<char>(damaged[byte] ^ 0x10);
        auto decoded = decode_snapshot_file(damaged, record_for(meta, data), "/x/snap-12");
        REQUIRE_FALSE(decoded.ok());
        CHECK(decoded.error().code == StorageErrorCode::kCorruption);
        CHECK_THAT(decoded.error().message, Catch::Contains("/x/snap-12"));
    }
    for (size_t keep = 0; keep < file.size(); keep++) {
        CHECK_FALSE(decode_snapshot_file(file.substr(0, keep), record_for(meta, data), "f").ok());
    }
    CHECK_FALSE(decode_snapshot_file(file + "x", record_for(meta, data), "f").ok());
    // A whole, valid file of another snapshot is not accepted in place of this one.
    const raft::SnapshotMetadata other{13, 3, {}};
    CHECK_FALSE(
        decode_snapshot_file(encode_snapshot_file(other, data, 32), record_for(meta, data), "f")
            .ok());
}

TEST_CASE("snapshot files are written under their final name only when complete",
          "[storage][snapshot]") {
    test::TempDir dir;
    raft::Snapshot snap;
    snap.metadata = {5, 2, raft::ConfState{{1}, {}}};
    snap.data = "five";
    const SnapshotRecord record = write_snapshot_file(dir.path(), snap, 2);
    CHECK(record.file_name == snapshot_file_name(snap.metadata));
    CHECK(test::files_with_suffix(dir.path(), ".tmp").empty());
    CHECK(read_snapshot_file(dir.path(), record).value() == "five");
}

}  // namespace
}  // namespace raftlock::storage
