// Random changes to the KAI working state, as a try of the victim search makes them, for the
// property tests of the structures kept across changes (the node index's overlay, the kept room).
#ifndef ARBITER_TESTS_PROPERTY_STATE_MUTATION_H_
#define ARBITER_TESTS_PROPERTY_STATE_MUTATION_H_

#include <cstdint>

#include "clients/generator/random.h"
#include "core/kai/session.h"

namespace arbiter::testing {

// Makes 1 to max_changes random changes: evicts RUNNING pods, restores evicted ones or re-places
// them elsewhere where they fit, and binds a group's next PENDING pod where it fits (pipelined
// when it fits only on releasing capacity).
inline void MutateWorkingState(kai::Session& session, generator::Rng& rng, int max_changes) {
  const kai::Cluster& cluster = session.cluster();
  kai::WorkingState& state = session.state();
  const int pods = cluster.num_pods();
  const int nodes = cluster.num_nodes();
  if (pods == 0 || nodes == 0) return;
  const int changes = 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(max_changes)));
  for (int c = 0; c < changes; ++c) {
    const int pod = static_cast<int>(rng.Below(static_cast<uint64_t>(pods)));
    const int node = static_cast<int>(rng.Below(static_cast<uint64_t>(nodes)));
    switch (state.pod_state(pod)) {
      case kai::PodState::kRunning:
        state.Evict(pod);
        break;
      case kai::PodState::kEvicted:
        if (rng.Below(2) == 0) {
          state.Restore(pod);
        } else if (state.FitsPipelined(node, cluster.node_requests(pod))) {
          state.Relocate(pod, node);
        }
        break;
      case kai::PodState::kPending: {
        const int group = cluster.pod(pod).group;
        if (state.pending_left(group) == 0) break;
        const int next = state.pending_pod(group, 0);
        const bool now = state.FitsNow(node, cluster.node_requests(next));
        if (now || state.FitsPipelined(node, cluster.node_requests(next))) {
          state.Bind(next, node, /*after_evictions=*/!now);
        }
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace arbiter::testing

#endif  // ARBITER_TESTS_PROPERTY_STATE_MUTATION_H_
