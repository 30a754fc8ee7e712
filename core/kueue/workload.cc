#include "core/kueue/workload.h"

#include <algorithm>

namespace arbiter::kueue {

double Workload::Amount(int r) const {
  for (const ResourceAmount& amount : usage) {
    if (amount.resource == r) return amount.amount;
  }
  return 0;
}

std::vector<Workload> CollectWorkloads(const Snapshot& snapshot, const QueueTree& queues,
                                       const ResourceSet& resources) {
  std::vector<const PodGroup*> groups;
  groups.reserve(snapshot.pod_groups.size());
  for (const PodGroup& group : snapshot.pod_groups) groups.push_back(&group);
  std::sort(groups.begin(), groups.end(),
            [](const PodGroup* a, const PodGroup* b) { return a->name < b->name; });
  const Timestamp now = snapshot.now.value_or(Timestamp{});

  std::vector<Workload> workloads;
  workloads.reserve(groups.size());
  std::vector<double> sums(resources.size(), 0.0);
  std::vector<const Pod*> pods;
  for (const PodGroup* group : groups) {
    Workload w;
    w.group = group;
    w.cq = queues.Find(group->queue);
    w.priority = group->priority;
    w.creation = group->creation_time.value_or(Timestamp{});
    w.admission = group->admission_time.value_or(now);
    w.admitted = group->admitted;
    w.preemptible = group->preemptibility != Preemptibility::kNonPreemptible;
    w.has_pods = !group->pods.empty();
    pods.clear();
    for (const Pod& pod : group->pods) pods.push_back(&pod);
    std::sort(pods.begin(), pods.end(),
              [](const Pod* a, const Pod* b) { return a->name < b->name; });
    std::fill(sums.begin(), sums.end(), 0.0);
    for (const Pod* pod : pods) {
      if (pod->phase == PodPhase::kReleasing) w.releasing = true;
      for (const auto& [name, value] : pod->requests) {
        const int r = resources.Find(name);
        if (r >= 0) sums[r] += value;
      }
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
