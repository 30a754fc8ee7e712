// Node feasibility by class (SEMANTICS.md §4.5): which nodes a pod may use at all, decided once
// per (pod signature, node class) instead of once per (pod, node).
//
// A node's class is its schedulability, its taints and its labels restricted to the keys that
// some pod's node_selector mentions (other labels cannot change a decision, and keeping them out
// stops unique labels such as host names from making every node its own class). A pod's signature
// is its node_selector and tolerations. Feasible(signature, class) iff the class is schedulable,
// every selector entry equals the class's label and every NoSchedule/NoExecute taint is
// tolerated; the class is "preferred" when its PreferNoSchedule taints are tolerated too.
#pragma once

#include <string>
#include <vector>

#include "core/cancel_poll.h"
#include "core/kai/cluster.h"
#include "core/model.h"
#include "core/taints.h"  // Tolerates

namespace arbiter::kai {

class Feasibility {
 public:
  struct FeasibleClass {
    int node_class = -1;
    bool preferred = false;  // every PreferNoSchedule taint of the class is tolerated
  };
  // Why nodes are infeasible for a signature, first failing predicate per node, in the order
  // unschedulable, selector, taint.
  struct Rejections {
    int unschedulable = 0;
    int selector = 0;
    int taint = 0;
  };

  // Classifies every node and pod of `cluster`, which must outlive this. O(size · log size).
  // When `poll` (may be null) reports the call cancelled, the nodes and pods not classified yet
  // take the class or signature of the last one that was (consistent, but not the request's:
  // the caller discards it).
  explicit Feasibility(const Cluster& cluster, CancelPoll* poll = nullptr);

  int num_classes() const { return static_cast<int>(classes_.size()); }
  int node_class(int node) const { return node_class_[node]; }
  // The class's nodes, name order.
  const std::vector<int>& class_nodes(int node_class) const { return classes_[node_class].nodes; }
  int pod_signature(int pod) const { return pod_signature_[pod]; }
  int num_signatures() const { return static_cast<int>(signatures_.size()); }

  // The classes feasible for `signature`, class order. Computed on first use and cached, so not
  // thread-safe. O(classes · (selector + taints · tolerations)) the first time.
  const std::vector<FeasibleClass>& FeasibleClasses(int signature);
  // The number of feasible nodes for `signature`.
  int FeasibleNodeCount(int signature);
  Rejections Explain(int signature) const;

 private:
  struct NodeClass {
    const Node* example = nullptr;  // the first node of the class; all share its taints
    std::vector<int> nodes;
  };
  struct Signature {
    const Pod* example = nullptr;
    bool computed = false;
    int feasible_nodes = 0;
    std::vector<FeasibleClass> classes;
  };
  enum class Verdict { kFeasible, kUnschedulable, kSelector, kTaint };
  Verdict Judge(const Pod& pod, const NodeClass& node_class, bool* preferred) const;
  void Compute(Signature& signature);

  std::vector<NodeClass> classes_;
  std::vector<int> node_class_;
  std::vector<Signature> signatures_;
  std::vector<int> pod_signature_;
};

}  // namespace arbiter::kai
