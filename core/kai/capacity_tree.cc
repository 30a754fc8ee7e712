#include "core/kai/capacity_tree.h"

#include <algorithm>
#include <limits>

#include "absl/container/inlined_vector.h"

namespace arbiter::kai {
namespace {

// A fixed pseudo-random sequence for treap priorities (deterministic; any sequence works).
uint32_t Mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

}  // namespace

uint32_t CapacityTree::Priority(int slot) { return Mix(static_cast<uint32_t>(slot) + 0x9e3779b9U); }

void CapacityTree::Init(const std::vector<int>& members, int resources, Pair pair) {
  r_ = resources;
  pair_ = pair;
  root_ = -1;
  members_ = members;
  const size_t n = members.size();
  keys_.assign(n, 0.0);
  priority_.resize(n);
  for (size_t i = 0; i < n; ++i) priority_[i] = Priority(static_cast<int>(i));
  left_.assign(n, -1);
  right_.assign(n, -1);
  present_.assign(n, false);
  values_.assign(n * width(), 0.0);
  maxima_.assign(n * width(), 0.0);
  min_key_.assign(n, 0.0);
  max_key_.assign(n, 0.0);
  min_slot_.assign(n, -1);
  max_slot_.assign(n, -1);
}

double CapacityTree::Joint(const double* amounts) const {
  if (pair_.a < 0) return 0;
  return std::min(pair_.weight_a * amounts[pair_.a], pair_.weight_b * amounts[pair_.b]);
}

bool CapacityTree::Pull(int t) {
  const int w = width();
  double* maxima = maxima_.data() + (t * w);
  const double* values = values_.data() + (t * w);
  const int left = left_[t];
  const int right = right_[t];
  // A missing child reads as the member's own values, which the maximum takes anyway.
  const double* of_left = left >= 0 ? maxima_.data() + (left * w) : values;
  const double* of_right = right >= 0 ? maxima_.data() + (right * w) : values;
  bool changed = false;
  for (int i = 0; i < w; ++i) {
    const double m = std::max(values[i], std::max(of_left[i], of_right[i]));
    changed |= m != maxima[i];
    maxima[i] = m;
  }
  const double min_key = left >= 0 ? min_key_[left] : keys_[t];
  const double max_key = right >= 0 ? max_key_[right] : keys_[t];
  const int min_slot = left >= 0 ? min_slot_[left] : t;
  const int max_slot = right >= 0 ? max_slot_[right] : t;
  changed |= min_key != min_key_[t] || max_key != max_key_[t] || min_slot != min_slot_[t] ||
             max_slot != max_slot_[t];
  min_key_[t] = min_key;
  max_key_[t] = max_key;
  min_slot_[t] = min_slot;
  max_slot_[t] = max_slot;
  return changed;
}

// The treap's operations walk down with explicit paths and pull the maxima up afterwards,
// deepest node first: node keys are the caller's amounts, so the depth of the treap is not
// bounded by anything the code controls.

void CapacityTree::PullPath(const std::vector<int>& path) {
  for (auto it = path.rbegin(); it != path.rend(); ++it) Pull(*it);
}

void CapacityTree::Split(int t, double key, int node, int* left, int* right) {
  // Nodes before (key, node) hang off `left` through right children, the others off `right`
  // through left children, each chain in the order met.
  split_path_.clear();
  int* left_hole = left;
  int* right_hole = right;
  while (t >= 0) {
    split_path_.push_back(t);
    if (Before(t, key, node)) {
      *left_hole = t;
      left_hole = &right_[t];
      t = right_[t];
    } else {
      *right_hole = t;
      right_hole = &left_[t];
      t = left_[t];
    }
  }
  *left_hole = -1;
  *right_hole = -1;
  PullPath(split_path_);
}

int CapacityTree::Merge(int a, int b) {
  merge_path_.clear();
  int root = -1;
  int* hole = &root;
  while (a >= 0 && b >= 0) {
    if (priority_[a] > priority_[b]) {
      *hole = a;
      merge_path_.push_back(a);
      hole = &right_[a];
      a = right_[a];
    } else {
      *hole = b;
      merge_path_.push_back(b);
      hole = &left_[b];
      b = left_[b];
    }
  }
  *hole = a >= 0 ? a : b;
  PullPath(merge_path_);
  return root;
}

int CapacityTree::Erase(int t, int slot) {
  split_path_.clear();
  int root = t;
  int* hole = &root;
  while (*hole >= 0 && *hole != slot) {
    const int at = *hole;
    split_path_.push_back(at);
    hole = Before(slot, keys_[at], members_[at]) ? &left_[at] : &right_[at];
  }
  if (*hole == slot) *hole = Merge(left_[slot], right_[slot]);
  PullUp(split_path_);
  return root;
}

void CapacityTree::Insert(int slot) {
  // Down from the root past the members of higher priority, then `slot` takes the place of the
  // subtree there, split around it: the treap Split and Merge would build, pulling only the path.
  insert_path_.clear();
  int* hole = &root_;
  while (*hole >= 0 && priority_[*hole] > priority_[slot]) {
    const int at = *hole;
    insert_path_.push_back(at);
    hole = Before(slot, keys_[at], members_[at]) ? &left_[at] : &right_[at];
  }
  Split(*hole, keys_[slot], members_[slot], &left_[slot], &right_[slot]);
  Pull(slot);
  *hole = slot;
  PullUp(insert_path_);
}

void CapacityTree::PullUp(const std::vector<int>& path) {
  for (auto it = path.rbegin(); it != path.rend() && Pull(*it); ++it) {
  }
}

bool CapacityTree::SetInPlace(int slot, double key, const double* idle, const double* free) {
  // The path from the root to `slot`, and its neighbours in (key, node) order: the treap's shape
  // depends only on the members' order and priorities, so while the new key keeps `slot` between
  // the same two neighbours, only the maxima on the path change.
  split_path_.clear();
  int before = -1;  // the nearest ancestor that precedes slot
  int after = -1;   // the nearest ancestor that follows it
  for (int t = root_; t != slot;) {
    split_path_.push_back(t);
    if (Before(slot, keys_[t], members_[t])) {
      after = t;
      t = left_[t];
    } else {
      before = t;
      t = right_[t];
    }
  }
  if (left_[slot] >= 0) before = max_slot_[left_[slot]];
  if (right_[slot] >= 0) after = min_slot_[right_[slot]];
  const int node = members_[slot];
  if (before >= 0 && !Before(before, key, node)) return false;
  if (after >= 0 && Before(after, key, node)) return false;
  keys_[slot] = key;
  StoreValues(slot, idle, free);
  if (Pull(slot)) PullUp(split_path_);
  return true;
}

void CapacityTree::StoreValues(int slot, const double* idle, const double* free) {
  double* values = values_.data() + (slot * width());
  std::copy(idle, idle + r_, values);
  std::copy(free, free + r_, values + r_);
  values[2 * r_] = Joint(idle);
  values[2 * r_ + 1] = Joint(free);
}

void CapacityTree::Set(int slot, double key, const double* idle, const double* free) {
  if (present_[slot]) {
    if (SetInPlace(slot, key, idle, free)) return;
    root_ = Erase(root_, slot);
  }
  keys_[slot] = key;
  StoreValues(slot, idle, free);
  Insert(slot);
  present_[slot] = true;
}

double CapacityTree::JointRequest(const double* requests) const {
  if (pair_.a < 0 || !(requests[pair_.a] > 0) || !(requests[pair_.b] > 0))
    return -std::numeric_limits<double>::infinity();
  return Joint(requests);
}

bool CapacityTree::MayHold(int t, const double* requests, bool now, double joint) const {
  const double* maxima = maxima_.data() + (t * width());
  const double* amounts = maxima + (now ? 0 : r_);
  for (int r = 0; r < r_; ++r) {
    if (requests[r] > 0 && !(requests[r] <= amounts[r])) return false;
  }
  // A member that holds the pod has both amounts at least the pod's, so its joint amount is at
  // least the pod's (multiplying by a positive weight and taking a minimum keep the order).
  return joint <= maxima[2 * r_ + (now ? 0 : 1)];
}

bool CapacityTree::Holds(int t, const double* requests, bool now) const {
  const double* values = values_.data() + (t * width() + (now ? 0 : r_));
  for (int r = 0; r < r_; ++r) {
    if (requests[r] > 0 && !(requests[r] <= values[r])) return false;
  }
  return true;
}

int CapacityTree::Find(Walk* walk) const {
  // An in-order walk that skips subtrees that cannot hold the pod and those before the bound.
  // Everything after a member found is after the bound, so the walk goes on from there.
  absl::InlinedVector<int, 64>& pending = walk->pending;
  int t = walk->next;
  while (true) {
    while (t >= 0) {
      if (!MayHold(t, walk->requests, walk->now, walk->joint)) break;  // nothing in t's subtree
      if (Before(t, walk->bound_key, walk->bound_node)) {  // t and its left subtree are before
        t = right_[t];
        continue;
      }
      pending.push_back(t);
      t = left_[t];
    }
    if (pending.empty()) break;
    t = pending.back();
    pending.pop_back();
    // t and everything after it (its right subtree, the pending nodes) are past the limit.
    if (keys_[t] > walk->max_key) break;
    if (Holds(t, walk->requests, walk->now)) {
      walk->next = right_[t];
      return t;
    }
    t = right_[t];
  }
  pending.clear();
  walk->next = -1;
  return -1;
}

CapacityTree::Found CapacityTree::FindFirst(double bound_key, int bound_node, double max_key,
                                            const double* requests, bool now) const {
  Walk walk;
  return FindFirst(bound_key, bound_node, max_key, requests, now, &walk);
}

CapacityTree::Found CapacityTree::FindFirst(double bound_key, int bound_node, double max_key,
                                            const double* requests, bool now, Walk* walk) const {
  walk->bound_key = bound_key;
  walk->bound_node = bound_node;
  walk->max_key = max_key;
  walk->requests = requests;
  walk->now = now;
  walk->joint = JointRequest(requests);
  walk->next = root_;
  walk->pending.clear();
  return FindNext(walk);
}

CapacityTree::Found CapacityTree::FindNext(Walk* walk) const {
  const int slot = Find(walk);
  return slot < 0 ? Found{} : Found{slot, keys_[slot]};
}

CapacityTree::Found CapacityTree::FirstFrom(double key, int node) const {
  int found = -1;
  for (int t = root_; t >= 0;) {
    if (Before(t, key, node)) {
      t = right_[t];
    } else {
      found = t;
      t = left_[t];
    }
  }
  return found < 0 ? Found{} : Found{found, keys_[found]};
}

CapacityTree::Found CapacityTree::LastBefore(double key, int node) const {
  int found = -1;
  for (int t = root_; t >= 0;) {
    if (Before(t, key, node)) {
      found = t;
      t = right_[t];
    } else {
      t = left_[t];
    }
  }
  return found < 0 ? Found{} : Found{found, keys_[found]};
}

}  // namespace arbiter::kai
