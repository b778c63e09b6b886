#include "statemachine/redis/lua_script.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>

#include <lua.hpp>
#include <sys/mman.h>

#include "base/digest.h"

// Lua 5.1 (Debian's, compiled as C) reports errors with longjmp. A longjmp that skips a C++ frame
// holding an object with a destructor leaks it at best, so every function here that calls a Lua
// API function able to raise (anything that allocates, luaL_check*, lua_error) holds only trivially
// destructible locals: views, numbers, pointers, fixed buffers. C++ objects that must outlive a
// Lua call (redis.call's argv and reply, the converted result, the error text) live in the
// RunContext, which run_script owns outside every Lua frame. The functions that build std::strings
// (the error handler, the reply conversion) call only Lua functions that cannot raise there.

namespace raftlock::statemachine::redis {

namespace {

// redis_lua does not link raft/, so its RL_ASSERT is not available here; a broken invariant in the
// sandbox is just as fatal.
[[noreturn]] void fail_stop(const char* what) {
    std::fprintf(stderr, "lua_script: %s\n", what);
    std::abort();
}

#define SCRIPT_ASSERT(cond)                        \
    do {                                           \
        if (!(cond)) [[unlikely]] {                \
            fail_stop("assertion failed: " #cond); \
        }                                          \
    } while (0)

constexpr const char* kChunkName = "@user_script";
constexpr int kHookInstructions = 1000;
// The budget's price of the C library's bulk work, in instructions: roughly what the same work
// costs the VM, so that string.rep('', 1e15) or building strings in a loop cannot run unbounded.
constexpr uint64_t kAllocatedBytesPerInstruction = 64;
constexpr uint64_t kRepetitionsPerInstruction = 16;
constexpr int kReplyDepthMax = 1000;
constexpr int kLogLevelMax = 3;  // redis.LOG_WARNING

constexpr const char* kStackLimitError = "ERR reached lua stack limit";
constexpr const char* kReplyTooBigError = "ERR script reply exceeds the memory limit";

// ---------------------------------------------------------------------------------------------
// The arena: deterministic addresses for Lua's objects.

constexpr size_t kRegionAlignment = size_t{1} << 32;
constexpr size_t kCommitStep = size_t{1} << 20;

// Lua's allocations for one run, carved from a private region whose start is 4 GiB-aligned. Lua
// 5.1 hashes a table key that is a table, function or coroutine by the low 32 bits of its address,
// so pairs() walks such keys in an order set by addresses. Here every address is base + offset,
// the base's low 32 bits are zero and the offsets come from this deterministic allocator, so that
// order is the same on every replica (malloc's addresses differ between processes). Blocks come
// in size classes (16-byte steps up to 512 bytes, then powers of two), with a free list per class
// and no coalescing; the region is committed 1 MiB at a time as the bump pointer advances, and
// unmapped when the run ends.
class Arena final {
public:
    explicit Arena(size_t capacity_bytes);
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;

    // lua_Alloc's contract for a live or null block: a block of `new_bytes` (> 0) holding the first
    // min(old, new) bytes of `block`, or null when growing would take the bytes in use past
    // `in_use_max` or run past the region. Shrinking never fails, as Lua requires.
    void* resize(void* block, size_t old_bytes, size_t new_bytes, size_t in_use_max);
    void release(void* block, size_t bytes);

private:
    static constexpr size_t kSmallStep = 16;
    static constexpr size_t kSmallMax = 512;
    static constexpr size_t kSmallClasses = kSmallMax / kSmallStep;
    // Powers of two from 1 KiB to 4 GiB, the most a region may hold.
    static constexpr size_t kClassCount = kSmallClasses + 23;

    static size_t class_of(size_t bytes);
    static size_t class_bytes(size_t cls);
    void* take(size_t bytes, size_t in_use_max);
    void commit_through(size_t offset_end);

    std::byte* reservation_ = nullptr;
    size_t reservation_bytes_ = 0;
    std::byte* base_ = nullptr;
    size_t capacity_bytes_ = 0;
    size_t top_ = 0;
    size_t committed_ = 0;
    size_t in_use_bytes_ = 0;
    std::array<void*, kClassCount> free_{};
};

// Where a region may start: 4 GiB-aligned addresses in the middle of the 47-bit user space, above
// AddressSanitizer's shadow (which ends near 16 TiB) and below where the kernel puts mmap regions
// and stacks (near 128 TiB). Any of them gives the same low 32 bits; the first free one is used.
constexpr uintptr_t kRegionCandidateFirst = uintptr_t{0x2000} << 32;  // 32 TiB
constexpr uintptr_t kRegionCandidateStep = uintptr_t{0x100} << 32;    // 1 TiB
constexpr int kRegionCandidates = 64;

// `bytes` of address space (PROT_NONE, nothing committed) at `at` exactly, or null.
std::byte* reserve_at(uintptr_t at, size_t bytes) {
    void* p = mmap(reinterpret_cast<void*>(at), bytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
        return nullptr;
    }
    if (reinterpret_cast<uintptr_t>(p) != at) {  // a kernel older than 4.17 took it as a hint
        munmap(p, bytes);
        return nullptr;
    }
    return static_cast<std::byte*>(p);
}

// A region of `capacity` bytes whose start has zero low 32 bits, reserved (PROT_NONE, nothing
// committed); null when the address space is exhausted (`ulimit -v`).
struct Region {
    std::byte* reservation = nullptr;
    size_t reservation_bytes = 0;
    std::byte* base = nullptr;
};

Region reserve_region(size_t capacity) {
    // Only the capacity is reserved, at an aligned address: under `ulimit -v` (which counts
    // reserved address space) a script needs what its memory limit allows, not 4 GiB more.
    Region r;
    for (int i = 0; i < kRegionCandidates && r.reservation == nullptr; ++i) {
        r.reservation =
            reserve_at(kRegionCandidateFirst + uintptr_t(i) * kRegionCandidateStep, capacity);
    }
    if (r.reservation != nullptr) {
        r.reservation_bytes = capacity;
        r.base = r.reservation;
        return r;
    }
    // Every candidate taken (a sanitizer with another memory layout): reserve enough to find an
    // aligned start anywhere.
    r.reservation_bytes = kRegionAlignment + capacity;
    void* reserved = mmap(nullptr, r.reservation_bytes, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) {
        return Region{};
    }
    r.reservation = static_cast<std::byte*>(reserved);
    const auto start = reinterpret_cast<uintptr_t>(r.reservation);
    const uintptr_t aligned = (start + kRegionAlignment - 1) & ~uintptr_t{kRegionAlignment - 1};
    r.base = r.reservation + (aligned - start);
    return r;
}

// One region per thread kept for the next run: reserving, committing and unmapping a region for
// every script (and faulting in its pages again) cost about a quarter of a short script's run.
// A reused region gives the same addresses as a fresh one (the allocator starts again at offset
// 0), so replies do not depend on which run came first; what the last run left in its pages is
// never read (Lua initializes what it allocates). A region that grew past kCachedCommitMax is
// unmapped rather than kept, so one large script does not hold its memory for the thread's life.
constexpr size_t kCachedCommitMax = size_t{8} << 20;

struct CachedRegion {
    Region region;
    size_t capacity = 0;
    size_t committed = 0;

    CachedRegion() = default;
    CachedRegion(const CachedRegion&) = delete;
    CachedRegion& operator=(const CachedRegion&) = delete;
    ~CachedRegion() {
        if (region.reservation != nullptr) {
            munmap(region.reservation, region.reservation_bytes);
        }
    }
};

thread_local CachedRegion cached_region;

// The arena's capacity for a memory limit: room for fragmentation (no coalescing) of up to four
// times the limit, in whole commit steps, at most one aligned region.
size_t arena_capacity(size_t memory_bytes_max) {
    const size_t wanted = std::min(memory_bytes_max, size_t{1} << 30) * 4 + kCommitStep;
    return std::min(kRegionAlignment, (wanted + kCommitStep - 1) / kCommitStep * kCommitStep);
}

Arena::Arena(size_t capacity_bytes) : capacity_bytes_(capacity_bytes) {
    SCRIPT_ASSERT(capacity_bytes_ >= kCommitStep && capacity_bytes_ % kCommitStep == 0);
    SCRIPT_ASSERT(capacity_bytes_ <= kRegionAlignment);
    CachedRegion& cached = cached_region;
    if (cached.region.reservation != nullptr && cached.capacity == capacity_bytes_) {
        reservation_ = cached.region.reservation;
        reservation_bytes_ = cached.region.reservation_bytes;
        base_ = cached.region.base;
        committed_ = cached.committed;
        cached.region = Region{};
        SCRIPT_ASSERT((reinterpret_cast<uintptr_t>(base_) & 0xFFFFFFFFu) == 0);
        SCRIPT_ASSERT(committed_ <= capacity_bytes_ && committed_ % kCommitStep == 0);
        return;
    }
    const Region region = reserve_region(capacity_bytes_);
    if (region.reservation == nullptr) {
        // The host is out of address space (startup checks for it: check_script_memory). Failing
        // the script instead would make this replica's reply differ from the others'.
        fail_stop("cannot reserve address space for the Lua arena");
    }
    reservation_ = region.reservation;
    reservation_bytes_ = region.reservation_bytes;
    base_ = region.base;
    SCRIPT_ASSERT((reinterpret_cast<uintptr_t>(base_) & 0xFFFFFFFFu) == 0);
    SCRIPT_ASSERT(base_ + capacity_bytes_ <= reservation_ + reservation_bytes_);
}

Arena::~Arena() {
    CachedRegion& cached = cached_region;
    if (committed_ > kCachedCommitMax) {
        munmap(reservation_, reservation_bytes_);
        return;
    }
    // The newest region replaces a cached one of another capacity (the limit changed).
    if (cached.region.reservation != nullptr) {
        munmap(cached.region.reservation, cached.region.reservation_bytes);
    }
    cached.region = Region{reservation_, reservation_bytes_, base_};
    cached.capacity = capacity_bytes_;
    cached.committed = committed_;
}

size_t Arena::class_of(size_t bytes) {
    SCRIPT_ASSERT(bytes > 0);
    if (bytes <= kSmallMax) {
        return (bytes + kSmallStep - 1) / kSmallStep - 1;
    }
    // (512, 1024] is the first power-of-two class.
    return kSmallClasses + static_cast<size_t>(std::bit_width(bytes - 1)) - 10;
}

size_t Arena::class_bytes(size_t cls) {
    SCRIPT_ASSERT(cls < kClassCount);
    if (cls < kSmallClasses) {
        return (cls + 1) * kSmallStep;
    }
    return size_t{1024} << (cls - kSmallClasses);
}

void* Arena::take(size_t bytes, size_t in_use_max) {
    if (bytes > capacity_bytes_) {
        return nullptr;
    }
    const size_t cls = class_of(bytes);
    const size_t size = class_bytes(cls);
    if (size > in_use_max || in_use_bytes_ > in_use_max - size) {
        return nullptr;
    }
    void* block = free_[cls];
    if (block != nullptr) {
        std::memcpy(&free_[cls], block, sizeof(void*));
    } else {
        if (size > capacity_bytes_ - top_) {
            return nullptr;
        }
        SCRIPT_ASSERT(top_ % kSmallStep == 0);  // every class is a multiple of 16 bytes
        block = base_ + top_;
        top_ += size;
        commit_through(top_);
    }
    in_use_bytes_ += size;
    return block;
}

void Arena::commit_through(size_t offset_end) {
    if (offset_end <= committed_) {
        return;
    }
    const size_t target =
        std::min(capacity_bytes_, (offset_end + kCommitStep - 1) / kCommitStep * kCommitStep);
    if (mprotect(base_ + committed_, target - committed_, PROT_READ | PROT_WRITE) != 0) {
        // The machine is out of memory: failing the script instead would make this replica's
        // reply differ from the others'.
        fail_stop("cannot commit memory for the Lua arena");
    }
    committed_ = target;
}

void* Arena::resize(void* block, size_t old_bytes, size_t new_bytes, size_t in_use_max) {
    if (block == nullptr) {
        return take(new_bytes, in_use_max);
    }
    if (class_of(old_bytes) == class_of(new_bytes)) {
        return block;
    }
    const bool shrinking = new_bytes < old_bytes;
    void* fresh = take(new_bytes, shrinking ? std::numeric_limits<size_t>::max() : in_use_max);
    if (fresh == nullptr) {
        // Only a full region can refuse a shrink. Keeping the larger block is safe: freed as the
        // smaller size, it joins the smaller class's list, and the bytes in use stay overcounted,
        // which errs toward the limit.
        return shrinking ? block : nullptr;
    }
    std::memcpy(fresh, block, std::min(old_bytes, new_bytes));
    release(block, old_bytes);
    return fresh;
}

void Arena::release(void* block, size_t bytes) {
    const size_t cls = class_of(bytes);
    const size_t size = class_bytes(cls);
    SCRIPT_ASSERT(in_use_bytes_ >= size);
    std::memcpy(block, &free_[cls], sizeof(void*));
    free_[cls] = block;
    in_use_bytes_ -= size;
}

// ---------------------------------------------------------------------------------------------
// One run's state, reachable from any lua_State of the run as the allocator's userdata.

enum class Abort : uint8_t { kNone, kInstructions, kMemory };

// What a raised error said and where, recorded by the top-level error handler.
struct RaisedError {
    bool raised = false;
    std::string text;  // with its code: "ERR user_script:1: boom", "WRONGTYPE ..."
    bool located = false;
    std::string source;  // "@user_script"
    int line = 0;
};

struct RunContext {
    explicit RunContext(const ScriptLimits& limits_in)
        : limits(limits_in), arena(arena_capacity(limits_in.memory_bytes_max)) {}

    const ScriptLimits limits;
    Arena arena;

    // Limits. Metering starts when the script does, so the sandbox's setup is free.
    bool metering = false;
    uint64_t instructions_used = 0;
    Abort abort = Abort::kNone;
    bool memory_limit_lifted = false;  // while converting the reply of a script that finished

    // Inputs.
    std::string_view code;
    const std::vector<std::string>* keys = nullptr;
    const std::vector<std::string>* args = nullptr;
    const ScriptCall* call = nullptr;

    // redis.call's scratch, owned here so that no Lua error skips their destructors.
    Argv call_argv;
    Value call_reply;

    // Sandbox state.
    uint64_t rng_state = 0;
    uint64_t objects_named = 0;
    int err_key_ref = LUA_NOREF;  // registry references to the strings "err" and "ok", so that
    int ok_key_ref = LUA_NOREF;   // reading those fields never allocates
    int object_names_ref = LUA_NOREF;

    // Outcome.
    std::string compile_error;
    RaisedError error;
    bool finished = false;
    const char* reply_error = nullptr;
    size_t reply_bytes = 0;
    Value result;
};

RunContext& context_of(lua_State* L) {
    void* ud = nullptr;
    lua_getallocf(L, &ud);
    SCRIPT_ASSERT(ud != nullptr);
    return *static_cast<RunContext*>(ud);
}

// Charges `units` instructions to the budget; false (and the run aborted) when it is spent.
bool spend(RunContext& ctx, uint64_t units) {
    if (!ctx.metering) {
        return true;
    }
    const uint64_t room =
        ctx.limits.instructions_max - std::min(ctx.instructions_used, ctx.limits.instructions_max);
    if (units > room) {
        ctx.instructions_used = ctx.limits.instructions_max;
        if (ctx.abort == Abort::kNone) {
            ctx.abort = Abort::kInstructions;
        }
        return false;
    }
    ctx.instructions_used += units;
    return true;
}

void count_hook(lua_State* L, lua_Debug* /*ar*/);

// Stops the running coroutine for good. pcall can catch the error, so the hook is set to fire on
// every instruction of this coroutine, and the allocator refuses to grow anything once the run is
// aborted: whatever catches it, the next instruction raises again, until the top level.
[[noreturn]] void raise_abort(lua_State* L) {
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
    lua_pushliteral(L, "script aborted");
    lua_error(L);
    fail_stop("lua_error returned");
}

void count_hook(lua_State* L, lua_Debug* /*ar*/) {
    RunContext& ctx = context_of(L);
    if (ctx.abort == Abort::kNone) {
        spend(ctx, kHookInstructions);
    }
    if (ctx.abort != Abort::kNone) {
        raise_abort(L);
    }
}

void* lua_allocate(void* ud, void* block, size_t old_bytes, size_t new_bytes) {
    RunContext& ctx = *static_cast<RunContext*>(ud);
    if (new_bytes == 0) {
        if (block != nullptr) {
            ctx.arena.release(block, old_bytes);
        }
        return nullptr;
    }
    if (block == nullptr) {
        old_bytes = 0;
    }
    if (new_bytes <= old_bytes || ctx.memory_limit_lifted) {
        return ctx.arena.resize(block, old_bytes, new_bytes, std::numeric_limits<size_t>::max());
    }
    if (ctx.abort != Abort::kNone ||
        !spend(ctx, (new_bytes - old_bytes) / kAllocatedBytesPerInstruction)) {
        return nullptr;
    }
    void* grown = ctx.arena.resize(block, old_bytes, new_bytes, ctx.limits.memory_bytes_max);
    if (grown == nullptr) {
        ctx.abort = Abort::kMemory;
    }
    return grown;
}

int on_panic(lua_State* L) {
    const char* message = lua_tostring(L, -1);
    std::fprintf(stderr, "lua_script: unprotected Lua error: %s\n", message ? message : "?");
    fail_stop("Lua panic");
}

// ---------------------------------------------------------------------------------------------
// Error texts, as Redis shapes them.

struct ErrorParts {
    std::string_view code;
    std::string_view message;
};

std::string_view trim_newlines(std::string_view text) {
    while (!text.empty() && (text.front() == '\r' || text.front() == '\n')) {
        text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == '\r' || text.back() == '\n')) {
        text.remove_suffix(1);
    }
    return text;
}

// Redis's reading of an error text (luaPushErrorBuff): the first word is the code, or "ERR" when
// there is only one word; the rest loses surrounding newlines.
ErrorParts split_error(std::string_view text) {
    const size_t space = text.find(' ');
    if (space == std::string_view::npos) {
        return {"ERR", trim_newlines(text)};
    }
    return {text.substr(0, space), trim_newlines(text.substr(space + 1))};
}

// Pushes redis.pcall's form of an error, {err = "<code> <message>"}.
void push_error_table(lua_State* L, std::string_view code, std::string_view message) {
    lua_createtable(L, 0, 1);
    lua_pushlstring(L, code.data(), code.size());
    lua_pushliteral(L, " ");
    lua_pushlstring(L, message.data(), message.size());
    lua_concat(L, 3);
    lua_setfield(L, -2, "err");
}

[[noreturn]] void raise_error_table(lua_State* L, const char* message) {
    push_error_table(L, "ERR", message);
    lua_error(L);
    fail_stop("lua_error returned");
}

// An error or status line as a reply carries it: no newlines (Redis maps them to spaces).
std::string single_line(std::string_view text) {
    std::string line(text);
    std::replace(line.begin(), line.end(), '\r', ' ');
    std::replace(line.begin(), line.end(), '\n', ' ');
    return line;
}

// ---------------------------------------------------------------------------------------------
// redis.call and its relatives.

// Converts a reply to Lua as Redis does for a RESP2 script: integer -> number, bulk -> string,
// null -> false, double -> string, array (and map, push, set, pairs, flattened) -> table, status ->
// {ok=}, error -> {err=}.
void push_reply(lua_State* L, const Value& reply, int depth) {
    if (depth > kReplyDepthMax || !lua_checkstack(L, 4)) {
        luaL_error(L, "reached lua stack limit");
    }
    switch (reply.kind) {
        case Value::Kind::kNull:
        case Value::Kind::kNullArray:
            lua_pushboolean(L, 0);
            return;
        case Value::Kind::kSimple:
            lua_createtable(L, 0, 1);
            lua_pushlstring(L, reply.text.data(), reply.text.size());
            lua_setfield(L, -2, "ok");
            return;
        case Value::Kind::kError: {
            const ErrorParts parts = split_error(reply.text);
            push_error_table(L, parts.code, parts.message);
            return;
        }
        case Value::Kind::kInteger:
            lua_pushnumber(L, static_cast<lua_Number>(reply.integer));
            return;
        case Value::Kind::kBulk:
        case Value::Kind::kDouble:  // RESP2 has no doubles: a bulk string to a script
            lua_pushlstring(L, reply.text.data(), reply.text.size());
            return;
        case Value::Kind::kArray:
        case Value::Kind::kMap:
        case Value::Kind::kPush:
        case Value::Kind::kSet:
        case Value::Kind::kPairs:
            lua_createtable(L, static_cast<int>(std::min<size_t>(reply.items.size(), INT32_MAX)),
                            0);
            for (size_t i = 0; i < reply.items.size(); i++) {
                push_reply(L, reply.items[i], depth + 1);
                lua_rawseti(L, -2, static_cast<int>(i + 1));
            }
            return;
    }
    fail_stop("unknown reply kind");
}

// Copies redis.call's arguments into ctx.call_argv. Returns null, or Redis's text for arguments
// it refuses. Numbers become text as Redis 7.0 writes them ("%.17g": 10 -> "10").
const char* collect_call_argv(lua_State* L, RunContext& ctx) {
    const int argc = lua_gettop(L);
    ctx.call_argv.clear();
    if (argc == 0) {
        return "Please specify at least one argument for this redis lib call";
    }
    for (int i = 1; i <= argc; i++) {
        if (lua_type(L, i) == LUA_TNUMBER) {
            std::array<char, 64> text;
            const int size = std::snprintf(text.data(), text.size(), "%.17g", lua_tonumber(L, i));
            ctx.call_argv.emplace_back(text.data(), static_cast<size_t>(size));
        } else if (lua_type(L, i) == LUA_TSTRING) {
            size_t size = 0;
            const char* text = lua_tolstring(L, i, &size);
            ctx.call_argv.emplace_back(text, size);
        } else {
            ctx.call_argv.clear();
            return "Lua redis lib command arguments must be strings or integers";
        }
    }
    return nullptr;
}

// redis.call raises a failed command's error ({err=...}, which the top level reports with the
// script's position); redis.pcall returns it.
int redis_command(lua_State* L, bool raise) {
    RunContext& ctx = context_of(L);
    if (ctx.abort != Abort::kNone) {
        // A script that caught the limit's error gets no further command run.
        raise_abort(L);
    }
    const char* refused = collect_call_argv(L, ctx);
    if (refused != nullptr) {
        push_error_table(L, "ERR", refused);
    } else {
        ctx.call_reply = (*ctx.call)(ctx.call_argv);
        ctx.call_argv.clear();
        raise = raise && ctx.call_reply.is_error();
        push_reply(L, ctx.call_reply, 0);
    }
    if (raise) {
        return lua_error(L);
    }
    return 1;
}

int redis_call(lua_State* L) {
    return redis_command(L, true);
}

int redis_pcall(lua_State* L) {
    return redis_command(L, false);
}

int redis_sha1hex(lua_State* L) {
    if (lua_gettop(L) != 1) {
        raise_error_table(L, "wrong number of arguments");
    }
    // Like Redis: a number is hashed as Lua writes it, any other non-string as "".
    size_t size = 0;
    const char* text = lua_tolstring(L, 1, &size);
    const std::array<char, 40> hex = base::hex_chars(
        base::sha1(text != nullptr ? std::string_view(text, size) : std::string_view()));
    lua_pushlstring(L, hex.data(), hex.size());
    return 1;
}

int redis_error_reply(lua_State* L) {
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        push_error_table(L, "ERR", "wrong number or type of arguments");
        return 1;
    }
    size_t size = 0;
    const char* data = lua_tolstring(L, 1, &size);
    std::string_view text(data, size);
    if (!text.empty() && text.front() == '-') {
        text.remove_prefix(1);
    }
    const ErrorParts parts = split_error(text);
    push_error_table(L, parts.code, parts.message);
    return 1;
}

int redis_status_reply(lua_State* L) {
    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING) {
        push_error_table(L, "ERR", "wrong number or type of arguments");
        return 1;
    }
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "ok");
    return 1;
}

// redis.log checks its arguments as Redis does, then drops the message: the state machine has no
// log, and a replica's log is not part of the replicated outcome.
int redis_log(lua_State* L) {
    if (lua_gettop(L) < 2) {
        raise_error_table(L, "redis.log() requires two arguments or more.");
    }
    if (!lua_isnumber(L, 1)) {
        raise_error_table(L, "First argument must be a number (log level).");
    }
    // Redis truncates the level to an int; these bounds accept exactly what truncates to 0..3.
    const lua_Number level = lua_tonumber(L, 1);
    if (!(level > -1 && level < kLogLevelMax + 1)) {
        raise_error_table(L, "Invalid debug level.");
    }
    return 0;
}

// Scripts written for Redis 3.2 to 6 call this first; 7.0 always replicates effects and returns
// true, as here.
int redis_replicate_commands(lua_State* L) {
    lua_pushboolean(L, 1);
    return 1;
}

// ---------------------------------------------------------------------------------------------
// Replacements for base and library functions.

// tostring without addresses: tables, functions, coroutines and userdata are named by their type
// and a number given in order of first printing ("table: #1"), remembered in a weak table so the
// same object keeps its name.
int sandbox_tostring(lua_State* L) {
    luaL_checkany(L, 1);
    if (luaL_callmeta(L, 1, "__tostring")) {
        return 1;
    }
    switch (lua_type(L, 1)) {
        case LUA_TNIL:
            lua_pushliteral(L, "nil");
            return 1;
        case LUA_TBOOLEAN:
            lua_pushstring(L, lua_toboolean(L, 1) ? "true" : "false");
            return 1;
        case LUA_TNUMBER:
            lua_pushvalue(L, 1);
            lua_tostring(L, -1);  // converts the copy in place
            return 1;
        case LUA_TSTRING:
            lua_pushvalue(L, 1);
            return 1;
        default:
            break;
    }
    RunContext& ctx = context_of(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx.object_names_ref);
    lua_pushvalue(L, 1);
    lua_rawget(L, -2);
    uint64_t number = static_cast<uint64_t>(lua_tonumber(L, -1));
    if (number == 0) {
        number = ++ctx.objects_named;
        lua_pushvalue(L, 1);
        lua_pushnumber(L, static_cast<lua_Number>(number));
        lua_rawset(L, -4);
    }
    std::array<char, 64> name;
    std::snprintf(name.data(), name.size(), "%s: #%llu", luaL_typename(L, 1),
                  static_cast<unsigned long long>(number));
    lua_pushstring(L, name.data());
    return 1;
}

// Redis 7's pcall: redis.call raises {err=...} tables, and scripts written for older versions
// expect pcall to hand back the error's text, so a table with an err field becomes that field.
int sandbox_pcall(lua_State* L) {
    luaL_checkany(L, 1);
    const int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    if (status != 0 && lua_istable(L, -1)) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, context_of(L).err_key_ref);
        lua_rawget(L, -2);
        if (lua_isstring(L, -1)) {
            lua_replace(L, -2);
        } else {
            lua_pop(L, 1);
        }
    }
    lua_pushboolean(L, status == 0);
    lua_insert(L, 1);
    return lua_gettop(L);
}

// The collector's figures depend on the build, so every option reports 0; "collect" still runs a
// full collection, and "stop" is ignored (a stopped collector only hastens the memory limit).
int sandbox_collectgarbage(lua_State* L) {
    static const char* const kOptions[] = {"stop", "restart",  "collect",    "count",
                                           "step", "setpause", "setstepmul", nullptr};
    constexpr int kCollect = 2;
    if (luaL_checkoption(L, 1, "collect", kOptions) == kCollect) {
        lua_gc(L, LUA_GCCOLLECT, 0);
    }
    lua_pushnumber(L, 0);
    return 1;
}

int sandbox_gcinfo(lua_State* L) {
    lua_pushnumber(L, 0);
    return 1;
}

// Redis's math.random generator: 48-bit linear congruential, the drand48 family's constants,
// returning the top 31 bits; Redis implements it itself so that every platform gives the same
// sequence. Redis 7.0 starts it once per server and never reseeds it between scripts, so its
// sequence depends on the scripts run before. Here every run starts from the state a freshly
// started Redis has, so each script sees what Redis's first script would.
constexpr uint64_t kRngInitialState = 0x1234ABCD330Eull;
constexpr uint64_t kRngMultiplier = 0x5DEECE66Dull;
constexpr uint64_t kRngIncrement = 0xB;
constexpr uint64_t kRngMask = (uint64_t{1} << 48) - 1;
constexpr int32_t kRngMax = std::numeric_limits<int32_t>::max();

void seed_rng(RunContext& ctx, int32_t seed) {
    ctx.rng_state = (uint64_t{static_cast<uint32_t>(seed)} << 16 | 0x330E) & kRngMask;
}

int32_t next_rng(RunContext& ctx) {
    ctx.rng_state = (ctx.rng_state * kRngMultiplier + kRngIncrement) & kRngMask;
    return static_cast<int32_t>(ctx.rng_state >> 17);
}

// Lua 5.1's math.random over Redis's generator (a number is drawn even when the arguments are
// then refused, as in Redis).
int sandbox_math_random(lua_State* L) {
    const lua_Number r = static_cast<lua_Number>(next_rng(context_of(L)) % kRngMax) /
                         static_cast<lua_Number>(kRngMax);
    switch (lua_gettop(L)) {
        case 0:
            lua_pushnumber(L, r);
            return 1;
        case 1: {
            const int upper = luaL_checkint(L, 1);
            luaL_argcheck(L, 1 <= upper, 1, "interval is empty");
            lua_pushnumber(L, std::floor(r * upper) + 1);
            return 1;
        }
        case 2: {
            const int lower = luaL_checkint(L, 1);
            const int upper = luaL_checkint(L, 2);
            luaL_argcheck(L, lower <= upper, 2, "interval is empty");
            const lua_Number span = static_cast<lua_Number>(upper) - lower + 1;
            lua_pushnumber(L, std::floor(r * span) + lower);
            return 1;
        }
        default:
            return luaL_error(L, "wrong number of arguments");
    }
}

int sandbox_math_randomseed(lua_State* L) {
    seed_rng(context_of(L), luaL_checkint(L, 1));
    return 0;
}

// Lua 5.1's string.rep, charged to the budget up front: rep('', 2^31) would otherwise loop for
// seconds without allocating or running an instruction.
int sandbox_string_rep(lua_State* L) {
    size_t size = 0;
    const char* text = luaL_checklstring(L, 1, &size);
    int count = luaL_checkint(L, 2);
    if (count > 0 &&
        !spend(context_of(L), static_cast<uint64_t>(count) / kRepetitionsPerInstruction)) {
        raise_abort(L);
    }
    luaL_Buffer buffer;
    luaL_buffinit(L, &buffer);
    for (; count > 0; count--) {
        luaL_addlstring(&buffer, text, size);
    }
    luaL_pushresult(&buffer);
    return 1;
}

int global_index(lua_State* L) {
    return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                      lua_tostring(L, 2));
}

int global_newindex(lua_State* L) {
    return luaL_error(L, "Script attempted to create global variable '%s'", lua_tostring(L, 2));
}

// ---------------------------------------------------------------------------------------------
// The sandbox.

void open_library(lua_State* L, const char* name, lua_CFunction open) {
    lua_pushcfunction(L, open);
    lua_pushstring(L, name);
    lua_call(L, 1, 0);
}

void set_global_function(lua_State* L, const char* name, lua_CFunction function) {
    lua_pushcfunction(L, function);
    lua_setglobal(L, name);
}

void set_field_function(lua_State* L, const char* name, lua_CFunction function) {
    lua_pushcfunction(L, function);
    lua_setfield(L, -2, name);
}

void set_field_number(lua_State* L, const char* name, lua_Number number) {
    lua_pushnumber(L, number);
    lua_setfield(L, -2, name);
}

int registry_ref_string(lua_State* L, const char* text) {
    lua_pushstring(L, text);
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

void push_string_array(lua_State* L, const std::vector<std::string>& items) {
    lua_createtable(L, static_cast<int>(std::min<size_t>(items.size(), INT32_MAX)), 0);
    for (size_t i = 0; i < items.size(); i++) {
        lua_pushlstring(L, items[i].data(), items[i].size());
        lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
}

void open_redis_api(lua_State* L) {
    lua_newtable(L);
    set_field_function(L, "call", redis_call);
    set_field_function(L, "pcall", redis_pcall);
    set_field_function(L, "sha1hex", redis_sha1hex);
    set_field_function(L, "error_reply", redis_error_reply);
    set_field_function(L, "status_reply", redis_status_reply);
    set_field_function(L, "log", redis_log);
    set_field_function(L, "replicate_commands", redis_replicate_commands);
    set_field_number(L, "LOG_DEBUG", 0);
    set_field_number(L, "LOG_VERBOSE", 1);
    set_field_number(L, "LOG_NOTICE", 2);
    set_field_number(L, "LOG_WARNING", kLogLevelMax);
    lua_setglobal(L, "redis");
}

void replace_library_functions(lua_State* L) {
    lua_getglobal(L, "math");
    set_field_function(L, "random", sandbox_math_random);
    set_field_function(L, "randomseed", sandbox_math_randomseed);
    lua_pop(L, 1);
    lua_getglobal(L, "string");
    set_field_function(L, "rep", sandbox_string_rep);
    lua_pop(L, 1);
}

void remove_unsafe_globals(lua_State* L) {
    // load and loadstring accept precompiled bytecode, which Lua 5.1 runs unverified; the rest
    // reach files or the environment, or print to the server's stdout.
    static const char* const kRemoved[] = {
        "dofile",   "loadfile", "load",    "loadstring", "print", "getfenv", "setfenv",
        "newproxy", "module",   "require", "package",    "os",    "io",      "debug"};
    for (const char* name : kRemoved) {
        lua_pushnil(L);
        lua_setglobal(L, name);
    }
}

// After this no global can be created or read unless it exists.
void protect_globals(lua_State* L) {
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_createtable(L, 0, 3);
    set_field_function(L, "__index", global_index);
    set_field_function(L, "__newindex", global_newindex);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");  // setmetatable(_G, nil) cannot lift the protection
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
}

void open_sandbox(lua_State* L, RunContext& ctx) {
    open_library(L, "", luaopen_base);
    open_library(L, LUA_TABLIBNAME, luaopen_table);
    open_library(L, LUA_STRLIBNAME, luaopen_string);
    open_library(L, LUA_MATHLIBNAME, luaopen_math);
    remove_unsafe_globals(L);
    set_global_function(L, "tostring", sandbox_tostring);
    set_global_function(L, "pcall", sandbox_pcall);
    set_global_function(L, "collectgarbage", sandbox_collectgarbage);
    set_global_function(L, "gcinfo", sandbox_gcinfo);
    replace_library_functions(L);
    open_redis_api(L);

    ctx.err_key_ref = registry_ref_string(L, "err");
    ctx.ok_key_ref = registry_ref_string(L, "ok");
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    ctx.object_names_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    ctx.rng_state = kRngInitialState;

    if (ctx.keys != nullptr) {
        push_string_array(L, *ctx.keys);
        lua_setglobal(L, "KEYS");
    }
    if (ctx.args != nullptr) {
        push_string_array(L, *ctx.args);
        lua_setglobal(L, "ARGV");
    }
    protect_globals(L);
}

// ---------------------------------------------------------------------------------------------
// Errors that reach the top level.

// Appends Lua's text for a number ("%.14g", as tostring writes it).
void append_number(std::string& out, lua_Number number) {
    std::array<char, 64> text;
    const int size = std::snprintf(text.data(), text.size(), "%.14g", number);
    out.append(text.data(), static_cast<size_t>(size));
}

// Redis's reading of an error object: a table's err field as it is; anything else is prefixed
// with "ERR ". Uses only Lua functions that cannot raise or run script code (raw access).
void describe_error_object(lua_State* L, RunContext& ctx, std::string& out) {
    out.clear();
    const int type = lua_type(L, 1);
    if (type == LUA_TTABLE) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, ctx.err_key_ref);
        lua_rawget(L, 1);
        const int field_type = lua_type(L, -1);
        if (field_type == LUA_TSTRING) {
            size_t size = 0;
            const char* text = lua_tolstring(L, -1, &size);
            out.assign(text, size);
        } else if (field_type == LUA_TNUMBER) {
            append_number(out, lua_tonumber(L, -1));
        }
        lua_pop(L, 1);
        if (field_type == LUA_TSTRING || field_type == LUA_TNUMBER) {
            return;
        }
    }
    out = "ERR ";
    switch (type) {
        case LUA_TSTRING: {
            size_t size = 0;
            const char* text = lua_tolstring(L, 1, &size);
            out.append(text, size);
            return;
        }
        case LUA_TNUMBER:
            append_number(out, lua_tonumber(L, 1));
            return;
        case LUA_TBOOLEAN:
            out += lua_toboolean(L, 1) ? "true" : "false";
            return;
        case LUA_TNIL:
            out += "nil";
            return;
        default:
            // Redis 7.0.15 crashes on error({}); Lua 5.2's interpreter words it this way.
            out += "(error object is a ";
            out += lua_typename(L, type);
            out += " value)";
            return;
    }
}

// The message handler of the script's lua_pcall: records the error and where it was raised (the
// script's line rather than that of a C function such as error or redis.call, as Redis reports
// it). It runs before the stack unwinds, and only for errors no pcall inside the script caught.
int error_handler(lua_State* L) {
    RunContext& ctx = context_of(L);
    if (ctx.abort != Abort::kNone) {
        return 1;  // the limit's own message replaces whatever was raised
    }
    ctx.error.raised = true;
    describe_error_object(L, ctx, ctx.error.text);
    lua_Debug ar;
    bool found = lua_getstack(L, 1, &ar) != 0 && lua_getinfo(L, "Sl", &ar) != 0;
    if (found && std::strcmp(ar.what, "C") == 0) {
        found = lua_getstack(L, 2, &ar) != 0 && lua_getinfo(L, "Sl", &ar) != 0;
    }
    ctx.error.located = found;
    if (found) {
        ctx.error.source = ar.source;
        ctx.error.line = ar.currentline;
    }
    return 1;
}

// ---------------------------------------------------------------------------------------------
// The script's reply.

// Lua numbers become integers by C's (long long) cast, as in Redis; where that cast is undefined
// (NaN, out of range), x86-64 yields INT64_MIN, which is what Redis replies there.
int64_t integer_of_number(lua_Number number) {
    constexpr lua_Number kTwoTo63 = 9223372036854775808.0;
    if (std::isnan(number) || number >= kTwoTo63 || number < -kTwoTo63) {
        return std::numeric_limits<int64_t>::min();
    }
    return static_cast<int64_t>(number);
}

// Whether the table at the top has a string field named by the registry reference `key_ref`;
// if so, its text is copied into `out`.
bool string_field(lua_State* L, int key_ref, std::string& out) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, key_ref);
    lua_rawget(L, -2);
    const bool found = lua_type(L, -1) == LUA_TSTRING;
    if (found) {
        size_t size = 0;
        const char* text = lua_tolstring(L, -1, &size);
        out.assign(text, size);
    }
    lua_pop(L, 1);
    return found;
}

void convert_top(lua_State* L, RunContext& ctx, Value& out, int depth);

void convert_table(lua_State* L, RunContext& ctx, Value& out, int depth) {
    if (depth >= kReplyDepthMax || !lua_checkstack(L, 4)) {
        ctx.reply_error = kStackLimitError;
        return;
    }
    if (string_field(L, ctx.err_key_ref, out.text)) {
        out.kind = Value::Kind::kError;
        out.text = single_line(trim_newlines(out.text));
        return;
    }
    if (string_field(L, ctx.ok_key_ref, out.text)) {
        out.kind = Value::Kind::kSimple;
        out.text = single_line(out.text);
        return;
    }
    out.kind = Value::Kind::kArray;
    for (int index = 1; ctx.reply_error == nullptr; index++) {
        lua_rawgeti(L, -1, index);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return;
        }
        out.items.emplace_back();
        convert_top(L, ctx, out.items.back(), depth + 1);
        lua_pop(L, 1);
    }
}

// Converts the value at the top of the stack (left there) with Redis's rules for RESP2.
void convert_top(lua_State* L, RunContext& ctx, Value& out, int depth) {
    ctx.reply_bytes += sizeof(Value);
    switch (lua_type(L, -1)) {
        case LUA_TSTRING: {
            size_t size = 0;
            const char* text = lua_tolstring(L, -1, &size);
            out.kind = Value::Kind::kBulk;
            out.text.assign(text, size);
            break;
        }
        case LUA_TBOOLEAN:
            if (lua_toboolean(L, -1)) {
                out = Value::integer_of(1);
            } else {
                out = Value::null();
            }
            break;
        case LUA_TNUMBER:
            out = Value::integer_of(integer_of_number(lua_tonumber(L, -1)));
            break;
        case LUA_TTABLE:
            convert_table(L, ctx, out, depth);
            break;
        default:
            out = Value::null();
            break;
    }
    ctx.reply_bytes += out.text.size();
    if (ctx.reply_error == nullptr && ctx.reply_bytes > ctx.limits.memory_bytes_max) {
        ctx.reply_error = kReplyTooBigError;
    }
}

// ---------------------------------------------------------------------------------------------
// Running.

// Everything that touches Lua, under lua_cpcall so that even the sandbox's setup may fail on the
// memory limit without a panic.
int run_protected(lua_State* L) {
    RunContext& ctx = *static_cast<RunContext*>(lua_touserdata(L, 1));
    lua_settop(L, 0);
    open_sandbox(L, ctx);
    lua_pushcfunction(L, error_handler);
    const int handler = lua_gettop(L);
    const int loaded = luaL_loadbuffer(L, ctx.code.data(), ctx.code.size(), kChunkName);
    if (loaded != 0) {
        if (loaded == LUA_ERRSYNTAX) {
            size_t size = 0;
            const char* text = lua_tolstring(L, -1, &size);
            ctx.compile_error = "ERR Error compiling script (new function): ";
            ctx.compile_error.append(text, size);
        }
        return 0;
    }
    ctx.metering = true;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, kHookInstructions);
    const int status = lua_pcall(L, 0, 1, handler);
    lua_sethook(L, nullptr, 0, 0);
    ctx.metering = false;
    if (status != 0 || ctx.abort != Abort::kNone) {
        return 0;
    }
    SCRIPT_ASSERT(lua_gettop(L) == handler + 1);  // the handler, then the one result asked for
    ctx.memory_limit_lifted = true;
    convert_top(L, ctx, ctx.result, 0);
    ctx.finished = true;
    return 0;
}

int compile_protected(lua_State* L) {
    RunContext& ctx = *static_cast<RunContext*>(lua_touserdata(L, 1));
    const int loaded = luaL_loadbuffer(L, ctx.code.data(), ctx.code.size(), kChunkName);
    if (loaded == LUA_ERRSYNTAX) {
        size_t size = 0;
        const char* text = lua_tolstring(L, -1, &size);
        ctx.compile_error = "ERR Error compiling script (new function): ";
        ctx.compile_error.append(text, size);
    }
    return 0;
}

// A Redis 7 shebang ("#!lua flags=no-writes,allow-oom"), checked as Redis does; `code` is what to
// compile: the body with the shebang turned into a comment, so line numbers stay those of the
// body.
struct Source {
    std::string error;
    std::string_view body;
    bool has_shebang = false;
    std::string shebang_code;

    std::string_view code() const { return has_shebang ? shebang_code : body; }
};

bool known_shebang_flag(std::string_view flag) {
    static constexpr std::string_view kFlags[] = {"no-writes", "allow-oom", "allow-stale",
                                                  "no-cluster", "allow-cross-slot-keys"};
    return std::find(std::begin(kFlags), std::end(kFlags), flag) != std::end(kFlags);
}

std::vector<std::string_view> split_words(std::string_view line) {
    std::vector<std::string_view> words;
    size_t at = 0;
    while (at < line.size()) {
        const size_t start = line.find_first_not_of(" \t\r\n\v\f", at);
        if (start == std::string_view::npos) {
            break;
        }
        const size_t end = std::min(line.find_first_of(" \t\r\n\v\f", start), line.size());
        words.push_back(line.substr(start, end - start));
        at = end;
    }
    return words;
}

std::string check_shebang_option(std::string_view option) {
    constexpr std::string_view kFlagsPrefix = "flags=";
    if (!option.starts_with(kFlagsPrefix)) {
        return "ERR Unknown lua shebang option: " + std::string(option);
    }
    std::string_view flags = option.substr(kFlagsPrefix.size());
    while (!flags.empty()) {
        const size_t comma = flags.find(',');
        const std::string_view flag = flags.substr(0, comma);
        if (!known_shebang_flag(flag)) {
            return "ERR Unexpected flag in script shebang: " + std::string(flag);
        }
        if (comma == std::string_view::npos) {
            break;
        }
        flags.remove_prefix(comma + 1);
        if (flags.empty()) {
            return "ERR Unexpected flag in script shebang: ";
        }
    }
    return {};
}

Source read_source(std::string_view body) {
    Source source;
    source.body = body;
    if (!body.starts_with("#!")) {
        return source;
    }
    const size_t newline = body.find('\n');
    if (newline == std::string_view::npos) {
        source.error = "ERR Invalid script shebang";
        return source;
    }
    const std::vector<std::string_view> words = split_words(body.substr(0, newline));
    if (words.front() != "#!lua") {
        source.error = "ERR Unexpected engine in script shebang: " + std::string(words.front());
        return source;
    }
    for (size_t i = 1; i < words.size() && source.error.empty(); i++) {
        source.error = check_shebang_option(words[i]);
    }
    source.has_shebang = true;
    source.shebang_code = "--";
    source.shebang_code.append(body.substr(2));
    return source;
}

Value outcome(RunContext& ctx, int status, std::string_view body) {
    if (ctx.abort == Abort::kInstructions) {
        return Value::error(std::string(kScriptInstructionLimitError));
    }
    if (ctx.abort == Abort::kMemory || status == LUA_ERRMEM) {
        return Value::error(std::string(kScriptMemoryLimitError));
    }
    if (!ctx.compile_error.empty()) {
        return Value::error(single_line(ctx.compile_error));
    }
    if (ctx.error.raised) {
        std::string text = ctx.error.text;
        if (ctx.error.located) {
            text += " script: " + base::hex(base::sha1(body)) + ", on " + ctx.error.source + ":" +
                    std::to_string(ctx.error.line) + ".";
        }
        return Value::error(single_line(trim_newlines(text)));
    }
    if (ctx.reply_error != nullptr) {
        return Value::error(ctx.reply_error);
    }
    if (!ctx.finished) {
        // The one way left: an error inside the handler's own error handling.
        return Value::error("ERR error in error handling");
    }
    return std::move(ctx.result);
}

}  // namespace

Value run_script(std::string_view body,
                 const std::vector<std::string>& keys,
                 const std::vector<std::string>& args,
                 const ScriptCall& call,
                 const ScriptLimits& limits,
                 uint64_t* instructions_used) {
    const Source source = read_source(body);
    if (!source.error.empty()) {
        return Value::error(source.error);
    }
    SCRIPT_ASSERT(static_cast<bool>(call));
    RunContext ctx(limits);
    ctx.code = source.code();
    ctx.keys = &keys;
    ctx.args = &args;
    ctx.call = &call;
    lua_State* L = lua_newstate(lua_allocate, &ctx);
    if (L == nullptr) {
        return Value::error(std::string(kScriptMemoryLimitError));
    }
    lua_atpanic(L, on_panic);
    const int status = lua_cpcall(L, run_protected, &ctx);
    lua_close(L);
    if (instructions_used != nullptr) {
        *instructions_used = std::min(ctx.instructions_used, limits.instructions_max);
    }
    return outcome(ctx, status, body);
}

std::string check_script_memory(const ScriptLimits& limits) {
    const size_t capacity = arena_capacity(limits.memory_bytes_max);
    const Region region = reserve_region(capacity);
    if (region.reservation == nullptr) {
        return "cannot reserve " + std::to_string(capacity >> 20) +
               " MiB of address space for Lua scripts (the arena of a script limited to " +
               std::to_string(limits.memory_bytes_max >> 20) + " MiB): raise `ulimit -v`";
    }
    munmap(region.reservation, region.reservation_bytes);
    return "";
}

std::string check_script(std::string_view body) {
    const Source source = read_source(body);
    if (!source.error.empty()) {
        return source.error;
    }
    RunContext ctx(ScriptLimits{});
    ctx.code = source.code();
    lua_State* L = lua_newstate(lua_allocate, &ctx);
    if (L == nullptr) {
        return std::string(kScriptMemoryLimitError);
    }
    lua_atpanic(L, on_panic);
    const int status = lua_cpcall(L, compile_protected, &ctx);
    lua_close(L);
    if (ctx.abort != Abort::kNone || status == LUA_ERRMEM) {
        return std::string(kScriptMemoryLimitError);
    }
    return single_line(ctx.compile_error);
}

}  // namespace raftlock::statemachine::redis
