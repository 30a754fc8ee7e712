#include "core/kai/quota_check.h"

namespace arbiter::kai {

std::optional<QuotaBreach> CheckQuota(const Cluster& cluster, const KaiFairShare& shares,
                                      const WorkingState& state, int group,
                                      const double* unit_requests) {
  const QueueTree& tree = cluster.tree();
  const int r_count = cluster.num_resources();
  const int leaf = cluster.group(group).queue;
  for (int q = leaf; q >= 0; q = tree.parent(q)) {
    const Row limit = shares.queues[q].limit;
    const double* allocated = state.allocated(q);
    for (int r = 0; r < r_count; ++r) {
      if (!(unit_requests[r] > 0) || limit[r] == -1) continue;
      if (!(allocated[r] + unit_requests[r] <= limit[r])) {
        return QuotaBreach{QuotaBreach::kLimit, q, r, allocated[r], unit_requests[r], limit[r]};
      }
    }
  }
  if (cluster.group(group).preemptible) return std::nullopt;
  for (int q = leaf; q >= 0; q = tree.parent(q)) {
    const Row deserved = shares.queues[q].deserved;
    const double* allocated_np = state.allocated_np(q);
    for (int r = 0; r < r_count; ++r) {
      if (!(unit_requests[r] > 0) || deserved[r] == -1) continue;
      if (!(allocated_np[r] + unit_requests[r] <= deserved[r])) {
        return QuotaBreach{
            QuotaBreach::kNonPreemptible, q, r, allocated_np[r], unit_requests[r], deserved[r]};
      }
    }
  }
  return std::nullopt;
}

}  // namespace arbiter::kai
