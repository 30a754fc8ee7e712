// The queue hierarchy as a flat vector with parent indices (SEMANTICS.md §1).
//
// Queues are indexed in bytewise name order, so index order is name order and children lists,
// built in index order, are name ordered too. Built from a validated snapshot: every parent
// exists and there is no cycle. The depth is the caller's to choose (a chain of 200,000 queues is
// a valid request), so nothing here or in its users recurses once per level.
#pragma once

#include <string_view>
#include <vector>

#include "core/model.h"

namespace arbiter {

class QueueTree {
 public:
  struct Entry {
    const Queue* queue = nullptr;  // points into the snapshot the tree was built from
    int parent = -1;               // -1 = top level
    int depth = 0;                 // 0 = top level
    std::vector<int> children;     // name order
    int preorder = 0;              // position in a depth-first walk (roots, then children, by name)
    int preorder_end = 0;          // one past the last position of the subtree
    bool is_leaf() const { return children.empty(); }
  };

  QueueTree() = default;

  // Builds the tree of a validated snapshot. The snapshot must outlive the tree.
  static QueueTree Build(const Snapshot& snapshot);
  // The same, given each queue's parent by input index (-1 at the top), as validation found
  // them (core/validation.h): no name is looked up.
  static QueueTree Build(const Snapshot& snapshot, const std::vector<int>& parent);

  int size() const { return static_cast<int>(entries_.size()); }
  const Entry& entry(int index) const { return entries_[index]; }
  const Queue& queue(int index) const { return *entries_[index].queue; }
  int parent(int index) const { return entries_[index].parent; }
  const std::vector<int>& children(int index) const { return entries_[index].children; }
  bool is_leaf(int index) const { return entries_[index].is_leaf(); }

  // Top-level queues, name order.
  const std::vector<int>& roots() const { return roots_; }

  // The index of the queue called `name`, or -1. O(log queues) string compares.
  int Find(std::string_view name) const;

  // The tree index of the queue at input index `input` (Snapshot.queues).
  int FromInput(int input) const { return from_input_[input]; }

  // Every index so that a parent comes before its children (breadth first from the roots, each
  // level in name order).
  const std::vector<int>& top_down() const { return top_down_; }

  // The lowest common ancestor of a and b, or -1 when they share none (different roots).
  int LowestCommonAncestor(int a, int b) const;

  // The ancestor of `index` (or `index` itself) whose parent is `ancestor`; with ancestor -1,
  // the root above `index`. O(depth).
  int ChildOnPath(int ancestor, int index) const;

  // Whether `index` is `ancestor` or lies under it. O(1).
  bool InSubtree(int index, int ancestor) const {
    return entries_[ancestor].preorder <= entries_[index].preorder &&
           entries_[index].preorder < entries_[ancestor].preorder_end;
  }

  // `index`, its parent, ..., its root, written into `path` (cleared first). O(depth).
  void PathToRoot(int index, std::vector<int>* path) const;

 private:
  std::vector<Entry> entries_;
  std::vector<int> roots_;
  std::vector<int> top_down_;
  std::vector<int> from_input_;  // by input index: the tree index
};

}  // namespace arbiter
