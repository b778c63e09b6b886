#include "tests/sim/app.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "base/assert.h"
#include "raft/conf_change.h"
#include "statemachine/codec.h"

namespace raftlock::sim {

namespace {

// Splits "a.b.c" at '.', at most `max_fields` fields.
std::vector<std::string_view> split_fields(std::string_view data, size_t max_fields) {
    std::vector<std::string_view> out;
    while (out.size() < max_fields) {
        const size_t dot = data.find('.');
        out.push_back(data.substr(0, dot));
        if (dot == std::string_view::npos) {
            return out;
        }
        data.remove_prefix(dot + 1);
    }
    out.clear();  // too many fields: malformed
    return out;
}

template <typename T>
bool parse_number(std::string_view text, T* out) {
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, *out);
    return ec == std::errc() && ptr == end && !text.empty();
}

uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

// Snapshot data: the register records as text lines, then "M <bytes>" and the lock state
// machine's own snapshot (binary) to the end.
constexpr std::string_view kLockSnapshotMarker = "M";

}  // namespace

uint64_t mix_hash(uint64_t h, uint64_t v) {
    return mix(h, v);
}

uint64_t empty_lock_state_hash() {
    static const uint64_t hash = statemachine::StateMachine().state_hash();
    return hash;
}

std::string wrap_lock_command(const statemachine::Command& command) {
    auto bytes = statemachine::encode_command(command);
    RL_ASSERT_MSG(bytes.ok(), "the simulator built an invalid lock command");
    return kLockCommandTag + bytes.value();
}

uint64_t SimApp::digest() const {
    return applied_ % kLockHashEveryEntries == 0 ? mix(digest_, lock_hash_) : digest_;
}

void SimApp::update_lock_hash() {
    if (applied_ % kLockHashEveryEntries == 0) {
        lock_hash_ = sm_.state_hash();
    }
}

uint64_t hash_bytes(std::string_view bytes) {
    uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
    for (unsigned char c : bytes) {
        h = (h ^ c) * 0x100000001b3ULL;
    }
    return h;
}

uint64_t fold_digest(uint64_t digest, const raft::Entry& entry) {
    digest = mix(digest, entry.index);
    digest = mix(digest, entry.term);
    digest = mix(digest, static_cast<uint64_t>(entry.type));
    return mix(digest, hash_bytes(entry.data));
}

// "w.<client>.<seq>.<key>.<value>" or "c.<client>.<seq>.<key>.<expected>.<value>": readable in
// traces, where entries print their data.
std::string encode_command(const Command& c) {
    if (c.kind == OpKind::kWrite) {
        return fmt::format("w.{}.{}.{}.{}", c.client, c.seq, c.key, c.value);
    }
    return fmt::format("c.{}.{}.{}.{}.{}", c.client, c.seq, c.key, c.expected, c.value);
}

std::optional<Command> decode_command(std::string_view data) {
    std::vector<std::string_view> f = split_fields(data, 6);
    Command c;
    if (f.size() == 5 && f[0] == "w") {
        c.kind = OpKind::kWrite;
    } else if (f.size() == 6 && f[0] == "c") {
        c.kind = OpKind::kCas;
        if (!parse_number(f[4], &c.expected)) {
            return std::nullopt;
        }
    } else {
        return std::nullopt;
    }
    if (!parse_number(f[1], &c.client) || !parse_number(f[2], &c.seq) ||
        !parse_number(f[3], &c.key) || !parse_number(f.back(), &c.value)) {
        return std::nullopt;
    }
    return c;
}

ApplyOutcome SimApp::apply(const raft::Entry& entry) {
    RL_ASSERT(entry.index == applied_ + 1);
    applied_ = entry.index;
    digest_ = fold_digest(digest_, entry);
    ApplyOutcome out = apply_entry(entry);
    update_lock_hash();
    return out;
}

ApplyOutcome SimApp::apply_entry(const raft::Entry& entry) {
    ApplyOutcome out;
    if (entry.type == raft::EntryType::kConfChange) {
        auto record = raft::decode_conf_change(entry.data);
        RL_ASSERT_MSG(record.ok(), "applied a malformed configuration entry");
        conf_ = record->conf_state;
        return out;
    }
    if (entry.data.empty()) {
        // A leader's term-start entry: the lock state machine sees it too (as the server's
        // would), so its last_applied follows the log.
        (void)sm_.apply(entry.index, "");
        return out;
    }
    if (entry.data[0] == kLockCommandTag) {
        out.lock = sm_.apply(entry.index, std::string_view(entry.data).substr(1));
        return out;
    }
    out.command = decode_command(entry.data);
    RL_ASSERT_MSG(out.command.has_value(), "applied an entry the simulator never proposed");
    const Command& c = *out.command;
    Session& session = sessions_[c.client];
    if (c.seq <= session.last_seq) {
        // A retry of a command already applied: it must not run again (exactly-once). Only the
        // latest result is kept; a client never retries an older command.
        out.duplicate = true;
        out.ok = c.seq == session.last_seq && session.last_ok;
        return out;
    }
    out.executed = true;
    if (c.kind == OpKind::kWrite) {
        registers_[c.key] = c.value;
        out.ok = true;
    } else {
        // A register never written holds nothing (null in the history), so no cas matches it.
        auto it = registers_.find(c.key);
        out.ok = it != registers_.end() && it->second == c.expected;
        if (out.ok) {
            registers_[c.key] = c.value;
        }
    }
    session = Session{c.seq, out.ok};
    return out;
}

std::optional<int64_t> SimApp::read(uint32_t key) const {
    auto it = registers_.find(key);
    if (it == registers_.end()) {
        return std::nullopt;
    }
    return it->second;
}

// Text, one record per line: "D <digest>", "R <key> <value>", "S <client> <seq> <ok>"; then
// "M <n>" and the n bytes of the lock state machine's snapshot.
std::string SimApp::snapshot_data() const {
    std::string out = fmt::format("D {}\n", digest_);
    for (const auto& [key, value] : registers_) {
        out += fmt::format("R {} {}\n", key, value);
    }
    for (const auto& [client, s] : sessions_) {
        out += fmt::format("S {} {} {}\n", client, s.last_seq, s.last_ok ? 1 : 0);
    }
    const std::string lock_state = sm_.snapshot();
    out += fmt::format("{} {}\n", kLockSnapshotMarker, lock_state.size());
    return out + lock_state;
}

std::optional<SimApp> SimApp::from_snapshot(raft::Index index,
                                            std::string_view data,
                                            const statemachine::Config& lock_config) {
    SimApp app(lock_config);
    app.applied_ = index;
    bool have_digest = false;
    bool have_locks = false;
    while (!data.empty() && !have_locks) {
        const size_t eol = data.find('\n');
        if (eol == std::string_view::npos) {
            return std::nullopt;
        }
        std::string_view line = data.substr(0, eol);
        data.remove_prefix(eol + 1);
        std::vector<std::string_view> f;
        for (size_t sp; (sp = line.find(' ')) != std::string_view::npos && f.size() < 4;) {
            f.push_back(line.substr(0, sp));
            line.remove_prefix(sp + 1);
        }
        f.push_back(line);
        if (f.size() == 2 && f[0] == "D" && parse_number(f[1], &app.digest_)) {
            have_digest = true;
            continue;
        }
        uint32_t id = 0;
        if (f.size() == 3 && f[0] == "R" && parse_number(f[1], &id) &&
            parse_number(f[2], &app.registers_[id])) {
            continue;
        }
        size_t lock_bytes = 0;
        if (f.size() == 2 && f[0] == kLockSnapshotMarker && parse_number(f[1], &lock_bytes)) {
            if (lock_bytes != data.size() ||
                app.sm_.restore(data) != statemachine::ErrorCode::kOk) {
                return std::nullopt;
            }
            app.update_lock_hash();
            data = {};
            have_locks = true;
            continue;
        }
        Session s;
        int ok = 0;
        if (f.size() == 4 && f[0] == "S" && parse_number(f[1], &id) &&
            parse_number(f[2], &s.last_seq) && parse_number(f[3], &ok)) {
            s.last_ok = ok != 0;
            app.sessions_[id] = s;
            continue;
        }
        return std::nullopt;
    }
    if (!have_digest || !have_locks || app.sm_.last_applied() > index) {
        return std::nullopt;
    }
    return app;
}

}  // namespace raftlock::sim
