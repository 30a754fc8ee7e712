// The base of the room bound (solver_bounds.h, RoomBound) kept from one bound to the next, across
// the preemptors of an action and across actions: every node's free amount (idle + releasing,
// over R_n) as the working state has it, and, for a few pod profiles, how many pods of the
// profile each node holds in that room and their sum. Each read brings the rows up to date from
// the working state's node stamps: only the nodes changed since the last read are read and
// counted again, so a bound no longer counts every node.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/kai/working_state.h"

namespace arbiter::kai {

class KeptRoom {
 public:
  // What the counts of a profile depend on besides the node's room: the pod's feasibility
  // signature, its requests (over R) and the part (the cap of a node's count).
  struct Profile {
    int signature = -1;
    int part = 0;
    std::vector<double> requests;
    bool operator==(const Profile& other) const {
      return signature == other.signature && part == other.part && requests == other.requests;
    }
  };
  struct Counts {
    std::vector<int> count;  // per node
    int total = 0;           // Σ count
  };
  // How many pods of the profile fit on `node` in `free` (R_n values); must depend on nothing
  // else that changes during the cycle.
  using CountFn = std::function<int(int node, const double* free)>;

  // Every node's free amounts as `state` has them now, nodes × R_n (state.free(n, k) at n·R_n+k).
  // O(nodes) stamp comparisons + O(changed nodes · R_n).
  const std::vector<double>& Free(const WorkingState& state);
  // The counts of `profile` in Free(state), by `count`. Counts every node the first time a
  // profile is asked for (or after it was dropped: a few profiles are kept, the least recently
  // asked dropped first), else only the nodes changed since it was last asked for.
  const Counts& CountsFor(const WorkingState& state, const Profile& profile, const CountFn& count);

  // A superset, in group order, of the groups that may be victims now: preemptible, with RUNNING
  // pods, none bound or moved (the caller checks each again). A group leaves it once it is read
  // failing that with no statement open. Between two such points running only falls, since a
  // pod is restored (WorkingState::Restore) only in the statement that evicted it (the victims of
  // a try, Solver::ReplaceVictimGroup), and bound and moved only grow, rollbacks undoing only what
  // their statement did: a group that fails then fails at every later point, in a statement or
  // not. O(groups) the first time, then O(the list).
  const std::vector<int>& VictimCandidates(const WorkingState& state);

 private:
  struct Entry {
    Profile profile;
    Counts counts;
    uint64_t clock = 0;  // the node clock the counts were taken at
    uint64_t used = 0;   // when last asked for (LRU)
  };
  static constexpr size_t kMaxEntries = 8;

  bool free_valid_ = false;
  uint64_t free_clock_ = 0;  // the node clock free_ was read at
  std::vector<double> free_;
  std::vector<Entry> entries_;
  bool candidates_valid_ = false;
  std::vector<int> candidates_;
  uint64_t asked_ = 0;
};

}  // namespace arbiter::kai
