#include "clients/simulator/apply_decisions.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace arbiter::simulator {
namespace {

using PodKey = std::pair<std::string, std::string>;  // (pod group, pod)

struct PodRef {
  size_t group = 0;
  size_t pod = 0;
};

}  // namespace

absl::StatusOr<Snapshot> ApplyDecisions(const Snapshot& snapshot, const Policy& policy,
                                        const ScheduleResult& result) {
  const bool kueue = policy.fairness_model == FairnessModel::kKueue;
  Snapshot next = snapshot;
  std::map<PodKey, PodRef> pods;
  std::map<std::string, size_t> groups;
  for (size_t g = 0; g < next.pod_groups.size(); ++g) {
    groups[next.pod_groups[g].name] = g;
    for (size_t p = 0; p < next.pod_groups[g].pods.size(); ++p) {
      pods[{next.pod_groups[g].name, next.pod_groups[g].pods[p].name}] = PodRef{g, p};
    }
  }
  std::set<std::string> nodes;
  for (const Node& node : next.nodes) nodes.insert(node.name);
  const Timestamp now = next.now.value_or(Timestamp{});

  std::set<PodKey> evicted;
  std::set<size_t> evicted_groups;
  for (const Eviction& e : result.evictions) {
    const PodKey key{e.pod_group, e.pod};
    auto it = pods.find(key);
    if (it == pods.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("eviction of unknown pod ", e.pod_group, "/", e.pod));
    }
    if (!evicted.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("pod ", e.pod_group, "/", e.pod, " evicted twice"));
    }
    const PodGroup& group = next.pod_groups[it->second.group];
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
    evicted_groups.insert(it->second.group);
  }

  std::set<PodKey> bound;
  for (const Binding& b : result.bindings) {
    const PodKey key{b.pod_group, b.pod};
    auto it = pods.find(key);
    if (it == pods.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("binding of unknown pod ", b.pod_group, "/", b.pod));
    }
    if (nodes.count(b.node) == 0) {
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
    pod.phase = PodPhase::kRunning;
    pod.node_name = b.node;
    pod.start_time = now;
  }

  for (const PodKey& key : evicted) {
    if (bound.count(key)) continue;  // moved: already RUNNING on its new node
    const PodRef ref = pods.at(key);
    Pod& pod = next.pod_groups[ref.group].pods[ref.pod];
    pod.phase = PodPhase::kPending;
    pod.node_name.clear();
    pod.start_time.reset();
  }

  if (kueue) {
    for (size_t g : evicted_groups) {
      next.pod_groups[g].admitted = false;
      next.pod_groups[g].admission_time.reset();
    }
    for (const Admission& a : result.admissions) {
      auto it = groups.find(a.pod_group);
      if (it == groups.end()) {
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
    }
  }

  // RELEASING pods of the input are gone.
  for (PodGroup& group : next.pod_groups) {
    std::vector<Pod> kept;
    kept.reserve(group.pods.size());
    for (Pod& pod : group.pods) {
      if (EffectivePhase(pod) != PodPhase::kReleasing) kept.push_back(std::move(pod));
    }
    group.pods = std::move(kept);
  }
  return next;
}

}  // namespace arbiter::simulator
