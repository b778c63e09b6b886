// `raftlock member list | add | promote | transfer | remove`: the cluster's configuration.

#include "cli/common.h"

namespace raftlock::cli {

namespace {

// --- membership ---------------------------------------------------------------------------------

int print_members(const Context& ctx, const std::vector<client::Member>& members) {
    json rows = json::array();
    std::string text = fmt::format("{:<6} {:<8} {}\n", "ID", "ROLE", "RAFT ADDRESS");
    for (const client::Member& m : members) {
        const char* role = m.learner ? "learner" : "voter";
        rows.push_back(json{{"id", m.id}, {"role", role}, {"address", m.address}});
        text += fmt::format("{:<6} {:<8} {}\n", m.id, role, m.address);
    }
    emit(ctx, json{{"members", rows}}, text);
    return kExitOk;
}

int cmd_member_list(const Context& ctx) {
    Client client(ctx.client_options());
    auto members = client.members();
    if (!members.ok()) {
        return report(ctx, members.error());
    }
    return print_members(ctx, *members);
}

int cmd_member_change(const Context& ctx,
                      client::MemberChange change,
                      uint64_t node_id,
                      const std::string& address) {
    Client client(ctx.client_options());
    auto members = client.change_member(change, node_id, address);
    if (!members.ok()) {
        return report(ctx, members.error());
    }
    return print_members(ctx, *members);
}

int cmd_member_transfer(const Context& ctx, uint64_t node_id) {
    Client client(ctx.client_options());
    auto leader = client.transfer_leadership(node_id);
    if (!leader.ok()) {
        return report(ctx, leader.error());
    }
    emit(ctx, json{{"leader", *leader}}, fmt::format("node {} leads\n", *leader));
    return kExitOk;
}

}  // namespace

void add_member_commands(CLI::App& app, Command& run) {
    auto* member = app.add_subcommand(
        "member", "list or change the cluster's members (one change at a time, by the leader)");
    member->require_subcommand(1);
    auto* cmd = member->add_subcommand("list", "the committed configuration");
    cmd->callback([&run] { run = [](const Context& ctx) { return cmd_member_list(ctx); }; });

    static uint64_t node_id = 0;
    static std::string address;
    static bool learner = false;
    cmd =
        member->add_subcommand("add",
                               "add a node (start it first with --initial-cluster-state existing); "
                               "with --learner it does not vote");
    cmd->add_option("id", node_id, "the new node's id (never reuse a removed node's id)")
        ->required();
    cmd->add_option("address", address, "HOST:PORT of its Raft port")->required();
    cmd->add_flag("--learner", learner, "add it as a non-voting learner");
    cmd->callback([&run] {
        run = [](const Context& ctx) {
            return cmd_member_change(
                ctx, learner ? client::MemberChange::kAddLearner : client::MemberChange::kAddVoter,
                node_id, address);
        };
    });
    cmd = member->add_subcommand("promote", "make a learner a voter");
    cmd->add_option("id", node_id, "the learner's id")->required();
    cmd->callback([&run] {
        run = [](const Context& ctx) {
            return cmd_member_change(ctx, client::MemberChange::kAddVoter, node_id, "");
        };
    });
    cmd = member->add_subcommand(
        "transfer", "hand leadership to a voter (it catches up, then campaigns at once)");
    cmd->add_option("id", node_id, "the voter's id")->required();
    cmd->callback(
        [&run] { run = [](const Context& ctx) { return cmd_member_transfer(ctx, node_id); }; });
    cmd = member->add_subcommand("remove", "remove a node (a removed raftlockd stops by itself)");
    cmd->add_option("id", node_id, "the node's id")->required();
    cmd->callback([&run] {
        run = [](const Context& ctx) {
            return cmd_member_change(ctx, client::MemberChange::kRemove, node_id, "");
        };
    });
}

}  // namespace raftlock::cli
