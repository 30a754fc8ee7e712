// The KAI cluster's nodes (docs/generator.md, "Nodes"): four shapes in fixed shares, some tainted
// and a few cordoned, and the running pods' placement on them, which tracks each node's free
// capacity.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "clients/generator/kai_pod_groups.h"
#include "clients/generator/kai_resources.h"
#include "clients/generator/random.h"
#include "core/model.h"

namespace arbiter::generator::internal {

class KaiNodes {
 public:
  // `count` nodes named node-0000, node-0001, ..., all capacity free.
  KaiNodes(int count, const KaiResources& resources, Rng& rng);

  const Node& node(int index) const { return nodes_[index]; }
  // The nodes, for the snapshot; this is empty afterwards.
  std::vector<Node> TakeNodes() { return std::move(nodes_); }

  // The schedulable nodes' allocatable, summed.
  const DenseResources& schedulable_capacity() const { return schedulable_capacity_; }
  // GPUs free on the schedulable nodes now.
  double FreeGpus() const;

  // Places every pod of `spec` on a node that admits it (kai_constraints.h) and has room,
  // taking the room, and returns the node of each pod in `nodes_out`. Round robin from a cursor
  // per category of node, so that the fill is spread and GPU nodes end up fragmented: training
  // goes to the 8-GPU nodes first; inference, notebooks and spilled CPU work to the smaller GPU
  // nodes first, as clusters keep serving apart from training; CPU pods go to CPU nodes first.
  // All or nothing: returns false and leaves no trace.
  bool Place(const GroupSpec& spec, std::vector<int>& nodes_out);

 private:
  // A category of schedulable nodes and where its round robin resumes.
  struct Category {
    std::vector<int> nodes;
    size_t cursor = 0;
  };

  // The first node of `category` from its cursor on (cyclically) that admits the pod and has
  // room for it, or -1.
  int FindNode(const GroupSpec& spec, Category& category, int pod);
  bool Fits(const GroupSpec& spec, int node) const;
  void Take(const GroupSpec& spec, int node);
  void Release(const GroupSpec& spec, int node);

  int resource_count_;
  std::vector<Node> nodes_;
  std::vector<DenseResources> free_;  // per node
  DenseResources schedulable_capacity_;
  std::vector<int> gpu_nodes_;            // schedulable ones
  Category cpu_, large_gpu_, small_gpu_;  // 0 GPUs, 8 GPUs, fewer
};

}  // namespace arbiter::generator::internal
