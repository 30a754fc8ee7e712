#include "core/kai/unit.h"

namespace arbiter::kai {

bool NextUnit(const Cluster& cluster, const WorkingState& state, int group, Unit* unit) {
  unit->pods.clear();
  unit->requests.assign(cluster.num_resources(), 0.0);
  unit->gang = false;
  const ClusterGroup& info = cluster.group(group);
  if (!info.ready() || state.pending_left(group) == 0) return false;
  const int missing = info.gang - state.active(group);
  int count = 1;
  if (missing > 0) {
    // Evicted pods never come back as PENDING in the same response, so a gang that lost pods
    // may lack the PENDING pods to complete it: then it has no unit.
    if (missing > state.pending_left(group)) return false;
    unit->gang = true;
    count = missing;
  }
  for (int i = 0; i < count; ++i) {
    const int pod = state.pending_pod(group, i);
    unit->pods.push_back(pod);
    const double* requests = cluster.requests(pod);
    for (int r = 0; r < cluster.num_resources(); ++r) unit->requests[r] += requests[r];
  }
  return true;
}

}  // namespace arbiter::kai
