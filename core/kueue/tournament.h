// The admission order of one root tree (SEMANTICS.md §5.4 step 4): every cohort compares the
// winners of its child cohorts and the entries of its child ClusterQueues, each represented by
// the node directly under the cohort, evaluated as "DRS with its own entry".
//
// Incremental: processing an entry changes usage only along its ClusterQueue's path, so only the
// cohorts on that path re-run their comparison (O(depth · children) per entry, not the whole
// tree). "DRS with its own entry" is evaluated from the amounts that reach each node, carried up
// from the child, so an evaluation costs O(children + |usage|), not the depth of the entry's
// ClusterQueue. Winner(), process, Remove(winner), repeat.
#pragma once

#include <vector>

#include "core/kueue/dominant_resource_share.h"
#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"

namespace arbiter::kueue {

class Tournament {
 public:
  // `entries` are workload indices, at most one per ClusterQueue, all under `root`. An entry with
  // `without_usage[workload]` set (a NoFit nomination: Kueue assigns it no flavor) takes part
  // with no usage: it never borrows under rule (1), and its representatives keep their current
  // DRS. The tree, the workloads and `without_usage` must outlive the tournament.
  Tournament(QuotaTree* tree, const std::vector<Workload>* workloads, int root,
             const std::vector<int>& entries, const std::vector<char>* without_usage);

  bool empty() const { return best_[root_] < 0; }
  // The workload to process next.
  int Winner() const { return best_[root_]; }
  // Takes `workload` (the last winner) out, after the tree changed along its queue's path.
  void Remove(int workload);

 private:
  void Evaluate(int node);
  // True when child a's candidate beats child b's in their parent's comparison.
  bool Beats(int a, int b) const;

  // The usage an entry takes part with: its own, or none (see the constructor).
  const Usage& UsageOf(int workload) const;

  QuotaTree* tree_;
  const std::vector<Workload>* workloads_;
  const std::vector<char>* without_usage_;
  int root_;
  std::vector<int> entry_of_queue_;         // ClusterQueue -> its entry, -1 when none left
  std::vector<int> best_;                   // node -> winning workload of its subtree
  std::vector<DominantResourceShare> drs_;  // node -> DRS with best_[node] added
  std::vector<char> borrows_requested_;     // node -> borrows what best_[node] requests
  // node -> per entry of best_[node]'s usage, the amount that reaches the node when the usage is
  // added at its ClusterQueue (0: none), as AddUsage would bubble it on the current tree.
  std::vector<std::vector<double>> added_;
};

}  // namespace arbiter::kueue
