#include "storage/journal_records.h"

#include <fmt/format.h>

namespace raftlock::storage {
namespace {

// Bounds-checked reads of a checkpoint payload.
class Reader {
public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}
    bool u32(uint32_t& out) {
        if (bytes_.size() < 4) {
            return false;
        }
        out = get_u32(bytes_.data());
        bytes_.remove_prefix(4);
        return true;
    }
    bool u64(uint64_t& out) {
        if (bytes_.size() < 8) {
            return false;
        }
        out = get_u64(bytes_.data());
        bytes_.remove_prefix(8);
        return true;
    }
    bool bytes(size_t n, std::string_view& out) {
        if (bytes_.size() < n) {
            return false;
        }
        out = bytes_.substr(0, n);
        bytes_.remove_prefix(n);
        return true;
    }
    bool done() const { return bytes_.empty(); }

private:
    std::string_view bytes_;
};

}  // namespace

std::string encode_checkpoint(const Checkpoint& checkpoint) {
    std::string out;
    put_u64(out, checkpoint.start.index);
    put_u64(out, checkpoint.start.term);
    put_u64(out, checkpoint.last);
    put_u32(out, static_cast<uint32_t>(checkpoint.runs.size()));
    for (const auto& [first, term] : checkpoint.runs) {
        put_u64(out, first);
        put_u64(out, term);
    }
    const std::string hs =
        checkpoint.hard_state ? encode_hard_state(*checkpoint.hard_state) : std::string();
    put_u32(out, static_cast<uint32_t>(hs.size()));
    out += hs;
    const std::string snap =
        checkpoint.snapshot ? encode_snapshot_record(*checkpoint.snapshot) : std::string();
    put_u32(out, static_cast<uint32_t>(snap.size()));
    out += snap;
    return out;
}

Decoded<Checkpoint> decode_checkpoint(std::string_view payload) {
    Reader r(payload);
    Checkpoint c;
    uint32_t runs = 0;
    if (!r.u64(c.start.index) || !r.u64(c.start.term) || !r.u64(c.last) || !r.u32(runs) ||
        runs == 0 || runs > payload.size() / 16) {
        return corruption("checkpoint record cut short or malformed");
    }
    for (uint32_t i = 0; i < runs; i++) {
        uint64_t first = 0;
        uint64_t term = 0;
        if (!r.u64(first) || !r.u64(term)) {
            return corruption("checkpoint record cut short in its term runs");
        }
        const bool ordered = c.runs.empty() ? first == c.start.index && term == c.start.term
                                            : first > c.runs.back().first &&
                                                  term > c.runs.back().second && first <= c.last;
        if (!ordered) {
            return corruption(fmt::format("checkpoint term run {} ({} from index {}) out of order",
                                          i, term, first));
        }
        c.runs.emplace_back(first, term);
    }
    if (c.last < c.start.index) {
        return corruption(
            fmt::format("checkpoint last index {} below its start {}", c.last, c.start.index));
    }
    uint32_t length = 0;
    std::string_view bytes;
    if (!r.u32(length) || !r.bytes(length, bytes)) {
        return corruption("checkpoint record cut short in its hard state");
    }
    if (length > 0) {
        auto hs = decode_hard_state(bytes);
        if (!hs.ok()) {
            return hs.error();
        }
        c.hard_state = *hs;
    }
    if (!r.u32(length) || !r.bytes(length, bytes) || !r.done()) {
        return corruption("checkpoint record cut short in its snapshot record, or too long");
    }
    if (length > 0) {
        auto snap = decode_snapshot_record(bytes);
        if (!snap.ok()) {
            return snap.error();
        }
        c.snapshot = std::move(*snap);
    }
    return c;
}

size_t BodyWriter::add(JournalRecord type, std::string_view payload) {
    body_.push_back(static_cast<char>(type));
    put_u32(body_, static_cast<uint32_t>(payload.size()));
    const size_t offset = body_.size();
    body_.append(payload);
    return offset;
}

Decoded<std::vector<RecordView>> split_body(std::string_view body) {
    if (body.empty() || static_cast<uint8_t>(body[0]) != kJournalBodyVersion) {
        return corruption(fmt::format(
            "batch body version {}; this build reads version {} (a newer raftlock wrote it?)",
            body.empty() ? -1 : static_cast<int>(static_cast<uint8_t>(body[0])),
            kJournalBodyVersion));
    }
    std::vector<RecordView> out;
    size_t at = 1;
    while (at < body.size()) {
        if (body.size() - at < kRecordHeaderBytes) {
            return corruption(fmt::format("record header cut short at body offset {}", at));
        }
        const auto type = static_cast<uint8_t>(body[at]);
        const uint32_t length = get_u32(body.data() + at + 1);
        if (type < 1 || type > 6) {
            return corruption(fmt::format("unknown record type {} at body offset {}", type, at));
        }
        if (length > body.size() - at - kRecordHeaderBytes) {
            return corruption(fmt::format("record at body offset {} runs past the batch", at));
        }
        out.push_back(RecordView{static_cast<JournalRecord>(type), at + kRecordHeaderBytes,
                                 body.substr(at + kRecordHeaderBytes, length)});
        at += kRecordHeaderBytes + length;
    }
    return out;
}

}  // namespace raftlock::storage
