// Kueue workloads (SEMANTICS.md §5.1): a PodGroup, the leaf queue (ClusterQueue) it belongs to,
// and its usage, the sum of all its pods' requests, per cell of the quota tree (§5.8.3).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/kueue/quota_tree.h"
#include "core/model.h"
#include "core/validated_snapshot.h"

namespace arbiter::kueue {

// A pod set (§5.8.5): the pods of a workload with one Pod.pod_set value.
struct PodSet {
  std::string_view name;
  std::vector<const Pod*> pods;  // by pod name
  // req(s, r): Σ requests over the pods (pod-name order), per resource of R (names, not cells),
  // positive only, ascending.
  Usage request;
};

struct Workload {
  const PodGroup* group = nullptr;  // points into the snapshot
  int cq = -1;                      // QueueTree index of its leaf queue
  // The quota it takes, per cell, positive only, ascending. Admitted: its pods' requests charged
  // to the flavors of PodGroup.flavors (§5.8.3). Pending: Σ requests of all its pods (pods by
  // name) at the implicit flavor's cells, except in a flavored queue, where it is empty until a
  // nomination assigns its flavors (§5.8.6) and then that assignment's usage.
  Usage usage;
  int32_t priority = 0;
  Timestamp creation;       // absent = epoch
  Timestamp admission;      // absent = Snapshot.now (absent too = epoch)
  bool admitted = false;    // holds its quota at the start of the call
  bool releasing = false;   // some pod is RELEASING: already being evicted
  bool preemptible = true;  // only NON_PREEMPTIBLE protects (§0.7)
  bool has_pods = false;
  bool flavored = false;  // its ClusterQueue gives quotas per flavor (§5.8.1)
  // A request with flavors only (FlavorCells::flavored_request): its pod sets in name order, and
  // Σ requests of all its pods per resource of R (when the cells are not R's, usage is not that).
  std::vector<PodSet> pod_sets;
  Usage request;

  const std::string& name() const { return group->name; }
  // The amount of cell r in the usage, 0 when absent.
  double Amount(int r) const;
  // What it requests per resource name of R, whatever flavors it is charged to.
  const Usage& RequestByName() const { return pod_sets.empty() ? usage : request; }
};

// Every pod group of a validated request, indexed in name order (so index order is name order),
// their usage over the cells of `tree`.
std::vector<Workload> CollectWorkloads(const ValidatedSnapshot& request, const QuotaTree& tree);

// Admission order within a ClusterQueue (§5.4 step 2): higher priority, older creation_time,
// smaller name.
bool AdmissionOrderBefore(const Workload& a, const Workload& b);

// Leaf usage rows (|queues|·|cells|) of the workloads with `holds[i]` set, summed in index order.
std::vector<double> LeafUsage(const std::vector<Workload>& workloads,
                              const std::vector<char>& holds, int queue_count, int resource_count);

}  // namespace arbiter::kueue
