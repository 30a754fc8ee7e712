// Candidate order (SEMANTICS.md §4.3): which job an action tries next.
//
// Jobs are picked top-down through the queue tree. At each level the children are compared by the
// queue chain, each child carrying the next job of its subtree and that job's unit:
//   1. not over fair share (fs < allocated in all of R) beats over;
//   2. starved (allocated + unitReq <= deserved in all of R, -1 = infinity) wins;
//   3. higher Queue.priority;
//   4. not penalised (no r with allocatableShare 0 and allocated + unitReq > 0) wins;
//   5. smaller dominant share with the unit; 6. smaller dominant share without it;
//   7. smaller allocatableShare vector (<= in all and < in at least one);
//   8. older creation_time, then smaller name.
// Rule 7 is a partial order, so the chain is not transitive. The best child is defined by a scan
// in name order that replaces the incumbent only with a strictly better child; since rules 1-6
// are a strict weak order, that is the name-order scan of the children that tie on rules 1-6 with
// the best, which is what QueueOrder computes.
// Job order in a leaf: higher PodGroup.priority; then active < g, = g, > g; then older
// creation_time; then smaller name.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "core/kai/cluster.h"
#include "core/kai/fair_share_rows.h"
#include "core/kai/unit.h"
#include "core/kai/working_state.h"
#include "core/model.h"

namespace arbiter::kai {

// Rules 1-6 of the queue chain for one queue carrying one unit, as a sortable key.
struct ChainKey {
  bool over = false;
  bool starved = false;
  int32_t priority = 0;
  bool penalised = false;
  double share_with_unit = 0;
  double share_without_unit = 0;

  // True when `a` goes before `b` on rules 1-6.
  friend bool operator<(const ChainKey& a, const ChainKey& b);
  friend bool operator==(const ChainKey& a, const ChainKey& b);
};

// The queue chain over a fair share: the static per-queue values the rules read.
class QueueChain {
 public:
  // `shares` must outlive this.
  explicit QueueChain(const KaiFairShare& shares);

  // Rules 1-6 for `queue` with subtree allocation `allocated` carrying a unit of `unit_requests`
  // (nullptr = no unit). Rule 5 alone reads `rule5_allocated` instead when it is given: the victim
  // order (§4.7) reduces a queue's allocation by the units already drawn in rule 5 only. O(R).
  ChainKey Key(int queue, const double* allocated, const double* unit_requests,
               const double* rule5_allocated = nullptr) const;
  // Rules 7-8 for two queues that tie on rules 1-6: true when `a` goes first.
  bool TieBreakBefore(int a, int b) const;

 private:
  // The dominant shares of rules 5 and 6 in one pass: max over r of x/S (x·1000 where S == 0),
  // S = allocatableShare with "no cap" read as the top-level total, with x = rule5_allocated +
  // unit into `with_unit` and x = allocated into `without_unit`. 0 when R is empty.
  void DominantShares(int queue, const double* allocated, const double* rule5_allocated,
                      const double* unit_requests, double* with_unit, double* without_unit) const;

  const KaiFairShare& shares_;
  int r_;
  std::vector<double> share_base_;  // queues × R: allocatableShare, infinity -> total
};

// The job order in a leaf as a sortable key.
struct JobKey {
  int32_t priority = 0;
  int32_t elastic = 0;  // 0: active < g, 1: active == g, 2: active > g
  Timestamp creation;
  int32_t group = -1;
  friend bool operator<(const JobKey& a, const JobKey& b);
};
JobKey MakeJobKey(const Cluster& cluster, const WorkingState& state, int group);

// An action's candidate set, ordered incrementally: after an attempt only the attempted group's
// leaf and its ancestors are re-keyed (O(depth · (log n + ties))), nothing is re-sorted.
class QueueOrder {
 public:
  // Everything must outlive this.
  QueueOrder(const Cluster& cluster, const KaiFairShare& shares, const WorkingState& state);

  // Adds G as a candidate if it has a unit (§4.2); returns whether it was added.
  bool Add(int group);
  // Adds every group of `groups` that has a unit, then orders every queue once, bottom-up:
  // cheaper than Add one by one. Call on an empty order.
  void AddAll(const std::vector<int>& groups);
  // Re-keys G after its state changed: it stays a candidate while `keep` is true and it has a
  // unit, and leaves otherwise. Also re-keys G's leaf and ancestors.
  void Update(int group, bool keep);
  // Re-keys `leaf` and its ancestors after allocations in it changed.
  void RefreshPath(int leaf);
  // The next job (§4.3), or -1 when no candidate is left.
  int Next() const;
  // The unit G is ordered with (valid while G is a candidate).
  const Unit& unit(int group) const { return units_[group]; }
  const QueueChain& chain() const { return chain_; }

 private:
  struct ChildEntry {
    ChainKey key;
    int32_t queue;
    friend bool operator<(const ChildEntry& a, const ChildEntry& b) {
      if (a.key == b.key) return a.queue < b.queue;
      return a.key < b.key;
    }
  };
  using ChildSet = std::set<ChildEntry>;
  using JobSet = std::set<JobKey>;

  int BestChild(const ChildSet& set) const;
  // Recomputes q's best job from its children (or jobs) and re-keys q in its container.
  void Rekey(int q);
  ChildSet& Container(int queue) {
    return parents_[queue] < 0 ? roots_ : children_[parents_[queue]];
  }

  const Cluster& cluster_;
  const WorkingState& state_;
  QueueChain chain_;
  std::vector<int> parents_;
  std::vector<ChildSet> children_;  // per non-leaf queue
  ChildSet roots_;                  // the top-level queues
  std::vector<JobSet> jobs_;        // per leaf
  std::vector<int> best_job_;       // per queue, -1 = none
  std::vector<bool> queue_listed_;  // whether the queue is in its container
  std::vector<ChildSet::iterator> queue_it_;
  std::vector<Unit> units_;
  std::vector<bool> group_listed_;
  std::vector<JobSet::iterator> group_it_;
};

}  // namespace arbiter::kai
