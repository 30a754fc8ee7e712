#include "core/kai/response.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace arbiter::kai {
namespace {

// §6: a sharing pod's device keys on its node, ascending bytewise; empty for other pods.
std::vector<std::string> DeviceKeys(const WorkingState& state, int pod) {
  std::vector<std::string> keys;
  const ClusterPod& info = state.cluster().pod(pod);
  for (int j = 0; j < info.gpu_devices; ++j)
    keys.push_back(state.device_key(state.pod_device(pod, j)));
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

ScheduleResult BuildResponse(Session& session) {
  const Cluster& cluster = session.cluster();
  const WorkingState& state = session.state();
  ScheduleResult result;
  // The cluster lays pods out by pod group name, then by pod name, so pod order is the answer's
  // (pod_group, pod) order: bindings and evictions are listed by their pods' indices, with no
  // comparison of names. A bound pod is bound once; a moved pod has one note.
  const std::vector<EvictionNote>& notes = session.evictions();
  std::vector<int> moved;  // pods moved in this response, in pod order
  for (const EvictionNote& note : notes) {
    if (state.pod_state(note.pod) == PodState::kMoved) moved.push_back(note.pod);
  }
  std::sort(moved.begin(), moved.end());
  auto bind = [&](int pod, bool after_evictions) {
    result.bindings.push_back(Binding{cluster.group_name(cluster.pod(pod).group),
                                      cluster.pod_name(pod), cluster.node_name(state.pod_node(pod)),
                                      after_evictions, DeviceKeys(state, pod)});
  };
  size_t next_moved = 0;
  for (int pod = 0; pod < cluster.num_pods(); ++pod) {
    for (; next_moved < moved.size() && moved[next_moved] < pod; ++next_moved) {
      bind(moved[next_moved], true);
    }
    if (state.pod_state(pod) == PodState::kBound) bind(pod, state.after_evictions(pod));
  }
  for (; next_moved < moved.size(); ++next_moved) bind(moved[next_moved], true);

  std::vector<size_t> by_pod(notes.size());
  for (size_t k = 0; k < notes.size(); ++k) by_pod[k] = k;
  std::sort(by_pod.begin(), by_pod.end(),
            [&](size_t a, size_t b) { return notes[a].pod < notes[b].pod; });
  for (size_t k : by_pod) {
    const EvictionNote& note = notes[k];
    const int pod = note.pod;
    result.evictions.push_back(
        Eviction{cluster.group_name(cluster.pod(pod).group), cluster.pod_name(pod),
                 cluster.node_name(cluster.pod(pod).node), note.reason,
                 note.preemptor < 0 ? "" : cluster.group_name(note.preemptor), note.message});
  }

  for (int group = 0; group < cluster.num_groups(); ++group) {
    const ClusterGroup& info = cluster.group(group);
    if (state.active(group) >= info.gang || state.evicted(group) > 0) continue;
    PendingReason reason;
    if (!info.ready()) {
      reason = GangIncompleteReason(cluster, group);
    } else if (const PendingReason* recorded = session.reasons().Get(group)) {
      reason = *recorded;
    } else {
      reason = NotAttemptedReason();
    }
    result.pending.push_back(PendingPodGroup{cluster.group_name(group), std::move(reason.code),
                                             std::move(reason.message)});
  }
  return result;
}

}  // namespace arbiter::kai
