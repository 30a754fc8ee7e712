// A request that passed validation, read once: the type both models start from.
//
// Validation (core/validation.h) checks the request; Validate then interns it, so that no model
// reads a name or a std::map again to find what it refers to:
// - the resource set R (core/resources.h) and the queue tree (core/queue_tree.h), built once;
// - every resource map of the request as a run of (resource index, amount) pairs, ascending by
//   index (the maps' key order, since R is sorted), all runs in one contiguous array;
// - nodes and pod groups in name order, the pods of each group in name order, numbered flat;
// - each pod's node and each pod group's leaf queue as indices, and each pod's effective phase.
//
// Holding a ValidatedSnapshot is the proof that the request is valid: only Validate makes one.
// It points into the Snapshot it was made from, which must outlive it, and holds a copy of the
// Policy. Immutable; thread-safe to read.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/cancel_poll.h"
#include "core/model.h"
#include "core/queue_tree.h"
#include "core/resources.h"
#include "core/validation.h"

namespace arbiter {

// One amount of a resource map, its resource interned to an index of R.
struct Amount {
  int32_t resource = 0;
  double value = 0;
};

// The amounts of one map, ascending by resource.
using Amounts = absl::Span<const Amount>;

class ValidatedSnapshot {
 public:
  // Validates the request within `bounds` (ValidateRequest: InvalidArgument with a field path
  // for bad input), then interns it with the indexes validation built, so that each name is
  // hashed once. Cancelled (poll->status()) when `poll` (may be null) reports the call
  // cancelled first. O(size of the request · log).
  static absl::StatusOr<ValidatedSnapshot> Validate(const Snapshot& snapshot, const Policy& policy,
                                                    RequestKind kind, CancelPoll* poll = nullptr,
                                                    const RequestBounds& bounds = {});

  ValidatedSnapshot(ValidatedSnapshot&&) = default;
  ValidatedSnapshot& operator=(ValidatedSnapshot&&) = default;
  ValidatedSnapshot(const ValidatedSnapshot&) = delete;
  ValidatedSnapshot& operator=(const ValidatedSnapshot&) = delete;

  const Snapshot& snapshot() const { return *snapshot_; }
  const Policy& policy() const { return policy_; }
  const ResourceSet& resources() const { return resources_; }
  const QueueTree& tree() const { return tree_; }

  // ---- Resource maps (indices are input indices unless said otherwise) ----
  Amounts capacity() const { return Run(capacity_); }
  Amounts usage_capacity() const { return Run(usage_capacity_); }
  Amounts allocatable(int node) const { return Run(allocatable_[node]); }
  // Of the queue at `index` in the tree (name order).
  Amounts deserved(int index) const { return Run(queues_[index].deserved); }
  Amounts limit(int index) const { return Run(queues_[index].limit); }
  Amounts over_quota_weight(int index) const { return Run(queues_[index].over_quota_weight); }
  Amounts borrowing_limit(int index) const { return Run(queues_[index].borrowing_limit); }
  Amounts lending_limit(int index) const { return Run(queues_[index].lending_limit); }
  // Snapshot.usage[i]: its queue's tree index, and its amounts (only resources of R).
  int usage_queue(int i) const { return usage_queue_[i]; }
  Amounts usage(int i) const { return Run(usage_[i]); }

  // ---- Nodes, pod groups and pods ----
  // Input indices of the nodes, by name.
  const std::vector<int>& nodes_by_name() const { return nodes_by_name_; }
  // Input indices of the pod groups, by name.
  const std::vector<int>& groups_by_name() const { return groups_by_name_; }
  // The tree index of pod group `group`'s leaf queue.
  int group_queue(int group) const { return group_queue_[group]; }
  // Pods are numbered through the groups in input order, each group's pods in input order:
  // group g's pods are [first_pod(g), first_pod(g + 1)).
  int num_pods() const { return static_cast<int>(pod_node_.size()); }
  int first_pod(int group) const { return first_pod_[group]; }
  // The numbers of group g's pods in name order (pods_by_name()[first_pod(g) ...]), each a
  // position within the group (0 = its first pod in input order).
  const std::vector<int>& pods_by_name() const { return pods_by_name_; }
  // Of the pod numbered `pod`: its requests, and its node's input index (-1 without node_name).
  Amounts requests(int pod) const { return Run(requests_[pod]); }
  int pod_node(int pod) const { return pod_node_[pod]; }
  // Of the pod numbered `pod`: the phase it counts as (EffectivePhase, §0.2), kept beside the
  // other per-pod arrays so that a walk over the pods need not touch the snapshot's Pod.
  PodPhase pod_phase(int pod) const { return pod_phase_[pod]; }

 private:
  struct Range {
    uint32_t begin = 0;
    uint32_t end = 0;
  };
  struct QueueRanges {
    Range deserved;
    Range limit;
    Range over_quota_weight;
    Range borrowing_limit;
    Range lending_limit;
  };
  class Builder;

  ValidatedSnapshot() = default;
  Amounts Run(Range range) const {
    return Amounts(amounts_.data() + range.begin, range.end - range.begin);
  }

  const Snapshot* snapshot_ = nullptr;
  Policy policy_;
  ResourceSet resources_;
  QueueTree tree_;
  std::vector<Amount> amounts_;  // every run, contiguous
  Range capacity_;
  Range usage_capacity_;
  std::vector<Range> allocatable_;   // per node, input order
  std::vector<QueueRanges> queues_;  // per queue, tree order
  std::vector<int> usage_queue_;
  std::vector<Range> usage_;
  std::vector<int> nodes_by_name_;
  std::vector<int> groups_by_name_;
  std::vector<int> group_queue_;
  std::vector<int> first_pod_;  // per group, then the pod count
  std::vector<int> pods_by_name_;
  std::vector<Range> requests_;      // per pod
  std::vector<int> pod_node_;        // per pod
  std::vector<PodPhase> pod_phase_;  // per pod
};

}  // namespace arbiter
