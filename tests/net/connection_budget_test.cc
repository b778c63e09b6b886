#include "net/connection_budget.h"

#include <catch2/catch.hpp>

namespace raftlock::net {
namespace {

TEST_CASE("the budget admits up to its total and per-address limits", "[net][budget]") {
    ConnectionBudget budget(5, 2);
    CHECK(budget.admit("10.0.0.1").empty());
    CHECK(budget.admit("10.0.0.1").empty());
    CHECK_THAT(budget.admit("10.0.0.1"), Catch::Contains("2 connections from 10.0.0.1") &&
                                             Catch::Contains("--max-connections-per-address"));
    CHECK(budget.admit("10.0.0.2").empty());
    CHECK(budget.admit("10.0.0.2").empty());
    CHECK(budget.admit("10.0.0.3").empty());
    CHECK(budget.total() == 5);
    CHECK_THAT(budget.admit("10.0.0.4"), Catch::Contains("this node's 5 client connections"));
    CHECK(budget.refused() == 2);
    // A slot given back is taken again, by its address or another.
    budget.release("10.0.0.1");
    CHECK(budget.admit("10.0.0.4").empty());
    budget.release("10.0.0.2");
    CHECK(budget.admit("10.0.0.1").empty());
    CHECK(!budget.admit("10.0.0.1").empty());
    CHECK(budget.total() == 5);
}

TEST_CASE("an address's count goes when its last connection does", "[net][budget]") {
    ConnectionBudget budget(100, 1);
    for (int round = 0; round < 3; ++round) {
        CHECK(budget.admit("::1").empty());
        CHECK(!budget.admit("::1").empty());
        budget.release("::1");
    }
    CHECK(budget.total() == 0);
}

}  // namespace
}  // namespace raftlock::net
