#pragma once

// A tiny in-process cluster for unit tests: MemoryStorage per node, an instant lossless network,
// and a pump that processes Ready batches until the cluster is quiet. Tests that need faults use
// the interaction scripts or the simulator instead.

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "raft/conf_change.h"
#include "raft/memory_storage.h"
#include "raft/raw_node.h"

namespace raftlock::raft::testing {

struct TestNode {
    MemoryStorage storage;
    std::unique_ptr<RawNode> node;
    std::vector<Entry> applied;
    std::vector<ReadState> read_states;
};

class TestCluster {
public:
    explicit TestCluster(size_t size, Config base = Config{}) {
        ConfState conf;
        for (NodeId id = 1; id <= size; ++id) {
            conf.voters.push_back(id);
        }
        Bootstrap boot = make_bootstrap(conf);
        for (NodeId id = 1; id <= size; ++id) {
            auto n = std::make_unique<TestNode>();
            n->storage.append({boot.entry});
            n->storage.set_hard_state(boot.hard_state);
            Config c = base;
            c.id = id;
            c.seed = id;
            c.applied = 1;
            n->node = std::make_unique<RawNode>(c, n->storage);
            nodes_[id] = std::move(n);
        }
    }

    RawNode& node(NodeId id) { return *nodes_.at(id)->node; }
    TestNode& at(NodeId id) { return *nodes_.at(id); }

    // Processes Readies and delivers messages until nothing is left (bounded).
    void pump() {
        for (int round = 0; round < 10000; ++round) {
            bool progress = false;
            for (auto& [id, n] : nodes_) {
                while (n->node->has_ready()) {
                    progress = true;
                    Ready rd = n->node->ready();
                    for (Message& m : rd.early_messages) {
                        queue_.push_back(std::move(m));
                    }
                    if (rd.snapshot) {
                        n->storage.apply_snapshot(*rd.snapshot);
                    }
                    n->storage.append(rd.entries);
                    if (rd.hard_state) {
                        n->storage.set_hard_state(*rd.hard_state);
                    }
                    for (Message& m : rd.messages) {
                        queue_.push_back(std::move(m));
                    }
                    n->applied.insert(n->applied.end(), rd.committed_entries.begin(),
                                      rd.committed_entries.end());
                    n->read_states.insert(n->read_states.end(), rd.read_states.begin(),
                                          rd.read_states.end());
                    n->node->advance(rd);
                }
            }
            while (!queue_.empty()) {
                progress = true;
                Message m = std::move(queue_.front());
                queue_.pop_front();
                if (nodes_.count(m.to) && !isolated_.count(m.to) && !isolated_.count(m.from)) {
                    nodes_.at(m.to)->node->step(std::move(m));
                }
            }
            if (!progress) {
                return;
            }
        }
    }

    void isolate(NodeId id) { isolated_[id] = true; }
    void heal() { isolated_.clear(); }

private:
    std::map<NodeId, std::unique_ptr<TestNode>> nodes_;
    std::map<NodeId, bool> isolated_;
    std::deque<Message> queue_;
};

}  // namespace raftlock::raft::testing
