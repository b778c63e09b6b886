#include "raft/text.h"

#include <fmt/format.h>

#include "raft/conf_change.h"

namespace raftlock::raft {

std::string_view to_string(MessageType type) {
    switch (type) {
        case MessageType::kPropose:
            return "MsgProp";
        case MessageType::kAppend:
            return "MsgApp";
        case MessageType::kAppendResponse:
            return "MsgAppResp";
        case MessageType::kHeartbeat:
            return "MsgHeartbeat";
        case MessageType::kHeartbeatResponse:
            return "MsgHeartbeatResp";
        case MessageType::kVote:
            return "MsgVote";
        case MessageType::kVoteResponse:
            return "MsgVoteResp";
        case MessageType::kPreVote:
            return "MsgPreVote";
        case MessageType::kPreVoteResponse:
            return "MsgPreVoteResp";
        case MessageType::kSnapshot:
            return "MsgSnap";
        case MessageType::kSnapshotResponse:
            return "MsgSnapResp";
        case MessageType::kReadIndex:
            return "MsgReadIndex";
        case MessageType::kReadIndexResponse:
            return "MsgReadIndexResp";
        case MessageType::kTransferLeader:
            return "MsgTransferLeader";
        case MessageType::kTimeoutNow:
            return "MsgTimeoutNow";
    }
    return "MsgUnknown";
}

std::string_view to_string(Role role) {
    switch (role) {
        case Role::kFollower:
            return "follower";
        case Role::kPreCandidate:
            return "pre-candidate";
        case Role::kCandidate:
            return "candidate";
        case Role::kLeader:
            return "leader";
    }
    return "unknown";
}

std::string_view to_string(ProgressState state) {
    switch (state) {
        case ProgressState::kProbe:
            return "probe";
        case ProgressState::kReplicate:
            return "replicate";
        case ProgressState::kSnapshot:
            return "snapshot";
    }
    return "unknown";
}

std::string quote_bytes(std::string_view bytes, size_t max_bytes) {
    std::string out = "\"";
    const size_t shown = std::min(bytes.size(), max_bytes);
    for (size_t i = 0; i < shown; ++i) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            out += fmt::format("\\x{:02x}", c);
        }
    }
    out += '"';
    if (shown < bytes.size()) {
        out += fmt::format("...({} bytes)", bytes.size());
    }
    return out;
}

namespace {

std::string ids(const std::vector<NodeId>& list) {
    return fmt::format("{}", fmt::join(list, ","));
}

std::string entries_text(const std::vector<Entry>& entries) {
    std::string out = "[";
    for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) {
            out += ", ";
        }
        out += to_string(entries[i]);
    }
    return out + "]";
}

}  // namespace

std::string to_string(const ConfState& cs) {
    std::string out = fmt::format("voters=({})", ids(cs.voters));
    if (!cs.learners.empty()) {
        out += fmt::format(" learners=({})", ids(cs.learners));
    }
    return out;
}

std::string to_string(const ConfChange& cc) {
    switch (cc.type) {
        case ConfChangeType::kAddVoter:
            return fmt::format("v{}", cc.node_id);
        case ConfChangeType::kAddLearner:
            return fmt::format("l{}", cc.node_id);
        case ConfChangeType::kRemoveNode:
            return fmt::format("r{}", cc.node_id);
    }
    return "?";
}

std::string to_string(const Entry& e) {
    if (e.type == EntryType::kConfChange) {
        auto record = decode_conf_change(e.data);
        if (!record.ok()) {
            return fmt::format("{}/{} conf{{malformed}}", e.term, e.index);
        }
        const std::string change = record->change ? to_string(*record->change) : "init";
        return fmt::format("{}/{} conf{{{} => {}}}", e.term, e.index, change,
                           to_string(record->conf_state));
    }
    if (e.data.empty()) {
        return fmt::format("{}/{} empty", e.term, e.index);
    }
    return fmt::format("{}/{} {}", e.term, e.index, quote_bytes(e.data));
}

std::string to_string(const HardState& hs) {
    return fmt::format("term={} vote={} commit={}", hs.term, hs.vote, hs.commit);
}

std::string to_string(const SnapshotMetadata& meta) {
    return fmt::format("index={} term={} {}", meta.index, meta.term, to_string(meta.conf_state));
}

std::string to_string(const Message& m) {
    std::string out = fmt::format("{}->{} {}", m.from, m.to, to_string(m.type));
    if (m.term != 0) {
        out += fmt::format(" term={}", m.term);
    }
    switch (m.type) {
        case MessageType::kPropose:
            out += " entries=" + entries_text(m.entries);
            break;
        case MessageType::kAppend:
            out += fmt::format(" log={}/{} commit={}", m.log_term, m.index, m.commit);
            if (!m.entries.empty()) {
                out += " entries=" + entries_text(m.entries);
            }
            break;
        case MessageType::kAppendResponse:
            out += fmt::format(" index={}", m.index);
            if (m.reject) {
                out += fmt::format(" rejected hint={}/{}", m.log_term, m.reject_hint);
            }
            break;
        case MessageType::kHeartbeat:
            out += fmt::format(" commit={}", m.commit);
            [[fallthrough]];
        case MessageType::kHeartbeatResponse:
            if (m.read_round != 0) {
                out += fmt::format(" round={}", m.read_round);
            }
            break;
        case MessageType::kVote:
        case MessageType::kPreVote:
            out += fmt::format(" log={}/{}", m.log_term, m.index);
            if (m.transfer) {
                out += " transfer";
            }
            break;
        case MessageType::kVoteResponse:
        case MessageType::kPreVoteResponse:
            out += m.reject ? " rejected" : " granted";
            break;
        case MessageType::kSnapshot:
            out += fmt::format(" snap=[{}] chunk={}+{}/{}", to_string(m.snapshot_meta),
                               m.snapshot_offset, m.snapshot_chunk.size(), m.snapshot_size_bytes);
            break;
        case MessageType::kSnapshotResponse:
            out += fmt::format(" snap={} received={}{}", m.snapshot_meta.index, m.snapshot_offset,
                               m.reject ? " rejected" : "");
            break;
        case MessageType::kReadIndex:
            out += " ctx=" + quote_bytes(m.context);
            break;
        case MessageType::kReadIndexResponse:
            out += fmt::format(" index={} ctx={}", m.index, quote_bytes(m.context));
            break;
        case MessageType::kTransferLeader:
            out += fmt::format(" to={}", m.index);
            break;
        case MessageType::kTimeoutNow:
            break;
    }
    return out;
}

std::string to_string(const ReadState& rs) {
    return fmt::format("index={} ctx={}", rs.index, quote_bytes(rs.context));
}

std::string to_string(const SoftState& ss) {
    return fmt::format("{} leader={}", to_string(ss.role), ss.leader);
}

std::string to_string(const Ready& rd, std::string_view indent) {
    std::string out;
    auto line = [&](const std::string& text) { out += fmt::format("{}{}\n", indent, text); };
    if (rd.soft_state) {
        line("State: " + to_string(*rd.soft_state));
    }
    if (rd.hard_state) {
        line("HardState: " + to_string(*rd.hard_state) + (rd.must_sync ? "" : " (no sync)"));
    }
    if (rd.snapshot) {
        line("Snapshot: " + to_string(rd.snapshot->metadata));
    }
    if (!rd.entries.empty()) {
        line("Entries:");
        for (const Entry& e : rd.entries) {
            line("  " + to_string(e));
        }
    }
    if (!rd.committed_entries.empty()) {
        line("CommittedEntries:");
        for (const Entry& e : rd.committed_entries) {
            line("  " + to_string(e));
        }
    }
    if (!rd.read_states.empty()) {
        line("ReadStates:");
        for (const ReadState& rs : rd.read_states) {
            line("  " + to_string(rs));
        }
    }
    if (!rd.early_messages.empty()) {
        line("Messages (may precede persisting):");
        for (const Message& m : rd.early_messages) {
            line("  " + to_string(m));
        }
    }
    if (!rd.messages.empty()) {
        line("Messages:");
        for (const Message& m : rd.messages) {
            line("  " + to_string(m));
        }
    }
    return out;
}

std::string to_string(const NodeStatus& st, std::string_view indent) {
    std::string out = fmt::format("{}{}: {} term={} vote={} commit={} applied={} log=[{},{}] {}\n",
                                  indent, st.id, to_string(st.soft_state.role), st.hard_state.term,
                                  st.hard_state.vote, st.hard_state.commit, st.applied,
                                  st.first_index, st.last_index, to_string(st.conf_state));
    if (st.lead_transferee != kNoNode) {
        out += fmt::format("{}  transferring leadership to {}\n", indent, st.lead_transferee);
    }
    for (const PeerStatus& p : st.peers) {
        out += fmt::format("{}  peer {}{}: match={} next={} {}\n", indent, p.id,
                           p.learner ? " (learner)" : "", p.match, p.next, to_string(p.state));
    }
    return out;
}

}  // namespace raftlock::raft
