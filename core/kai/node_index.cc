#include "core/kai/node_index.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace arbiter::kai {
namespace {

// `k` is a position in R_n (-1: a resource no node has).
double AllocatableOf(const Cluster& cluster, int node, int k) {
  return k < 0 ? 0.0 : cluster.allocatable(node)[k];
}

// cpu and memory, each weighed as a share of a typical member, so that the joint amount
// compares the two alike. No pair when either is missing.
CapacityTree::Pair JointPair(const Cluster& cluster, const std::vector<int>& members, int cpu,
                             int memory) {
  const double weight_cpu = ShareWeight(cluster, members, cpu);
  const double weight_memory = ShareWeight(cluster, members, memory);
  if (weight_cpu == 0 || weight_memory == 0) return {};
  return CapacityTree::Pair{cpu, memory, weight_cpu, weight_memory};
}

}  // namespace

double ShareWeight(const Cluster& cluster, const std::vector<int>& members, int k) {
  if (k < 0 || members.empty()) return 0;
  double sum = 0;
  for (int node : members) sum += cluster.allocatable(node)[k];
  const double weight = static_cast<double>(members.size()) / sum;
  // A sum that overflows gives 0; one that is 0 gives infinity.
  return weight > 0 && std::isfinite(weight) ? weight : 0;
}

NodeIndex::NodeIndex(const Cluster& cluster, const Feasibility& feasibility, Placement placement)
    : cluster_(cluster),
      r_(cluster.num_node_resources()),
      spread_(placement == Placement::kSpread),
      trees_(feasibility.num_classes() * kNumBuckets),
      zero_nodes_(feasibility.num_classes() * kNumBuckets),
      nodes_(cluster.num_nodes()) {
  maxima_.resize(feasibility.num_classes());
  class_of_.assign(cluster.num_nodes(), -1);
  class_slot_.assign(cluster.num_nodes(), -1);
  for (int c = 0; c < feasibility.num_classes(); ++c) {
    const std::vector<int>& members = feasibility.class_nodes(c);
    ClassMaxima& maxima = maxima_[c];
    maxima.size = 1;
    while (maxima.size < static_cast<int>(members.size())) maxima.size *= 2;
    maxima.tree.assign(static_cast<size_t>(r_) * 2 * maxima.size, MaxFree{});
    for (size_t i = 0; i < members.size(); ++i) {
      class_of_[members[i]] = c;
      class_slot_[members[i]] = static_cast<int>(i);
    }
  }
  std::vector<std::vector<int>> members(trees_.size());
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    if (cluster.node(n).node->unschedulable) continue;  // never feasible
    int node_class = feasibility.node_class(n);
    NodeSlots& slots = nodes_[n];
    bool has_gpu = cluster.node(n).has_gpu;
    if (has_gpu) {
      slots.gpu_tree = Slot(node_class, kGpu);
      slots.gpu_pos = static_cast<int>(members[slots.gpu_tree].size());
      members[slots.gpu_tree].push_back(n);
    }
    int cpu_tree = Slot(node_class, has_gpu ? kCpuGpu : kCpuNoGpu);
    if (spread_ || AllocatableOf(cluster, n, cluster.node_cpu()) > 0) {
      slots.cpu_tree = cpu_tree;
      slots.cpu_pos = static_cast<int>(members[cpu_tree].size());
      members[cpu_tree].push_back(n);
    } else {
      zero_nodes_[cpu_tree].push_back(n);  // n ascends, so the list is in name order
    }
  }
  const int cpu = cluster.node_cpu();
  const int memory = cluster.NodeSpaceOf(cluster.resources().Find("memory"));
  for (size_t t = 0; t < trees_.size(); ++t) {
    trees_[t].Init(members[t], r_, JointPair(cluster, members[t], cpu, memory));
  }
}

double NodeIndex::Key(double free, double allocatable) const {
  if (!spread_) return free;
  if (allocatable == 0) return 0;
  return -(free / allocatable);
}

bool NodeIndex::MayFit(int node_class, const double* requests) const {
  Sync();
  const ClassMaxima& maxima = maxima_[node_class];
  if (maxima.size == 0) return false;
  for (int r = 0; r < r_; ++r) {
    if (requests[r] > 0 && maxima.tree[r * 2 * maxima.size + 1].node >= 0 &&
        !(requests[r] <= maxima.tree[r * 2 * maxima.size + 1].free)) {
      return false;
    }
  }
  return true;
}

void NodeIndex::Update(int node, const double* idle, const double* free) {
  if (dirty_.empty()) {
    pending_.assign(static_cast<size_t>(nodes_.size()) * 2 * r_, 0.0);
    applied_.assign(pending_.size(), 0.0);
    ever_applied_.assign(nodes_.size(), 0);
    dirty_.assign(nodes_.size(), 0);
  }
  double* slot = pending_.data() + static_cast<size_t>(node) * 2 * r_;
  std::copy(idle, idle + r_, slot);
  std::copy(free, free + r_, slot + r_);
  if (!dirty_[node]) {
    dirty_[node] = 1;
    dirty_list_.push_back(node);
  }
}

void NodeIndex::ApplyPending() {
  for (int node : dirty_list_) {
    dirty_[node] = 0;
    const size_t at = static_cast<size_t>(node) * 2 * r_;
    const double* slot = pending_.data() + at;
    // A node changed and changed back (a try's eviction, then its roll-back) keeps its place;
    // every node is applied once, even with no node resource to compare (R_n empty).
    if (ever_applied_[node] && std::equal(slot, slot + 2 * r_, applied_.data() + at)) continue;
    Apply(node, slot, slot + r_);
    std::copy(slot, slot + 2 * r_, applied_.data() + at);
    ever_applied_[node] = 1;
  }
  dirty_list_.clear();
}

void NodeIndex::Apply(int node, const double* idle, const double* free) {
  ++version_;
  const int gpu = cluster_.node_gpu();
  const int cpu = cluster_.node_cpu();
  const int node_class = class_of_[node];
  if (node_class >= 0) {
    ClassMaxima& maxima = maxima_[node_class];
    for (int r = 0; r < r_; ++r) {
      MaxFree* tree = &maxima.tree[r * 2 * maxima.size];
      int i = maxima.size + class_slot_[node];
      tree[i] = MaxFree{free[r], node};
      for (i /= 2; i >= 1; i /= 2) {
        const MaxFree& a = tree[2 * i];
        const MaxFree& b = tree[2 * i + 1];
        const bool take_b =
            a.node < 0 ||
            (b.node >= 0 && (b.free > a.free || (b.free == a.free && b.node < a.node)));
        tree[i] = take_b ? b : a;
      }
    }
  }
  const NodeSlots& slots = nodes_[node];
  if (slots.gpu_tree >= 0) {
    trees_[slots.gpu_tree].Set(slots.gpu_pos, Key(free[gpu], AllocatableOf(cluster_, node, gpu)),
                               idle, free);
  }
  if (slots.cpu_tree >= 0) {
    const double free_cpu = cpu < 0 ? 0.0 : free[cpu];
    trees_[slots.cpu_tree].Set(slots.cpu_pos, Key(free_cpu, AllocatableOf(cluster_, node, cpu)),
                               idle, free);
  }
}

}  // namespace arbiter::kai
