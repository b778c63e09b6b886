#include "jepsen/checker/cli.h"

#include <catch2/catch.hpp>

#include "history_builder.h"
#include "jepsen/checker/html_timeline.h"
#include "jepsen/checker/models.h"

namespace raftlock::jepsen {
namespace {

using test::HistoryBuilder;

TEST_CASE("the command line needs a model, a format and files", "[jepsen][cli]") {
    using Args = std::vector<std::string>;
    CHECK(parse_cli(Args{"--model", "kv", "--format", "jsonl", "h.jsonl"}).ok());
    CHECK_FALSE(parse_cli(Args{"--format", "jsonl", "h.jsonl"}).ok());
    CHECK_FALSE(parse_cli(Args{"--model", "kv", "h.jsonl"}).ok());
    CHECK_FALSE(parse_cli(Args{"--model", "kv", "--format", "jsonl"}).ok());
    CHECK_FALSE(parse_cli(Args{"--model", "queue", "--format", "jsonl", "h"}).ok());
    CHECK_FALSE(parse_cli(Args{"--model", "kv", "--format", "edn", "h"}).ok());
    CHECK_FALSE(
        parse_cli(Args{"--model", "kv", "--format", "jsonl", "--budget-ms", "0", "h"}).ok());
    CHECK_FALSE(parse_cli(Args{"--model", "kv", "--format", "jsonl", "--colour", "x", "h"}).ok());
    CHECK_FALSE(parse_cli(Args{"--model", "kv", "--format", "jsonl", "h", "--html"}).ok());
}

TEST_CASE("the command line sets budgets and the html path", "[jepsen][cli]") {
    auto cli = parse_cli({"--model", "mutex", "--format", "jepsen-log", "--budget-ms", "250",
                          "--memory-mb", "64", "--threads", "2", "--html", "out.html", "a", "b"});
    REQUIRE(cli.ok());
    CHECK(cli->model->name() == "mutex");
    CHECK(cli->format == "jepsen-log");
    CHECK(cli->check.budget == std::chrono::milliseconds(250));
    CHECK(cli->check.memory_bytes_max == size_t{64} << 20);
    CHECK(cli->check.threads == 2);
    CHECK(cli->html_path == "out.html");
    CHECK(cli->files == std::vector<std::string>{"a", "b"});
}

TEST_CASE("exit statuses never report unknown as a pass", "[jepsen][cli]") {
    CHECK(exit_status(Verdict::kLinearizable) == 0);
    CHECK(exit_status(Verdict::kNotLinearizable) == 1);
    CHECK(exit_status(Verdict::kUnknown) == 2);
    CHECK(worse_status(0, 2) == 2);
    CHECK(worse_status(2, 1) == 1);
    CHECK(worse_status(1, 3) == 3);
    CHECK(worse_status(3, 0) == 3);
}

TEST_CASE("the html timeline is one self-contained page with a lane per process",
          "[jepsen][html]") {
    HistoryBuilder h;
    h.op(1, "write", "x", "1", "1")
        .invoke(2, "read", "x")
        .op(3, "read", "x", "null", "null")
        .ok(2, "read", "x", "1");
    auto history = parse_jsonl(h.text(), "h<1>.jsonl");
    REQUIRE(history.ok());
    auto ops = pair_operations(*history);
    REQUIRE(ops.ok());
    auto result = check_history(*history, *ops, RegisterModel(false), CheckOptions{});
    REQUIRE(result.ok());
    REQUIRE(result->window);
    std::string page = html_page({render_timeline(*history, *ops, *result)});
    CHECK_THAT(page, Catch::StartsWith("<!DOCTYPE html>"));
    CHECK_THAT(page, Catch::Contains(">process 1<"));
    CHECK_THAT(page, Catch::Contains(">process 3<"));
    CHECK_THAT(page, Catch::Contains("class=\"op stuck\""));
    CHECK_THAT(page, Catch::Contains("h&lt;1&gt;.jsonl"));  // names are escaped
    CHECK_THAT(page, !Catch::Contains("<script"));
    CHECK_THAT(page, !Catch::Contains("http"));
}

}  // namespace
}  // namespace raftlock::jepsen
