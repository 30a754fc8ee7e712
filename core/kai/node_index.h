// Nodes ordered by their placement score (SEMANTICS.md §4.5), per feasibility class, so that the
// best node for a pod is found without visiting every node. Amounts span the node resources R_n
// (core/kai/cluster.h): resource arguments and request vectors are over R_n.
//
// Each class keeps three CapacityTrees (ordered sets that also know their subtrees' largest idle
// and free amounts, so a search skips whole subtrees where the pod cannot fit):
//   kGpu       nodes with nvidia.com/gpu, keyed on the GPU score (for pods that request GPUs);
//   kCpuNoGpu  nodes without GPUs, keyed on the CPU score (CPU-only pods, +10 band);
//   kCpuGpu    nodes with GPUs, keyed on the CPU score (CPU-only pods).
// Binpack keys on free = idle + releasing of the scoring resource (the score falls as free rises);
// nodes whose allocatable of that resource is 0 score 0 and are kept aside in name order. Spread
// keys on -free/allocatable (its score, negated), 0 allocatable included with key 0.
// Entries are ordered by (key, node index), node index order being name order.
//
// WorkingState calls Update whenever a node's free capacity changes (and again on rollback). The
// index applies updates lazily, before its next read: a node changed many times between two
// searches (evicted, then rolled back, then evicted again by the next try) is re-keyed once.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/kai/capacity_tree.h"
#include "core/kai/cluster.h"
#include "core/kai/feasibility.h"
#include "core/model.h"

namespace arbiter::kai {

// The inverse of the mean allocatable amount of R_n's resource `k` over `members`: it weighs an
// amount as a share of a typical member, for a CapacityTree::Pair. 0 when `k` is -1, `members`
// is empty, or the weight comes out as 0 or not finite (a pair with it would rule nothing out).
double ShareWeight(const Cluster& cluster, const std::vector<int>& members, int k);

class NodeIndex {
 public:
  enum Bucket { kGpu = 0, kCpuNoGpu = 1, kCpuGpu = 2, kNumBuckets = 3 };

  // An empty index over the schedulable nodes of `feasibility`'s classes. Call Update once for
  // every node before the first lookup. `cluster` and `feasibility` must outlive this.
  NodeIndex(const Cluster& cluster, const Feasibility& feasibility, Placement placement);

  bool spread() const { return spread_; }

  // Sets the node's idle and free (idle + releasing) amounts, one per resource of R each. O(R);
  // the O(R · log n) re-keying happens once per changed node before the next read.
  void Update(int node, const double* idle, const double* free);

  // The largest free amount of resource r in the class, and the node holding it (the smaller
  // name on ties); node -1 for an empty class. O(1).
  struct MaxFree {
    double free = 0;
    int node = -1;
  };
  MaxFree LargestFree(int node_class, int r) const {
    Sync();
    const ClassMaxima& maxima = maxima_[node_class];
    return maxima.size == 0 ? MaxFree{} : maxima.tree[r * 2 * maxima.size + 1];
  }
  // False when some r with requests[r] > 0 exceeds the class's largest free amount: no node of
  // the class can take the pod, now or pipelined. O(R).
  bool MayFit(int node_class, const double* requests) const;

  const CapacityTree& tree(int node_class, Bucket bucket) const {
    Sync();
    return trees_[Slot(node_class, bucket)];
  }
  // A dense id for each (class, bucket) tree, in [0, num_trees()).
  static int TreeId(int node_class, Bucket bucket) { return Slot(node_class, bucket); }
  int num_trees() const { return static_cast<int>(trees_.size()); }
  // Binpack only: the bucket's nodes whose allocatable of the scoring resource is 0, name order.
  const std::vector<int>& zero_nodes(int node_class, Bucket bucket) const {
    return zero_nodes_[Slot(node_class, bucket)];
  }

  // The key a node with `free` of a resource whose allocatable is `allocatable` gets.
  double Key(double free, double allocatable) const;
  // The trees `node` is a member of (at most one GPU and one CPU tree), -1 for none.
  std::array<int, 2> TreesOf(int node) const {
    return {nodes_[node].gpu_tree, nodes_[node].cpu_tree};
  }

  // While frozen, reads do not apply the updates recorded since Freeze: the trees keep the
  // amounts they had then, and a reader that knows which nodes changed since (the working
  // state's journal) reads those from the working state instead (Placer::SetOverlay). A try of
  // the victim search freezes the index, so that its evictions and placements, all rolled back
  // a moment later, never re-key a tree. Freezing applies what is pending first. Reading mode
  // only: it changes no value of the index.
  void Freeze() const {
    Sync();
    frozen_ = true;
  }
  void Thaw() const { frozen_ = false; }
  // Changes whenever a tree changes: facts learnt from the trees hold while it stays. A read:
  // applies what is pending first, unless frozen.
  uint64_t version() const {
    Sync();
    return version_;
  }

 private:
  static int Slot(int node_class, Bucket bucket) { return node_class * kNumBuckets + bucket; }
  // Applies the updates recorded since the last read. Reads are const: the pending updates are
  // part of the index's value, only not yet folded into its trees.
  void Sync() const {
    if (!frozen_ && !dirty_list_.empty()) const_cast<NodeIndex*>(this)->ApplyPending();
  }
  void ApplyPending();
  void Apply(int node, const double* idle, const double* free);
  struct NodeSlots {
    int gpu_tree = -1;  // -1: not in a GPU tree
    int gpu_pos = -1;
    int cpu_tree = -1;  // -1: in a zero list (or unschedulable)
    int cpu_pos = -1;
  };
  // Per class and resource, a max segment tree over the class's nodes (leaves at [size, 2·size)).
  struct ClassMaxima {
    int size = 0;               // leaves: a power of two >= the class's node count
    std::vector<MaxFree> tree;  // R × 2·size
  };

  const Cluster& cluster_;
  int r_;
  std::vector<ClassMaxima> maxima_;
  std::vector<int> class_of_;    // per node
  std::vector<int> class_slot_;  // per node: its leaf index within the class
  bool spread_;
  std::vector<CapacityTree> trees_;
  std::vector<std::vector<int>> zero_nodes_;
  std::vector<NodeSlots> nodes_;
  std::vector<double> pending_;     // per node: R_n idle amounts, then R_n free amounts
  std::vector<double> applied_;     // per node: the amounts the trees hold (same layout)
  std::vector<char> ever_applied_;  // per node: the trees hold it
  std::vector<char> dirty_;         // per node: has a pending update
  std::vector<int> dirty_list_;
  mutable bool frozen_ = false;
  uint64_t version_ = 0;
};

}  // namespace arbiter::kai
