#include "storage/entry_cache.h"

#include <catch2/catch.hpp>

#include "tests/storage/test_util.h"

namespace raftlock::storage {
namespace {

TEST_CASE("the entry cache keeps the newest entries within its byte budget", "[storage][cache]") {
    const uint64_t size = raft::entry_size_bytes(test::make_entry(1, 1));
    EntryCache cache(size * 3);
    for (raft::Index i = 1; i <= 5; i++) {
        cache.append(test::make_entry(i, 1));
    }
    CHECK(cache.first_index() == 3);
    CHECK(cache.last_index() == 5);
    CHECK(cache.bytes() == size * 3);
    CHECK(cache.at(4) == test::make_entry(4, 1));

    cache.truncate_after(3);
    CHECK(cache.last_index() == 3);
    cache.append(test::make_entry(4, 2));
    CHECK(cache.at(4).term == 2);

    // An entry that does not follow the cached ones restarts the cache.
    cache.append(test::make_entry(9, 2));
    CHECK(cache.first_index() == 9);
    CHECK(cache.bytes() == size);
    cache.drop_before(10);
    CHECK(cache.empty());
    CHECK(cache.bytes() == 0);

    // The newest entry stays even when it alone is over the budget.
    EntryCache tiny(0);
    tiny.append(test::make_entry(1, 1));
    tiny.append(test::make_entry(2, 1));
    CHECK(tiny.first_index() == 2);
    CHECK(tiny.last_index() == 2);
}

}  // namespace
}  // namespace raftlock::storage
