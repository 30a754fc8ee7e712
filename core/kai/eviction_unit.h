// What one draw of the victim order (SEMANTICS.md §4.7) takes from a victim group: its eviction
// unit, one pod (elastic shrink) or the group's remaining RUNNING pods.
#pragma once

#include <vector>

namespace arbiter::kai {

struct EvictionUnit {
  int group = -1;
  std::vector<int> pods;  // RUNNING pods, pod order
};

}  // namespace arbiter::kai
