#pragma once

// EVAL's script runner: one Redis script in a fresh, sandboxed Lua 5.1 interpreter (Redis embeds
// 5.1 too), with Redis 7.0's globals, conversions and error texts, made deterministic so that
// every replica that applies the same EVAL to the same keyspace computes the same reply and issues
// the same redis.call sequence.
//
// The sandbox, against stock Redis 7.0:
// - Libraries: base, table, string, math only (no cjson, cmsgpack, struct, bit, os, io, debug,
//   package). Globals removed: dofile, loadfile, load, loadstring, print, getfenv, setfenv,
//   newproxy, module, require. Redis 7.0 keeps load and loadstring; they accept precompiled
//   bytecode, which Lua 5.1 runs unverified (the hole behind Redis's CVE-2015-4335), so they stay
//   out. collectgarbage and gcinfo stay callable but report 0 (the real figures depend on the
//   build); collectgarbage("collect") runs a full collection.
// - tostring of a table, function, coroutine or userdata prints its type and a sequence number
//   given in order of first printing, e.g. "table: #1", instead of an address.
// - math.random / math.randomseed: Redis's 48-bit generator, restarted for every run from the
//   state a freshly started Redis 7.0 has (Redis itself never reseeds it between scripts), so
//   every run sees the sequence of Redis's first script: math.random(100) gives 40, then 85.
// - Tables are allocated at the same offsets on every replica (a private arena aligned to 4 GiB),
//   because Lua orders tables keyed by tables or functions by address: pairs() over such a table
//   walks the same order everywhere.
// - Assigning a new global or reading an undefined one is an error ("Script attempted to create
//   global variable 'x'", "... access nonexistent global variable 'x'"). Redis 7.0 also makes
//   existing globals and library tables read-only; here a script may overwrite them (the
//   interpreter is thrown away after the run, so nothing leaks into the next script).
// - redis.*: call, pcall, error_reply, status_reply, sha1hex, log (accepted and dropped),
//   LOG_DEBUG/LOG_VERBOSE/LOG_NOTICE/LOG_WARNING, replicate_commands (returns true, as in 7.0).
//   Not provided: setresp (scripts always see RESP2 shapes), set_repl and the REPL_* flags,
//   breakpoint, debug, acl_check_cmd, REDIS_VERSION.
// - A "#!lua" first line (Redis 7 shebang) is validated as Redis does and then skipped; its flags
//   (no-writes, allow-oom, ...) are accepted but not enforced by this runner.
//
// Determinism assumes every replica runs the same build in the C locale: Lua formats numbers,
// compares strings (strcoll) and changes case through the C library, and math.sin and friends
// come from libm.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "statemachine/redis/value.h"

namespace raftlock::statemachine::redis {

// The errors of a script stopped by its limits (ScriptLimits).
inline constexpr std::string_view kScriptInstructionLimitError =
    "ERR script exceeded the instruction limit";
inline constexpr std::string_view kScriptMemoryLimitError = "ERR script exceeded the memory limit";

struct ScriptLimits {
    // The script's work budget, in Lua VM instructions (counted by a count hook every 1000
    // instructions), plus the C library's bulk work charged in the same unit: one per 64 bytes
    // the interpreter allocates and one per 16 repetitions of string.rep. Over budget the run
    // fails with "ERR script exceeded the instruction limit"; a script cannot catch that error.
    // Not a strict CPU bound: a single VM instruction or C call can still cost time linear in
    // the data it touches (comparing two long strings, string.find over one, table.insert at the
    // front of a long array), or worse for a backtracking pattern or an adversarial table.sort;
    // the memory limit bounds that data.
    uint64_t instructions_max = 50'000'000;
    // The most bytes the interpreter may hold at once (its allocations, rounded up to the arena's
    // size classes). An allocation over it fails; the run then fails with "ERR script exceeded the
    // memory limit", which the script cannot catch either. The reply the script returns is
    // bounded by the same figure once converted.
    size_t memory_bytes_max = 64u << 20;
};

// What redis.call and redis.pcall run: one command against the keyspace, argv[0] the command name
// as the script wrote it (any case). Returns the command's reply; a failed command returns a Value
// of kind kError ("ERR ...", "WRONGTYPE ...") rather than throwing. It must not throw: it runs
// beneath Lua's C frames, which an exception cannot cross. It may keep no reference to argv.
using ScriptCall = std::function<Value(const Argv& argv)>;

// Runs `body`, the EVAL script, with the global tables KEYS and ARGV, and returns its reply
// converted with Redis's rules (Lua number -> integer, truncated toward zero; string -> bulk;
// true -> 1; false/nil -> null; {ok=s} -> status; {err=s} -> error; other tables -> array up to
// the first nil, at most 1000 levels deep), or an error Value:
// - compile error: "ERR Error compiling script (new function): user_script:1: ...";
// - runtime error: "ERR user_script:<line>: <message> script: <sha1>, on @user_script:<line>.";
// - redis.call of a failing command: the command's error, then " script: <sha1>, on ...";
// - "ERR script exceeded the instruction limit" / "ERR script exceeded the memory limit".
// Deterministic: the same body, keys, args and call replies give the same result and the same
// calls. `call` (non-empty) is invoked synchronously, zero or more times, only during this
// function. Commands a script ran before failing stay run, as in Redis: there is no rollback, and
// after a limit is hit no further command is run. Each run builds and discards its own
// interpreter, about 60 us for a short script. `instructions_used`, when given, receives what the
// run spent of limits.instructions_max (a script that did not compile spent nothing).
Value run_script(std::string_view body,
                 const std::vector<std::string>& keys,
                 const std::vector<std::string>& args,
                 const ScriptCall& call,
                 const ScriptLimits& limits = {},
                 uint64_t* instructions_used = nullptr);

// Compiles `body` without running it (SCRIPT LOAD): empty when it compiles, else the error reply's
// text as Redis words it, starting with its code, e.g. "ERR Error compiling script (new
// function): user_script:1: unexpected symbol near '<eof>'" or "ERR Unexpected flag in script
// shebang: x".
std::string check_script(std::string_view body);

// Empty when this process can reserve the address space a script under `limits` needs (its arena,
// about four times the memory limit, no longer 4 GiB more); else why not. A server checks at
// startup, because a replica that cannot reserve it in the middle of the log must stop.
std::string check_script_memory(const ScriptLimits& limits = {});

}  // namespace raftlock::statemachine::redis
