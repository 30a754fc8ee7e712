// Fair-sharing preemption (SEMANTICS.md §5.5): the workloads to evict so that a head workload w
// that does not fit in its ClusterQueue x can be admitted, chosen from the biggest offenders
// first, all or nothing, then filled back to a minimal set.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/cancel_poll.h"
#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"
#include "core/model.h"
#include "core/queue_tree.h"

namespace arbiter::kueue {

// The admitted workloads of every ClusterQueue in candidate order (§5.5 step 2 within one queue:
// being evicted first, lower priority, newer admission_time, smaller name), and, refreshed once
// per round, the usage they sum to below each priority. The sums bound what preempting in a
// queue could ever free, so that a search that cannot succeed stops before it simulates.
class CandidateIndex {
 public:
  CandidateIndex() = default;
  static CandidateIndex Build(const std::vector<Workload>& workloads, const QueueTree& queues,
                              int resource_count);
  const std::vector<int>& of(int cq) const { return by_queue_[cq]; }
  // The ClusterQueues of the tree under `root` (a top-level queue), name order.
  const std::vector<int>& leaves_under(int root) const { return leaves_under_[root]; }

  // Recomputes the sums over the preemptible workloads with `available` set, for the queues in
  // `queues` (all when empty). O(their admitted workloads · |R|).
  void RefreshSums(const std::vector<Workload>& workloads, const std::vector<char>& available,
                   const std::vector<int>& queues);
  // Per resource (|R| values): the usage of the summed workloads of `cq` with priority below
  // `priority`, or of all of them.
  const double* SumBelow(int cq, int32_t priority) const;
  const double* SumAll(int cq) const;

 private:
  int resource_count_ = 0;
  std::vector<std::vector<int>> by_queue_;
  std::vector<std::vector<int>> leaves_under_;  // per top-level queue
  std::vector<std::vector<int>> by_priority_;   // per queue, priority ascending
  std::vector<std::vector<int32_t>> levels_;    // per queue, distinct priorities ascending
  std::vector<std::vector<double>> prefix_;     // per queue, (levels + 1) rows of |R|
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

}  // namespace arbiter::kueue
