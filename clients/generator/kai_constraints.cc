#include "clients/generator/kai_constraints.h"

#include <algorithm>
#include <cstdint>

#include "core/kai/feasibility.h"

namespace arbiter::generator::internal {
namespace {

constexpr double kSelectorGroups = 0.1;  // share of groups with a node selector

}  // namespace

void AddNodeTaint(bool gpu_node, Rng& rng, Node& node) {
  const uint64_t pick = rng.Below(10);
  if (gpu_node && pick < 6) {
    node.taints.push_back({"nvidia.com/gpu", "present", "NoSchedule"});
  } else if (pick % 3 == 0) {
    node.taints.push_back({"dedicated", "batch", "NoSchedule"});
    node.labels["dedicated"] = "batch";
  } else if (pick % 3 == 1) {
    node.taints.push_back({"dedicated", "inference", "NoExecute"});
    node.labels["dedicated"] = "inference";
  } else {
    node.taints.push_back({"cloud.example.com/spot", "true", "PreferNoSchedule"});
  }
}

void DrawPlacementConstraints(GroupSpec& spec, Rng& rng) {
  const bool gpu = IsGpuKind(spec.kind);
  if (rng.Chance(kSelectorGroups)) {
    if (gpu) {
      if (rng.Chance(0.5)) {
        spec.selector["nvidia.com/gpu.product"] = rng.Chance(0.5) ? "H100" : "A100";
      } else {
        spec.selector["topology.kubernetes.io/zone"] = kZones[rng.Below(3)];
      }
    } else if (rng.Chance(0.3)) {
      spec.selector["dedicated"] = "batch";
      spec.tolerations.push_back({"dedicated", "Equal", "batch", "NoSchedule"});
    } else if (rng.Chance(0.5)) {
      spec.selector["node.kubernetes.io/instance-type"] = "cpu-96";
    } else {
      spec.selector["topology.kubernetes.io/zone"] = kZones[rng.Below(3)];
    }
  }
  if (gpu && rng.Chance(0.7)) {
    spec.tolerations.push_back({"nvidia.com/gpu", "Exists", "", "NoSchedule"});
  }
  if (spec.kind == GroupKind::kBatch && rng.Chance(0.3) && spec.tolerations.empty()) {
    spec.tolerations.push_back({"dedicated", "", "batch", "NoSchedule"});
  }
  if ((spec.kind == GroupKind::kService || spec.kind == GroupKind::kInference) && rng.Chance(0.3)) {
    spec.tolerations.push_back({"dedicated", "Equal", "inference", "NoExecute"});
  }
  if (rng.Chance(0.02)) spec.tolerations.push_back({"", "Exists", "", ""});
}

bool Admits(const Node& node, const GroupSpec& spec) {
  if (node.unschedulable) return false;
  for (const auto& [key, value] : spec.selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  for (const Taint& taint : node.taints) {
    if (taint.effect == "PreferNoSchedule") continue;
    const bool tolerated =
        std::any_of(spec.tolerations.begin(), spec.tolerations.end(),
                    [&](const Toleration& toleration) { return Tolerates(toleration, taint); });
    if (!tolerated) return false;
  }
  return true;
}

}  // namespace arbiter::generator::internal
