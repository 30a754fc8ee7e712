#include "core/kai/node_index.h"

#include <utility>

namespace arbiter::kai {
namespace {

double AllocatableOf(const Cluster& cluster, int node, int resource) {
  return resource < 0 ? 0.0 : cluster.allocatable(node)[resource];
}

}  // namespace

NodeIndex::NodeIndex(const Cluster& cluster, const Feasibility& feasibility, Placement placement)
    : cluster_(cluster),
      r_(cluster.num_resources()),
      spread_(placement == Placement::kSpread),
      sets_(feasibility.num_classes() * kNumBuckets),
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
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    if (cluster.node(n).node->unschedulable) continue;  // never feasible
    int node_class = feasibility.node_class(n);
    NodeSlots& slots = nodes_[n];
    bool has_gpu = cluster.node(n).has_gpu;
    if (has_gpu) slots.gpu_slot = Slot(node_class, kGpu);
    int cpu_slot = Slot(node_class, has_gpu ? kCpuGpu : kCpuNoGpu);
    if (spread_ || AllocatableOf(cluster, n, cluster.cpu()) > 0) {
      slots.cpu_slot = cpu_slot;
    } else {
      zero_nodes_[cpu_slot].push_back(n);  // n ascends, so the list is in name order
    }
  }
}

double NodeIndex::Key(double free, double allocatable) const {
  if (!spread_) return free;
  if (allocatable == 0) return 0;
  return -(free / allocatable);
}

void NodeIndex::Place(Set& set, Set::iterator& it, bool inserted, Entry entry) {
  if (!inserted) {
    it = set.insert(entry).first;
    return;
  }
  if (it->key == entry.key) return;
  auto handle = set.extract(it);
  handle.value().key = entry.key;
  it = set.insert(std::move(handle)).position;
}

bool NodeIndex::MayFit(int node_class, const double* requests) const {
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

void NodeIndex::Update(int node, const double* free) {
  const int gpu = cluster_.gpu();
  const int cpu = cluster_.cpu();
  const double free_gpu = gpu < 0 ? 0.0 : free[gpu];
  const double free_cpu = cpu < 0 ? 0.0 : free[cpu];
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
            a.node < 0 || (b.node >= 0 && (b.free > a.free || (b.free == a.free && b.node < a.node)));
        tree[i] = take_b ? b : a;
      }
    }
  }
  NodeSlots& slots = nodes_[node];
  if (slots.gpu_slot >= 0) {
    Place(sets_[slots.gpu_slot], slots.gpu_it, slots.inserted,
          Entry{Key(free_gpu, AllocatableOf(cluster_, node, cluster_.gpu())), node});
  }
  if (slots.cpu_slot >= 0) {
    Place(sets_[slots.cpu_slot], slots.cpu_it, slots.inserted,
          Entry{Key(free_cpu, AllocatableOf(cluster_, node, cluster_.cpu())), node});
  }
  slots.inserted = true;
}

}  // namespace arbiter::kai
