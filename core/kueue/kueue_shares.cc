// ComputeKueueShares (SEMANTICS.md §5.3, §6 KUEUE) and the queue list both entry points answer.
#include "core/kueue/dominant_resource_share.h"
#include "core/kueue/kueue.h"
#include "core/kueue/queue_shares.h"

namespace arbiter::kueue {

std::vector<QueueShare> BuildQueueShares(const QuotaTree& tree,
                                         const std::vector<Workload>& workloads,
                                         const std::vector<char>& holds_quota) {
  const int n = tree.size();
  const int resource_count = tree.resource_count();
  // The demand still waiting: workloads that hold no quota, summed up the tree (no lending).
  std::vector<char> waiting(workloads.size(), 0);
  for (size_t i = 0; i < workloads.size(); ++i) waiting[i] = holds_quota[i] ? 0 : 1;
  std::vector<double> pending = LeafUsage(workloads, waiting, n, resource_count);
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
    for (int r = 0; r < resource_count; ++r) {
      allocated[r] = tree.usage(node, r);
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
  const std::vector<Workload> workloads = CollectWorkloads(request);
  std::vector<char> holds(workloads.size(), 0);
  for (size_t i = 0; i < workloads.size(); ++i) holds[i] = workloads[i].admitted ? 1 : 0;
  tree.SetLeafUsage(LeafUsage(workloads, holds, tree.size(), tree.resource_count()));
  return BuildQueueShares(tree, workloads, holds);
}

}  // namespace arbiter::kueue
