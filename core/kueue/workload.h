// Kueue workloads (SEMANTICS.md §5.1): a PodGroup, the leaf queue (ClusterQueue) it belongs to,
// and its usage, the sum of all its pods' requests.
#pragma once

#include <string>
#include <vector>

#include "core/kueue/quota_tree.h"
#include "core/model.h"
#include "core/validated_snapshot.h"

namespace arbiter::kueue {

struct Workload {
  const PodGroup* group = nullptr;  // points into the snapshot
  int cq = -1;                      // QueueTree index of its leaf queue
  Usage usage;                      // Σ requests of all its pods (pods by name), positive only
  int32_t priority = 0;
  Timestamp creation;       // absent = epoch
  Timestamp admission;      // absent = Snapshot.now (absent too = epoch)
  bool admitted = false;    // holds its quota at the start of the call
  bool releasing = false;   // some pod is RELEASING: already being evicted
  bool preemptible = true;  // only NON_PREEMPTIBLE protects (§0.7)
  bool has_pods = false;

  const std::string& name() const { return group->name; }
  // The amount of resource r in the usage, 0 when absent.
  double Amount(int r) const;
};

// Every pod group of a validated request, indexed in name order (so index order is name order).
std::vector<Workload> CollectWorkloads(const ValidatedSnapshot& request);

// Admission order within a ClusterQueue (§5.4 step 2): higher priority, older creation_time,
// smaller name.
bool AdmissionOrderBefore(const Workload& a, const Workload& b);

// Leaf usage rows (|queues|·|R|) of the workloads with `holds[i]` set, summed in index order.
std::vector<double> LeafUsage(const std::vector<Workload>& workloads,
                              const std::vector<char>& holds, int queue_count, int resource_count);

}  // namespace arbiter::kueue
