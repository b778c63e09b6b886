#include "raft/conf_change.h"

#include <algorithm>

#include "base/byte_io.h"

namespace raftlock::raft {

namespace {

// Version 2 added the change's address and the configuration's addresses; version 1 entries
// (written before) still decode, without addresses.
constexpr uint8_t kConfChangeVersion = 2;
constexpr uint8_t kConfChangeVersionWithoutAddresses = 1;

void put_ids(Writer& w, const std::vector<NodeId>& ids) {
    w.varint(ids.size());
    for (NodeId id : ids) {
        w.varint(id);
    }
}

bool get_ids(Reader& r, std::vector<NodeId>* ids) {
    const uint64_t n = r.varint_in(0, kConfMembersMax);
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

void put_addresses(Writer& w, const std::map<NodeId, std::string>& addresses) {
    w.varint(addresses.size());
    for (const auto& [id, address] : addresses) {
        w.varint(id);
        w.bytes(address);
    }
}

bool get_addresses(Reader& r, std::map<NodeId, std::string>* addresses) {
    const uint64_t n = r.varint_in(0, kConfMembersMax);
    for (uint64_t i = 0; i < n && r.ok(); ++i) {
        const NodeId id = r.varint();
        std::string address = r.bytes(kConfAddressBytesMax);
        if (!r.ok() || id == kNoNode || !addresses->emplace(id, std::move(address)).second) {
            return false;
        }
    }
    return r.ok();
}

bool addresses_are_of_members(const ConfState& conf) {
    return std::all_of(conf.addresses.begin(), conf.addresses.end(), [&](const auto& entry) {
        return is_voter(conf, entry.first) || is_learner(conf, entry.first);
    });
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
                        [&](NodeId id) { return is_voter(conf, id); }) &&
           addresses_are_of_members(conf);
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
        w.bytes(record.change->address);
    }
    put_ids(w, record.conf_state.voters);
    put_ids(w, record.conf_state.learners);
    put_addresses(w, record.conf_state.addresses);
    return out;
}

Result<ConfChangeRecord, Error> decode_conf_change(const std::string& data) {
    Reader r(data);
    const uint8_t version = r.u8();
    if (!r.ok() ||
        (version != kConfChangeVersion && version != kConfChangeVersionWithoutAddresses)) {
        return invalid("configuration entry: unknown version");
    }
    const bool with_addresses = version == kConfChangeVersion;
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
        std::string address = with_addresses ? r.bytes(kConfAddressBytesMax) : std::string();
        if (!r.ok()) {
            return invalid("configuration entry: bad address");
        }
        record.change = ConfChange{static_cast<ConfChangeType>(type), node_id, std::move(address)};
    }
    if (!get_ids(r, &record.conf_state.voters) || !get_ids(r, &record.conf_state.learners)) {
        return invalid("configuration entry: bad member list");
    }
    if (with_addresses && !get_addresses(r, &record.conf_state.addresses)) {
        return invalid("configuration entry: bad address list");
    }
    if (!r.at_end()) {
        return invalid("configuration entry: trailing bytes");
    }
    for (NodeId id : record.conf_state.learners) {
        if (is_voter(record.conf_state, id)) {
            return invalid("configuration entry: a node is both voter and learner");
        }
    }
    if (!addresses_are_of_members(record.conf_state)) {
        return invalid("configuration entry: an address of a node that is not a member");
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
            next.addresses.erase(id);
            break;
    }
    if (next.voters.empty()) {
        return invalid("a configuration needs at least one voter");
    }
    if (change.type != ConfChangeType::kRemoveNode && !change.address.empty()) {
        next.addresses[id] = change.address;
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
