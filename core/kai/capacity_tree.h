// An ordered set of nodes that also knows, for every subtree, the largest idle and free amount of
// each resource, so that "the first node in key order where this pod fits" skips whole subtrees
// that cannot hold it instead of visiting every node that does not fit (SEMANTICS.md §4.5's
// placement order, issue 3's "pick a node without scanning every node").
//
// A treap over a fixed membership (the nodes of one NodeIndex bucket), keyed by (key, node);
// nodes are addressed by their position in the member list. Arrays only: no allocation after
// Init once the scratch paths have grown. Nothing recurses: keys are the caller's amounts, so an
// adversarial request can make the treap as deep as it has nodes. Not thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace arbiter::kai {

class CapacityTree {
 public:
  // A pair of resources whose joint amount the tree also keeps per subtree: the largest, over
  // the subtree's members, of min(weight_a · amount_a, weight_b · amount_b), idle and free. A pod
  // that asks for both fits on a member only if that member's joint amount reaches the pod's, so
  // a subtree whose members each lack one of the two (some a, others b) is passed over although
  // its per-resource maxima are large enough. Weights are positive; a = -1 keeps no pair.
  struct Pair {
    int a = -1;
    int b = -1;
    double weight_a = 1;
    double weight_b = 1;
  };
  // `members` are global node indices; `resources` is |R|.
  void Init(const std::vector<int>& members, int resources) { Init(members, resources, Pair()); }
  void Init(const std::vector<int>& members, int resources, Pair pair);

  const Pair& pair() const { return pair_; }
  bool empty() const { return root_ < 0; }
  int size() const { return static_cast<int>(members_.size()); }
  int member(int slot) const { return members_[slot]; }

  // Inserts the member at `slot`, or moves it when already present, with its key and its idle
  // and free amounts (R values each). O(R · log n) expected.
  void Set(int slot, double key, const double* idle, const double* free);

  struct Found {
    int slot = -1;
    double key = 0;
  };
  // The first member in (key, node) order that is at or after (bound_key, bound_node), has a key
  // <= max_key, and where req_r <= idle_r (now) or req_r <= free_r (otherwise) for every r with
  // req_r > 0. slot -1 when none. O(log n) when subtrees that cannot hold the pod are rare.
  Found FindFirst(double bound_key, int bound_node, double max_key, const double* requests,
                  bool now) const;
  // The same search as a walk that goes on: FindNext(walk) returns what FindFirst would return
  // for the bound just after the member last found, without walking down from the root again.
  // The tree must not change while a walk is used, and `requests` must outlive it.
  class Walk {
   private:
    friend class CapacityTree;
    double bound_key = 0;
    int bound_node = 0;
    double max_key = 0;
    const double* requests = nullptr;
    bool now = false;
    double joint = 0;
    int next = -1;                         // the subtree to walk next
    absl::InlinedVector<int, 64> pending;  // members whose left subtree is walked, nearest last
  };
  Found FindFirst(double bound_key, int bound_node, double max_key, const double* requests,
                  bool now, Walk* walk) const;
  Found FindNext(Walk* walk) const;
  // The treap priority of a slot: a fixed pseudo-random function of it (exposed for tests that
  // build the worst case, keys ordered like priorities).
  static uint32_t Priority(int slot);

  // The first member at or after (key, node), and the last member strictly before it; slot -1
  // when none. O(depth).
  Found FirstFrom(double key, int node) const;
  Found LastBefore(double key, int node) const;

  // The smallest and largest keys (the tree must not be empty). O(1).
  double MinKey() const { return min_key_[root_]; }
  double MaxKey() const { return max_key_[root_]; }
  // The members holding them: the first and the last in (key, node) order. O(1).
  int MinSlot() const { return min_slot_[root_]; }
  int MaxSlot() const { return max_slot_[root_]; }

 private:
  bool Before(int a, double key, int node) const {
    return keys_[a] != key ? keys_[a] < key : members_[a] < node;
  }
  // Set's quick path: true when `slot` keeps its place in the order, updated where it is.
  bool SetInPlace(int slot, double key, const double* idle, const double* free);
  void StoreValues(int slot, const double* idle, const double* free);
  // The pod's joint amount of the pair, or -infinity when the tree keeps no pair or the pod does
  // not ask for both.
  double JointRequest(const double* requests) const;
  // False when no member of t's subtree can hold the pod; `joint` is JointRequest(requests).
  bool MayHold(int t, const double* requests, bool now, double joint) const;
  bool Holds(int t, const double* requests, bool now) const;
  // Recomputes t's subtree summaries from its children's; true when one of them changed.
  bool Pull(int t);
  void PullPath(const std::vector<int>& path);  // deepest node last in `path`
  // PullPath for a path below which one subtree changed: stops at the first summary that comes
  // out as it was, since every summary above it then is as it was too.
  void PullUp(const std::vector<int>& path);
  void Insert(int slot);  // slot absent, with its key and values set
  void Split(int t, double key, int node, int* left, int* right);  // left: < (key, node)
  int Merge(int a, int b);
  int Erase(int t, int slot);
  // Walks on from walk->next and the pending members to the next member that holds the pod.
  int Find(Walk* walk) const;

  // The values per slot: idle (R), free (R), then the pair's joint idle and free amounts.
  int width() const { return 2 * r_ + 2; }
  double Joint(const double* amounts) const;

  int r_ = 0;
  Pair pair_;
  int root_ = -1;
  std::vector<int> members_;
  std::vector<double> keys_;
  std::vector<uint32_t> priority_;
  std::vector<int> left_, right_;
  std::vector<bool> present_;
  std::vector<double> values_;   // slot × width(): idle, free, joint idle, joint free
  std::vector<double> maxima_;   // slot × width(): subtree maxima of the same
  std::vector<double> min_key_;  // per slot: the subtree's smallest and largest keys
  std::vector<double> max_key_;
  std::vector<int> min_slot_;  // per slot: the subtree's first and last members
  std::vector<int> max_slot_;
  std::vector<int> split_path_;   // scratch of Split and Erase
  std::vector<int> merge_path_;   // scratch of Merge
  std::vector<int> insert_path_;  // scratch of Insert
};

}  // namespace arbiter::kai
