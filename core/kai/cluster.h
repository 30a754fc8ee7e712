// The snapshot of one KAI cycle, interned once: dense indices for nodes, pod groups and pods, and
// dense resource vectors over R (SEMANTICS.md §0.1) instead of maps.
//
// Index orders are the output orders: nodes and pod groups by name, pods by (pod group, pod), so
// that iterating indices is iterating names (§0.5). Immutable after construction; the mutable
// part of a cycle is WorkingState (core/kai/working_state.h).
#pragma once

#include <string>
#include <vector>

#include "core/cancel_poll.h"
#include "core/model.h"
#include "core/queue_tree.h"
#include "core/resources.h"

namespace arbiter::kai {

inline constexpr char kGpuResource[] = "nvidia.com/gpu";
inline constexpr char kCpuResource[] = "cpu";

struct ClusterNode {
  const Node* node = nullptr;
  bool has_gpu = false;  // allocatable nvidia.com/gpu > 0
};

struct ClusterGroup {
  const PodGroup* group = nullptr;
  int queue = -1;            // leaf index in the QueueTree
  int gang = 1;              // g = max(min_member, 1)
  bool preemptible = true;   // §0.7
  int first_pod = 0;         // pods are [first_pod, first_pod + pod_count), name order
  int pod_count = 0;
  int non_releasing = 0;     // RUNNING + PENDING pods in the input
  bool ready() const { return non_releasing >= gang; }
};

struct ClusterPod {
  const Pod* pod = nullptr;
  int group = -1;
  PodPhase phase = PodPhase::kPending;  // resolved (§0.2): never kUnspecified
  int node = -1;                        // node_name's index, -1 when unset
  bool requests_gpu = false;            // requests nvidia.com/gpu > 0
};

class Cluster {
 public:
  // Interns a validated snapshot. `resources` and `tree` must describe the same snapshot (the
  // fair share's), and all three must outlive the Cluster. O(size · log size). When `poll` (may
  // be null) reports the call cancelled, the cluster is left with its nodes and no pod group or
  // pod (consistent, but not the request's: the caller discards it).
  Cluster(const Snapshot& snapshot, const ResourceSet& resources, const QueueTree& tree,
          CancelPoll* poll = nullptr);

  const Snapshot& snapshot() const { return *snapshot_; }
  const ResourceSet& resources() const { return *resources_; }
  const QueueTree& tree() const { return *tree_; }
  int num_resources() const { return num_resources_; }
  int gpu() const { return gpu_; }  // index of nvidia.com/gpu in R, or -1
  int cpu() const { return cpu_; }  // index of cpu in R, or -1

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const ClusterNode& node(int index) const { return nodes_[index]; }
  const std::string& node_name(int index) const { return nodes_[index].node->name; }
  const double* allocatable(int node) const { return &allocatable_[node * num_resources_]; }

  int num_groups() const { return static_cast<int>(groups_.size()); }
  const ClusterGroup& group(int index) const { return groups_[index]; }
  const std::string& group_name(int index) const { return groups_[index].group->name; }

  int num_pods() const { return static_cast<int>(pods_.size()); }
  const ClusterPod& pod(int index) const { return pods_[index]; }
  const std::string& pod_name(int index) const { return pods_[index].pod->name; }
  const double* requests(int pod) const { return &requests_[pod * num_resources_]; }

 private:
  const Snapshot* snapshot_;
  const ResourceSet* resources_;
  const QueueTree* tree_;
  int num_resources_ = 0;
  int gpu_ = -1;
  int cpu_ = -1;
  std::vector<ClusterNode> nodes_;
  std::vector<double> allocatable_;  // num_nodes × R
  std::vector<ClusterGroup> groups_;
  std::vector<ClusterPod> pods_;
  std::vector<double> requests_;  // num_pods × R
};

}  // namespace arbiter::kai
