#include "core/kueue/workload.h"

#include <algorithm>

namespace arbiter::kueue {
namespace {

// Appends the positive entries of `sums` (dense over `count` cells) to `out`, ascending.
void AppendPositive(const std::vector<double>& sums, Usage* out) {
  for (size_t r = 0; r < sums.size(); ++r) {
    if (sums[r] > 0) out->push_back(ResourceAmount{static_cast<int>(r), sums[r]});
  }
}

// The pod sets of a group (§5.8.5): the distinct pod_set values in name order, each with its pods
// in name order (`by_name`) and req(s, r) summed in that order over R.
std::vector<PodSet> PodSets(const std::vector<const Pod*>& by_name,
                            const std::vector<Usage>& requests, int resource_count) {
  std::vector<int> order(by_name.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  // Stable: within a pod set the pods stay in name order.
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return by_name[a]->pod_set < by_name[b]->pod_set; });
  std::vector<PodSet> sets;
  std::vector<double> sums(resource_count, 0.0);
  for (size_t i = 0; i < order.size(); ++i) {
    const Pod* pod = by_name[order[i]];
    if (sets.empty() || sets.back().name != pod->pod_set) {
      if (!sets.empty()) AppendPositive(sums, &sets.back().request);
      std::fill(sums.begin(), sums.end(), 0.0);
      sets.push_back(PodSet{pod->pod_set, {}, {}});
    }
    sets.back().pods.push_back(pod);
    for (const ResourceAmount& amount : requests[order[i]]) sums[amount.resource] += amount.amount;
  }
  if (!sets.empty()) AppendPositive(sums, &sets.back().request);
  return sets;
}

// The flavor of resource `name` in pod set `pod_set` of an admitted group (§5.8.3), or null when
// the admission names none.
const std::string* AdmittedFlavor(const PodGroup& group, const std::string& pod_set,
                                  const std::string& name) {
  for (const PodSetFlavors& flavors : group.flavors) {
    if (flavors.pod_set != pod_set) continue;
    const auto found = flavors.flavors.find(name);
    return found == flavors.flavors.end() ? nullptr : &found->second;
  }
  return nullptr;
}

}  // namespace

double Workload::Amount(int r) const {
  for (const ResourceAmount& amount : usage) {
    if (amount.resource == r) return amount.amount;
  }
  return 0;
}

std::vector<Workload> CollectWorkloads(const ValidatedSnapshot& request, const QuotaTree& tree) {
  const Snapshot& snapshot = request.snapshot();
  const ResourceSet& resources = request.resources();
  const FlavorCells& cells = tree.cells();
  const bool flavored_request = cells.flavored_request();
  const Timestamp now = snapshot.now.value_or(Timestamp{});

  std::vector<Workload> workloads;
  workloads.reserve(snapshot.pod_groups.size());
  std::vector<double> sums(resources.size(), 0.0);
  std::vector<double> charged;  // per cell, for admitted workloads of flavored queues
  std::vector<const Pod*> by_name;
  std::vector<Usage> pod_requests;
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
    w.flavored = !tree.queues().queue(w.cq).resource_groups.empty();
    std::fill(sums.begin(), sums.end(), 0.0);
    const bool charge_flavors = w.admitted && w.flavored;
    if (charge_flavors) charged.assign(cells.size(), 0.0);
    by_name.clear();
    pod_requests.clear();
    const int first_pod = request.first_pod(g);
    for (size_t k = 0; k < group->pods.size(); ++k) {
      const int position = request.pods_by_name()[first_pod + k];
      const Pod& pod = group->pods[position];
      if (pod.phase == PodPhase::kReleasing) w.releasing = true;
      const Amounts amounts = request.requests(first_pod + position);
      for (const Amount& a : amounts) sums[a.resource] += a.value;
      if (flavored_request) {
        by_name.push_back(&pod);
        Usage& own = pod_requests.emplace_back();
        for (const Amount& a : amounts) {
          if (a.value > 0) own.push_back(ResourceAmount{a.resource, a.value});
        }
      }
      if (!charge_flavors) continue;
      for (const Amount& a : amounts) {
        if (!(a.value > 0)) continue;
        // Without a flavor the amount is not charged (Kueue leaves it unassigned).
        const std::string* flavor = AdmittedFlavor(*group, pod.pod_set, resources.name(a.resource));
        const int cell = flavor == nullptr ? -1 : cells.Find(*flavor, a.resource);
        if (cell >= 0) charged[cell] += a.value;
      }
    }
    if (flavored_request) {
      w.pod_sets = PodSets(by_name, pod_requests, resources.size());
      AppendPositive(sums, &w.request);
    }
    if (charge_flavors) {
      AppendPositive(charged, &w.usage);
    } else if (!w.flavored) {
      if (flavored_request && !w.admitted) {
        // A legacy queue's pending workload in a request with flavors takes what the implicit
        // group's assignment would give: Σ over pod sets (name order) of req(s, r).
        std::fill(sums.begin(), sums.end(), 0.0);
        for (const PodSet& set : w.pod_sets) {
          for (const ResourceAmount& amount : set.request) sums[amount.resource] += amount.amount;
        }
      }
      AppendPositive(sums, &w.usage);  // the implicit flavor's cell r is resource r
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
