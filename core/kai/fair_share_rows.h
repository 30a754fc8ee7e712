// The amounts a KAI fair share holds per queue (SEMANTICS.md §0.7, §2): one Row per amount over R,
// every queue's rows laid out in one buffer. Shared by the reading of the request
// (kai_fair_share.h) and the division (fair_share_division.h), which both include this header.
#pragma once

#include <vector>

#include "core/queue_tree.h"
#include "core/resources.h"
#include "core/validated_snapshot.h"

namespace arbiter::kai {

// One amount per resource of R (index = ResourceSet index), stored in the KaiFairShare's one
// buffer: a view that reads and writes in place, valid while its KaiFairShare lives.
class Row {
 public:
  Row() = default;
  Row(double* data, int size) : data_(data), size_(size) {}
  double& operator[](int r) const { return data_[r]; }
  int size() const { return size_; }
  double* data() const { return data_; }
  double* begin() const { return data_; }
  double* end() const { return data_ + size_; }

 private:
  double* data_ = nullptr;
  int size_ = 0;
};

// Per-queue amounts over R, for one queue of the tree.
struct QueueAmounts {
  Row deserved;           // as configured, missing = 0, -1 kept
  Row limit;              // missing or -1 = -1 (no cap)
  Row over_quota_weight;  // missing = 1
  Row requested;          // §0.7 request(q): RUNNING + PENDING over the subtree
  Row allocated;          // §0.7 allocated(q): RUNNING over the subtree
  Row allocated_np;       // RUNNING pods of non-preemptible groups, subtree
  Row fair_share;         // §2.2
  Row allocatable_share;  // §2.3, +infinity for "no cap"
};

// Moves keep every Row valid (the buffer moves with it); a copy would point its rows at the
// original's buffer, so there is none.
struct KaiFairShare {
  KaiFairShare() = default;
  KaiFairShare(KaiFairShare&&) = default;
  KaiFairShare& operator=(KaiFairShare&&) = default;
  KaiFairShare(const KaiFairShare&) = delete;
  KaiFairShare& operator=(const KaiFairShare&) = delete;

  const ValidatedSnapshot* request = nullptr;  // the request divided, which owns R and the tree
  const ResourceSet& resources() const { return request->resources(); }
  const QueueTree& tree() const { return request->tree(); }
  std::vector<double> total;         // T_r divided at the top level (§2.1)
  std::vector<QueueAmounts> queues;  // indexed like `tree`
  std::vector<double> rows;          // every queue's eight rows, one allocation
};

}  // namespace arbiter::kai
