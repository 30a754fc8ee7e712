// The base of the room bound (solver_bounds.h, RoomBound) kept from one bound to the next, across
// the preemptors of an action and across actions: every node's free amount (idle + releasing,
// over R_n) as the working state has it, and, for a few pod profiles, how many pods of the
// profile each node holds in that room and their sum. Each read brings the rows up to date from
// the working state's node stamps: only the nodes changed since the last read are read and
// counted again, so a bound no longer counts every node.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "core/kai/working_state.h"

namespace arbiter::kai {

// Scratch rows of free room per node that RoomBound::CountGroupByGroup reuses from one call to
// the next, valid where their stamp is current (RoomBound::Fold stamps its row slots the same way).
// Owned by the session, so that every bound of the cycle shares it (each call leaves it ready for
// the next).
struct RoomScratch {
  std::vector<uint64_t> stamp;  // per node
  std::unique_ptr<double[]> free;
  uint64_t current = 0;
  std::vector<int> nodes;   // the nodes with a current row
  std::vector<int> count;   // per node: the pods counted in its row (RoomBound::CountGroupByGroup)
  std::vector<char> dirty;  // per node: to be counted again; all 0 between calls
  std::vector<char> in_chosen;  // per pod: in R (CountWithAllVictims); all 0 between calls
  // RoomBound::CountNodeByNode: per group, whether it may be a victim, where stamped current;
  // and the row of the node it counts.
  std::vector<uint64_t> group_stamp;
  std::vector<char> group_ok;
  std::vector<double> row;
  std::vector<int> slot;  // per node: a row index (RoomBound::Fold), where stamped
};

class KeptRoom {
 public:
  // What the counts of a profile depend on besides the node's room: the pod's feasibility
  // signature, its requests (over R) and the part (the cap of a node's count).
  struct Profile {
    int signature = -1;
    int part = 0;
    std::vector<double> requests;
    std::vector<char> classes;  // the node classes counted, when not every feasible one (empty)
    bool operator==(const Profile& other) const {
      return signature == other.signature && part == other.part && requests == other.requests &&
             classes == other.classes;
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

  // Visits, in index order, a superset of the nodes with a pod that may be a victim now, each
  // with its pods RUNNING in the input whose group is preemptible, in pod order (every pod that
  // may be a victim there, since a RUNNING pod is on its input node: PodState::kRunning), until
  // `visit(node, pods, &none_running)` returns false. A node whose visit sets `none_running`
  // (none of its pods is RUNNING) with no statement open leaves the list for good, since RUNNING
  // only falls between two such points (see WalkVictimCandidates). O(pods) the first time, then
  // O(the nodes passed over).
  template <typename Visit>
  void WalkVictimNodes(const WorkingState& state, Visit&& visit) {
    if (victims_first_.empty()) BuildVictimNodes(state.cluster());
    const bool may_drop = !state.in_statement();
    int previous = -1;
    for (int n = node_head_; n >= 0;) {
      const int next = node_next_[n];
      bool none_running = false;
      const absl::Span<const int> pods = absl::MakeConstSpan(
          victims_on_.data() + victims_first_[n], victims_first_[n + 1] - victims_first_[n]);
      const bool go_on = visit(n, pods, &none_running);
      if (may_drop && none_running) {
        (previous < 0 ? node_head_ : node_next_[previous]) = next;  // unlinked
      } else {
        previous = n;
      }
      if (!go_on) return;
      n = next;
    }
  }

  // Visits, in group order, a superset of the groups that may be victims now: preemptible, with
  // RUNNING pods, none bound or moved (`visit` checks each again), until `visit` returns false.
  // A group visited failing that with no statement open leaves the list for good. Between two
  // such points RUNNING only falls, since a pod is restored (WorkingState::Restore) only in the
  // statement that evicted it (the victims of a try, Solver::ReplaceVictimGroup), and bound and
  // moved only grow, rollbacks undoing only what their statement did: a group that fails then
  // fails at every later point, in a statement or not. O(groups) the first time, then O(the
  // groups passed over).
  template <typename Visit>
  void WalkVictimCandidates(const WorkingState& state, Visit&& visit) {
    if (!candidates_valid_) BuildCandidates(state.cluster());
    const bool may_drop = !state.in_statement();
    int previous = -1;
    for (int g = head_; g >= 0;) {
      const int next = next_[g];
      if (may_drop && !(state.running(g) > 0 && state.bound(g) == 0 && state.moved(g) == 0)) {
        (previous < 0 ? head_ : next_[previous]) = next;  // unlinked
      } else {
        previous = g;
        if (!visit(g)) return;
      }
      g = next;
    }
  }

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
  // Links the preemptible groups, in group order, into the list of candidates.
  void BuildCandidates(const Cluster& cluster);
  // Lists every node with a pod RUNNING in the input of a preemptible group, and their pods.
  void BuildVictimNodes(const Cluster& cluster);

  bool candidates_valid_ = false;
  int head_ = -1;               // the first candidate, -1: none
  std::vector<int> next_;       // per group: the next candidate after it, -1: none
  int node_head_ = -1;          // the first node listed, -1: none
  std::vector<int> node_next_;  // per node: the next node listed after it, -1: none
  // Node n's pods (WalkVictimNodes) are victims_on_[victims_first_[n], victims_first_[n + 1]).
  std::vector<int> victims_first_;
  std::vector<int> victims_on_;
  uint64_t asked_ = 0;
};

}  // namespace arbiter::kai
