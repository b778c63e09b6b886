// Runs the Raft interaction scripts (tests/raft/testdata/*.txt) and compares each command's output
// with the golden output stored right below it, in the datadriven style of etcd-io/raft:
//
//   # Comment lines (and blank lines) between commands are kept as they are.
//   propose 1 foo
//   ----
//   <the expected output: one or more non-blank lines>
//   <a blank line ends it>
//
// The environment and its commands live in tests/raft/interaction_env.{h,cc}; docs/raft.md
// ("Interaction scripts") lists the commands.
//
// Regenerating the goldens: run the test with RAFTLOCK_REWRITE_GOLDEN=1, e.g.
//
//   RAFTLOCK_REWRITE_GOLDEN=1 ctest --test-dir build -R raft_interaction
//
// which rewrites every script in place with the actual output (a command line without a `----`
// line gets one). Review the change with `git diff tests/raft/testdata` as you would review code:
// the diff is the behaviour change.
//
// The scripts' directory comes from the environment variable RAFTLOCK_INTERACTION_TESTDATA (set by
// the CTest test `raft_interaction`), else from the path compiled in by CMake.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/raft/interaction_env.h"

namespace raftlock::raft::interaction {
namespace {

// One command of a script with the verbatim text (comments, blank lines) before it.
struct Block {
    std::string prefix;
    std::string command;
    int line = 0;  // 1-based line of the command, for failure messages
    std::string expected;
};

struct Script {
    std::vector<Block> blocks;
    std::string trailer;  // comments after the last command
};

bool is_verbatim(const std::string& line) {
    return line.empty() || line.front() == '#';
}

Script parse_script(const std::string& text) {
    Script script;
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    std::string pending;
    for (size_t i = 0; i < lines.size();) {
        if (is_verbatim(lines[i])) {
            pending += lines[i++] + "\n";
            continue;
        }
        Block b{std::exchange(pending, {}), lines[i], static_cast<int>(i + 1), {}};
        ++i;
        if (i < lines.size() && lines[i] == "----") {
            // The expected output runs to the next blank line, which belongs to this block.
            for (++i; i < lines.size() && !lines[i].empty(); ++i) {
                b.expected += (b.expected.empty() ? "" : "\n") + lines[i];
            }
        }
        // The blank line that ends a block belongs to it (also when the output is still missing).
        if (i < lines.size() && lines[i].empty()) {
            ++i;
        }
        script.blocks.push_back(std::move(b));
    }
    script.trailer = pending;
    return script;
}

std::string render_script(const Script& script, const std::vector<std::string>& outputs) {
    std::string text;
    for (size_t i = 0; i < script.blocks.size(); ++i) {
        const Block& b = script.blocks[i];
        text += b.prefix + b.command + "\n----\n" + outputs[i] + "\n\n";
    }
    // Drop the blank line after the last output when nothing follows it.
    if (script.trailer.empty() && text.size() >= 2) {
        text.pop_back();
    }
    return text + script.trailer;
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream buf;
    buf << in.rdbuf();
    return buf.str();
}

std::filesystem::path testdata_dir() {
    if (const char* dir = std::getenv("RAFTLOCK_INTERACTION_TESTDATA")) {
        return dir;
    }
    return RAFTLOCK_INTERACTION_TESTDATA_DEFAULT;
}

bool rewrite_requested() {
    const char* flag = std::getenv("RAFTLOCK_REWRITE_GOLDEN");
    return flag != nullptr && std::string(flag) == "1";
}

std::vector<std::filesystem::path> scripts() {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(testdata_dir())) {
        if (e.is_regular_file() && e.path().extension() == ".txt") {
            files.push_back(e.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

void run_script(const std::filesystem::path& path, bool rewrite) {
    const std::string text = read_file(path);
    const Script script = parse_script(text);
    const std::string name = path.filename().string();
    INFO("script " << name);
    // Every script opens with comments that say what it shows and what to look for.
    CHECK(text.rfind("# ", 0) == 0);
    CHECK(!script.blocks.empty());
    InteractionEnv env;
    std::vector<std::string> outputs;
    for (const Block& b : script.blocks) {
        outputs.push_back(env.handle(parse_command(b.command)));
        env.check_invariants();
        INFO(name << ":" << b.line << ": " << b.command);
        // A broken script fails even while rewriting: its golden would only record the mistake.
        CHECK(outputs.back().find(InteractionEnv::kUsageError) == std::string::npos);
        if (!rewrite) {
            CHECK(outputs.back() == b.expected);
        }
    }
    if (rewrite) {
        const std::string updated = render_script(script, outputs);
        if (updated != text) {
            std::ofstream(path, std::ios::binary | std::ios::trunc) << updated;
            WARN("rewrote " << name);
        }
    }
}

TEST_CASE("interaction scripts produce their golden output", "[raft][interaction]") {
    const std::vector<std::filesystem::path> files = scripts();
    REQUIRE(!files.empty());
    const bool rewrite = rewrite_requested();
    for (const auto& path : files) {
        run_script(path, rewrite);
    }
}

TEST_CASE("script files parse into commands with their expected output", "[raft][interaction]") {
    const Script s = parse_script("# c\n\ncmd 1\n----\nout a\nout b\n\n# d\ncmd 2\n----\nok\n");
    REQUIRE(s.blocks.size() == 2);
    CHECK(s.blocks[0].prefix == "# c\n\n");
    CHECK(s.blocks[0].command == "cmd 1");
    CHECK(s.blocks[0].line == 3);
    CHECK(s.blocks[0].expected == "out a\nout b");
    CHECK(s.blocks[1].prefix == "# d\n");
    CHECK(s.blocks[1].expected == "ok");
    CHECK(render_script(s, {"out a\nout b", "ok"}) ==
          "# c\n\ncmd 1\n----\nout a\nout b\n\n# d\ncmd 2\n----\nok\n");
}

TEST_CASE("command lines split into keys, values and lists", "[raft][interaction]") {
    const Command c = parse_command("add-nodes 3 voters=(1, 2,3) prevote=true (4,5)");
    CHECK(c.name == "add-nodes");
    REQUIRE(c.args.size() == 4);
    CHECK(c.args[0].key.empty());
    CHECK(c.args[0].values == std::vector<std::string>{"3"});
    CHECK(c.args[1].key == "voters");
    CHECK(c.args[1].values == std::vector<std::string>{"1", "2", "3"});
    CHECK(c.args[2].values == std::vector<std::string>{"true"});
    CHECK(c.args[3].key.empty());
    CHECK(c.args[3].values == std::vector<std::string>{"4", "5"});
}

}  // namespace
}  // namespace raftlock::raft::interaction
