#include "core/kueue/workload.h"

#include <algorithm>

namespace arbiter::kueue {

double Workload::Amount(int r) const {
  for (const ResourceAmount& amount : usage) {
    if (amount.resource == r) return amount.amount;
  }
  return 0;
}

std::vector<Workload> CollectWorkloads(const ValidatedSnapshot& request) {
  const Snapshot& snapshot = request.snapshot();
  const ResourceSet& resources = request.resources();
  const Timestamp now = snapshot.now.value_or(Timestamp{});

  std::vector<Workload> workloads;
  workloads.reserve(snapshot.pod_groups.size());
  std::vector<double> sums(resources.size(), 0.0);
  for (int g : request.groups_by_name()) {
    const PodGroup* group = &snapshot.pod_groups[g];
    Workload w;
    w.group = group;
    w.cq = request.group_queue(g);
    w.priority = group->priority;
    w.creation = group->creation_time.value_or(Timestamp{});
    w.admission = group->admission_time.value_or(now);
    w.admitted = group->admitted;
    w.preemptible = group->preemptibility != Preemptibility::kNonPreemptible;
    w.has_pods = !group->pods.empty();
    std::fill(sums.begin(), sums.end(), 0.0);
    const int first_pod = request.first_pod(g);
    for (size_t k = 0; k < group->pods.size(); ++k) {
      const int position = request.pods_by_name()[first_pod + k];
      if (group->pods[position].phase == PodPhase::kReleasing) w.releasing = true;
      for (const Amount& a : request.requests(first_pod + position)) sums[a.resource] += a.value;
    }
    for (int r = 0; r < resources.size(); ++r) {
      if (sums[r] > 0) w.usage.push_back(ResourceAmount{r, sums[r]});
    }
    workloads.push_back(std::move(w));
  }
  return workloads;
}

bool AdmissionOrderBefore(const Workload& a, const Workload& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.creation != b.creation) return a.creation < b.creation;
  return a.name() < b.name();
}

std::vector<double> LeafUsage(const std::vector<Workload>& workloads,
                              const std::vector<char>& holds, int queue_count, int resource_count) {
  std::vector<double> usage(static_cast<size_t>(queue_count) * resource_count, 0.0);
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (!holds[i]) continue;
    const Workload& w = workloads[i];
    for (const ResourceAmount& amount : w.usage) {
      usage[static_cast<size_t>(w.cq) * resource_count + amount.resource] += amount.amount;
    }
  }
  return usage;
}

}  // namespace arbiter::kueue
