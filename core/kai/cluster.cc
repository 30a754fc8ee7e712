#include "core/kai/cluster.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

namespace arbiter::kai {

Cluster::Cluster(const ValidatedSnapshot& request, CancelPoll* poll)
    : snapshot_(&request.snapshot()), resources_(&request.resources()), tree_(&request.tree()) {
  const ResourceSet& resources = request.resources();
  num_resources_ = resources.size();
  gpu_ = resources.Find(kGpuResource);
  cpu_ = resources.Find(kCpuResource);
  LayOutNodeResources(request);
  const std::vector<int> node_index = LayOutNodes(request);
  LayOutGroups(request, node_index, poll);
}

void Cluster::LayOutNodeResources(const ValidatedSnapshot& request) {
  const Snapshot& snapshot = request.snapshot();
  const int r_count = num_resources_;
  // R_n: what some node lists, or some pod on a node requests.
  std::vector<char> on_nodes(r_count, 0);
  for (int node = 0; node < static_cast<int>(snapshot.nodes.size()); ++node) {
    for (const Amount& a : request.allocatable(node)) on_nodes[a.resource] = 1;
  }
  for (int pod = 0; pod < request.num_pods(); ++pod) {
    if (request.pod_node(pod) < 0) continue;
    for (const Amount& a : request.requests(pod)) {
      if (a.value > 0) on_nodes[a.resource] = 1;
    }
  }
  node_space_.assign(r_count, -1);
  for (int r = 0; r < r_count; ++r) {
    if (!on_nodes[r]) continue;
    node_space_[r] = static_cast<int>(node_resources_.size());
    node_resources_.push_back(r);
  }
  node_gpu_ = NodeSpaceOf(gpu_);
  node_cpu_ = NodeSpaceOf(cpu_);
}

std::vector<int> Cluster::LayOutNodes(const ValidatedSnapshot& request) {
  const Snapshot& snapshot = request.snapshot();
  const size_t rn_count = node_resources_.size();
  const std::vector<int>& nodes = request.nodes_by_name();
  nodes_.resize(nodes.size());
  allocatable_.assign(nodes.size() * rn_count, 0.0);
  // The input index of a node -> its index here (name order).
  std::vector<int> node_index(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes_[i].node = &snapshot.nodes[nodes[i]];
    double* allocatable = allocatable_.data() + i * rn_count;
    for (const Amount& a : request.allocatable(nodes[i])) {
      allocatable[node_space_[a.resource]] = a.value;
    }
    nodes_[i].has_gpu = node_gpu_ >= 0 && allocatable[node_gpu_] > 0;
    const double memory = nodes_[i].node->gpu_device_memory;
    nodes_[i].device_units = memory > 0 ? static_cast<int64_t>(memory) : 100;
    distinct_device_units_.push_back(nodes_[i].device_units);
    largest_device_memory_ = std::max(largest_device_memory_, memory);
    node_index[nodes[i]] = static_cast<int>(i);
  }
  std::sort(distinct_device_units_.begin(), distinct_device_units_.end());
  distinct_device_units_.erase(
      std::unique(distinct_device_units_.begin(), distinct_device_units_.end()),
      distinct_device_units_.end());
  return node_index;
}

void Cluster::LayOutGroups(const ValidatedSnapshot& request, const std::vector<int>& node_index,
                           CancelPoll* poll) {
  const Snapshot& snapshot = request.snapshot();
  const std::vector<int>& groups = request.groups_by_name();
  const size_t pod_total = static_cast<size_t>(request.num_pods());
  // Per node: (key, device slot in pod_device_) of every RUNNING or RELEASING sharing pod.
  std::vector<std::vector<std::pair<const std::string*, int>>> keys_by_node(nodes_.size());
  groups_.resize(groups.size());
  pods_.reserve(pod_total);
  requests_.assign(pod_total * num_resources_, 0.0);
  node_requests_.assign(pod_total * node_resources_.size(), 0.0);
  for (size_t g = 0; g < groups.size(); ++g) {
    const PodGroup& source = snapshot.pod_groups[groups[g]];
    if (poll != nullptr && poll->Tick(1 + static_cast<int64_t>(source.pods.size()))) {
      groups_.clear();
      pods_.clear();
      requests_.clear();
      node_requests_.clear();
      return;
    }
    ClusterGroup& group = groups_[g];
    group.group = &source;
    group.queue = request.group_queue(groups[g]);
    group.gang = std::max(source.min_member, 1);
    group.preemptible = IsPreemptibleUnderKai(source);
    group.first_pod = static_cast<int>(pods_.size());
    group.pod_count = static_cast<int>(source.pods.size());
    const int first_pod = request.first_pod(groups[g]);
    for (int k = 0; k < group.pod_count; ++k) {
      const int position = request.pods_by_name()[first_pod + k];
      AddPod(request, first_pod + position, source.pods[position], static_cast<int>(g), node_index);
      if (Shares(source.pods[position]))
        AddSharing(source.pods[position], pods_.back(), keys_by_node);
      if (pods_.back().phase != PodPhase::kReleasing) ++group.non_releasing;
      const std::optional<Timestamp>& start = source.pods[position].start_time;
      if (start.has_value() && (group.earliest_start_pod < 0 ||
                                *start < *pods_[group.earliest_start_pod].pod->start_time)) {
        group.earliest_start_pod = static_cast<int>(pods_.size()) - 1;
      }
    }
  }
  if (any_sharing_) LayOutDevices(keys_by_node);
}

void Cluster::AddSharing(
    const Pod& source_pod, ClusterPod& pod,
    std::vector<std::vector<std::pair<const std::string*, int>>>& keys_by_node) {
  any_sharing_ = true;
  pod.gpu_devices = std::max(source_pod.gpu_fraction_devices, 1);
  pod.gpu_fraction = source_pod.gpu_fraction.value_or(0);
  pod.gpu_memory = static_cast<int64_t>(source_pod.gpu_memory.value_or(0));
  pod.requests_gpu = true;
  // Node accounting never sees the pod's G amount: its devices hold its share (§4.13.1).
  const size_t rn_count = node_resources_.size();
  if (node_gpu_ >= 0) node_requests_[(pods_.size() - 1) * rn_count + node_gpu_] = 0;
  pod.first_device = static_cast<int>(pod_device_.size());
  if (pod.node < 0 || source_pod.gpu_groups.empty()) return;
  for (const std::string& key : source_pod.gpu_groups) {
    keys_by_node[pod.node].emplace_back(&key, static_cast<int>(pod_device_.size()));
    pod_device_.push_back(-1);
  }
}

void Cluster::LayOutDevices(
    std::vector<std::vector<std::pair<const std::string*, int>>>& keys_by_node) {
  for (size_t n = 0; n < nodes_.size(); ++n) {
    ClusterNode& node = nodes_[n];
    node.first_device = static_cast<int>(device_key_.size());
    std::vector<std::pair<const std::string*, int>>& keys = keys_by_node[n];
    std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
      return *a.first != *b.first ? *a.first < *b.first : a.second < b.second;
    });
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i == 0 || *keys[i].first != *keys[i - 1].first) device_key_.push_back(keys[i].first);
      pod_device_[keys[i].second] = static_cast<int>(device_key_.size()) - 1;
    }
    node.input_devices = static_cast<int>(device_key_.size()) - node.first_device;
  }
}

int64_t Cluster::DeviceUnits(int pod, int node) const {
  const ClusterPod& info = pods_[pod];
  if (info.gpu_memory > 0) return info.gpu_memory;
  // One IEEE product, rounded half away from zero, at least one unit (§4.13.1).
  const double units =
      std::round(info.gpu_fraction * static_cast<double>(nodes_[node].device_units));
  return std::max<int64_t>(1, static_cast<int64_t>(units));
}

double Cluster::GpuAmountOn(int pod, int node) const {
  const ClusterPod& info = pods_[pod];
  if (info.gpu_memory > 0) {
    return info.gpu_devices * static_cast<double>(info.gpu_memory) /
           static_cast<double>(nodes_[node].device_units);
  }
  return info.gpu_devices * info.gpu_fraction;
}

void Cluster::AddPod(const ValidatedSnapshot& request, int number, const Pod& source_pod, int group,
                     const std::vector<int>& node_index) {
  const int r_count = num_resources_;
  const size_t rn_count = node_resources_.size();
  ClusterPod pod;
  pod.pod = &source_pod;
  pod.group = group;
  pod.phase = request.pod_phase(number);
  if (request.pod_node(number) >= 0) pod.node = node_index[request.pod_node(number)];
  double* requests = requests_.data() + pods_.size() * r_count;
  for (const Amount& a : request.requests(number)) requests[a.resource] = a.value;
  pod.requests_gpu = gpu_ >= 0 && requests[gpu_] > 0;
  double* node_requests = node_requests_.data() + pods_.size() * rn_count;
  for (int r = 0; r < r_count; ++r) {
    if (node_space_[r] >= 0) {
      node_requests[node_space_[r]] = requests[r];
    } else if (requests[r] > 0) {
      pod.requests_off_nodes = true;
    }
  }
  pods_.push_back(pod);
}

}  // namespace arbiter::kai
