#include "tests/raft/interaction_env.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "raft/conf_change.h"
#include "raft/raft.h"
#include "raft/text.h"

namespace raftlock::raft::interaction {

namespace {

[[noreturn]] void usage(const std::string& message) {
    throw std::invalid_argument(message);
}

uint64_t to_u64(const std::string& text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
        usage(fmt::format("not a number: '{}'", text));
    }
    return std::stoull(text);
}

bool to_bool(const std::string& text) {
    if (text == "true") {
        return true;
    }
    if (text == "false") {
        return false;
    }
    usage(fmt::format("not a boolean: '{}'", text));
}

const CommandArg* find_arg(const Command& c, std::string_view key) {
    for (const CommandArg& a : c.args) {
        if (a.key == key) {
            return &a;
        }
    }
    return nullptr;
}

// The single value of `key=value`, or nullopt when the argument is absent.
std::optional<std::string> value_of(const Command& c, std::string_view key) {
    const CommandArg* a = find_arg(c, key);
    if (a == nullptr) {
        return std::nullopt;
    }
    if (a->values.size() != 1) {
        usage(fmt::format("{}: expected one value for {}", c.name, key));
    }
    return a->values.front();
}

uint64_t u64_arg(const Command& c, std::string_view key, uint64_t fallback) {
    std::optional<std::string> v = value_of(c, key);
    return v ? to_u64(*v) : fallback;
}

bool bool_arg(const Command& c, std::string_view key, bool fallback) {
    std::optional<std::string> v = value_of(c, key);
    return v ? to_bool(*v) : fallback;
}

std::vector<NodeId> ids_arg(const Command& c, std::string_view key) {
    std::vector<NodeId> ids;
    if (const CommandArg* a = find_arg(c, key)) {
        for (const std::string& v : a->values) {
            ids.push_back(to_u64(v));
        }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

// The bare (key-less) arguments, each a single value.
std::vector<std::string> positional(const Command& c) {
    std::vector<std::string> out;
    for (const CommandArg& a : c.args) {
        if (a.key.empty() && a.values.size() == 1) {
            out.push_back(a.values.front());
        }
    }
    return out;
}

std::string positional_at(const Command& c, size_t i, std::string_view what) {
    std::vector<std::string> pos = positional(c);
    if (i >= pos.size()) {
        usage(fmt::format("{}: missing {}", c.name, what));
    }
    return pos[i];
}

std::string_view error_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::kProposalDropped:
            return "ProposalDropped";
        case ErrorCode::kConfChangeRejected:
            return "ConfChangeRejected";
        case ErrorCode::kInvalidArgument:
            return "InvalidArgument";
        case ErrorCode::kCompacted:
            return "Compacted";
        case ErrorCode::kUnavailable:
            return "Unavailable";
        case ErrorCode::kSnapshotTemporarilyUnavailable:
            return "SnapshotTemporarilyUnavailable";
    }
    return "Unknown";
}

std::string status_text(const Status& s) {
    if (s.ok()) {
        return "ok";
    }
    return fmt::format("error: {}: {}", error_name(s.code()), s.message());
}

std::optional<MessageType> message_type_named(const std::string& name) {
    for (int t = 0; t <= static_cast<int>(MessageType::kTimeoutNow); ++t) {
        const auto type = static_cast<MessageType>(t);
        if (to_string(type) == name) {
            return type;
        }
    }
    usage(fmt::format("unknown message type '{}'", name));
}

ConfChange parse_conf_change(const std::string& text) {
    if (text.size() < 2) {
        usage(fmt::format("bad configuration change '{}' (want v4, l4 or r4)", text));
    }
    ConfChange cc;
    switch (text[0]) {
        case 'v':
            cc.type = ConfChangeType::kAddVoter;
            break;
        case 'l':
            cc.type = ConfChangeType::kAddLearner;
            break;
        case 'r':
            cc.type = ConfChangeType::kRemoveNode;
            break;
        default:
            usage(fmt::format("bad configuration change '{}' (want v4, l4 or r4)", text));
    }
    cc.node_id = to_u64(text.substr(1));
    return cc;
}

// What a delivered message may visibly change at once (the rest shows in the next Ready).
using RoleState = std::tuple<Role, Term, NodeId, NodeId>;

RoleState role_state(const RawNode& r) {
    const Raft& raft = r.raft();
    return {raft.role(), raft.term(), raft.vote(), raft.leader()};
}

}  // namespace

Command parse_command(const std::string& line) {
    Command c;
    size_t i = 0;
    auto skip_spaces = [&] {
        while (i < line.size() && line[i] == ' ') {
            ++i;
        }
    };
    auto split_list = [&](const std::string& body) {
        std::vector<std::string> out;
        size_t start = 0;
        while (start <= body.size()) {
            const size_t comma = std::min(body.find(',', start), body.size());
            std::string item = body.substr(start, comma - start);
            item.erase(0, item.find_first_not_of(' '));
            item.erase(item.find_last_not_of(' ') + 1);
            if (!item.empty()) {
                out.push_back(item);
            }
            start = comma + 1;
        }
        return out;
    };
    skip_spaces();
    while (i < line.size() && line[i] != ' ') {
        c.name += line[i++];
    }
    for (skip_spaces(); i < line.size(); skip_spaces()) {
        CommandArg arg;
        const size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '=' && line[i] != '(') {
            ++i;
        }
        if (i < line.size() && line[i] == '=') {
            arg.key = line.substr(start, i - start);
            ++i;
        } else {
            i = start;
        }
        if (i < line.size() && line[i] == '(') {
            const size_t close = line.find(')', i);
            if (close == std::string::npos) {
                usage("unbalanced '(' in: " + line);
            }
            arg.values = split_list(line.substr(i + 1, close - i - 1));
            i = close + 1;
        } else {
            const size_t end = std::min(line.find(' ', i), line.size());
            arg.values.push_back(line.substr(i, end - i));
            i = end;
        }
        c.args.push_back(std::move(arg));
    }
    return c;
}

bool InteractionEnv::Filter::matches(const Message& m) const {
    return (from == kNoNode || m.from == from) && (to == kNoNode || m.to == to) &&
           (!type || m.type == *type);
}

void InteractionEnv::check_invariants() const {
    for (const auto& [id, node] : nodes_) {
        if (node.raw) {
            node.raw->raft().check_invariants();
        }
    }
}

std::string InteractionEnv::handle(const Command& c) {
    std::string out;
    try {
        if (c.name == "add-nodes") {
            out = cmd_add_nodes(c);
        } else if (c.name == "campaign") {
            out = cmd_campaign(c);
        } else if (c.name == "tick") {
            out = cmd_tick(c);
        } else if (c.name == "tick-election") {
            out = cmd_tick_election(c);
        } else if (c.name == "tick-heartbeat") {
            out = cmd_tick_heartbeat(c);
        } else if (c.name == "process-ready") {
            out = cmd_process_ready(c);
        } else if (c.name == "deliver") {
            out = cmd_deliver(c, bool_arg(c, "drop", false));
        } else if (c.name == "drop") {
            out = cmd_deliver(c, /*drop_all=*/true);
        } else if (c.name == "stabilize") {
            out = cmd_stabilize(c);
        } else if (c.name == "partition") {
            out = cmd_partition(c);
        } else if (c.name == "cut") {
            out = cmd_cut(c);
        } else if (c.name == "heal") {
            out = cmd_heal();
        } else if (c.name == "propose") {
            out = cmd_propose(c);
        } else if (c.name == "propose-conf-change") {
            out = cmd_propose_conf_change(c);
        } else if (c.name == "read-index") {
            out = cmd_read_index(c);
        } else if (c.name == "transfer-leadership") {
            out = cmd_transfer_leadership(c);
        } else if (c.name == "snapshot") {
            out = cmd_snapshot(c);
        } else if (c.name == "compact") {
            out = cmd_compact(c);
        } else if (c.name == "status") {
            out = cmd_status(c);
        } else if (c.name == "raft-log") {
            out = cmd_raft_log(c);
        } else if (c.name == "crash") {
            out = cmd_crash(c);
        } else if (c.name == "restart") {
            out = cmd_restart(c);
        } else if (c.name == "queue") {
            out = cmd_queue();
        } else if (c.name == "inject") {
            out = cmd_inject(c);
        } else {
            usage(fmt::format("unknown command '{}'", c.name));
        }
    } catch (const std::invalid_argument& e) {
        out += fmt::format("{}{}\n", kUsageError, e.what());
    }
    while (!out.empty() && out.back() == '\n') {
        out.pop_back();
    }
    return out.empty() ? "ok" : out;
}

// ---------------------------------------------------------------------------------------------
// Nodes.

InteractionEnv::Node& InteractionEnv::node(NodeId id) {
    auto it = nodes_.find(id);
    if (it == nodes_.end()) {
        usage(fmt::format("no node {}", id));
    }
    return it->second;
}

RawNode& InteractionEnv::live(NodeId id) {
    Node& n = node(id);
    if (!n.raw) {
        usage(fmt::format("node {} is down", id));
    }
    return *n.raw;
}

std::vector<NodeId> InteractionEnv::node_ids(const Command& c) const {
    std::vector<NodeId> ids;
    for (const std::string& v : positional(c)) {
        ids.push_back(to_u64(v));
    }
    if (ids.empty()) {
        for (const auto& [id, n] : nodes_) {
            ids.push_back(id);
        }
    }
    return ids;
}

void InteractionEnv::start_node(NodeId id) {
    Node& n = node(id);
    n.raw = std::make_unique<RawNode>(n.config, *n.storage);
}

std::string InteractionEnv::role_line(NodeId id) const {
    const Node& n = nodes_.at(id);
    if (!n.raw) {
        return fmt::format("{}: down", id);
    }
    const Raft& r = n.raw->raft();
    return fmt::format("{}: {} term={} vote={} leader={} commit={}", id, to_string(r.role()),
                       r.term(), r.vote(), r.leader(), r.log().committed());
}

std::string InteractionEnv::cmd_add_nodes(const Command& c) {
    const uint64_t count = to_u64(positional_at(c, 0, "the number of nodes"));
    ConfState conf{ids_arg(c, "voters"), ids_arg(c, "learners")};
    const std::optional<std::string> index = value_of(c, "index");
    Config base;
    base.pre_vote = bool_arg(c, "prevote", false);
    base.check_quorum = bool_arg(c, "checkquorum", false);
    base.election_tick = static_cast<int>(u64_arg(c, "election", 10));
    base.heartbeat_tick = static_cast<int>(u64_arg(c, "heartbeat", 1));
    base.snapshot_chunk_bytes = u64_arg(c, "chunk", base.snapshot_chunk_bytes);
    base.max_inflight_msgs = static_cast<uint32_t>(u64_arg(c, "inflight", base.max_inflight_msgs));
    base.max_size_per_msg_bytes = u64_arg(c, "max-msg-size", base.max_size_per_msg_bytes);
    std::string out;
    const NodeId first = nodes_.empty() ? 1 : nodes_.rbegin()->first + 1;
    for (NodeId id = first; id < first + count; ++id) {
        Node n;
        n.config = base;
        n.config.id = id;
        n.config.seed = id;
        n.storage = std::make_unique<MemoryStorage>();
        if (!conf.empty() && index) {
            // Start from a snapshot at `index` (term 1) holding the configuration.
            const Index at = to_u64(*index);
            (void)n.storage->apply_snapshot(Snapshot{{at, 1, conf}, ""});
            n.storage->set_hard_state(HardState{1, kNoNode, at});
            n.config.applied = at;
            n.app.base_index = at;
        } else if (!conf.empty()) {
            const Bootstrap boot = make_bootstrap(conf);
            n.storage->append({boot.entry});
            n.storage->set_hard_state(boot.hard_state);
            n.config.applied = boot.entry.index;
        }
        nodes_.emplace(id, std::move(n));
        start_node(id);
        out += to_string(nodes_.at(id).raw->status());
    }
    return out;
}

std::string InteractionEnv::cmd_campaign(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    live(id).campaign();
    return role_line(id);
}

// ---------------------------------------------------------------------------------------------
// Time.

std::string InteractionEnv::tick_times(NodeId id, int ticks, bool stop_on_change) {
    RawNode& r = live(id);
    const RoleState before = role_state(r);
    // A pre-candidate that times out again starts a new PreVote round without any change of role
    // or term: its new messages are the only sign of it.
    const bool had_output = r.raft().has_output();
    int done = 0;
    while (done < ticks) {
        r.tick();
        ++done;
        const bool new_output = !had_output && r.raft().has_output();
        if (stop_on_change && (role_state(r) != before || new_output)) {
            break;
        }
    }
    std::string out = fmt::format("{} tick{}", done, done == 1 ? "" : "s");
    if (role_state(r) != before) {
        out += "; now " + role_line(id);
    }
    return out;
}

std::string InteractionEnv::cmd_tick(const Command& c) {
    std::vector<std::string> pos = positional(c);
    if (pos.empty()) {
        usage("tick: missing a node id");
    }
    const int n = pos.size() > 1 ? static_cast<int>(to_u64(pos[1])) : 1;
    return tick_times(to_u64(pos[0]), n, /*stop_on_change=*/false);
}

std::string InteractionEnv::cmd_tick_election(const Command& c) {
    // A follower's randomized timeout lies in [election, 2*election), so 2*election-1 ticks are
    // enough to fire it. Ticking stops as soon as the node's role or term changes or it has new
    // messages to send (an election started), so the count shows the drawn timeout. A leader ticks
    // exactly one election timeout (its CheckQuorum and transfer-abort period).
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    const RawNode& r = live(id);
    const int election = node(id).config.election_tick;
    if (r.raft().role() == Role::kLeader) {
        return tick_times(id, election, /*stop_on_change=*/false);
    }
    return tick_times(id, 2 * election - 1, /*stop_on_change=*/true);
}

std::string InteractionEnv::cmd_tick_heartbeat(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    return tick_times(id, node(id).config.heartbeat_tick, /*stop_on_change=*/false);
}

// ---------------------------------------------------------------------------------------------
// Ready handling: persist, send, apply, advance, in the order raw_node.h prescribes.

void InteractionEnv::process_ready(NodeId id, std::string* out) {
    Node& n = node(id);
    *out += fmt::format("> {} handling Ready\n", id);
    if (!n.raw) {
        *out += "  (down)\n";
        return;
    }
    if (!n.raw->has_ready()) {
        *out += "  <empty Ready>\n";
        return;
    }
    Ready rd = n.raw->ready();
    *out += to_string(rd, "  ");
    enqueue(std::vector<Message>(rd.early_messages));
    if (rd.snapshot && !n.storage->apply_snapshot(*rd.snapshot)) {
        *out += "  warning: storage refused an older snapshot\n";
    }
    n.storage->append(rd.entries);
    if (rd.hard_state) {
        n.storage->set_hard_state(*rd.hard_state);
    }
    enqueue(std::vector<Message>(rd.messages));
    apply_committed(n, rd);
    n.raw->advance(rd);
}

void InteractionEnv::apply_committed(Node& n, const Ready& rd) {
    if (rd.snapshot) {
        n.app = AppState{rd.snapshot->metadata.index, rd.snapshot->data, {}};
    }
    n.app.applied.insert(n.app.applied.end(), rd.committed_entries.begin(),
                         rd.committed_entries.end());
}

void InteractionEnv::enqueue(std::vector<Message>&& messages) {
    for (Message& m : messages) {
        queues_[m.to].push_back(std::move(m));
    }
}

std::string InteractionEnv::cmd_process_ready(const Command& c) {
    std::string out;
    for (NodeId id : node_ids(c)) {
        process_ready(id, &out);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The network.

std::optional<std::string> InteractionEnv::unreachable(const Message& m) const {
    auto it = nodes_.find(m.to);
    if (it == nodes_.end()) {
        return fmt::format("no node {}", m.to);
    }
    if (!it->second.raw) {
        return fmt::format("{} is down", m.to);
    }
    if (!groups_.empty()) {
        auto group = [&](NodeId id) {
            auto g = groups_.find(id);
            return g == groups_.end() ? -1 : g->second;  // unnamed nodes form one more group
        };
        if (group(m.from) != group(m.to)) {
            return std::string("partition");
        }
    }
    if (cuts_.count({m.from, m.to}) > 0) {
        return std::string("link cut");
    }
    return std::nullopt;
}

std::string InteractionEnv::deliver_to(NodeId to, const Filter& filter, bool drop_all) {
    auto q = queues_.find(to);
    if (q == queues_.end()) {
        return "";
    }
    // Take the matching messages first: stepping produces nothing until the next Ready, so the
    // queue does not change under us, but the split keeps the order of the rest intact.
    std::vector<Message> taken;
    std::deque<Message> rest;
    for (Message& m : q->second) {
        if (filter.matches(m)) {
            taken.push_back(std::move(m));
        } else {
            rest.push_back(std::move(m));
        }
    }
    q->second = std::move(rest);
    std::string out;
    for (Message& m : taken) {
        out += "  " + to_string(m);
        if (drop_all) {
            out += " (dropped)\n";
            continue;
        }
        if (std::optional<std::string> why = unreachable(m)) {
            out += fmt::format(" (dropped: {})\n", *why);
            continue;
        }
        out += "\n";
        RawNode& r = live(to);
        const RoleState before = role_state(r);
        const MessageCheck check = r.step(std::move(m));
        if (!check.ok()) {
            out += fmt::format("    => dropped ({}): {}\n", to_string(check.fault), check.reason);
        }
        if (role_state(r) != before) {
            out += "    => " + role_line(to) + "\n";
        }
    }
    return out;
}

// A message no correct node would send, stepped straight into its recipient (a broken peer).
std::string InteractionEnv::cmd_inject(const Command& c) {
    const std::optional<std::string> type = value_of(c, "type");
    if (!type) {
        usage("inject: type= is required");
    }
    Message m{.type = *message_type_named(*type),
              .from = u64_arg(c, "from", kNoNode),
              .to = u64_arg(c, "to", kNoNode),
              .term = u64_arg(c, "term", 0),
              .log_term = u64_arg(c, "log-term", 0),
              .index = u64_arg(c, "index", 0),
              .commit = u64_arg(c, "commit", 0),
              .reject = bool_arg(c, "reject", false),
              .reject_hint = u64_arg(c, "hint", 0),
              .read_round = u64_arg(c, "read-round", 0)};
    const uint64_t entries = u64_arg(c, "entries", 0);
    for (uint64_t i = 0; i < entries; ++i) {
        m.entries.push_back(Entry{.term = m.term, .index = m.index + 1 + i});
    }
    RawNode& r = live(m.to);
    std::string out = "  " + to_string(m) + "\n";
    const RoleState before = role_state(r);
    const MessageCheck check = r.step(std::move(m));
    out += check.ok()
               ? "    => passes the checks\n"
               : fmt::format("    => dropped ({}): {}\n", to_string(check.fault), check.reason);
    if (role_state(r) != before) {
        out += "    => " + role_line(r.id()) + "\n";
    }
    return out;
}

std::string InteractionEnv::cmd_deliver(const Command& c, bool drop_all) {
    Filter filter;
    filter.from = u64_arg(c, "from", kNoNode);
    filter.to = u64_arg(c, "to", kNoNode);
    if (std::optional<std::string> type = value_of(c, "type")) {
        filter.type = message_type_named(*type);
    }
    std::vector<NodeId> recipients;
    for (const auto& [to, q] : queues_) {
        if (!q.empty() && (filter.to == kNoNode || filter.to == to)) {
            recipients.push_back(to);
        }
    }
    std::string out;
    for (NodeId to : recipients) {
        std::string lines = deliver_to(to, filter, drop_all);
        if (!lines.empty()) {
            out += drop_all ? fmt::format("> messages to {} dropped\n", to)
                            : fmt::format("> {} receiving messages\n", to);
            out += lines;
        }
    }
    return out.empty() ? "no messages" : out;
}

std::string InteractionEnv::cmd_stabilize(const Command& c) {
    const std::vector<NodeId> ids = node_ids(c);
    const bool all = positional(c).empty();
    std::string out;
    for (int round = 0; round < kStabilizeRoundsMax; ++round) {
        bool progress = false;
        for (NodeId id : ids) {
            const Node& n = node(id);
            if (n.raw && n.raw->has_ready()) {
                process_ready(id, &out);
                progress = true;
            }
        }
        std::vector<NodeId> recipients;
        for (const auto& [to, q] : queues_) {
            const bool wanted = all || std::find(ids.begin(), ids.end(), to) != ids.end();
            if (!q.empty() && wanted) {
                recipients.push_back(to);
            }
        }
        for (NodeId to : recipients) {
            out += fmt::format("> {} receiving messages\n", to);
            out += deliver_to(to, Filter{}, /*drop_all=*/false);
            progress = true;
        }
        if (!progress) {
            return out;
        }
    }
    out += fmt::format("stabilize: step limit of {} rounds reached; the cluster is not quiet\n",
                       kStabilizeRoundsMax);
    return out;
}

std::string InteractionEnv::cmd_partition(const Command& c) {
    groups_.clear();
    int group = 0;
    std::string out = "partitioned:";
    for (const CommandArg& a : c.args) {
        if (!a.key.empty()) {
            usage("partition: expected groups such as (1) (2,3)");
        }
        for (const std::string& v : a.values) {
            groups_[to_u64(v)] = group;
        }
        out += fmt::format(" ({})", fmt::join(a.values, ","));
        ++group;
    }
    return out;
}

std::string InteractionEnv::cmd_cut(const Command& c) {
    const NodeId from = u64_arg(c, "from", kNoNode);
    const NodeId to = u64_arg(c, "to", kNoNode);
    if (from == kNoNode || to == kNoNode) {
        usage("cut: want from=X to=Y");
    }
    cuts_.insert({from, to});
    return "ok";
}

std::string InteractionEnv::cmd_heal() {
    groups_.clear();
    cuts_.clear();
    return "ok";
}

std::string InteractionEnv::cmd_queue() {
    std::string out;
    for (const auto& [to, q] : queues_) {
        for (const Message& m : q) {
            out += "  " + to_string(m) + "\n";
        }
    }
    return out.empty() ? "no messages" : out;
}

// ---------------------------------------------------------------------------------------------
// Client requests.

std::string InteractionEnv::cmd_propose(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    return status_text(live(id).propose(positional_at(c, 1, "the data")));
}

std::string InteractionEnv::cmd_propose_conf_change(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    const ConfChange cc = parse_conf_change(positional_at(c, 1, "a change (v4, l4, r4)"));
    return status_text(live(id).propose_conf_change(cc));
}

std::string InteractionEnv::cmd_read_index(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    live(id).read_index(positional_at(c, 1, "a context"));
    return "ok";
}

std::string InteractionEnv::cmd_transfer_leadership(const Command& c) {
    const NodeId from = u64_arg(c, "from", kNoNode);
    const NodeId to = u64_arg(c, "to", kNoNode);
    if (from == kNoNode || to == kNoNode) {
        usage("transfer-leadership: want from=X to=Y");
    }
    live(from).transfer_leadership(to);
    return "ok";
}

// ---------------------------------------------------------------------------------------------
// Storage: snapshots, compaction, crash and restart.

std::string InteractionEnv::app_data_at(const Node& n, Index index) const {
    std::string data = n.app.base_data;
    for (const Entry& e : n.app.applied) {
        if (e.index > index || e.type != EntryType::kNormal || e.data.empty()) {
            continue;
        }
        data += (data.empty() ? "" : ",") + e.data;
    }
    return data;
}

ConfState InteractionEnv::conf_state_at(const Node& n, Index index) const {
    const MemoryStorage& s = *n.storage;
    ConfState conf = s.initial_state().snapshot_meta.conf_state;
    if (index < s.first_index()) {
        return conf;
    }
    StorageResult<std::vector<Entry>> entries =
        s.entries(s.first_index(), index + 1, std::numeric_limits<uint64_t>::max());
    if (!entries.ok()) {
        usage(fmt::format("cannot read the log of node {}: {}", n.config.id,
                          entries.error().message));
    }
    for (const Entry& e : *entries) {
        if (e.type == EntryType::kConfChange) {
            auto record = decode_conf_change(e.data);
            if (!record.ok()) {
                usage("corrupt configuration entry in the log");
            }
            conf = record->conf_state;
        }
    }
    return conf;
}

std::string InteractionEnv::cmd_snapshot(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    const Index index = to_u64(positional_at(c, 1, "an index"));
    Node& n = node(id);
    const Index applied = live(id).status().applied;
    MemoryStorage& s = *n.storage;
    if (index > applied) {
        usage(fmt::format("snapshot: node {} has applied only up to {}", id, applied));
    }
    if (index <= s.initial_state().snapshot_meta.index || index < n.app.base_index) {
        usage(fmt::format("snapshot: node {} already has a snapshot at or above {}", id, index));
    }
    s.create_snapshot(index, conf_state_at(n, index), app_data_at(n, index));
    s.compact(index);
    const Snapshot snap = *s.snapshot();
    return fmt::format("snapshot {} data={}; log=[{},{}]", to_string(snap.metadata),
                       quote_bytes(snap.data), s.first_index(), s.last_index());
}

std::string InteractionEnv::cmd_compact(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    const Index index = to_u64(positional_at(c, 1, "an index"));
    MemoryStorage& s = *node(id).storage;
    const Index snap = s.initial_state().snapshot_meta.index;
    if (index > snap) {
        usage(fmt::format("compact: entries above the snapshot ({}) must stay", snap));
    }
    s.compact(index);
    return fmt::format("log=[{},{}]", s.first_index(), s.last_index());
}

std::string InteractionEnv::cmd_crash(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    Node& n = node(id);
    if (!n.raw) {
        usage(fmt::format("crash: node {} is already down", id));
    }
    // The process dies: its volatile state and unread inbox are gone; its disk stays.
    n.raw.reset();
    size_t lost = 0;
    if (auto q = queues_.find(id); q != queues_.end()) {
        lost = q->second.size();
        q->second.clear();
    }
    return fmt::format("{} crashed; {} queued message{} to it lost", id, lost,
                       lost == 1 ? "" : "s");
}

std::string InteractionEnv::cmd_restart(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    Node& n = node(id);
    if (n.raw) {
        usage(fmt::format("restart: node {} is running", id));
    }
    // The in-memory application restarts from the stored snapshot and replays committed entries.
    StorageResult<Snapshot> snap = n.storage->snapshot();
    n.app = snap.ok() ? AppState{snap->metadata.index, snap->data, {}} : AppState{};
    n.config.applied = n.app.base_index;
    start_node(id);
    return to_string(n.raw->status());
}

// ---------------------------------------------------------------------------------------------
// Inspection.

std::string InteractionEnv::cmd_status(const Command& c) {
    std::string out;
    for (NodeId id : node_ids(c)) {
        const Node& n = node(id);
        if (!n.raw) {
            out += fmt::format("{}: down\n", id);
            continue;
        }
        out += to_string(n.raw->status());
    }
    return out;
}

std::string InteractionEnv::cmd_raft_log(const Command& c) {
    const NodeId id = to_u64(positional_at(c, 0, "a node id"));
    const Node& n = node(id);
    const MemoryStorage& s = *n.storage;
    std::string out;
    const InitialState initial = s.initial_state();
    out += fmt::format("hard state: {}\n", to_string(initial.hard_state));
    if (initial.snapshot_meta.index > 0) {
        out += fmt::format("snapshot: {}\n", to_string(initial.snapshot_meta));
    }
    if (s.last_index() < s.first_index()) {
        return out + "log is empty\n";
    }
    StorageResult<std::vector<Entry>> entries =
        s.entries(s.first_index(), s.last_index() + 1, std::numeric_limits<uint64_t>::max());
    if (!entries.ok()) {
        usage(entries.error().message);
    }
    for (const Entry& e : *entries) {
        out += to_string(e) + "\n";
    }
    if (!n.app.applied.empty() || !n.app.base_data.empty()) {
        out += fmt::format("application: {}\n", quote_bytes(app_data_at(n, UINT64_MAX), 200));
    }
    return out;
}

}  // namespace raftlock::raft::interaction
