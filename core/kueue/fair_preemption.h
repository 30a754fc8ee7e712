// The search of fair-sharing preemption (SEMANTICS.md §5.5 steps 1 and 3 to 9): the workloads to
// evict so that a head workload w that does not fit in its ClusterQueue x can be admitted, chosen
// from the biggest offenders first, all or nothing, then filled back to a minimal set. Which
// workloads are candidates, and their order, is preemption_candidates.h; which queue gives the
// next target is preemption_order.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/cancel_poll.h"
#include "core/kueue/preemption_candidates.h"
#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"
#include "core/model.h"
#include "core/queue_tree.h"

namespace arbiter::kueue {

struct PreemptionTarget {
  int workload = -1;
  EvictionReason reason = EvictionReason::kUnspecified;
  std::string message;
};

// Buffers the searches of one call reuse, so that a search costs what it visits rather than the
// size of the tree. Searches sharing them run one at a time.
struct SearchBuffers;
std::shared_ptr<SearchBuffers> MakeSearchBuffers(const QuotaTree& tree);

struct PreemptionContext {
  QuotaTree* tree = nullptr;  // simulated on, restored before returning
  const std::vector<Workload>* workloads = nullptr;
  const CandidateIndex* index = nullptr;
  // Per workload: may it be a target in this search at all (admitted at the start of the round,
  // not admitted, evicted or claimed in this call).
  const std::vector<char>* available = nullptr;
  // The strategies in order: one or two, Policy defaults resolved.
  std::vector<KueuePreemptionStrategy> strategies;
  SearchBuffers* buffers = nullptr;  // from MakeSearchBuffers(*tree)
  // The call's cancellation (null: never cancelled). A cancelled search undoes its simulation
  // and returns no targets.
  CancelPoll* poll = nullptr;
};

// The targets for workload `preemptor` (index into workloads) over the contested resources
// (resource indices, ascending), in eviction order; empty when no target set makes it fit.
// Deterministic: every tie that Kueue leaves open is broken by name.
std::vector<PreemptionTarget> FindFairSharingTargets(const PreemptionContext& context,
                                                     int preemptor,
                                                     const std::vector<int>& contested);

// The same for a preemptor given as a workload: its usage may be other than the one in
// context.workloads (a flavor assignment's, or the single cell the flavor assigner's oracle
// asks about, §5.8.6).
std::vector<PreemptionTarget> FindFairSharingTargets(const PreemptionContext& context,
                                                     const Workload& preemptor,
                                                     const std::vector<int>& contested);

}  // namespace arbiter::kueue
