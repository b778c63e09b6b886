#include "raft/conf_change.h"

#include <algorithm>

namespace raftlock::raft {

namespace {

constexpr uint8_t kConfChangeVersion = 1;
// More members than any real cluster has; bounds what a decoder accepts.
constexpr uint64_t kMaxMembers = 1024;

void put_varint(std::string* out, uint64_t v) {
    while (v >= 0x80) {
        out->push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out->push_back(static_cast<char>(v));
}

// Accepts only the canonical (shortest) encoding, so every record has exactly one byte form.
bool get_varint(const std::string& in, size_t* pos, uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= in.size()) {
            return false;
        }
        const auto byte = static_cast<uint8_t>(in[(*pos)++]);
        if (shift == 63 && byte > 1) {
            return false;  // more than 64 bits
        }
        *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            return byte != 0 ||
                   shift == 0;  // a trailing zero byte is a longer form of a shorter one
        }
    }
    return false;
}

void put_ids(std::string* out, const std::vector<NodeId>& ids) {
    put_varint(out, ids.size());
    for (NodeId id : ids) {
        put_varint(out, id);
    }
}

bool get_ids(const std::string& in, size_t* pos, std::vector<NodeId>* ids) {
    uint64_t n = 0;
    if (!get_varint(in, pos, &n) || n > kMaxMembers) {
        return false;
    }
    ids->resize(n);
    for (NodeId& id : *ids) {
        if (!get_varint(in, pos, &id) || id == kNoNode) {
            return false;
        }
    }
    return std::is_sorted(ids->begin(), ids->end()) &&
           std::adjacent_find(ids->begin(), ids->end()) == ids->end();
}

void insert_sorted(std::vector<NodeId>* ids, NodeId id) {
    ids->insert(std::lower_bound(ids->begin(), ids->end(), id), id);
}

void erase_id(std::vector<NodeId>* ids, NodeId id) {
    ids->erase(std::remove(ids->begin(), ids->end(), id), ids->end());
}

Error invalid(std::string message) {
    return Error{ErrorCode::kInvalidArgument, std::move(message)};
}

}  // namespace

bool valid_conf_state(const ConfState& conf) {
    auto valid_list = [](const std::vector<NodeId>& ids) {
        return std::is_sorted(ids.begin(), ids.end()) &&
               std::adjacent_find(ids.begin(), ids.end()) == ids.end() &&
               std::find(ids.begin(), ids.end(), kNoNode) == ids.end();
    };
    if (conf.voters.empty() || !valid_list(conf.voters) || !valid_list(conf.learners)) {
        return false;
    }
    return std::none_of(conf.learners.begin(), conf.learners.end(),
                        [&](NodeId id) { return is_voter(conf, id); });
}

bool is_voter(const ConfState& conf, NodeId id) {
    return std::binary_search(conf.voters.begin(), conf.voters.end(), id);
}

bool is_learner(const ConfState& conf, NodeId id) {
    return std::binary_search(conf.learners.begin(), conf.learners.end(), id);
}

std::string encode_conf_change(const ConfChangeRecord& record) {
    std::string out;
    out.push_back(static_cast<char>(kConfChangeVersion));
    out.push_back(record.change ? 1 : 0);
    if (record.change) {
        out.push_back(static_cast<char>(record.change->type));
        put_varint(&out, record.change->node_id);
    }
    put_ids(&out, record.conf_state.voters);
    put_ids(&out, record.conf_state.learners);
    return out;
}

Result<ConfChangeRecord, Error> decode_conf_change(const std::string& data) {
    size_t pos = 0;
    if (data.size() < 2 || static_cast<uint8_t>(data[0]) != kConfChangeVersion) {
        return invalid("configuration entry: unknown version");
    }
    pos = 1;
    ConfChangeRecord record;
    const auto has_change = static_cast<uint8_t>(data[pos++]);
    if (has_change > 1) {
        return invalid("configuration entry: bad change flag");
    }
    if (has_change == 1) {
        if (pos >= data.size()) {
            return invalid("configuration entry: truncated");
        }
        const auto type = static_cast<uint8_t>(data[pos++]);
        if (type > static_cast<uint8_t>(ConfChangeType::kRemoveNode)) {
            return invalid("configuration entry: unknown change type");
        }
        ConfChange change{static_cast<ConfChangeType>(type), kNoNode};
        if (!get_varint(data, &pos, &change.node_id) || change.node_id == kNoNode) {
            return invalid("configuration entry: bad node id");
        }
        record.change = change;
    }
    if (!get_ids(data, &pos, &record.conf_state.voters) ||
        !get_ids(data, &pos, &record.conf_state.learners)) {
        return invalid("configuration entry: bad member list");
    }
    if (pos != data.size()) {
        return invalid("configuration entry: trailing bytes");
    }
    for (NodeId id : record.conf_state.learners) {
        if (is_voter(record.conf_state, id)) {
            return invalid("configuration entry: a node is both voter and learner");
        }
    }
    return record;
}

Result<ConfState, Error> apply_conf_change(const ConfState& conf, const ConfChange& change) {
    if (change.node_id == kNoNode) {
        return invalid("node id 0 is reserved");
    }
    ConfState next = conf;
    const NodeId id = change.node_id;
    switch (change.type) {
        case ConfChangeType::kAddVoter:
            if (is_voter(conf, id)) {
                return invalid("node is already a voter");
            }
            erase_id(&next.learners, id);  // promotion of a learner
            insert_sorted(&next.voters, id);
            break;
        case ConfChangeType::kAddLearner:
            if (is_learner(conf, id)) {
                return invalid("node is already a learner");
            }
            erase_id(&next.voters, id);  // demotion of a voter
            insert_sorted(&next.learners, id);
            break;
        case ConfChangeType::kRemoveNode:
            if (!is_voter(conf, id) && !is_learner(conf, id)) {
                return invalid("node is not a member");
            }
            erase_id(&next.voters, id);
            erase_id(&next.learners, id);
            break;
    }
    if (next.voters.empty()) {
        return invalid("a configuration needs at least one voter");
    }
    return next;
}

Bootstrap make_bootstrap(const ConfState& initial) {
    RL_ASSERT(!initial.voters.empty());
    Bootstrap b;
    b.entry = Entry{.term = 1,
                    .index = 1,
                    .type = EntryType::kConfChange,
                    .data = encode_conf_change(ConfChangeRecord{std::nullopt, initial})};
    b.hard_state = HardState{.term = 1, .vote = kNoNode, .commit = 1};
    return b;
}

}  // namespace raftlock::raft
