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
  // §4.13.1: the units of each GPU device, M_n = gpu_device_memory, or 100 when that is 0.
  int64_t device_units = 100;
  // The node's devices in the input (§4.13.2): [first_device, first_device + input_devices) of
  // Cluster::device_key, in key order.
  int first_device = 0;
  int input_devices = 0;
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
  // §0: elastic iff it has more than g non-RELEASING pods, whether or not they run.
  bool elastic() const { return non_releasing > gang; }
};

struct ClusterPod {
  const Pod* pod = nullptr;
  int group = -1;
  PodPhase phase = PodPhase::kPending;  // resolved (§0.2): never kUnspecified
  int node = -1;                        // node_name's index, -1 when unset
  bool requests_gpu = false;            // requests nvidia.com/gpu > 0
  bool requests_off_nodes = false;      // requests a positive amount of a resource outside R_n
  // §4.13: a pod that shares needs `gpu_devices` = d > 0 distinct devices on one node (0: the pod
  // does not share); `gpu_memory` > 0 for a memory pod, else `gpu_fraction` of each device.
  int32_t gpu_devices = 0;
  double gpu_fraction = 0;
  int64_t gpu_memory = 0;
  // RUNNING and RELEASING sharing pods: their devices, [first_device, first_device + d) of
  // Cluster::pod_device (input device numbers).
  int first_device = 0;
  bool shares() const { return gpu_devices > 0; }
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
  // Over R_n (only meaningful with the pod's requests_off_nodes in mind). A pod that shares
  // requests 0 of nvidia.com/gpu here: it uses devices (§4.13.2), never the node's pool directly.
  const double* node_requests(int pod) const {
    return node_requests_.data() + static_cast<size_t>(pod) * node_resources_.size();
  }

  // ---- GPU sharing (§4.13) ----
  bool any_sharing() const { return any_sharing_; }
  // u(p, n) of §4.13.1: the units `pod` (which shares) takes on each device of `node`.
  int64_t DeviceUnits(int pod, int node) const;
  // The queue amount of G of a sharing pod once it is on `node` (§4.13.1): d·f for a fraction
  // pod, d·mem/M_n for a memory pod.
  double GpuAmountOn(int pod, int node) const;
  // Input devices, numbered node by node: the key of each, and the devices of each RUNNING or
  // RELEASING sharing pod (ClusterPod::first_device).
  int num_input_devices() const { return static_cast<int>(device_key_.size()); }
  const std::string& device_key(int device) const { return *device_key_[device]; }
  int pod_device(int index) const { return pod_device_[index]; }
  // The nodes' distinct device units (M_n), ascending, and the largest known gpu_device_memory
  // (0 when none is known).
  const std::vector<int64_t>& distinct_device_units() const { return distinct_device_units_; }
  double largest_device_memory() const { return largest_device_memory_; }

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
  // The sharing fields of the pod just added; its devices' keys are gathered per node.
  void AddSharing(const Pod& source_pod, ClusterPod& pod,
                  std::vector<std::vector<std::pair<const std::string*, int>>>& keys_by_node);
  // Numbers the input devices node by node in key order, and each sharing pod's devices.
  void LayOutDevices(std::vector<std::vector<std::pair<const std::string*, int>>>& keys_by_node);

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
  bool any_sharing_ = false;
  std::vector<const std::string*> device_key_;  // per input device
  std::vector<int> pod_device_;                 // per (sharing pod on a node, device)
  std::vector<int64_t> distinct_device_units_;
  double largest_device_memory_ = 0;
};

}  // namespace arbiter::kai
