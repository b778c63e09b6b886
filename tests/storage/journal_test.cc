#include "storage/journal.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "storage/journal_records.h"
#include "test_util.h"

namespace raftlock::storage::test {
namespace {

struct Seen {
    std::vector<JournalLocation> locations;
    std::vector<std::string> bodies;
};

// Segments of 64 KiB unless a test asks otherwise: each is zero-filled when made.
JournalOptions test_options() {
    JournalOptions options;
    options.segment_bytes = 64 << 10;
    return options;
}

Result<std::unique_ptr<Journal>, StorageError> open_journal(
    const std::string& dir, Seen& seen, JournalOptions options = test_options()) {
    seen = Seen{};
    return Journal::open(dir, options, [&](const JournalLocation& location, std::string_view body) {
        seen.locations.push_back(location);
        seen.bodies.emplace_back(body);
        return std::optional<StorageError>();
    });
}

std::unique_ptr<Journal> must_open(const std::string& dir,
                                   Seen& seen,
                                   JournalOptions options = test_options()) {
    auto journal = open_journal(dir, seen, options);
    if (!journal.ok()) {
        FAIL(journal.error().message);
    }
    return std::move(journal).value();
}

std::string body_of(int i, size_t size = 100) {
    std::string body(size, '\0');
    for (size_t k = 0; k < size; k++) {
        body[k] = static_cast<char>('a' + (i * 7 + static_cast<int>(k)) % 26);
    }
    return body;
}

std::string segment_path(const std::string& dir, uint64_t seq) {
    return dir + "/" + Journal::segment_name(seq);
}

void overwrite(const std::string& path, uint64_t offset, std::string_view bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)) ==
            static_cast<ssize_t>(bytes.size()));
    ::close(fd);
}

std::string read_bytes(const std::string& path, uint64_t offset, size_t size) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    std::string out(size, '\0');
    REQUIRE(::pread(fd, out.data(), size, static_cast<off_t>(offset)) ==
            static_cast<ssize_t>(size));
    ::close(fd);
    return out;
}

JournalOptions small_segments() {
    JournalOptions options;
    options.segment_bytes = 4096;
    return options;
}

}  // namespace

TEST_CASE("journal batches come back in order after a reopen, and read_at reads them",
          "[storage][journal]") {
    TempDir dir;
    Seen seen;
    std::vector<JournalLocation> written;
    {
        auto journal = must_open(dir.path(), seen);
        CHECK(seen.bodies.empty());
        for (int i = 0; i < 50; i++) {
            written.push_back(journal->append(body_of(i, 1 + i * 13), i % 7 == 0));
        }
        journal->sync();
        auto read = journal->read_at(written[3].segment, written[3].offset, written[3].length);
        REQUIRE(read.ok());
        CHECK(*read == body_of(3, 1 + 3 * 13));
    }
    auto journal = must_open(dir.path(), seen);
    REQUIRE(seen.bodies.size() == 50);
    for (int i = 0; i < 50; i++) {
        CHECK(seen.bodies[i] == body_of(i, 1 + i * 13));
        CHECK(seen.locations[i].offset == written[i].offset);
        CHECK(seen.locations[i].batch_seq == static_cast<uint64_t>(i + 1));
    }
    // Appending goes on after the last batch.
    journal->append("after", true);
    journal.reset();
    must_open(dir.path(), seen);
    REQUIRE(seen.bodies.size() == 51);
    CHECK(seen.bodies.back() == "after");
    CHECK(seen.locations.back().batch_seq == 51);
}

TEST_CASE("journal segments fill, rotate, get released, and a large batch gets its own",
          "[storage][journal]") {
    TempDir dir;
    Seen seen;
    for (bool background : {false, true}) {
        TempDir d;
        JournalOptions options = small_segments();
        options.prepare_in_background = background;
        std::vector<JournalLocation> written;
        {
            auto journal = must_open(d.path(), seen, options);
            for (int i = 0; i < 200; i++) {
                written.push_back(journal->append(body_of(i, 300), false));
            }
            written.push_back(journal->append(body_of(999, 10000), true));  // > a segment
            CHECK(journal->segments().size() > 10);
            auto big = journal->read_at(written.back().segment, written.back().offset, 10000);
            REQUIRE(big.ok());
            CHECK(*big == body_of(999, 10000));
        }
        auto journal = must_open(d.path(), seen, options);
        REQUIRE(seen.bodies.size() == 201);
        CHECK(seen.bodies[150] == body_of(150, 300));
        CHECK(seen.bodies[200] == body_of(999, 10000));
        // Released segments take their batches with them; the rest still reads from its first.
        const uint64_t keep_from = written[100].segment;
        journal->release_before(keep_from);
        CHECK(journal->segments().front() == keep_from);
        auto gone = journal->read_at(written[0].segment, written[0].offset, 300);
        CHECK_FALSE(gone.ok());
        journal->append("tail", true);
        journal.reset();
        must_open(d.path(), seen, options);
        REQUIRE_FALSE(seen.bodies.empty());
        CHECK(seen.locations.front().segment == keep_from);
        CHECK(seen.bodies.back() == "tail");
        CHECK(seen.locations.back().batch_seq == 202);
    }
}

TEST_CASE("a torn final write is dropped and zeroed; appending resumes in its place",
          "[storage][journal]") {
    // The last batch (1,124 bytes from offset 684) spans three sectors; each case leaves one of
    // them unwritten, as a crash before the sync can (a sector is written whole or not at all).
    for (const int sector : {0, 1, 2}) {
        DYNAMIC_SECTION("sector " << sector << " of the batch unwritten") {
            TempDir dir;
            Seen seen;
            JournalLocation last;
            {
                JournalOptions options = test_options();
                options.prepare_in_background = false;
                auto journal = must_open(dir.path(), seen, options);
                for (int i = 0; i < 5; i++) {
                    journal->append(body_of(i, 100), true);
                }
                last = journal->append(body_of(5, 1100), true);
            }
            const uint64_t header = last.offset - kBatchHeaderBytes;
            const uint64_t end = last.offset + last.length;
            REQUIRE(header == 684);
            const uint64_t lo = std::max<uint64_t>(header, (header / 512 + sector) * 512);
            const uint64_t hi = std::min<uint64_t>(end, (header / 512 + sector + 1) * 512);
            overwrite(segment_path(dir.path(), last.segment), lo, std::string(hi - lo, '\0'));
            auto journal = must_open(dir.path(), seen);
            REQUIRE(seen.bodies.size() == 5);
            // Zeroed on disk, so a shorter batch written next cannot leave old bytes behind it.
            CHECK(read_bytes(segment_path(dir.path(), last.segment), header, 1124) ==
                  std::string(1124, '\0'));
            journal->append("short", true);
            journal.reset();
            must_open(dir.path(), seen);
            REQUIRE(seen.bodies.size() == 6);
            CHECK(seen.bodies.back() == "short");
            CHECK(seen.locations.back().batch_seq == 6);
        }
    }
}

TEST_CASE("damage that is not a torn final write fails the open, naming file and offset",
          "[storage][journal]") {
    TempDir dir;
    Seen seen;
    std::vector<JournalLocation> written;
    {
        auto journal = must_open(dir.path(), seen, small_segments());
        for (int i = 0; i < 60; i++) {
            written.push_back(journal->append(body_of(i, 200), true));
        }
    }
    auto expect_corruption = [&](const std::string& needle) {
        auto journal = open_journal(dir.path(), seen, small_segments());
        REQUIRE_FALSE(journal.ok());
        CHECK(journal.error().code == StorageErrorCode::kCorruption);
        INFO(journal.error().message);
        CHECK(journal.error().message.find(needle) != std::string::npos);
    };
    const JournalLocation mid = written[30];
    const std::string mid_path = segment_path(dir.path(), mid.segment);
    const std::string original = read_bytes(mid_path, mid.offset, 1);

    SECTION("a flipped bit in a batch followed by others") {
        overwrite(mid_path, mid.offset, std::string(1, static_cast<char>(original[0] ^ 1)));
        expect_corruption(fmt::format("offset {}", mid.offset - kBatchHeaderBytes));
        expect_corruption(Journal::segment_name(mid.segment));
    }
    SECTION("a flipped bit in the last batch of the journal (data in every sector)") {
        const JournalLocation last = written.back();
        const std::string path = segment_path(dir.path(), last.segment);
        const std::string byte = read_bytes(path, last.offset + 5, 1);
        overwrite(path, last.offset + 5, std::string(1, static_cast<char>(byte[0] ^ 0x10)));
        expect_corruption("not a write cut short");
    }
    SECTION("a missing segment") {
        std::filesystem::remove(mid_path);
        expect_corruption("is missing");
    }
    SECTION("a damaged segment header") {
        overwrite(mid_path, 3, "X");
        expect_corruption("bad magic");
    }
    SECTION("an unknown file in the journal directory") {
        std::ofstream(dir.sub("notes.txt")) << "hello";
        expect_corruption("not a journal file");
    }
    SECTION("the last batch of an earlier segment zeroed: not the journal's tail") {
        const JournalLocation first_segment_last = [&] {
            JournalLocation l = written[0];
            for (const JournalLocation& w : written) {
                if (w.segment == written[0].segment) {
                    l = w;
                }
            }
            return l;
        }();
        overwrite(segment_path(dir.path(), first_segment_last.segment), first_segment_last.offset,
                  std::string(first_segment_last.length, '\0'));
        expect_corruption("a later segment holds batches");
    }
}

TEST_CASE("a segment left half prepared is removed, and a prepared spare is kept",
          "[storage][journal]") {
    TempDir dir;
    Seen seen;
    {
        auto journal = must_open(dir.path(), seen);
        journal->append("one", true);
    }
    std::ofstream(dir.sub(Journal::segment_name(7) + ".tmp")) << "partial";
    auto journal = must_open(dir.path(), seen);
    CHECK_FALSE(std::filesystem::exists(dir.sub(Journal::segment_name(7) + ".tmp")));
    REQUIRE(seen.bodies.size() == 1);
    // The background preparer makes segment 2 ready (it needs no more than a moment; the wait is
    // bounded so a stuck preparer fails the test).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!std::filesystem::exists(dir.sub(Journal::segment_name(2))) &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    journal.reset();
    REQUIRE(std::filesystem::exists(dir.sub(Journal::segment_name(2))));
    journal = must_open(dir.path(), seen);
    CHECK(journal->segments() == std::vector<uint64_t>{1});
}

}  // namespace raftlock::storage::test

namespace raftlock::storage::test {

// What replay decodes comes from disk: a cut or flipped byte anywhere must be an error or a
// well-formed value, never a read past the bytes (the sanitizer builds run this too).
TEST_CASE("journal records cut short or damaged are refused, never read past their end",
          "[storage][journal]") {
    Checkpoint checkpoint;
    checkpoint.start = LogStart{10, 2};
    checkpoint.last = 40;
    checkpoint.runs = {{10, 2}, {15, 3}, {30, 5}};
    checkpoint.hard_state = raft::HardState{5, 1, 33};
    SnapshotRecord snap;
    snap.meta.index = 10;
    snap.meta.term = 2;
    snap.meta.conf_state.voters = {1, 2, 3};
    snap.file_name = "snap-10-2.snap";
    snap.size_bytes = 99;
    checkpoint.snapshot = snap;
    const std::string payload = encode_checkpoint(checkpoint);
    auto decoded = decode_checkpoint(payload);
    REQUIRE(decoded.ok());
    CHECK(decoded->runs == checkpoint.runs);
    CHECK(decoded->snapshot == checkpoint.snapshot);
    for (size_t cut = 0; cut < payload.size(); cut++) {
        INFO("checkpoint cut to " << cut << " bytes");
        CHECK_FALSE(decode_checkpoint(payload.substr(0, cut)).ok());
    }
    // Term runs out of order or starting elsewhere than the log start are refused.
    Checkpoint bad = checkpoint;
    bad.runs = {{10, 2}, {30, 5}, {15, 3}};
    CHECK_FALSE(decode_checkpoint(encode_checkpoint(bad)).ok());
    bad.runs = {{11, 2}};
    CHECK_FALSE(decode_checkpoint(encode_checkpoint(bad)).ok());

    BodyWriter writer;
    writer.add(JournalRecord::kCheckpoint, payload);
    writer.add(JournalRecord::kEntry, encode_entry(make_entry(41, 5)));
    writer.add(JournalRecord::kHardState, encode_hard_state(raft::HardState{5, 1, 41}));
    const std::string body = writer.body();
    auto records = split_body(body);
    REQUIRE(records.ok());
    REQUIRE(records->size() == 3);
    CHECK(records->at(1).type == JournalRecord::kEntry);
    for (size_t cut = 0; cut < body.size(); cut++) {
        auto split = split_body(body.substr(0, cut));
        if (split.ok()) {
            // Only a cut at a record boundary frames; the batch's crc is what refuses it on disk.
            CHECK(split->size() < 3);
        }
    }
    for (size_t at = 0; at < body.size(); at++) {
        std::string flipped = body;
        flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
        auto split = split_body(flipped);
        if (!split.ok()) {
            continue;
        }
        for (const RecordView& r : *split) {
            if (r.type == JournalRecord::kCheckpoint) {
                (void)decode_checkpoint(r.payload);
            }
        }
    }
    std::string versioned = body;
    versioned[0] = 2;
    auto refused = split_body(versioned);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("version 2") != std::string::npos);
}

}  // namespace raftlock::storage::test
