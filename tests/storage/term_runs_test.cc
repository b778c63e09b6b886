#include "storage/term_runs.h"

#include <catch2/catch.hpp>

namespace raftlock::storage {
namespace {

TEST_CASE("term runs answer the term of every index they cover", "[storage][terms]") {
    TermRuns runs;
    runs.reset(10, 2);
    for (raft::Index i = 11; i <= 20; i++) {
        runs.append(i, i <= 15 ? 2 : (i <= 18 ? 4 : 5));
    }
    CHECK(runs.run_count() == 3);
    CHECK_FALSE(runs.term(9).has_value());
    CHECK(runs.term(10) == 2u);
    CHECK(runs.term(15) == 2u);
    CHECK(runs.term(16) == 4u);
    CHECK(runs.term(19) == 5u);
    CHECK_FALSE(runs.term(21).has_value());

    runs.truncate_after(17);
    CHECK(runs.last() == 17);
    CHECK(runs.run_count() == 2);
    runs.append(18, 6);
    CHECK(runs.term(18) == 6u);

    runs.compact_to(16);
    CHECK(runs.start() == 16);
    CHECK(runs.term(16) == 4u);
    CHECK(runs.term(18) == 6u);
    CHECK_FALSE(runs.term(15).has_value());
    runs.compact_to(18);
    CHECK(runs.run_count() == 1);
    CHECK(runs.term(18) == 6u);
}

}  // namespace
}  // namespace raftlock::storage
