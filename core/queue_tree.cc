#include "core/queue_tree.h"

#include <algorithm>
#include <utility>

namespace arbiter {

QueueTree QueueTree::Build(const Snapshot& snapshot) {
  QueueTree tree;
  tree.entries_.resize(snapshot.queues.size());
  std::vector<const Queue*> sorted;
  sorted.reserve(snapshot.queues.size());
  for (const Queue& queue : snapshot.queues) sorted.push_back(&queue);
  std::sort(sorted.begin(), sorted.end(),
            [](const Queue* a, const Queue* b) { return a->name < b->name; });
  tree.by_name_.reserve(sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i) {
    tree.entries_[i].queue = sorted[i];
    tree.by_name_.emplace(sorted[i]->name, static_cast<int>(i));
  }
  for (int i = 0; i < tree.size(); ++i) {
    Entry& entry = tree.entries_[i];
    if (entry.queue->parent.empty()) {
      tree.roots_.push_back(i);
      continue;
    }
    entry.parent = tree.Find(entry.queue->parent);
    tree.entries_[entry.parent].children.push_back(i);
  }
  tree.top_down_ = tree.roots_;
  for (size_t i = 0; i < tree.top_down_.size(); ++i) {
    int index = tree.top_down_[i];
    for (int child : tree.entries_[index].children) {
      tree.entries_[child].depth = tree.entries_[index].depth + 1;
      tree.top_down_.push_back(child);
    }
  }
  // Depth-first positions, with an explicit stack: a subtree is a contiguous range of them.
  int position = 0;
  std::vector<std::pair<int, bool>> stack;  // (queue, children pushed)
  for (auto it = tree.roots_.rbegin(); it != tree.roots_.rend(); ++it)
    stack.emplace_back(*it, false);
  while (!stack.empty()) {
    auto [index, expanded] = stack.back();
    stack.pop_back();
    Entry& entry = tree.entries_[index];
    if (expanded) {
      entry.preorder_end = position;
      continue;
    }
    entry.preorder = position++;
    stack.emplace_back(index, true);
    for (auto child = entry.children.rbegin(); child != entry.children.rend(); ++child) {
      stack.emplace_back(*child, false);
    }
  }
  return tree;
}

int QueueTree::Find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int QueueTree::LowestCommonAncestor(int a, int b) const {
  while (entries_[a].depth > entries_[b].depth) a = entries_[a].parent;
  while (entries_[b].depth > entries_[a].depth) b = entries_[b].parent;
  while (a != b) {
    a = entries_[a].parent;
    b = entries_[b].parent;
    if (a < 0 || b < 0) return -1;
  }
  return a;
}

void QueueTree::PathToRoot(int index, std::vector<int>* path) const {
  path->clear();
  for (int q = index; q >= 0; q = entries_[q].parent) path->push_back(q);
}

int QueueTree::ChildOnPath(int ancestor, int index) const {
  while (entries_[index].parent != ancestor) index = entries_[index].parent;
  return index;
}

}  // namespace arbiter
