// Where a KAI pod group may run: the taints and labels the generator puts on nodes, the node
// selectors and tolerations it gives groups (docs/generator.md, "Nodes" and "Pod groups"), and
// the test that a node admits a group, which uses the core's toleration rule.
#pragma once

#include "clients/generator/kai_pod_groups.h"
#include "clients/generator/random.h"
#include "core/model.h"

namespace arbiter::generator::internal {

// The values of every node's topology.kubernetes.io/zone label, drawn uniformly.
inline constexpr const char* kZones[] = {"zone-a", "zone-b", "zone-c"};

// Gives `node` one taint: on a GPU node (`gpu_node`) nvidia.com/gpu=present:NoSchedule with
// probability 0.6; otherwise, in equal thirds, dedicated=batch:NoSchedule or
// dedicated=inference:NoExecute (each with the label dedicated=<value>), or
// cloud.example.com/spot=true:PreferNoSchedule.
void AddNodeTaint(bool gpu_node, Rng& rng, Node& node);

// Draws the node selector and tolerations of a group of `spec.kind` into `spec`.
void DrawPlacementConstraints(GroupSpec& spec, Rng& rng);

// True when a pod of `spec` may run on `node`: the node is schedulable, carries every label of
// the selector, and each of its taints other than PreferNoSchedule is tolerated
// (Tolerates, core/taints.h, SEMANTICS §4.5). Ignores resources.
bool Admits(const Node& node, const GroupSpec& spec);

}  // namespace arbiter::generator::internal
