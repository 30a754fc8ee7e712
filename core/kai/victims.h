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
// Kept incrementally like QueueOrder, in reverse: a draw merges at most one entry into each
// stream on one path (below), O(depth · (log n + ties)), and usually reads a kept entry at the
// top level only; construction is O(groups + queues).
//
// Streams. The units a queue's subtree gives, in their order, and the queue's chain key before
// each, depend on that subtree alone: a queue's key reads its own allocation, what was drawn from
// its subtree and its subtree's next unit. So every queue keeps that sequence as far as it was
// merged, its stream: a leaf's is drawn from its jobs, and a parent's is merged from its
// children's streams, each child listed in its parent at the entry the parent takes next. A draw
// reads the next entry of the top-level queue served last, and merges past a stream's end only
// there. Reset rewinds the top-level queues; the streams stay for the next preemptor. A change of
// the state (Refresh) or an exclusion drops the streams on its leaf's path only (an exclusion's
// again at Reset); the streams below them are merged again from where they are. Below the second
// level a stream lets go of what its parent took (Stream), so the order holds at most three
// entries per unit drawn, whatever the depth.
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
  // changes passed to Refresh). O(top-level queues read + exclusions · (leaf's groups + depth) ·
  // log n); the streams are kept. Construction and Reset stop early, leaving an order that must
  // not be used again, once the session's poll reports the call cancelled.
  void Reset();
  // Brings an order with nothing drawn or excluded (as constructed, or after Reset) up to date
  // with a committed change of the state that touched only `groups` (pods bound, evicted, moved
  // or restored): their eligibility, and the streams on their leaves' paths dropped. The order is
  // then the one a fresh construction would give: a job's key depends only on its group, a
  // queue's only on its allocation and its subtree, and the streams kept are of subtrees the
  // change did not touch. O(|groups| · (leaf's groups + depth · log n)).
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
  // A queue's stream: entry i is the i-th unit its subtree gives and the queue's key before it.
  // A leaf's rows (its jobs and drawn pods) stand after its last entry: every entry of a leaf is
  // drawn. A parent's rule-5 row holds the requests of its entries. Below kKeptDepth a stream
  // lets go of the entries its parent took (`base`), so that what the order holds does not grow
  // with the depth of the tree: such a stream is dropped with its parent.
  struct Stream {
    std::vector<int32_t> groups;     // entries base.. on
    std::vector<int32_t> pod_begin;  // per stored entry: where its pods start in `pods`
    std::vector<int32_t> pods;
    std::vector<ChainKey> keys;
    size_t base = 0;
    bool ended = false;  // the subtree gives nothing past the last entry
    size_t size() const { return base + groups.size(); }
    int32_t group(size_t i) const { return groups[i - base]; }
    const ChainKey& key(size_t i) const { return keys[i - base]; }
    const int32_t* first_pod(size_t i) const { return pods.data() + pod_begin[i - base]; }
    const int32_t* last_pod(size_t i) const {
      return i + 1 - base < pod_begin.size() ? pods.data() + pod_begin[i + 1 - base]
                                             : pods.data() + pods.size();
    }
    void Append(int32_t group, const int32_t* first, const int32_t* last, const ChainKey& key);
    // Lets go of the entries before `until`.
    void LetGo(size_t until);
    void Clear();
  };
  // Streams of queues up to this depth keep every entry (the top level must, for Reset).
  static constexpr int kKeptDepth = 2;

  int RemainingRunning(int group) const;
  // True when every pod of `unit` is recorded (a unit is recorded whole or not at all: R is made
  // of units of this same sequence).
  bool Recorded(const EvictionUnit& unit) const;
  // Counts `unit`'s pods as drawn in `leaf`'s rows: they leave their group's next units and
  // their requests leave the leaf's allocation (rule 5). Keys are not updated.
  void CountDrawn(const EvictionUnit& unit, int leaf);
  // Fills units_[group] (its next eviction unit) and unit_requests_[group]; false when none.
  bool ComputeUnit(int group);
  void RekeyJob(int group);
  int LastServed(const ChildSet& set) const;
  ChildSet& Container(int queue);
  // Appends the next entry to `queue`'s stream: a leaf draws its next job's unit; a parent takes
  // the next entry of the child served last, which then shows its next one (extended in turn
  // when it has none yet). Sets `ended` when there is none. O(depth · log n), no recursion.
  void Extend(int queue);
  // Extends `queue`'s stream until it has entry `index` or ends.
  void Ensure(int queue, size_t index);
  // Lists `queue` in its parent (or among the top-level queues) with the entry taken next, or
  // takes it out when its stream has none.
  void Show(int queue);
  // Drops the streams on the paths of `leaves` to the top (each once, deepest first) and merges
  // each again to its first entry: a leaf's draws are undone and their groups re-keyed on the state
  // as it stands (eligibility included), and a parent takes its children from their first
  // entries. The top-level queues dropped show their first entry.
  // `groups`: the groups whose eligibility changed (re-keyed; the drawn ones are undone first).
  // O(groups + drawn groups of the leaves + path · log n), never a whole leaf's groups unless
  // listed.
  void DropPaths(const std::vector<int>& leaves, const std::vector<int>& groups);
  // Takes `leaf`'s path out until Reset, when DropPaths runs again on it.
  void MarkDirty(int leaf);

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
  std::vector<double> drawn_;        // per queue × R: requests of its stream's entries
  std::vector<EvictionUnit> units_;  // per group
  std::vector<std::vector<double>> unit_requests_;  // per group
  std::vector<char> eligible_;
  std::vector<char> leaf_out_;  // per leaf: taken out by ExcludeLeaf
  std::vector<std::vector<int>> leaf_groups_;
  std::vector<std::vector<int>> leaf_drawn_;  // per leaf: the groups its stream drew from
  std::vector<char> leaf_dirty_;              // per leaf: in dirty_leaves_
  std::vector<JobSet> jobs_;                  // per leaf
  std::vector<char> job_listed_;
  std::vector<JobSet::iterator> job_it_;  // per group
  std::vector<ChildSet> children_;        // per non-leaf
  ChildSet roots_;
  std::vector<Stream> streams_;  // per queue
  // Per queue: the entries of its stream its parent took (a top-level queue: this preemptor's
  // draws).
  std::vector<size_t> taken_;
  std::vector<std::vector<int>> advanced_;  // per queue: the children with entries taken
  std::vector<int> tops_read_;              // top-level queues with entries taken
  std::vector<char> queue_listed_;
  std::vector<ChildSet::iterator> queue_it_;
  std::vector<double> scratch_;
  std::vector<int> excluded_;      // groups taken out by ExcludeLeaf and ExcludeGroup
  std::vector<int> leaves_out_;    // leaves taken out by ExcludeLeaf
  std::vector<int> dirty_leaves_;  // leaves whose paths an exclusion dropped
  // Scratch of DropPaths: marks (all 0 between calls) and the queues by depth.
  std::vector<char> queue_marked_;
  std::vector<std::vector<int>> queues_by_depth_;
  std::vector<int> depth_;
  std::vector<int> extend_chain_;       // Extend's scratch
  std::vector<double> entry_requests_;  // Extend's scratch: an entry's requests
  std::vector<int> drop_below_;         // DropPaths' scratch
};

}  // namespace arbiter::kai
