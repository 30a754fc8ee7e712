// The candidates of fair-sharing preemption (SEMANTICS.md §5.5 steps 1 and 2): which admitted
// workloads may be targets of a preemptor, and in which order they are taken, within one
// ClusterQueue and across queues. The index is built once per call; a search reads it through
// per-pass candidate runs that filter it lazily.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

namespace internal {

// §5.5 step 1 for one preemptor w: whether a workload may be one of its targets. It must be
// available (admitted at the start of the round, not admitted, evicted or claimed in this call),
// preemptible and use some contested resource; in w's own queue it must have lower priority (or,
// under LOWER_OR_NEWER_EQUAL_PRIORITY, equal priority and a later creation), in another queue
// lower priority only under reclaim_within_cohort LOWER_PRIORITY. Whether the queues may give
// candidates at all is the search's to decide.
class CandidateFilter {
 public:
  // Every argument outlives the filter.
  CandidateFilter(const std::vector<Workload>& workloads, const std::vector<char>& available,
                  const Workload& preemptor, const KueuePreemption& policy,
                  const std::vector<int>& contested, int resource_count)
      : workloads_(workloads),
        available_(available),
        w_(preemptor),
        policy_(policy),
        contested_(resource_count, 0) {
    for (int r : contested) contested_[r] = 1;
  }

  bool contested(int resource) const { return contested_[resource] != 0; }

  bool operator()(int workload) const {
    if (!available_[workload]) return false;
    const Workload& c = workloads_[workload];
    if (!c.preemptible) return false;
    bool uses_contested = false;
    for (const ResourceAmount& amount : c.usage) {
      if (contested_[amount.resource]) {
        uses_contested = true;
        break;
      }
    }
    if (!uses_contested) return false;
    if (c.cq == w_.cq) {
      if (c.priority < w_.priority) return true;
      return policy_.within_cluster_queue == WithinClusterQueue::kLowerOrNewerEqualPriority &&
             c.priority == w_.priority && w_.creation < c.creation;
    }
    if (policy_.reclaim_within_cohort == ReclaimWithinCohort::kLowerPriority) {
      return c.priority < w_.priority;
    }
    return true;
  }

 private:
  const std::vector<Workload>& workloads_;
  const std::vector<char>& available_;
  const Workload& w_;
  const KueuePreemption& policy_;
  std::vector<char> contested_;  // per resource
};

// The candidates of one queue for one pass, in candidate order: listed `items`, then, when
// `from_index` is set, the queue's index list from position `index_from` on, filtered lazily by
// the search's CandidateFilter (a whole queue's remaining candidates move between passes without
// being enumerated). `item_at` and `index_at` are the pass's read positions.
struct CandidateRun {
  std::vector<int> items;
  bool from_index = false;
  size_t index_from = 0;
  size_t item_at = 0;
  size_t index_at = 0;
  bool empty() const { return items.empty() && !from_index; }
};

// Candidate runs per queue for one pass, reset in O(queues touched) by bumping a stamp.
struct RunTable {
  std::vector<CandidateRun> runs;
  std::vector<uint32_t> stamp;
  uint32_t current = 1;
  std::vector<int> touched;  // queues with a run under the current stamp

  // Sized for `queue_count` queues, every run empty.
  void Resize(size_t queue_count) {
    runs.assign(queue_count, CandidateRun{});
    stamp.assign(queue_count, 0);
  }
  void Reset() {
    ++current;
    touched.clear();
  }
  CandidateRun* Find(int cq) { return stamp[cq] == current ? &runs[cq] : nullptr; }
  CandidateRun& Touch(int cq) {
    CandidateRun& run = runs[cq];
    if (stamp[cq] != current) {
      stamp[cq] = current;
      run.items.clear();
      run.from_index = false;
      run.index_from = run.item_at = run.index_at = 0;
      touched.push_back(cq);
    }
    return run;
  }
};

}  // namespace internal
}  // namespace arbiter::kueue
