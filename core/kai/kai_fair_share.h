// KAI hierarchical fair share (SEMANTICS.md §2) with time-aware fairness (§3), and the per-queue
// amounts of §0.7 that the scheduling cycle starts from.
#pragma once

#include <vector>

#include "core/cancel_poll.h"
#include "core/model.h"
#include "core/queue_tree.h"
#include "core/resources.h"
#include "core/validated_snapshot.h"

namespace arbiter::kai {

// Per-queue vectors over R (index = ResourceSet index), for one queue of the tree.
struct QueueAmounts {
  std::vector<double> deserved;           // as configured, missing = 0, -1 kept
  std::vector<double> limit;              // missing or -1 = -1 (no cap)
  std::vector<double> over_quota_weight;  // missing = 1
  std::vector<double> requested;          // §0.7 request(q): RUNNING + PENDING over the subtree
  std::vector<double> allocated;          // §0.7 allocated(q): RUNNING over the subtree
  std::vector<double> allocated_np;       // RUNNING pods of non-preemptible groups, subtree
  std::vector<double> fair_share;         // §2.2
  std::vector<double> allocatable_share;  // §2.3, +infinity for "no cap"
};

struct KaiFairShare {
  const ValidatedSnapshot* request = nullptr;  // the request divided, which owns R and the tree
  const ResourceSet& resources() const { return request->resources(); }
  const QueueTree& tree() const { return request->tree(); }
  std::vector<double> total;         // T_r divided at the top level (§2.1)
  std::vector<QueueAmounts> queues;  // indexed like `tree`
};

// Computes the division of a validated request, which must outlive the result. O(queues · resources
// · rounds). When `poll` (may be null) reports the call cancelled, the division stops early and the
// result is incomplete: the caller checks poll->cancelled() and discards it.
KaiFairShare ComputeKaiFairShare(const ValidatedSnapshot& request, CancelPoll* poll = nullptr);

// sat(a, f) of §2.3: +inf if f == 0 < a; 0 if a == f == 0; else a / f.
double Saturation(double allocated, double fair_share);

}  // namespace arbiter::kai
