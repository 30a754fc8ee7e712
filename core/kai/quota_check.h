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

}  // namespace arbiter::kai
