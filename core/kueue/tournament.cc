#include "core/kueue/tournament.h"

namespace arbiter::kueue {

Tournament::Tournament(QuotaTree* tree, const std::vector<Workload>* workloads, int root,
                       const std::vector<int>& entries, const std::vector<char>* without_usage)
    : tree_(tree), workloads_(workloads), without_usage_(without_usage), root_(root) {
  const int n = tree->size();
  entry_of_queue_.assign(n, -1);
  best_.assign(n, -1);
  drs_.assign(n, DominantResourceShare{});
  borrows_requested_.assign(n, 0);
  added_.assign(n, {});
  for (int workload : entries) entry_of_queue_[(*workloads)[workload].cq] = workload;
  // Post-order over the root's subtree: children before their parent.
  std::vector<std::pair<int, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [node, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      Evaluate(node);
      continue;
    }
    stack.emplace_back(node, true);
    const std::vector<int>& children = tree->queues().children(node);
    for (auto it = children.rbegin(); it != children.rend(); ++it) stack.emplace_back(*it, false);
  }
}

const Usage& Tournament::UsageOf(int workload) const {
  static const Usage kNone;
  return (*without_usage_)[workload] != 0 ? kNone : (*workloads_)[workload].usage;
}

void Tournament::Remove(int workload) {
  const int cq = (*workloads_)[workload].cq;
  entry_of_queue_[cq] = -1;
  for (int node = cq; node >= 0; node = tree_->parent(node)) {
    Evaluate(node);
    if (node == root_) break;
  }
}

bool Tournament::Beats(int a, int b) const {
  if (borrows_requested_[a] != borrows_requested_[b]) return !borrows_requested_[a];
  const int order = CompareDrs(drs_[a], drs_[b]);
  if (order != 0) return order < 0;
  const Workload& wa = (*workloads_)[best_[a]];
  const Workload& wb = (*workloads_)[best_[b]];
  if (wa.priority != wb.priority) return wa.priority > wb.priority;
  if (wa.creation != wb.creation) return wa.creation < wb.creation;
  return wa.name() < wb.name();
}

void Tournament::Evaluate(int node) {
  int best_child = -1;
  if (tree_->is_leaf(node)) {
    best_[node] = entry_of_queue_[node];
  } else {
    for (int child : tree_->queues().children(node)) {
      if (best_[child] < 0) continue;
      if (best_child < 0 || Beats(child, best_child)) best_child = child;
    }
    best_[node] = best_child < 0 ? -1 : best_[best_child];
  }
  if (node == root_ || best_[node] < 0) return;
  const Usage& usage = UsageOf(best_[node]);
  // What of w's usage reaches this node when it is added at w's ClusterQueue: all of it at the
  // ClusterQueue; above, what reached the child on w's path less that child's LA (AddUsage's
  // bubbling, one level at a time). The child's amounts still hold: only the path of the last
  // processed entry changed, and every node on it is evaluated again, bottom up.
  std::vector<double>& added = added_[node];
  added.resize(usage.size());
  for (size_t i = 0; i < usage.size(); ++i) {
    if (best_child < 0) {
      added[i] = usage[i].amount;
      continue;
    }
    const double below = added_[best_child][i];
    const double local_available = tree_->LocalAvailable(best_child, usage[i].resource);
    added[i] = below > local_available ? below - local_available : 0;
  }
  bool borrows = false;
  drs_[node] = ComputeDrsWithAdded(*tree_, node, usage, added, &borrows);
  borrows_requested_[node] = borrows ? 1 : 0;
}

}  // namespace arbiter::kueue
