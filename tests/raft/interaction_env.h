#pragma once

// The interaction environment behind the golden scripts in tests/raft/testdata (in the spirit of
// etcd-io/raft's rafttest): a handful of RawNodes with in-memory storage, one message queue per
// recipient, and nothing that happens on its own. Every Ready is processed, every message delivered
// and every tick taken only when a script command says so, and everything observable is printed
// through the core's stable text forms (raft/text.h). The output is therefore a complete,
// deterministic trace that a reviewer can check line by line against the Raft paper.
//
// The command language is documented in docs/raft.md ("Interaction scripts") and at the top of
// tests/raft/interaction_test.cc.

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "raft/config.h"
#include "raft/memory_storage.h"
#include "raft/raw_node.h"
#include "raft/types.h"

namespace raftlock::raft::interaction {

// One argument of a command line: `key=value`, `key=(v1,v2)`, a bare `value` or a bare `(v1,v2)`.
// Bare arguments have an empty key.
struct CommandArg {
    std::string key;
    std::vector<std::string> values;
};

struct Command {
    std::string name;
    std::vector<CommandArg> args;
};

// Splits a command line into its name and arguments. Throws std::invalid_argument on an
// unbalanced parenthesis (test-input error, reported at the edge).
Command parse_command(const std::string& line);

class InteractionEnv {
public:
    InteractionEnv() = default;
    InteractionEnv(const InteractionEnv&) = delete;
    InteractionEnv& operator=(const InteractionEnv&) = delete;

    // Runs one command and returns its output: never empty ("ok" when there is nothing to say)
    // and without blank lines, so it fits the datadriven file format. A mistake in the script
    // (unknown command, bad argument, a node that does not exist) comes back as a line starting
    // with kUsageError, which the runner treats as a failure; errors returned by the core
    // (ProposalDropped, ...) are ordinary output. A broken invariant inside the core aborts.
    std::string handle(const Command& command);
    // Raft::check_invariants() on every running node (after each command).
    void check_invariants() const;

    static constexpr std::string_view kUsageError = "usage error: ";

    // Upper bound on the rounds (process every Ready, deliver every message) of one `stabilize`.
    static constexpr int kStabilizeRoundsMax = 1000;

private:
    // The application half of a node: what it has applied, as a string that a snapshot captures.
    struct AppState {
        Index base_index = 0;   // the snapshot the state was restored from (0: none)
        std::string base_data;  // its data
        std::vector<Entry> applied;
    };
    struct Node {
        Config config;
        // The node's disk: it survives crash/restart. MemoryStorage models a disk that syncs every
        // write, and the environment performs each Ready's writes completely, so a crash loses
        // only what the core had not yet handed out in a Ready.
        std::unique_ptr<MemoryStorage> storage;
        std::unique_ptr<RawNode> raw;  // null while crashed
        AppState app;
    };
    // A message filter for deliver/drop: 0 / nullopt means "any".
    struct Filter {
        NodeId from = kNoNode;
        NodeId to = kNoNode;
        std::optional<MessageType> type;
        bool matches(const Message& m) const;
    };

    // Commands (interaction_env.cc).
    std::string cmd_add_nodes(const Command& c);
    std::string cmd_tick(const Command& c);
    std::string cmd_tick_election(const Command& c);
    std::string cmd_tick_heartbeat(const Command& c);
    std::string cmd_process_ready(const Command& c);
    std::string cmd_deliver(const Command& c, bool drop_all);
    std::string cmd_stabilize(const Command& c);
    std::string cmd_partition(const Command& c);
    std::string cmd_cut(const Command& c);
    std::string cmd_heal();
    std::string cmd_propose(const Command& c);
    std::string cmd_propose_conf_change(const Command& c);
    std::string cmd_read_index(const Command& c);
    std::string cmd_transfer_leadership(const Command& c);
    std::string cmd_snapshot(const Command& c);
    std::string cmd_compact(const Command& c);
    std::string cmd_status(const Command& c);
    std::string cmd_raft_log(const Command& c);
    std::string cmd_crash(const Command& c);
    std::string cmd_restart(const Command& c);
    std::string cmd_campaign(const Command& c);
    std::string cmd_queue();
    std::string cmd_inject(const Command& c);

    // Helpers.
    Node& node(NodeId id);
    RawNode& live(NodeId id);
    std::vector<NodeId> node_ids(const Command& c) const;
    void start_node(NodeId id);
    std::string tick_times(NodeId id, int ticks, bool stop_on_change);
    void process_ready(NodeId id, std::string* out);
    void apply_committed(Node& n, const Ready& rd);
    void enqueue(std::vector<Message>&& messages);
    std::string deliver_to(NodeId to, const Filter& filter, bool drop_all);
    std::optional<std::string> unreachable(const Message& m) const;
    std::string app_data_at(const Node& n, Index index) const;
    ConfState conf_state_at(const Node& n, Index index) const;
    std::string role_line(NodeId id) const;

    std::map<NodeId, Node> nodes_;
    // Messages waiting to be delivered, per recipient, in the order they were sent.
    std::map<NodeId, std::deque<Message>> queues_;
    // Partition groups (node -> group number); empty when the network is whole.
    std::map<NodeId, int> groups_;
    // One-way link cuts (from, to), from `cut`; cleared by `heal`.
    std::set<std::pair<NodeId, NodeId>> cuts_;
};

}  // namespace raftlock::raft::interaction
