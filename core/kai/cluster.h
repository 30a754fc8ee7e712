// The snapshot of one KAI cycle, interned once: dense indices for nodes, pod groups and pods, and
// dense resource vectors instead of maps.
//
// Two resource spaces. Queue-level amounts (requests summed into units and queues) span all of
// R (SEMANTICS.md §0.1). Node-level amounts (allocatable, used, releasing, the node index) span
// only the node resources R_n: the resources some node lists in its allocatable, or some pod on a
// node requests. Every other resource is 0 on every node for the whole cycle (no node has it and
// no pod that holds a node asks for it; a pod that asks for it fits nowhere, so is never bound),
// so a pod requesting a positive amount of one fits no node, exactly as if the zeros were stored
// (requests_off_nodes), and a request of 20,000 distinct resource names costs nothing per node.
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
#include "core/validated_snapshot.h"

namespace arbiter::kai {

using ::arbiter::kGpuResource;
inline constexpr char kCpuResource[] = "cpu";

struct ClusterNode {
  const Node* node = nullptr;
  bool has_gpu = false;  // allocatable nvidia.com/gpu > 0
};

struct ClusterGroup {
  const PodGroup* group = nullptr;
  int queue = -1;           // leaf index in the QueueTree
  int gang = 1;             // g = max(min_member, 1)
  bool preemptible = true;  // §0.7
  int first_pod = 0;        // pods are [first_pod, first_pod + pod_count), name order
  int pod_count = 0;
  int non_releasing = 0;  // RUNNING + PENDING pods in the input
  // The pod with the earliest `start_time` among all the group's pods that have one (the first
  // in pod order among equals), -1 when none has one. While it is RUNNING, it gives start(G) of
  // §4.7, the earliest start among the RUNNING pods.
  int earliest_start_pod = -1;
  bool ready() const { return non_releasing >= gang; }
};

struct ClusterPod {
  const Pod* pod = nullptr;
  int group = -1;
  PodPhase phase = PodPhase::kPending;  // resolved (§0.2): never kUnspecified
  int node = -1;                        // node_name's index, -1 when unset
  bool requests_gpu = false;            // requests nvidia.com/gpu > 0
  bool requests_off_nodes = false;      // requests a positive amount of a resource outside R_n
};

class Cluster {
 public:
  // Lays out a validated request as dense vectors; the request must outlive the Cluster.
  // O(pods · |R| + nodes · |R_n|). When `poll` (may be null) reports the call cancelled, the
  // cluster is left with its nodes and no pod group or pod (consistent, but not the request's:
  // the caller discards it).
  explicit Cluster(const ValidatedSnapshot& request, CancelPoll* poll = nullptr);

  const Snapshot& snapshot() const { return *snapshot_; }
  const ResourceSet& resources() const { return *resources_; }
  const QueueTree& tree() const { return *tree_; }
  int num_resources() const { return num_resources_; }
  int gpu() const { return gpu_; }  // index of nvidia.com/gpu in R, or -1
  int cpu() const { return cpu_; }  // index of cpu in R, or -1

  // ---- The node resources R_n (node-level vectors are indexed by position in R_n) ----
  int num_node_resources() const { return static_cast<int>(node_resources_.size()); }
  // The index in R of the k-th node resource; ascending, so R_n order is R order.
  int node_resource(int k) const { return node_resources_[k]; }
  // The position in R_n of resource r of R, or -1 when r is not a node resource.
  int NodeSpaceOf(int r) const { return r < 0 ? -1 : node_space_[r]; }
  int node_gpu() const { return node_gpu_; }  // nvidia.com/gpu in R_n, or -1
  int node_cpu() const { return node_cpu_; }  // cpu in R_n, or -1

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const ClusterNode& node(int index) const { return nodes_[index]; }
  const std::string& node_name(int index) const { return nodes_[index].node->name; }
  // Over R_n.
  const double* allocatable(int node) const {
    return allocatable_.data() + static_cast<size_t>(node) * node_resources_.size();
  }

  int num_groups() const { return static_cast<int>(groups_.size()); }
  const ClusterGroup& group(int index) const { return groups_[index]; }
  const std::string& group_name(int index) const { return groups_[index].group->name; }

  int num_pods() const { return static_cast<int>(pods_.size()); }
  const ClusterPod& pod(int index) const { return pods_[index]; }
  const std::string& pod_name(int index) const { return pods_[index].pod->name; }
  // Over R.
  const double* requests(int pod) const {
    return requests_.data() + static_cast<size_t>(pod) * static_cast<size_t>(num_resources_);
  }
  // Over R_n (only meaningful with the pod's requests_off_nodes in mind).
  const double* node_requests(int pod) const {
    return node_requests_.data() + static_cast<size_t>(pod) * node_resources_.size();
  }

 private:
  // The steps of the constructor, in order. LayOutNodeResources: R_n (node_resources_,
  // node_space_, node_gpu_, node_cpu_) from what some node lists or some pod on a node requests.
  void LayOutNodeResources(const ValidatedSnapshot& request);
  // nodes_ and allocatable_ in name order; returns, per input index of a node, its index here.
  std::vector<int> LayOutNodes(const ValidatedSnapshot& request);
  // groups_, pods_ and their request rows in name order; stops, leaving no group or pod, when
  // `poll` reports the call cancelled.
  void LayOutGroups(const ValidatedSnapshot& request, const std::vector<int>& node_index,
                    CancelPoll* poll);
  // Appends the pod numbered `number` in the request (`source_pod`, of group `group`) to pods_,
  // with its rows over R and R_n.
  void AddPod(const ValidatedSnapshot& request, int number, const Pod& source_pod, int group,
              const std::vector<int>& node_index);

  const Snapshot* snapshot_;
  const ResourceSet* resources_;
  const QueueTree* tree_;
  int num_resources_ = 0;
  int gpu_ = -1;
  int cpu_ = -1;
  std::vector<int> node_resources_;  // R_n as indices into R, ascending
  std::vector<int> node_space_;      // per resource of R: its position in R_n, or -1
  int node_gpu_ = -1;
  int node_cpu_ = -1;
  std::vector<ClusterNode> nodes_;
  std::vector<double> allocatable_;  // num_nodes × R_n
  std::vector<ClusterGroup> groups_;
  std::vector<ClusterPod> pods_;
  std::vector<double> requests_;       // num_pods × R
  std::vector<double> node_requests_;  // num_pods × R_n
};

}  // namespace arbiter::kai
