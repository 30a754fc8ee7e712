#include "core/kai/capacity_tree.h"

#include <algorithm>

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

void CapacityTree::Init(const std::vector<int>& members, int resources) {
  r_ = resources;
  root_ = -1;
  members_ = members;
  const size_t n = members.size();
  keys_.assign(n, 0.0);
  priority_.resize(n);
  for (size_t i = 0; i < n; ++i) priority_[i] = Mix(static_cast<uint32_t>(i) + 0x9e3779b9U);
  left_.assign(n, -1);
  right_.assign(n, -1);
  present_.assign(n, false);
  values_.assign(n * 2 * r_, 0.0);
  maxima_.assign(n * 2 * r_, 0.0);
  min_key_.assign(n, 0.0);
  max_key_.assign(n, 0.0);
}

void CapacityTree::Pull(int t) {
  const int w = 2 * r_;
  double* maxima = &maxima_[t * w];
  const double* values = &values_[t * w];
  std::copy(values, values + w, maxima);
  min_key_[t] = left_[t] >= 0 ? min_key_[left_[t]] : keys_[t];
  max_key_[t] = right_[t] >= 0 ? max_key_[right_[t]] : keys_[t];
  for (int child : {left_[t], right_[t]}) {
    if (child < 0) continue;
    const double* sub = &maxima_[child * w];
    for (int i = 0; i < w; ++i) maxima[i] = std::max(maxima[i], sub[i]);
  }
}

void CapacityTree::Split(int t, double key, int node, int* left, int* right) {
  if (t < 0) {
    *left = *right = -1;
    return;
  }
  if (Before(t, key, node)) {
    Split(right_[t], key, node, &right_[t], right);
    *left = t;
  } else {
    Split(left_[t], key, node, left, &left_[t]);
    *right = t;
  }
  Pull(t);
}

int CapacityTree::Merge(int a, int b) {
  if (a < 0) return b;
  if (b < 0) return a;
  if (priority_[a] > priority_[b]) {
    right_[a] = Merge(right_[a], b);
    Pull(a);
    return a;
  }
  left_[b] = Merge(a, left_[b]);
  Pull(b);
  return b;
}

int CapacityTree::Erase(int t, int slot) {
  if (t == slot) return Merge(left_[t], right_[t]);
  if (Before(slot, keys_[t], members_[t])) {
    left_[t] = Erase(left_[t], slot);
  } else {
    right_[t] = Erase(right_[t], slot);
  }
  Pull(t);
  return t;
}

void CapacityTree::Set(int slot, double key, const double* idle, const double* free) {
  if (present_[slot]) root_ = Erase(root_, slot);
  keys_[slot] = key;
  double* values = &values_[slot * 2 * r_];
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
  const double* maxima = &maxima_[t * 2 * r_ + (now ? 0 : r_)];
  for (int r = 0; r < r_; ++r) {
    if (requests[r] > 0 && !(requests[r] <= maxima[r])) return false;
  }
  return true;
}

bool CapacityTree::Holds(int t, const double* requests, bool now) const {
  const double* values = &values_[t * 2 * r_ + (now ? 0 : r_)];
  for (int r = 0; r < r_; ++r) {
    if (requests[r] > 0 && !(requests[r] <= values[r])) return false;
  }
  return true;
}

int CapacityTree::Find(int t, double bound_key, int bound_node, double max_key,
                       const double* requests, bool now) const {
  while (t >= 0) {
    if (!MayHold(t, requests, now)) return -1;
    if (Before(t, bound_key, bound_node)) {  // t and its left subtree are before the bound
      t = right_[t];
      continue;
    }
    const int in_left = Find(left_[t], bound_key, bound_node, max_key, requests, now);
    if (in_left >= 0) return in_left;
    if (keys_[t] > max_key) return -1;  // t and its right subtree are past the limit
    if (Holds(t, requests, now)) return t;
    t = right_[t];
  }
  return -1;
}

CapacityTree::Found CapacityTree::FindFirst(double bound_key, int bound_node, double max_key,
                                            const double* requests, bool now) const {
  const int slot = Find(root_, bound_key, bound_node, max_key, requests, now);
  return slot < 0 ? Found{} : Found{slot, keys_[slot]};
}

}  // namespace arbiter::kai
