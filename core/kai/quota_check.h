// Quota checks before placing a unit (SEMANTICS.md §4.4), for the leaf and every ancestor, only on
// resources the unit requests (unitReq_r > 0):
//   limit:  allocated + unitReq <= limit, wherever the limit is set and not -1;
//   non-preemptible groups only: allocatedNP + unitReq <= deserved, wherever deserved is not -1.
// The limit is checked up the whole chain first, then the non-preemptible quota; within a queue,
// resources in name order. The first breach is reported.
#pragma once

#include <optional>

#include "core/kai/cluster.h"
#include "core/kai/fair_share_rows.h"
#include "core/kai/working_state.h"

namespace arbiter::kai {

struct QuotaBreach {
  enum Kind { kLimit, kNonPreemptible };
  Kind kind = kLimit;
  int queue = -1;
  int resource = -1;
  double allocated = 0;  // allocated (kLimit) or allocatedNP (kNonPreemptible) of the queue
  double requested = 0;  // unitReq
  double bound = 0;      // the limit or the deserved amount
};

// The first breach if G's unit of `unit_requests` were placed now, or nullopt. O(depth · R).
std::optional<QuotaBreach> CheckQuota(const Cluster& cluster, const KaiFairShare& shares,
                                      const WorkingState& state, int group,
                                      const double* unit_requests);

// CheckQuota on allocations given per queue of G's path: `allocated(q)` and `allocated_np(q)`
// return the rows of queue q (over R) to check against.
template <typename Allocated, typename AllocatedNp>
std::optional<QuotaBreach> CheckQuotaOn(const Cluster& cluster, const KaiFairShare& shares,
                                        int group, const double* unit_requests,
                                        const Allocated& allocated,
                                        const AllocatedNp& allocated_np) {
  const QueueTree& tree = cluster.tree();
  const int r_count = cluster.num_resources();
  const int leaf = cluster.group(group).queue;
  for (int q = leaf; q >= 0; q = tree.parent(q)) {
    const Row limit = shares.queues[q].limit;
    const double* row = allocated(q);
    for (int r = 0; r < r_count; ++r) {
      if (!(unit_requests[r] > 0) || limit[r] == -1) continue;
      if (!(row[r] + unit_requests[r] <= limit[r])) {
        return QuotaBreach{QuotaBreach::kLimit, q, r, row[r], unit_requests[r], limit[r]};
      }
    }
  }
  if (cluster.group(group).preemptible) return std::nullopt;
  for (int q = leaf; q >= 0; q = tree.parent(q)) {
    const Row deserved = shares.queues[q].deserved;
    const double* row = allocated_np(q);
    for (int r = 0; r < r_count; ++r) {
      if (!(unit_requests[r] > 0) || deserved[r] == -1) continue;
      if (!(row[r] + unit_requests[r] <= deserved[r])) {
        return QuotaBreach{
            QuotaBreach::kNonPreemptible, q, r, row[r], unit_requests[r], deserved[r]};
      }
    }
  }
  return std::nullopt;
}

}  // namespace arbiter::kai
