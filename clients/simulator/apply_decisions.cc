#include "clients/simulator/apply_decisions.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace arbiter::simulator {
namespace {

using PodKey = std::pair<std::string, std::string>;  // (pod group, pod)

struct PodRef {
  size_t group = 0;
  size_t pod = 0;
};

// Where each pod group, pod and node of a snapshot is.
struct SnapshotIndex {
  std::map<PodKey, PodRef> pods;
  std::map<std::string, size_t> groups;
  std::set<std::string> nodes;
};

SnapshotIndex IndexOf(const Snapshot& snapshot) {
  SnapshotIndex index;
  for (size_t g = 0; g < snapshot.pod_groups.size(); ++g) {
    index.groups[snapshot.pod_groups[g].name] = g;
    for (size_t p = 0; p < snapshot.pod_groups[g].pods.size(); ++p) {
      index.pods[{snapshot.pod_groups[g].name, snapshot.pod_groups[g].pods[p].name}] = PodRef{g, p};
    }
  }
  for (const Node& node : snapshot.nodes) index.nodes.insert(node.name);
  return index;
}

// The pods that the response evicts, and the groups they belong to.
struct Evicted {
  std::set<PodKey> pods;
  std::set<size_t> groups;
};

// Checks every eviction of `result` against `snapshot` (see ApplyDecisions) and returns them.
absl::StatusOr<Evicted> CheckEvictions(const Snapshot& snapshot, const SnapshotIndex& index,
                                       bool kueue, const ScheduleResult& result) {
  Evicted evicted;
  for (const Eviction& e : result.evictions) {
    const PodKey key{e.pod_group, e.pod};
    auto it = index.pods.find(key);
    if (it == index.pods.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("eviction of unknown pod ", e.pod_group, "/", e.pod));
    }
    if (!evicted.pods.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("pod ", e.pod_group, "/", e.pod, " evicted twice"));
    }
    const PodGroup& group = snapshot.pod_groups[it->second.group];
    const Pod& pod = group.pods[it->second.pod];
    if (kueue) {
      if (!group.admitted) {
        return absl::InvalidArgumentError(
            absl::StrCat("eviction of ", e.pod_group, ", which was not admitted"));
      }
    } else if (EffectivePhase(pod) != PodPhase::kRunning) {
      return absl::InvalidArgumentError(
          absl::StrCat("eviction of ", e.pod_group, "/", e.pod, ", which is not RUNNING"));
    }
    evicted.groups.insert(it->second.group);
  }
  return evicted;
}

// Runs every pod that `result` binds on its node from `now`, after checking the binding (see
// ApplyDecisions); returns the bound pods.
absl::StatusOr<std::set<PodKey>> ApplyBindings(Snapshot& next, const SnapshotIndex& index,
                                               const std::set<PodKey>& evicted,
                                               const ScheduleResult& result, Timestamp now) {
  std::set<PodKey> bound;
  for (const Binding& b : result.bindings) {
    const PodKey key{b.pod_group, b.pod};
    auto it = index.pods.find(key);
    if (it == index.pods.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("binding of unknown pod ", b.pod_group, "/", b.pod));
    }
    if (index.nodes.count(b.node) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("binding of ", b.pod_group, "/", b.pod, " to unknown node ", b.node));
    }
    if (!bound.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("pod ", b.pod_group, "/", b.pod, " bound twice"));
    }
    Pod& pod = next.pod_groups[it->second.group].pods[it->second.pod];
    const PodPhase phase = EffectivePhase(pod);
    if (phase != PodPhase::kPending && !(phase == PodPhase::kRunning && evicted.count(key))) {
      return absl::InvalidArgumentError(absl::StrCat("binding of ", b.pod_group, "/", b.pod,
                                                     ", which is neither PENDING nor moved"));
    }
    // GPU sharing (§4.13): a sharing pod runs on exactly its d devices, named by the binding; a
    // pod that does not share names none.
    const size_t devices =
        Shares(pod) ? static_cast<size_t>(std::max(1, pod.gpu_fraction_devices)) : 0;
    if (b.gpu_groups.size() != devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("binding of ", b.pod_group, "/", b.pod, " names ", b.gpu_groups.size(),
                       " GPU devices (gpu_groups), but the pod ",
                       devices == 0 ? "does not share GPUs" : absl::StrCat("shares ", devices)));
    }
    pod.phase = PodPhase::kRunning;
    pod.node_name = b.node;
    pod.start_time = now;
    // A new device keeps its name "new-<j>": keys are opaque, and unique on their node while
    // the device exists, which is all a key must be (§4.13.2). A moved pod takes its new keys.
    pod.gpu_groups = b.gpu_groups;
  }
  return bound;
}

// KUEUE: the groups with an evicted pod lose their admission, then each admission of `result`
// admits its group at `now`, after checking it (see ApplyDecisions).
absl::Status ApplyAdmissions(Snapshot& next, const SnapshotIndex& index,
                             const std::set<size_t>& evicted_groups, const ScheduleResult& result,
                             Timestamp now) {
  for (size_t g : evicted_groups) {
    next.pod_groups[g].admitted = false;
    next.pod_groups[g].admission_time.reset();
    next.pod_groups[g].flavors.clear();  // an evicted workload holds no flavor any more
  }
  for (const Admission& a : result.admissions) {
    auto it = index.groups.find(a.pod_group);
    if (it == index.groups.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("admission of unknown pod group ", a.pod_group));
    }
    PodGroup& group = next.pod_groups[it->second];
    if (group.admitted) {
      return absl::InvalidArgumentError(
          absl::StrCat("admission of ", a.pod_group, ", which is already admitted"));
    }
    group.admitted = true;
    group.admission_time = now;
    // Resource flavors (§5.8.3): the admission's flavors are what its usage is charged to. A
    // queue without resource groups is answered with the implicit flavor "" (§5.8.9), which a
    // pod group may not carry (§1 step 4) and which its usage ignores: it is left out.
    group.flavors.clear();
    for (const PodSetFlavors& pod_set : a.pod_sets) {
      PodSetFlavors kept{pod_set.pod_set, {}};
      for (const auto& [resource, flavor] : pod_set.flavors) {
        if (!flavor.empty()) kept.flavors[resource] = flavor;
      }
      if (!kept.flavors.empty()) group.flavors.push_back(std::move(kept));
    }
  }
  return absl::OkStatus();
}

// RELEASING pods of the input are gone.
void DropReleasing(Snapshot& next) {
  for (PodGroup& group : next.pod_groups) {
    std::vector<Pod> kept;
    kept.reserve(group.pods.size());
    for (Pod& pod : group.pods) {
      if (EffectivePhase(pod) != PodPhase::kReleasing) kept.push_back(std::move(pod));
    }
    group.pods = std::move(kept);
  }
}

}  // namespace

absl::StatusOr<Snapshot> ApplyDecisions(const Snapshot& snapshot, const Policy& policy,
                                        const ScheduleResult& result) {
  const bool kueue = policy.fairness_model == FairnessModel::kKueue;
  Snapshot next = snapshot;
  const SnapshotIndex index = IndexOf(next);
  const Timestamp now = next.now.value_or(Timestamp{});

  absl::StatusOr<Evicted> evicted = CheckEvictions(next, index, kueue, result);
  if (!evicted.ok()) return evicted.status();
  absl::StatusOr<std::set<PodKey>> bound = ApplyBindings(next, index, evicted->pods, result, now);
  if (!bound.ok()) return bound.status();

  for (const PodKey& key : evicted->pods) {
    if (bound->count(key)) continue;  // moved: already RUNNING on its new node
    const PodRef ref = index.pods.at(key);
    Pod& pod = next.pod_groups[ref.group].pods[ref.pod];
    pod.phase = PodPhase::kPending;
    pod.node_name.clear();
    pod.start_time.reset();
    pod.gpu_groups.clear();  // a PENDING pod holds no device (§4.13.6)
  }

  if (kueue) {
    if (absl::Status status = ApplyAdmissions(next, index, evicted->groups, result, now);
        !status.ok()) {
      return status;
    }
  }
  DropReleasing(next);
  return next;
}

}  // namespace arbiter::simulator
