#include "raft/conf_change.h"

#include <algorithm>

#include "raft/byte_io.h"

namespace raftlock::raft {

namespace {

constexpr uint8_t kConfChangeVersion = 1;
// More members than any real cluster has; bounds what a decoder accepts.
constexpr uint64_t kMaxMembers = 1024;

void put_ids(Writer& w, const std::vector<NodeId>& ids) {
    w.varint(ids.size());
    for (NodeId id : ids) {
        w.varint(id);
    }
}

bool get_ids(Reader& r, std::vector<NodeId>* ids) {
    const uint64_t n = r.varint_in(0, kMaxMembers);
    if (!r.ok()) {
        return false;
    }
    ids->resize(n);
    for (NodeId& id : *ids) {
        id = r.varint();
        if (!r.ok() || id == kNoNode) {
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
    Writer w(&out);
    w.u8(kConfChangeVersion);
    w.u8(record.change ? 1 : 0);
    if (record.change) {
        w.u8(static_cast<uint8_t>(record.change->type));
        w.varint(record.change->node_id);
    }
    put_ids(w, record.conf_state.voters);
    put_ids(w, record.conf_state.learners);
    return out;
}

Result<ConfChangeRecord, Error> decode_conf_change(const std::string& data) {
    Reader r(data);
    if (r.u8() != kConfChangeVersion || !r.ok()) {
        return invalid("configuration entry: unknown version");
    }
    ConfChangeRecord record;
    const uint8_t has_change = r.u8();
    if (!r.ok() || has_change > 1) {
        return invalid("configuration entry: bad change flag");
    }
    if (has_change == 1) {
        const uint8_t type = r.u8();
        if (!r.ok()) {
            return invalid("configuration entry: truncated");
        }
        if (type > static_cast<uint8_t>(ConfChangeType::kRemoveNode)) {
            return invalid("configuration entry: unknown change type");
        }
        const NodeId node_id = r.varint();
        if (!r.ok() || node_id == kNoNode) {
            return invalid("configuration entry: bad node id");
        }
        record.change = ConfChange{static_cast<ConfChangeType>(type), node_id};
    }
    if (!get_ids(r, &record.conf_state.voters) || !get_ids(r, &record.conf_state.learners)) {
        return invalid("configuration entry: bad member list");
    }
    if (!r.at_end()) {
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
