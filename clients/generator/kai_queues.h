// The KAI queue tree (docs/generator.md, "Queue tree"): its shape, deserved quotas, weights and
// minimum runtimes, how work is spread over its leaves, the usage its pods add up, and the limits
// drawn above that usage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clients/generator/generator.h"
#include "clients/generator/kai_resources.h"
#include "clients/generator/random.h"
#include "core/model.h"

namespace arbiter::generator::internal {

class KaiQueueTree {
 public:
  // The tree for `options` (queues, depth, reclaim_groups), its deserved dividing `capacity`
  // (the schedulable nodes' allocatable). With reclaim groups and at least 3 queues, a subtree
  // "reclaim-dept" with one leaf per 4 reclaim groups takes queues from the main tree.
  KaiQueueTree(const GeneratorOptions& options, const DenseResources& capacity,
               const KaiResources& resources, Rng& rng);

  const std::string& name(int queue) const { return queues_[queue].name; }
  // Leaves that take ordinary work, and those of the reclaim subtree; tree order.
  const std::vector<int>& leaves() const { return leaves_; }
  const std::vector<int>& reclaim_leaves() const { return reclaim_leaves_; }

  // An ordinary leaf drawn by activity, among those that take GPU work when `gpu` (and some
  // does), or -1 when there is none.
  int DrawLeaf(bool gpu, Rng& rng) const;

  // Adds a pod's `request` to what `leaf` and its ancestors request, and to what they hold when
  // `running`.
  void AddUsage(int leaf, const DenseResources& request, bool running);

  // The queues for the snapshot, tree order. The reclaim subtree deserves exactly what its
  // groups request; the others get limits drawn here, never below what their subtree holds
  // (so call this after the last AddUsage).
  std::vector<Queue> ToSnapshotQueues(const KaiResources& resources, Rng& rng);

 private:
  struct PlannedQueue {
    std::string name;
    int parent = -1;
    int level = 0;
    std::vector<int> children;
    bool reclaim = false;
    bool cpu_only = false;  // GPU limit 0
    double activity = 0;    // relative share of the work drawn into this leaf
    DenseResources deserved, allocated, requested;
    int priority = 0;
    double gpu_weight = 1;
    bool same_weight = false;  // over-quota weight gpu_weight on every resource
    int64_t created = 0;
    int64_t reclaim_min_runtime = 0;
    int64_t preempt_min_runtime = 0;
  };

  void MakeTree(const GeneratorOptions& options, const KaiResources& resources, Rng& rng);
  void SetDeserved(const DenseResources& capacity, int resource_count, Rng& rng);
  void SetWeightsAndRuntimes(Rng& rng);

  std::vector<PlannedQueue> queues_;  // parents before their children
  std::vector<int> leaves_, reclaim_leaves_;
  WeightedTable all_leaves_, gpu_leaves_;  // by activity; GPU: the non-CPU-only leaves
};

}  // namespace arbiter::generator::internal
