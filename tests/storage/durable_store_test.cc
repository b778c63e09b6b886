// Which engine a data directory opens with: the one that wrote its store, whatever a new store
// would get, so that upgrading raftlockd never loses or ignores an existing RocksDB store.

#include "storage/durable_store.h"

#include <filesystem>

#include <catch2/catch.hpp>

#include "tests/storage/test_util.h"

namespace raftlock::storage {
namespace {

std::unique_ptr<StoreCore> must_open(const std::string& dir, DurableStoreOptions options = {}) {
    options.journal_segment_bytes = 1 << 20;
    auto store = open_durable_store(dir, options);
    if (!store.ok()) {
        FAIL(store.error().message);
    }
    return std::move(store).value();
}

}  // namespace

TEST_CASE("a store opens with the engine that wrote it; a new one with the engine asked for",
          "[storage][engine]") {
    test::TempDir dir;
    DurableStoreOptions rocks;
    rocks.new_store_engine = StoreEngine::kRocksDb;
    {
        auto fresh = must_open(dir.sub("a"));
        CHECK(std::string(fresh->engine()) == "journal");
        fresh->append(test::make_entries(1, 4, 1));
        auto old = must_open(dir.sub("b"), rocks);
        CHECK(std::string(old->engine()) == "rocksdb");
        old->append(test::make_entries(1, 6, 2));
    }
    // Reopened with the other engine asked for: each keeps its own, with its entries.
    auto a = must_open(dir.sub("a"), rocks);
    CHECK(std::string(a->engine()) == "journal");
    CHECK(a->last_index() == 3);
    auto b = must_open(dir.sub("b"));
    CHECK(std::string(b->engine()) == "rocksdb");
    CHECK(b->last_index() == 5);
    CHECK(b->term(5).value() == 2);
    a.reset();
    b.reset();

    DurableStoreOptions read_only;
    read_only.read_only = true;
    auto missing = open_durable_store(dir.sub("c"), read_only);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find("no store in") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.sub("c")));  // read-only creates nothing

    // Two stores in one directory: which is the node's? Refused rather than guessed.
    std::filesystem::create_directories(dir.sub("a/db"));
    auto both = open_durable_store(dir.sub("a"));
    REQUIRE_FALSE(both.ok());
    CHECK(both.error().message.find("two stores") != std::string::npos);
}

}  // namespace raftlock::storage
