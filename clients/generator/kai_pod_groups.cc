#include "clients/generator/kai_pod_groups.h"

#include <algorithm>
#include <cstdint>

#include "clients/generator/kai_constraints.h"

namespace arbiter::generator::internal {
namespace {

// A per-pod request; each extra resource with probability 0.2, 1 to 4 of it.
DenseResources Request(double cpu, double memory_gib, double gpu, const KaiResources& resources,
                       Rng& rng) {
  DenseResources request = resources.Zero();
  request[kCpu] = cpu;
  request[kMemory] = memory_gib * kGiB;
  request[kGpu] = gpu;
  for (int r = kFirstExtra; r < resources.count(); ++r) {
    if (rng.Chance(0.2)) request[r] = static_cast<double>(rng.Between(1, 4));
  }
  return request;
}

}  // namespace

const char* GroupKindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTrain:
      return "train";
    case GroupKind::kInference:
      return "infer";
    case GroupKind::kNotebook:
      return "notebook";
    case GroupKind::kBatch:
      return "batch";
    case GroupKind::kService:
      return "service";
  }
  return "job";
}

bool IsGpuKind(GroupKind kind) {
  return kind == GroupKind::kTrain || kind == GroupKind::kInference || kind == GroupKind::kNotebook;
}

GroupKind DrawGroupKind(bool gpu, Rng& rng) {
  static const std::vector<double> kGpuKinds = {0.5, 0.3, 0.2};
  static const std::vector<double> kCpuKinds = {0.8, 0.2};
  if (gpu) {
    const size_t k = rng.Weighted(kGpuKinds);
    return k == 0 ? GroupKind::kTrain : (k == 1 ? GroupKind::kInference : GroupKind::kNotebook);
  }
  return rng.Weighted(kCpuKinds) == 0 ? GroupKind::kBatch : GroupKind::kService;
}

GroupSpec DrawGroupSpec(GroupKind kind, int max_pods, const KaiResources& resources, Rng& rng) {
  GroupSpec spec;
  spec.kind = kind;
  switch (kind) {
    case GroupKind::kTrain: {
      static const std::vector<double> kPodWeights = {0.4, 0.3, 0.2, 0.1};
      static const std::vector<double> kGpuWeights = {0.25, 0.25, 0.2, 0.3};
      spec.pods = 1 << rng.Weighted(kPodWeights);
      const double gpu = static_cast<double>(1 << rng.Weighted(kGpuWeights));
      spec.request = Request(12000 * gpu, 96 * gpu, gpu, resources, rng);
      spec.min_member = spec.pods;
      spec.priority = 50;
      if (rng.Chance(0.1)) spec.preemptibility = Preemptibility::kPreemptible;
      break;
    }
    case GroupKind::kInference: {
      spec.pods = static_cast<int>(rng.Between(1, 4));
      const double gpu = rng.Chance(0.2) ? 0.5 : 1;
      spec.request = Request(4000, 32, gpu, resources, rng);
      spec.min_member = 1;
      spec.priority = 125;
      if (rng.Chance(0.2)) spec.preemptibility = Preemptibility::kPreemptible;
      break;
    }
    case GroupKind::kNotebook: {
      spec.pods = 1;
      const double gpu = rng.Chance(0.3) ? 0.5 : 1;
      spec.request = Request(2000, 16, gpu, resources, rng);
      spec.priority = 75;
      if (rng.Chance(0.3)) spec.preemptibility = Preemptibility::kNonPreemptible;
      break;
    }
    case GroupKind::kBatch: {
      spec.pods = static_cast<int>(rng.Between(1, 10));
      // Memory is drawn before cpu: the order GCC gave the two draws when they were arguments
      // of one call (unspecified in C++), kept so that the requests stay what they were.
      const double memory_gib = static_cast<double>(rng.Between(1, 16));
      const double cpu = 250 * static_cast<double>(rng.Between(1, 16));
      spec.request = Request(cpu, memory_gib, 0, resources, rng);
      spec.min_member = rng.Chance(0.5) ? spec.pods : 1;
      spec.priority = rng.Chance(0.5) ? 25 : 40;
      break;
    }
    case GroupKind::kService: {
      spec.pods = static_cast<int>(rng.Between(1, 3));
      const double memory_gib = 2 * static_cast<double>(rng.Between(1, 4));  // before cpu, as above
      const double cpu = 1000 * static_cast<double>(rng.Between(1, 4));
      spec.request = Request(cpu, memory_gib, 0, resources, rng);
      if (rng.Chance(0.5)) {
        spec.priority = 150;
      } else {
        spec.priority = 90;
        spec.preemptibility = Preemptibility::kNonPreemptible;
      }
      break;
    }
  }
  spec.pods = std::max(1, std::min(spec.pods, max_pods));
  if (spec.min_member > spec.pods) spec.min_member = spec.pods;
  DrawPlacementConstraints(spec, rng);
  return spec;
}

GroupSpec ReclaimGroupSpec(int max_pods, int leaf, const KaiResources& resources, Rng& rng) {
  GroupSpec spec;
  spec.kind = GroupKind::kTrain;
  spec.pods = static_cast<int>(std::min<int64_t>(rng.Between(1, 2), max_pods));
  // The extra resources are drawn, as for every request, then dropped.
  spec.request = Request(96000, 768, 8, resources, rng);
  for (int r = kFirstExtra; r < resources.count(); ++r) spec.request[r] = 0;
  spec.min_member = spec.pods;
  spec.priority = 50;
  spec.leaf = leaf;
  spec.reclaim = true;
  return spec;
}

}  // namespace arbiter::generator::internal
