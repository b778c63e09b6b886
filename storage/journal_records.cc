#include "storage/journal_records.h"

#include <fmt/format.h>

#include "base/byte_io.h"

namespace raftlock::storage {
std::string encode_checkpoint(const Checkpoint& checkpoint) {
    std::string out;
    Writer w(&out);
    w.fixed64(checkpoint.start.index);
    w.fixed64(checkpoint.start.term);
    w.fixed64(checkpoint.last);
    w.varint(checkpoint.runs.size());
    for (const auto& [first, term] : checkpoint.runs) {
        w.fixed64(first);
        w.fixed64(term);
    }
    w.bytes(checkpoint.hard_state ? encode_hard_state(*checkpoint.hard_state) : std::string());
    w.bytes(checkpoint.snapshot ? encode_snapshot_record(*checkpoint.snapshot) : std::string());
    return out;
}

Decoded<Checkpoint> decode_checkpoint(std::string_view payload) {
    Reader r(payload);
    Checkpoint c;
    c.start.index = r.fixed64();
    c.start.term = r.fixed64();
    c.last = r.fixed64();
    const uint64_t runs = r.varint_in(1, r.remaining() / 16);
    for (uint64_t i = 0; i < runs && r.ok(); i++) {
        const uint64_t first = r.fixed64();
        const uint64_t term = r.fixed64();
        const bool ordered = c.runs.empty() ? first == c.start.index && term == c.start.term
                                            : first > c.runs.back().first &&
                                                  term > c.runs.back().second && first <= c.last;
        if (r.ok() && !ordered) {
            return corruption(fmt::format("checkpoint term run {} ({} from index {}) out of order",
                                          i, term, first));
        }
        c.runs.emplace_back(first, term);
    }
    const std::string hard_state = r.bytes(payload.size());
    const std::string snapshot = r.bytes(payload.size());
    if (!r.ok() || !r.at_end()) {
        return corruption("checkpoint record cut short, malformed or too long");
    }
    if (c.last < c.start.index) {
        return corruption(
            fmt::format("checkpoint last index {} below its start {}", c.last, c.start.index));
    }
    if (!hard_state.empty()) {
        auto hs = decode_hard_state(hard_state);
        if (!hs.ok()) {
            return hs.error();
        }
        c.hard_state = *hs;
    }
    if (!snapshot.empty()) {
        auto snap = decode_snapshot_record(snapshot);
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

std::pair<size_t, size_t> BodyWriter::add_entry(const raft::Entry& entry) {
    body_.push_back(static_cast<char>(JournalRecord::kEntry));
    const size_t length_at = body_.size();
    put_u32(body_, 0);
    const size_t offset = body_.size();
    const size_t length = append_entry(body_, entry);
    for (size_t i = 0; i < 4; i++) {  // the length, little-endian, now that it is known
        body_[length_at + i] = static_cast<char>((length >> (8 * i)) & 0xff);
    }
    return {offset, length};
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
