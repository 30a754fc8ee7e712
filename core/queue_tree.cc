#include "core/queue_tree.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "core/name_order.h"

namespace arbiter {

QueueTree QueueTree::Build(const Snapshot& snapshot) {
  absl::flat_hash_map<std::string_view, int> by_name;
  by_name.reserve(snapshot.queues.size());
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    by_name.emplace(snapshot.queues[i].name, static_cast<int>(i));
  }
  std::vector<int> parent(snapshot.queues.size(), -1);
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    if (snapshot.queues[i].parent.empty()) continue;
    parent[i] = by_name.at(snapshot.queues[i].parent);
  }
  return Build(snapshot, parent);
}

QueueTree QueueTree::Build(const Snapshot& snapshot, const std::vector<int>& parent) {
  QueueTree tree;
  const int n = static_cast<int>(snapshot.queues.size());
  tree.entries_.resize(n);
  std::vector<int> sorted(n);
  for (int i = 0; i < n; ++i) sorted[i] = i;
  SortByName(sorted.begin(), sorted.end(),
             [&](int i) -> const std::string& { return snapshot.queues[i].name; });
  tree.from_input_.resize(n);
  for (int i = 0; i < n; ++i) {
    tree.entries_[i].queue = &snapshot.queues[sorted[i]];
    tree.from_input_[sorted[i]] = i;
  }
  for (int i = 0; i < n; ++i) {
    Entry& entry = tree.entries_[i];
    const int above = parent[sorted[i]];
    if (above < 0) {
      tree.roots_.push_back(i);
      continue;
    }
    entry.parent = tree.from_input_[above];
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
  const auto it = std::lower_bound(
      entries_.begin(), entries_.end(), name,
      [](const Entry& entry, std::string_view key) { return entry.queue->name < key; });
  return it == entries_.end() || it->queue->name != name ? -1
                                                         : static_cast<int>(it - entries_.begin());
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
