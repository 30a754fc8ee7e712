#include "core/kai/cluster.h"

#include <algorithm>
#include <string_view>

#include "absl/container/flat_hash_map.h"

namespace arbiter::kai {
namespace {

// Writes `map` into `out` (R entries, already zero); keys outside R are ignored.
void FillDense(const ResourceSet& resources, const ResourceMap& map, double* out) {
  for (const auto& [name, value] : map) {
    int index = resources.Find(name);
    if (index >= 0) out[index] = value;
  }
}

// The same over a subset of R: `space[r]` is r's position in `out`, or -1 to skip it.
void FillDense(const ResourceSet& resources, const std::vector<int>& space, const ResourceMap& map,
               double* out) {
  for (const auto& [name, value] : map) {
    int index = resources.Find(name);
    if (index >= 0 && space[index] >= 0) out[space[index]] = value;
  }
}

}  // namespace

Cluster::Cluster(const Snapshot& snapshot, const ResourceSet& resources, const QueueTree& tree,
                 CancelPoll* poll)
    : snapshot_(&snapshot), resources_(&resources), tree_(&tree) {
  num_resources_ = resources.size();
  gpu_ = resources.Find(kGpuResource);
  cpu_ = resources.Find(kCpuResource);
  const int r_count = num_resources_;

  // R_n: what some node lists, or some pod on a node requests.
  std::vector<char> on_nodes(r_count, 0);
  auto mark = [&](const ResourceMap& map, bool positive_only) {
    for (const auto& [name, value] : map) {
      if (positive_only && !(value > 0)) continue;
      const int r = resources.Find(name);
      if (r >= 0) on_nodes[r] = 1;
    }
  };
  for (const Node& node : snapshot.nodes) mark(node.allocatable, false);
  for (const PodGroup& group : snapshot.pod_groups) {
    for (const Pod& pod : group.pods) {
      if (!pod.node_name.empty()) mark(pod.requests, true);
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
  const size_t rn_count = node_resources_.size();

  std::vector<const Node*> nodes;
  nodes.reserve(snapshot.nodes.size());
  for (const Node& node : snapshot.nodes) nodes.push_back(&node);
  std::sort(nodes.begin(), nodes.end(),
            [](const Node* a, const Node* b) { return a->name < b->name; });
  nodes_.resize(nodes.size());
  allocatable_.assign(nodes.size() * rn_count, 0.0);
  absl::flat_hash_map<std::string_view, int> node_index;
  node_index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes_[i].node = nodes[i];
    double* allocatable = allocatable_.data() + i * rn_count;
    FillDense(resources, node_space_, nodes[i]->allocatable, allocatable);
    nodes_[i].has_gpu = node_gpu_ >= 0 && allocatable[node_gpu_] > 0;
    node_index.emplace(nodes[i]->name, static_cast<int>(i));
  }

  std::vector<const PodGroup*> groups;
  groups.reserve(snapshot.pod_groups.size());
  size_t pod_total = 0;
  for (const PodGroup& group : snapshot.pod_groups) {
    groups.push_back(&group);
    pod_total += group.pods.size();
  }
  std::sort(groups.begin(), groups.end(),
            [](const PodGroup* a, const PodGroup* b) { return a->name < b->name; });
  groups_.resize(groups.size());
  pods_.reserve(pod_total);
  requests_.assign(pod_total * r_count, 0.0);
  node_requests_.assign(pod_total * rn_count, 0.0);
  std::vector<const Pod*> pods;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (poll != nullptr && poll->Tick(1 + static_cast<int64_t>(groups[g]->pods.size()))) {
      groups_.clear();
      pods_.clear();
      requests_.clear();
      node_requests_.clear();
      return;
    }
    const PodGroup& source = *groups[g];
    ClusterGroup& group = groups_[g];
    group.group = &source;
    group.queue = tree.Find(source.queue);
    group.gang = std::max(source.min_member, 1);
    group.preemptible = IsPreemptibleUnderKai(source);
    group.first_pod = static_cast<int>(pods_.size());
    group.pod_count = static_cast<int>(source.pods.size());
    pods.clear();
    for (const Pod& pod : source.pods) pods.push_back(&pod);
    std::sort(pods.begin(), pods.end(),
              [](const Pod* a, const Pod* b) { return a->name < b->name; });
    for (const Pod* source_pod : pods) {
      ClusterPod pod;
      pod.pod = source_pod;
      pod.group = static_cast<int>(g);
      pod.phase = EffectivePhase(*source_pod);
      if (!source_pod->node_name.empty()) {
        auto it = node_index.find(source_pod->node_name);
        // Validation guarantees node_name names a node.
        if (it != node_index.end()) pod.node = it->second;
      }
      double* requests = requests_.data() + pods_.size() * r_count;
      FillDense(resources, source_pod->requests, requests);
      pod.requests_gpu = gpu_ >= 0 && requests[gpu_] > 0;
      double* node_requests = node_requests_.data() + pods_.size() * rn_count;
      for (int r = 0; r < r_count; ++r) {
        if (node_space_[r] >= 0) {
          node_requests[node_space_[r]] = requests[r];
        } else if (requests[r] > 0) {
          pod.requests_off_nodes = true;
        }
      }
      if (pod.phase != PodPhase::kReleasing) ++group.non_releasing;
      pods_.push_back(pod);
    }
  }
}

}  // namespace arbiter::kai
