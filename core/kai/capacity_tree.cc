#include "core/kai/capacity_tree.h"

#include <algorithm>

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

void CapacityTree::Init(const std::vector<int>& members, int resources) {
  r_ = resources;
  root_ = -1;
  members_ = members;
  const size_t n = members.size();
  keys_.assign(n, 0.0);
  priority_.resize(n);
  for (size_t i = 0; i < n; ++i) priority_[i] = Priority(static_cast<int>(i));
  left_.assign(n, -1);
  right_.assign(n, -1);
  present_.assign(n, false);
  values_.assign(n * 2 * r_, 0.0);
  maxima_.assign(n * 2 * r_, 0.0);
  min_key_.assign(n, 0.0);
  max_key_.assign(n, 0.0);
  min_slot_.assign(n, -1);
  max_slot_.assign(n, -1);
}

void CapacityTree::Pull(int t) {
  const int w = 2 * r_;
  double* maxima = maxima_.data() + (t * w);
  const double* values = values_.data() + (t * w);
  std::copy(values, values + w, maxima);
  min_key_[t] = left_[t] >= 0 ? min_key_[left_[t]] : keys_[t];
  max_key_[t] = right_[t] >= 0 ? max_key_[right_[t]] : keys_[t];
  min_slot_[t] = left_[t] >= 0 ? min_slot_[left_[t]] : t;
  max_slot_[t] = right_[t] >= 0 ? max_slot_[right_[t]] : t;
  for (int child : {left_[t], right_[t]}) {
    if (child < 0) continue;
    const double* sub = maxima_.data() + (child * w);
    for (int i = 0; i < w; ++i) maxima[i] = std::max(maxima[i], sub[i]);
  }
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
  PullPath(split_path_);
  return root;
}

void CapacityTree::Set(int slot, double key, const double* idle, const double* free) {
  if (present_[slot]) root_ = Erase(root_, slot);
  keys_[slot] = key;
  double* values = values_.data() + (slot * 2 * r_);
  std::copy(idle, idle + r_, values);
  std::copy(free, free + r_, values + r_);
  left_[slot] = right_[slot] = -1;
  Pull(slot);
  int left = -1, right = -1;
  Split(root_, key, members_[slot], &left, &right);
  root_ = Merge(Merge(left, slot), right);
  present_[slot] = true;
}

bool CapacityTree::MayHold(int t, const double* requests, bool now) const {
  const double* maxima = maxima_.data() + (t * 2 * r_ + (now ? 0 : r_));
  for (int r = 0; r < r_; ++r) {
    if (requests[r] > 0 && !(requests[r] <= maxima[r])) return false;
  }
  return true;
}

bool CapacityTree::Holds(int t, const double* requests, bool now) const {
  const double* values = values_.data() + (t * 2 * r_ + (now ? 0 : r_));
  for (int r = 0; r < r_; ++r) {
    if (requests[r] > 0 && !(requests[r] <= values[r])) return false;
  }
  return true;
}

int CapacityTree::Find(int t, double bound_key, int bound_node, double max_key,
                       const double* requests, bool now) const {
  // An in-order walk that skips subtrees that cannot hold the pod and those before the bound;
  // `pending` holds the nodes whose left subtree is being walked, nearest last.
  absl::InlinedVector<int, 64> pending;
  while (true) {
    while (t >= 0) {
      if (!MayHold(t, requests, now)) break;   // nothing in t's subtree holds the pod
      if (Before(t, bound_key, bound_node)) {  // t and its left subtree are before the bound
        t = right_[t];
        continue;
      }
      pending.push_back(t);
      t = left_[t];
    }
    if (pending.empty()) return -1;
    t = pending.back();
    pending.pop_back();
    // t and everything after it (its right subtree, the pending nodes) are past the limit.
    if (keys_[t] > max_key) return -1;
    if (Holds(t, requests, now)) return t;
    t = right_[t];
  }
}

CapacityTree::Found CapacityTree::FindFirst(double bound_key, int bound_node, double max_key,
                                            const double* requests, bool now) const {
  const int slot = Find(root_, bound_key, bound_node, max_key, requests, now);
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
