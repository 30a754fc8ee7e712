// What one draw of the victim order (SEMANTICS.md §4.7) takes from a victim group: its eviction
// unit, one pod (elastic shrink) or the group's remaining RUNNING pods.
#pragma once

#include <vector>

namespace arbiter::kai {

struct EvictionUnit {
  int group = -1;
  std::vector<int> pods;  // RUNNING pods, pod order
};

// Whether `a` and `b` are the same unit: the same group and the same pods.
inline bool SameUnit(const EvictionUnit& a, const EvictionUnit& b) {
  return a.group == b.group && a.pods == b.pods;
}

}  // namespace arbiter::kai
