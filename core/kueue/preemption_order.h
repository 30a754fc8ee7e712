// The target ordering of fair-sharing preemption (SEMANTICS.md §5.5 step 4, `next`): from the
// root of the preemptor's tree, descend by dominant resource share to the ClusterQueue whose
// candidates are tried next, pruning queues and cohorts that no longer borrow or have no
// candidate left. One ordering serves one pass of one search over that pass's candidate runs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cancel_poll.h"
#include "core/kueue/dominant_resource_share.h"
#include "core/kueue/preemption_candidates.h"
#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"

namespace arbiter::kueue::internal {

// DRS per node of the simulated tree (§5.3), computed when first asked and kept until usage
// changes below the node.
class ShareCache {
 public:
  void Resize(size_t node_count) {
    shares_.assign(node_count, DominantResourceShare{});
    stamp_.assign(node_count, 0);
  }
  // Forgets every share (the usage changed everywhere that matters: a preemptor was added).
  void Clear() { ++current_; }
  // Forgets the shares of `cq` and its ancestors, whose usage an eviction from cq lowered.
  void ClearPath(const QuotaTree& tree, int cq) {
    for (int node = cq; node >= 0; node = tree.parent(node)) stamp_[node] = 0;
  }
  const DominantResourceShare& Of(const QuotaTree& tree, int node) {
    if (stamp_[node] != current_) {
      shares_[node] = ComputeDrs(tree, node);
      stamp_[node] = current_;
    }
    return shares_[node];
  }

 private:
  std::vector<DominantResourceShare> shares_;
  std::vector<uint32_t> stamp_;
  uint32_t current_ = 1;
};

// The preemptor's ClusterQueue x and its path to the root of its tree.
class PreemptorPath {
 public:
  PreemptorPath(const QuotaTree& tree, int x) : x_(x) {
    for (int node = x; node >= 0; node = tree.parent(node)) {
      path_.push_back(node);
      root_ = node;
    }
  }
  int x() const { return x_; }
  int root() const { return root_; }
  // x, its parent, ..., the root.
  const std::vector<int>& nodes() const { return path_; }
  // Whether `node` is x or one of its ancestors.
  bool Contains(const QuotaTree& tree, int node) const {
    const int depth = tree.queues().entry(node).depth;
    return depth < static_cast<int>(path_.size()) && path_[path_.size() - 1 - depth] == node;
  }

 private:
  int x_;
  int root_ = -1;
  std::vector<int> path_;
};

// What an ordering reads of its search; every member outlives the ordering.
struct OrderingScope {
  const QuotaTree& tree;  // the simulated tree, as the search has changed it so far
  const std::vector<Workload>& workloads;
  const CandidateIndex& index;
  const CandidateFilter& is_candidate;
  const PreemptorPath& path;
  ShareCache& shares;
  CancelPoll& poll;
};

// Pruning marks shared by the orderings of one call: a node is unpruned in an ordering iff its
// mark equals that ordering's id, so a new ordering starts in O(queues with candidates).
struct PruneMarks {
  std::vector<uint32_t> alive;  // per node
  uint32_t current = 1;
};

// Target queue ordering for one pass over `source`, popping candidates from the front of each
// queue's run. Queues without candidates, and cohorts without such queues below them, start
// pruned: `Next` would prune them on its way without ever returning them.
class TargetOrdering {
 public:
  // `scope`, `source` and `marks` outlive the ordering; no other ordering sharing `marks` is
  // used while this one is.
  TargetOrdering(const OrderingScope& scope, RunTable* source, PruneMarks* marks);

  // The next target queue, -1 when every queue is pruned.
  int Next();
  // The first candidate of cq not popped yet (-1: none), and popping it.
  int Head(int cq);
  int Pop(int cq);
  // Moves every candidate of cq not popped yet to the end of `out`'s run for cq.
  void MoveRest(int cq, RunTable* out);
  // Prunes the subtree of `top`, first moving (when `out` is set) the rest of every queue that
  // `Next` would still return from it: borrowing queues below borrowing, unpruned cohorts.
  // Used when every such queue would meet the same fate because the shares compared for it
  // are those of `top` itself, which nothing changes in the meantime.
  void PruneSubtree(int top, RunTable* out);
  // Prunes cq alone.
  void Drop(int cq) { alive_[cq] = 0; }

 private:
  bool pruned(int node) const { return alive_[node] != id_; }
  const DominantResourceShare& Drs(int node) { return scope_.shares.Of(scope_.tree, node); }

  const OrderingScope& scope_;
  RunTable* source_;
  std::vector<uint32_t>& alive_;
  uint32_t id_;
};

}  // namespace arbiter::kueue::internal
