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
  for (int pod = 0; pod < cluster.num_pods(); ++pod) {
    const PodState pod_state = state.pod_state(pod);
    const int group = cluster.pod(pod).group;
    if (pod_state == PodState::kBound) {
      result.bindings.push_back(Binding{cluster.group_name(group), cluster.pod_name(pod),
                                        cluster.node_name(state.pod_node(pod)),
                                        state.after_evictions(pod), DeviceKeys(state, pod)});
    }
  }
  for (const EvictionNote& note : session.evictions()) {
    const int pod = note.pod;
    const int group = cluster.pod(pod).group;
    const int original = cluster.pod(pod).node;
    if (state.pod_state(pod) == PodState::kMoved) {
      result.bindings.push_back(Binding{cluster.group_name(group), cluster.pod_name(pod),
                                        cluster.node_name(state.pod_node(pod)), true,
                                        DeviceKeys(state, pod)});
    }
    result.evictions.push_back(Eviction{
        cluster.group_name(group), cluster.pod_name(pod), cluster.node_name(original), note.reason,
        note.preemptor < 0 ? "" : cluster.group_name(note.preemptor), note.message});
  }
  // Bindings of moved pods were appended after the others: restore (pod_group, pod) order.
  auto by_pod = [](const auto& a, const auto& b) {
    return a.pod_group != b.pod_group ? a.pod_group < b.pod_group : a.pod < b.pod;
  };
  std::sort(result.bindings.begin(), result.bindings.end(), by_pod);
  std::sort(result.evictions.begin(), result.evictions.end(), by_pod);

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
