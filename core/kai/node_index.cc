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
      spread_(placement == Placement::kSpread),
      sets_(feasibility.num_classes() * kNumBuckets),
      zero_nodes_(feasibility.num_classes() * kNumBuckets),
      nodes_(cluster.num_nodes()) {
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

void NodeIndex::Update(int node, double free_gpu, double free_cpu) {
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
