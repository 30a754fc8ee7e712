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
  // The first queue, leaf up, and resource where `rows(q)` with the unit exceeds `bound(q)`
  // (-1: no bound), as a breach of `kind`.
  auto first_breach = [&](QuotaBreach::Kind kind, const auto& rows,
                          const auto& bound) -> std::optional<QuotaBreach> {
    for (int q = leaf; q >= 0; q = tree.parent(q)) {
      const Row limit = bound(q);
      const double* row = rows(q);
      for (int r = 0; r < r_count; ++r) {
        if (!(unit_requests[r] > 0) || limit[r] == -1) continue;
        if (!(row[r] + unit_requests[r] <= limit[r])) {
          return QuotaBreach{kind, q, r, row[r], unit_requests[r], limit[r]};
        }
      }
    }
    return std::nullopt;
  };
  std::optional<QuotaBreach> breach = first_breach(
      QuotaBreach::kLimit, allocated, [&shares](int q) { return shares.queues[q].limit; });
  if (breach.has_value() || cluster.group(group).preemptible) return breach;
  return first_breach(QuotaBreach::kNonPreemptible, allocated_np,
                      [&shares](int q) { return shares.queues[q].deserved; });
}

}  // namespace arbiter::kai
