// The unit of a pod group (SEMANTICS.md §4.2): the pods it tries to place next.
#pragma once

#include <vector>

#include "core/kai/cluster.h"
#include "core/kai/working_state.h"

namespace arbiter::kai {

struct Unit {
  std::vector<int> pods;         // pod order
  std::vector<double> requests;  // unitReq: Σ of the pods' requests, over R
  bool gang = false;             // true: all or nothing to reach g; false: elastic growth
};

// Fills `unit` with G's next unit in `state` and returns true, or returns false when G has none
// (not ready, or no PENDING pod left). If active(G) < g the unit is the first g − active(G)
// PENDING pods, else one PENDING pod. Reuses `unit`'s storage. O(|unit| · R).
bool NextUnit(const Cluster& cluster, const WorkingState& state, int group, Unit* unit);

}  // namespace arbiter::kai
