// Fair-sharing preemption (SEMANTICS.md §5.5): the workloads to evict so that a head workload w
// that does not fit in its ClusterQueue x can be admitted, chosen from the biggest offenders
// first, all or nothing, then filled back to a minimal set.
#pragma once

#include <string>
#include <vector>

#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"
#include "core/model.h"

namespace arbiter::kueue {

// The admitted workloads of every ClusterQueue in candidate order (§5.5 step 2 within one queue:
// being evicted first, lower priority, newer admission_time, smaller name).
class CandidateIndex {
 public:
  CandidateIndex() = default;
  static CandidateIndex Build(const std::vector<Workload>& workloads, int queue_count);
  const std::vector<int>& of(int cq) const { return by_queue_[cq]; }

 private:
  std::vector<std::vector<int>> by_queue_;
};

// Candidate order across queues (§5.5 step 2) for a preemptor in ClusterQueue `preemptor_cq`:
// being evicted first, other queues before the preemptor's, lower priority, newer
// admission_time, smaller name.
bool CandidateBefore(const Workload& a, const Workload& b, int preemptor_cq);

struct PreemptionTarget {
  int workload = -1;
  EvictionReason reason = EvictionReason::kUnspecified;
  std::string message;
};

struct PreemptionContext {
  QuotaTree* tree = nullptr;  // simulated on, restored before returning
  const std::vector<Workload>* workloads = nullptr;
  const CandidateIndex* index = nullptr;
  // Per workload: may it be a target in this search at all (admitted at the start of the round,
  // not admitted, evicted or claimed in this call).
  const std::vector<char>* available = nullptr;
  // The strategies in order: one or two, Policy defaults resolved.
  std::vector<KueuePreemptionStrategy> strategies;
};

// The targets for workload `preemptor` (index into workloads) over the contested resources
// (resource indices, ascending), in eviction order; empty when no target set makes it fit.
// Deterministic: every tie that Kueue leaves open is broken by name.
std::vector<PreemptionTarget> FindFairSharingTargets(const PreemptionContext& context,
                                                     int preemptor,
                                                     const std::vector<int>& contested);

}  // namespace arbiter::kueue
