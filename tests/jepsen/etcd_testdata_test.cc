// Every recorded Jepsen history of etcd gets the verdict that Knossos-era checkers (Horn &
// Kroening's, Porcupine) established for it, listed in VERDICTS.
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include <catch2/catch.hpp>

#include "jepsen/checker/checker.h"
#include "jepsen/checker/models.h"
#include "jepsen/checker/parsers.h"

namespace raftlock::jepsen {
namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

TEST_CASE("every etcd history in the shared testdata gets its recorded verdict", "[jepsen][etcd]") {
    const std::string dir = RAFTLOCK_ETCD_TESTDATA;
    std::istringstream verdicts(slurp(dir + "/VERDICTS"));
    RegisterModel model(false);
    auto start = std::chrono::steady_clock::now();
    int files = 0;
    std::string name;
    std::string expected;
    // Bounded by the VERDICTS file, which lists about a hundred histories.
    while (verdicts >> name >> expected) {
        INFO(name);
        REQUIRE((expected == "linearizable" || expected == "not-linearizable"));
        auto history = parse_jepsen_log(slurp(dir + "/" + name), name);
        REQUIRE(history.ok());
        auto ops = pair_operations(*history);
        REQUIRE(ops.ok());
        auto result = check_history(*history, *ops, model, CheckOptions{});
        REQUIRE(result.ok());
        Verdict want =
            expected == "linearizable" ? Verdict::kLinearizable : Verdict::kNotLinearizable;
        CHECK(result->search_verdict == want);  // the search alone decides,
        CHECK(result->verdict == want);         // and the linear checks agree with it
        if (want == Verdict::kNotLinearizable) {
            CHECK(result->window.has_value());
        }
        ++files;
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "etcd testdata: " << files << " histories checked in " << seconds << " s\n";
    CHECK(files == 102);
}

}  // namespace
}  // namespace raftlock::jepsen
