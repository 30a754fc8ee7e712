// ComputeKueueShares (SEMANTICS.md §5.3, §6 KUEUE) and the queue list both entry points answer.
#include <algorithm>

#include "core/kueue/dominant_resource_share.h"
#include "core/kueue/kueue.h"
#include "core/kueue/queue_shares.h"

namespace arbiter::kueue {

namespace {

// QueueShare.flavor_resources (§5.8.9): n's SQ keys and the cells it uses, in (flavor, resource)
// order, which is cell order.
std::vector<FlavorResourceShare> FlavorRows(const QuotaTree& tree, int node) {
  const FlavorCells& cells = tree.cells();
  std::vector<FlavorResourceShare> rows;
  const bool has_parent = tree.parent(node) >= 0;
  for (int cell = 0; cell < cells.size(); ++cell) {
    const double usage = tree.usage(node, cell);
    if (!tree.covers(node, cell) && !(usage > 0)) continue;
    FlavorResourceShare& row = rows.emplace_back();
    row.flavor = cells.flavor(cell);
    row.resource = tree.resources().name(cells.resource(cell));
    row.nominal = tree.nominal(node, cell);
    row.subtree_quota = tree.subtree_quota(node, cell);
    row.usage = usage;
    row.borrowed = has_parent ? std::max(0.0, usage - row.subtree_quota) : 0.0;
  }
  return rows;
}

}  // namespace

std::vector<QueueShare> BuildQueueShares(const QuotaTree& tree,
                                         const std::vector<Workload>& workloads,
                                         const std::vector<char>& holds_quota) {
  const int n = tree.size();
  const FlavorCells& cells = tree.cells();
  // Per resource name: a request without flavors has one cell per name, numbered as R.
  const int resource_count = cells.resource_count();
  // The demand still waiting: workloads that hold no quota, summed up the tree (no lending).
  std::vector<double> pending(static_cast<size_t>(n) * resource_count, 0.0);
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (holds_quota[i]) continue;
    const Workload& w = workloads[i];
    for (const ResourceAmount& amount : w.RequestByName()) {
      pending[static_cast<size_t>(w.cq) * resource_count + amount.resource] += amount.amount;
    }
  }
  const std::vector<int>& top_down = tree.queues().top_down();
  for (auto it = top_down.rbegin(); it != top_down.rend(); ++it) {
    const int node = *it;
    for (int child : tree.queues().children(node)) {
      for (int r = 0; r < resource_count; ++r) {
        pending[static_cast<size_t>(node) * resource_count + r] +=
            pending[static_cast<size_t>(child) * resource_count + r];
      }
    }
  }

  std::vector<QueueShare> shares;
  shares.reserve(n);
  std::vector<double> allocated(resource_count);
  std::vector<double> requested(resource_count);
  for (int node = 0; node < n; ++node) {
    QueueShare share;
    share.queue = tree.name(node);
    share.deserved = tree.queues().queue(node).deserved;
    if (cells.has_flavors()) {
      // §6: Σ over flavors of Use(n, (f, r)), in flavor order (cells ascend by flavor).
      std::fill(allocated.begin(), allocated.end(), 0.0);
      for (int cell = 0; cell < cells.size(); ++cell) {
        allocated[cells.resource(cell)] += tree.usage(node, cell);
      }
    } else {
      for (int r = 0; r < resource_count; ++r) allocated[r] = tree.usage(node, r);
    }
    for (int r = 0; r < resource_count; ++r) {
      requested[r] = allocated[r] + pending[static_cast<size_t>(node) * resource_count + r];
    }
    share.allocated = tree.resources().ToMap(allocated);
    share.requested = tree.resources().ToMap(requested);
    const DominantResourceShare drs = ComputeDrs(tree, node);
    share.weighted_share = drs.weighted;
    share.borrowing = drs.borrowing;
    if (drs.dominant_resource >= 0) {
      share.dominant_resource = tree.resources().name(drs.dominant_resource);
    }
    if (cells.flavored_request()) share.flavor_resources = FlavorRows(tree, node);
    shares.push_back(std::move(share));
  }
  return shares;
}

std::vector<KueuePreemptionStrategy> ResolveStrategies(const Policy& policy) {
  if (!policy.kueue_preemption_strategies.empty()) return policy.kueue_preemption_strategies;
  return {KueuePreemptionStrategy::kLessThanOrEqualToFinalShare,
          KueuePreemptionStrategy::kLessThanInitialShare};
}

std::vector<QueueShare> ComputeKueueShares(const ValidatedSnapshot& request, CancelPoll* poll) {
  QuotaTree tree = QuotaTree::Build(request, poll);
  if (poll != nullptr && poll->cancelled()) return {};
  const std::vector<Workload> workloads = CollectWorkloads(request, tree);
  std::vector<char> holds(workloads.size(), 0);
  for (size_t i = 0; i < workloads.size(); ++i) holds[i] = workloads[i].admitted ? 1 : 0;
  tree.SetLeafUsage(LeafUsage(workloads, holds, tree.size(), tree.resource_count()));
  return BuildQueueShares(tree, workloads, holds);
}

}  // namespace arbiter::kueue
