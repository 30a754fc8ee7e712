// A small, direct model of Kueue's quota tree (SEMANTICS.md §5.2), kept apart from the core's
// own implementation: the generator uses it to admit only workloads that fit, and the property
// tests use it to check an engine's decisions independently. Written for clarity, not speed:
// every operation walks the path to the root, O(depth · resources).
//
// Quotas and usage are keyed by flavor-resource (§5.8.1), spelled by FlavorResourceKey: a legacy
// queue's maps are the implicit flavor "" (key = the resource name itself, so that a request
// without flavors is modelled exactly as before), a flavored queue's resource groups give one
// key per flavor and covered resource.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/model.h"

namespace arbiter::generator {

// The key of flavor-resource (f, r): r for the implicit flavor "", else "f:r" (neither a flavor
// nor a resource name holds a colon).
std::string FlavorResourceKey(std::string_view flavor, std::string_view resource);

// What an admitted `group` of `queue` charges (§5.8.3), by FlavorResourceKey: every pod's
// requests at the implicit flavor when the queue is not flavored; else each requested resource
// at the flavor the group's `flavors` entry for the pod's pod set names (a resource without one
// is not charged).
ResourceMap KueueCharge(const Queue& queue, const PodGroup& group);

class KueueQuotaTree {
 public:
  // The tree of a valid snapshot's queues with no usage. Resources are the flavor-resources any
  // queue lists: the keys of a legacy queue's deserved map, and each flavor and covered resource
  // of a flavored queue's resource groups (§5.8.2).
  static KueueQuotaTree Build(const Snapshot& snapshot);

  // Index of a queue, or -1.
  int Find(std::string_view name) const;
  bool is_leaf(int node) const { return nodes_[node].children.empty(); }

  // `request` and the amounts below are keyed by FlavorResourceKey.
  // True iff `request` fits in leaf `cq` now (every r with request > 0 is covered and
  // request_r <= Available(cq, r)).
  bool Fits(int cq, const ResourceMap& request) const;
  // Adds (sign +1) or removes (sign -1) a workload's usage at leaf `cq`, bubbling up.
  void Add(int cq, const ResourceMap& request, double sign = 1);

  double Use(int node, int r) const { return nodes_[node].use[r]; }
  double Available(int cq, int r) const;

  // OK iff, for every queue and every covered resource: the root uses at most its subtree quota,
  // a queue with a borrowing limit uses at most SQ + BL, and no leaf uses an uncovered
  // resource. Otherwise FailedPrecondition naming the queue, resource and amounts.
  absl::Status CheckWithinLimits() const;

 private:
  struct TreeNode {
    std::string name;
    int parent = -1;
    std::vector<int> children;
    std::vector<bool> covered;  // key present in the subtree's quota
    std::vector<double> sq;     // subtree quota
    std::vector<double> lq;     // local (never lent) quota
    std::vector<double> bl;     // borrowing limit, -1 = none
    std::vector<double> use;
  };
  int ResourceIndex(const std::string& name) const;
  double LocalAvailable(int node, int r) const;  // LA(n)

  std::vector<std::string> resources_;  // sorted
  std::vector<TreeNode> nodes_;         // snapshot order
  std::string uncovered_use_;           // a resource no queue covers that Add() was given
};

}  // namespace arbiter::generator
