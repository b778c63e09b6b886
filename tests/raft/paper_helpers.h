#pragma once

// Helpers for driving one Raft node by hand in unit tests: a node over a MemoryStorage with a log
// and hard state chosen by the test, builders for hand-made messages, and filters over the
// messages a node sends. The peers are played by the test itself, which is what lets each test
// check one rule of the paper in isolation.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "raft/conf_change.h"
#include "raft/memory_storage.h"
#include "raft/raft.h"
#include "raft/raw_node.h"
#include "raft/text.h"

namespace raftlock::raft::paper {

// What the node under test starts with. Entry 1 is always the bootstrap configuration entry (term
// 1); `log_terms` lists the terms of entries 2, 3, ... (data "e<index>").
struct NodeSpec {
    NodeId id = 1;
    std::vector<NodeId> voters{1, 2, 3};
    std::vector<NodeId> learners;
    std::vector<Term> log_terms;
    Term term = 0;  // 0: the last log term
    NodeId vote = kNoNode;
    Index commit = 1;
    bool pre_vote = false;
    bool check_quorum = false;
    bool disable_proposal_forwarding = false;
    int election_tick = 10;
    int heartbeat_tick = 1;
    uint64_t seed = 1;
    uint32_t max_inflight_msgs = 256;
    uint64_t max_size_per_msg_bytes = 1 << 20;
    uint64_t snapshot_chunk_bytes = 1 << 20;
};

inline std::string entry_data(Index index) {
    return "e" + std::to_string(index);
}

// Entries first, first+1, ... with the given terms and data "e<index>".
inline std::vector<Entry> make_entries(Index first, const std::vector<Term>& terms) {
    std::vector<Entry> out;
    for (size_t i = 0; i < terms.size(); ++i) {
        const Index index = first + i;
        out.push_back(Entry{.term = terms[i], .index = index, .data = entry_data(index)});
    }
    return out;
}

inline std::string dump(const std::vector<Message>& msgs) {
    std::string out;
    for (const Message& m : msgs) {
        out += to_string(m) + "\n";
    }
    return out.empty() ? "(no messages)\n" : out;
}

inline std::vector<Message> of_type(const std::vector<Message>& msgs, MessageType type) {
    std::vector<Message> out;
    for (const Message& m : msgs) {
        if (m.type == type) {
            out.push_back(m);
        }
    }
    return out;
}

inline std::vector<Message> to_peer(const std::vector<Message>& msgs, NodeId to) {
    std::vector<Message> out;
    for (const Message& m : msgs) {
        if (m.to == to) {
            out.push_back(m);
        }
    }
    return out;
}

inline Message append_msg(NodeId from,
                          NodeId to,
                          Term term,
                          Index prev_index,
                          Term prev_term,
                          std::vector<Entry> entries,
                          Index commit) {
    return Message{.type = MessageType::kAppend,
                   .from = from,
                   .to = to,
                   .term = term,
                   .log_term = prev_term,
                   .index = prev_index,
                   .entries = std::move(entries),
                   .commit = commit};
}

inline Message heartbeat_msg(NodeId from, NodeId to, Term term, Index commit, uint64_t round = 0) {
    return Message{.type = MessageType::kHeartbeat,
                   .from = from,
                   .to = to,
                   .term = term,
                   .commit = commit,
                   .read_round = round};
}

inline Message vote_msg(
    NodeId from, NodeId to, Term term, Index last_index, Term last_term, bool pre_vote = false) {
    return Message{.type = pre_vote ? MessageType::kPreVote : MessageType::kVote,
                   .from = from,
                   .to = to,
                   .term = term,
                   .log_term = last_term,
                   .index = last_index};
}

inline Message vote_resp(NodeId from, NodeId to, Term term, bool reject, bool pre_vote = false) {
    return Message{.type = pre_vote ? MessageType::kPreVoteResponse : MessageType::kVoteResponse,
                   .from = from,
                   .to = to,
                   .term = term,
                   .reject = reject};
}

inline Message append_resp(NodeId from, NodeId to, Term term, Index index) {
    return Message{
        .type = MessageType::kAppendResponse, .from = from, .to = to, .term = term, .index = index};
}

inline Message reject_resp(
    NodeId from, NodeId to, Term term, Index rejected, Index hint_index, Term hint_term) {
    return Message{.type = MessageType::kAppendResponse,
                   .from = from,
                   .to = to,
                   .term = term,
                   .log_term = hint_term,
                   .index = rejected,
                   .reject = true,
                   .reject_hint = hint_index};
}

inline Message heartbeat_resp(NodeId from, NodeId to, Term term, uint64_t round = 0) {
    return Message{.type = MessageType::kHeartbeatResponse,
                   .from = from,
                   .to = to,
                   .term = term,
                   .read_round = round};
}

// One node under test, over its own MemoryStorage. The test plays every other node.
class Peer {
public:
    explicit Peer(const NodeSpec& spec = NodeSpec{}) : id_(spec.id) {
        Bootstrap boot = make_bootstrap(ConfState{spec.voters, spec.learners});
        std::vector<Entry> log{boot.entry};
        for (const Entry& e : make_entries(2, spec.log_terms)) {
            log.push_back(e);
        }
        storage.append(log);
        Term term = spec.term != 0 ? spec.term : log.back().term;
        storage.set_hard_state(HardState{term, spec.vote, spec.commit});
        Config c;
        c.id = spec.id;
        c.seed = spec.seed;
        c.election_tick = spec.election_tick;
        c.heartbeat_tick = spec.heartbeat_tick;
        c.pre_vote = spec.pre_vote;
        c.check_quorum = spec.check_quorum;
        c.disable_proposal_forwarding = spec.disable_proposal_forwarding;
        c.applied = spec.commit;
        c.max_inflight_msgs = spec.max_inflight_msgs;
        c.max_size_per_msg_bytes = spec.max_size_per_msg_bytes;
        c.snapshot_chunk_bytes = spec.snapshot_chunk_bytes;
        config_ = c;
        node_ = std::make_unique<RawNode>(c, storage);
    }

    // A node restarted over the same storage (what survives a crash: the persisted state).
    void restart() {
        node_.reset();
        Config c = config_;
        c.applied = storage.initial_state().hard_state.commit;
        node_ = std::make_unique<RawNode>(c, storage);
    }

    NodeId id() const { return id_; }
    RawNode& node() { return *node_; }
    const Raft& raft() const { return node_->raft(); }
    Role role() const { return raft().role(); }
    Term term() const { return raft().term(); }
    const RaftLog& log() const { return raft().log(); }
    std::string status() const { return to_string(node_->status()); }

    void step(Message m) { node_->step(std::move(m)); }
    void tick(int n = 1) {
        for (int i = 0; i < n; ++i) {
            node_->tick();
        }
    }

    // Takes one Ready, persists it as the contract says, applies it and advances. The Ready is
    // returned for inspection (ordering, must_sync, which messages were early).
    Ready process_one() {
        Ready rd = node_->ready();
        if (rd.snapshot) {
            storage.apply_snapshot(*rd.snapshot);
        }
        storage.append(rd.entries);
        if (rd.hard_state) {
            storage.set_hard_state(*rd.hard_state);
        }
        applied.insert(applied.end(), rd.committed_entries.begin(), rd.committed_entries.end());
        read_states.insert(read_states.end(), rd.read_states.begin(), rd.read_states.end());
        if (rd.snapshot) {
            applied_snapshots.push_back(*rd.snapshot);
        }
        node_->advance(rd);
        return rd;
    }

    // Processes Readies until there is none; returns every message sent (early ones first within
    // each Ready).
    std::vector<Message> drain() {
        std::vector<Message> out;
        for (int i = 0; i < 100 && node_->has_ready(); ++i) {
            Ready rd = process_one();
            out.insert(out.end(), rd.early_messages.begin(), rd.early_messages.end());
            out.insert(out.end(), rd.messages.begin(), rd.messages.end());
        }
        return out;
    }

    MemoryStorage storage;
    std::vector<Entry> applied;
    std::vector<ReadState> read_states;
    std::vector<Snapshot> applied_snapshots;

private:
    NodeId id_;
    Config config_;
    std::unique_ptr<RawNode> node_;
};

// Makes `p` leader by campaigning and granting every (pre-)vote it asks for, then persists the
// term-start entry. Returns the messages of that last drain (the first appends).
inline std::vector<Message> make_leader(Peer& p) {
    p.node().campaign();
    for (int round = 0; round < 3 && p.role() != Role::kLeader; ++round) {
        for (const Message& m : p.drain()) {
            if (m.type == MessageType::kVote || m.type == MessageType::kPreVote) {
                p.step(vote_resp(m.to, p.id(), m.term, false, m.type == MessageType::kPreVote));
            }
        }
    }
    return p.drain();
}

// Acknowledges everything the leader has, from each of `peers`.
inline std::vector<Message> ack_all(Peer& leader, const std::vector<NodeId>& peers) {
    for (NodeId id : peers) {
        leader.step(append_resp(id, leader.id(), leader.term(), leader.log().last_index()));
    }
    return leader.drain();
}

}  // namespace raftlock::raft::paper
