// Victims of CONSOLIDATE, RECLAIM and PREEMPT (SEMANTICS.md §4.7): who may be evicted, in which
// units, and in which order.
//
// Eligible: a preemptible group with at least one RUNNING pod, no pod bound or moved in this
// response, and passing the action's filter (which also applies min-runtime). Eviction unit: one
// pod, the last RUNNING pod in pod order, while the group would keep more than g active pods
// (elastic shrink); otherwise all its remaining RUNNING pods (the whole gang).
// Order: drawn top-down through the queue tree with every §4.3 comparison reversed (the queue
// that would be served last gives first), each queue's allocation reduced by what was already
// drawn from its subtree in rule 5 only (rules 1-4 and 6 read the allocation as it stands in the
// working state); within a leaf, reversed job order. An elastic victim re-enters after a
// draw while it has RUNNING pods left.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "core/kai/eviction_unit.h"
#include "core/kai/queue_order.h"
#include "core/kai/session.h"

namespace arbiter::kai {

// min-runtime (§4.7): start(G) is the earliest start_time among G's RUNNING pods that have one;
// G is protected for `duration` iff start(G) exists and now < start(G) + duration.
bool Protected(const Session& session, int group, const std::optional<Duration>& duration);
// When that protection ends, start(G) + duration; nullopt when G is not protected.
std::optional<Timestamp> ProtectedUntil(const Session& session, int group,
                                        const std::optional<Duration>& duration);
// The preempt min-runtime of a victim leaf, walking up while unset (nullopt: none set).
std::optional<Duration> PreemptMinRuntime(const Session& session, int leaf);
// The reclaim min-runtime for a reclaimer in `reclaimer_leaf` and a victim in `victim_leaf`: the
// value of the child of their lowest common ancestor on the victim's side, walking up while unset.
std::optional<Duration> ReclaimMinRuntime(const Session& session, int reclaimer_leaf,
                                          int victim_leaf);

// A fresh victim order over the groups `eligible` accepts (on top of the generic rules), which
// skips the units of `recorded` (R, §4.8: the victims recorded by earlier parts). Each call to
// Next draws the next eviction unit. A recorded unit is drawn in its turn and counts as drawn from
// then on, but Next does not yield it; before its turn it counts as not drawn.
// Kept incrementally like QueueOrder, in reverse: a draw re-keys only the drawn group's leaf and
// its ancestors, O(depth · (log n + ties)); construction is O(groups + queues).
//
// Streams. The units a queue's subtree gives, in their order, and the queue's chain key before
// each, depend on that subtree alone: a queue's key reads its own allocation, what was drawn from
// its subtree and its subtree's next unit. So for each second-level queue (a child of a top-level
// queue) the order keeps that sequence as drawn so far, its stream, and the subtree's own rows
// stay where the stream ends. A draw reads the next entry of the chosen second-level queue's
// stream, and draws in its subtree only past the stream's end; only the top-level queues are
// re-keyed at every draw. Reset rewinds the streams instead of undoing their draws, so that the
// next preemptor's draws read them again. A stream is dropped, and its subtree's draws undone,
// when the state changes under it (Refresh) or when an exclusion falls in it (and again at Reset).
class VictimOrder {
 public:
  VictimOrder(Session& session, const QueueChain& chain, std::function<bool(int group)> eligible,
              const std::vector<EvictionUnit>& recorded);

  // The next eviction unit that is not recorded, or false when no victim is left (or the call
  // was cancelled while it drew recorded units). Draws the recorded units it passes on the way.
  bool Next(EvictionUnit* unit);
  // Takes every group of `leaf` out of the order until Reset.
  void ExcludeLeaf(int leaf);
  // Takes one group out of the order until Reset.
  void ExcludeGroup(int group);
  // Undoes every draw, exclusion and recorded mark, back to the order as constructed. Only for
  // an order constructed with nothing recorded, on a state that has not changed since (but for
  // changes passed to Refresh). O(changes · depth · log n), the draws kept in streams aside.
  // Construction and Reset stop early, leaving an order that must not be used again, once the
  // session's poll reports the call cancelled.
  void Reset();
  // Brings an order with nothing drawn or excluded (as constructed, or after Reset) up to date
  // with a committed change of the state that touched only `groups` (pods bound, evicted, moved
  // or restored): their eligibility, eviction units and keys, then the keys of the queues above
  // them, deepest first, and the streams above them dropped. The order is then the one a fresh
  // construction would give: a job's key depends only on its group, a queue's only on its
  // allocation and its subtree. O(|groups| · depth · log n) plus the draws the dropped streams
  // kept.
  void Refresh(const std::vector<int>& groups);
  // Marks the pods of `units` recorded, as if the order had been constructed with them as
  // `recorded`; Reset undoes it. O(pods).
  void MarkRecorded(const std::vector<EvictionUnit>& units);

 private:
  // Leaf entries: begin() is the job that gives first (reversed job order).
  struct JobEntry {
    mutable JobKey key;  // set in place while between its neighbours (Place, victims.cc)
    friend bool operator<(const JobEntry& a, const JobEntry& b) { return b.key < a.key; }
  };
  // Child entries: begin() is the child served last (descending chain key), ties by index. The
  // key is mutable so that a re-key that leaves the entry between its neighbours sets it in
  // place (Place, victims.cc): the set's order is the same either way.
  struct ChildEntry {
    mutable ChainKey key;
    int32_t queue;
    friend bool operator<(const ChildEntry& a, const ChildEntry& b) {
      if (a.key == b.key) return a.queue < b.queue;
      return b.key < a.key;
    }
  };
  using JobSet = std::set<JobEntry>;
  using ChildSet = std::set<ChildEntry>;
  // A second-level queue's stream. Its subtree's rows (jobs, keys, drawn pods and requests) are
  // at the live position: the units drawn so far. Entry i is the i-th unit the subtree gives
  // and the queue's key before it; the entry at the live position is the subtree's next unit
  // (the head) unless the subtree has none left (`ended`). `read`: the entries the current
  // preemptor's draws have taken.
  struct Stream {
    std::vector<int32_t> groups;
    std::vector<int32_t> pod_end;  // entry i's pods: pods[pod_end[i - 1] .. pod_end[i])
    std::vector<int32_t> pods;
    std::vector<double> requests;  // entries × R: each entry's unit
    std::vector<ChainKey> keys;
    bool headed = false;  // the last entry is the head
    bool ended = false;   // no head: the subtree has no unit left at the live position
    bool dirty = false;   // drawn with an exclusion in it: dropped at Reset
    bool active = false;  // listed in active_streams_ (read from, or dirty)
    size_t read = 0;
    std::vector<int> touched;  // groups drawn at the live position's draws, with repeats
    size_t size() const { return groups.size(); }
    size_t live() const { return headed ? groups.size() - 1 : groups.size(); }
  };

  int RemainingRunning(int group) const;
  // True when every pod of `unit` is recorded (a unit is recorded whole or not at all: R is made
  // of units of this same sequence).
  bool Recorded(const EvictionUnit& unit) const;
  // Counts `pods` (of `group`) as drawn in the subtree's rows: they leave their group's next
  // units and their requests leave the allocation (rule 5) of every queue above them, up to and
  // including `top` (the stream's queue, or a top-level leaf). Keys are not updated.
  void CountDrawn(int group, const int32_t* pods, size_t count, int top);
  // Fills units_[group] (its next eviction unit) and unit_requests_[group]; false when none.
  bool ComputeUnit(int group);
  void RekeyJob(int group);
  // Re-keys `queue` from its subtree's rows. A second-level queue's key goes into its stream as
  // the head (replacing it) and the entry its preemptor's draws read is listed in its parent; a
  // top-level queue is re-keyed with what its children's streams give next.
  void Rekey(int queue);
  // Re-keys each of `groups` (repeats allowed) once, then each queue above them and above
  // `queues` once, deepest first. Leaves `groups` as it was.
  void RekeyGroupsAndQueues(const std::vector<int>& groups, const std::vector<int>& queues = {});
  int LastServed(const ChildSet& set) const;
  ChildSet& Container(int queue);
  // The requests of the unit `queue` gives next (queue listed).
  const double* BestRequests(int queue) const;
  // Lists a second-level queue in its parent with the entry its preemptor's draws read next.
  void ShowRead(int stream);
  // Draws the head of `stream` in its subtree, then re-keys up to the stream's queue, which
  // takes the next head.
  void DrawHead(int stream);
  // Undoes the subtree draws `stream` kept and drops its entries; adds the groups they drew to
  // `groups`. The stream's queue must then be re-keyed (it has no head).
  void Drop(int stream, std::vector<int>* groups);
  // Drops the stream above `leaf` (if any) when it has drawn, re-keying back to the subtree's
  // first unit, and marks it dirty.
  void PrepareExclusion(int leaf);
  void Activate(int stream);

  // The generic rules of eligibility (§4.7) and the action's filter.
  bool Eligible(int group) const;

  Session& session_;
  const QueueChain& chain_;
  std::function<bool(int group)> eligible_filter_;
  int r_;
  std::vector<int> drawn_pods_;  // per group: RUNNING pods drawn so far
  std::vector<char> pod_drawn_;
  std::vector<char> pod_recorded_;   // R: drawn in their turn, never yielded
  std::vector<int> recorded_pods_;   // the pods marked in pod_recorded_, for Reset
  std::vector<double> drawn_;        // per queue × R: requests drawn from the subtree
  std::vector<EvictionUnit> units_;  // per group
  std::vector<std::vector<double>> unit_requests_;  // per group
  std::vector<char> eligible_;
  std::vector<JobSet> jobs_;  // per leaf
  std::vector<char> job_listed_;
  std::vector<JobSet::iterator> job_it_;  // per group
  std::vector<ChildSet> children_;        // per non-leaf
  ChildSet roots_;
  // Per queue: the group its subtree gives next (a second-level queue: at its stream's read
  // entry), and for a top-level queue with children the child it comes from.
  std::vector<int> best_;
  std::vector<int> best_child_;
  std::vector<int> stream_of_;  // per queue below the top level: its second-level ancestor
  std::vector<int> depth_;
  std::vector<Stream> streams_;  // per queue; used for the second-level ones
  std::vector<int> active_streams_;
  std::vector<char> queue_listed_;
  std::vector<ChildSet::iterator> queue_it_;
  std::vector<double> scratch_;
  std::vector<int> touched_;     // groups of top-level leaves drawn from since construction
  std::vector<int> tops_drawn_;  // top-level queues drawn from (their drawn_ rows)
  std::vector<char> top_drawn_;
  std::vector<int> excluded_;  // groups taken out by ExcludeLeaf and ExcludeGroup
  // Scratch of RekeyGroupsAndQueues: marks (all 0 between calls) and the queues by depth.
  std::vector<char> group_marked_;
  std::vector<char> queue_marked_;
  std::vector<std::vector<int>> queues_by_depth_;
  std::vector<int> reset_groups_;
  std::vector<int> reset_queues_;
};

}  // namespace arbiter::kai
