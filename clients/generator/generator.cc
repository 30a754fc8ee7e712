#include "clients/generator/generator.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/generator/model_generators.h"

namespace arbiter::generator {

GeneratedRequest Generate(const GeneratorOptions& options) {
  GeneratorOptions clamped = options;
  clamped.nodes = std::max(clamped.nodes, 0);
  clamped.queues = std::max(clamped.queues, 0);
  clamped.depth = std::max(clamped.depth, 1);
  clamped.pods = std::max(clamped.pods, 0);
  clamped.extra_resources = std::max(clamped.extra_resources, 0);
  clamped.reclaim_groups = std::max(clamped.reclaim_groups, 0);
  clamped.cohorts = std::max(clamped.cohorts, 0);
  clamped.flavors = std::max(clamped.flavors, 0);
  // NaN fails both comparisons and becomes 0.
  if (!(clamped.pending_fraction >= 0)) clamped.pending_fraction = 0;
  if (clamped.pending_fraction > 1) clamped.pending_fraction = 1;
  if (!(clamped.gpu_sharing >= 0)) clamped.gpu_sharing = 0;
  if (clamped.gpu_sharing > 100) clamped.gpu_sharing = 100;
  if (clamped.model == GeneratorModel::kKueue) return internal::GenerateKueue(clamped);
  if (clamped.shape == GeneratorShape::kKaiReclaim)
    return internal::GenerateKaiReclaimShape(clamped);
  return internal::GenerateKai(clamped);
}

absl::StatusOr<GeneratorOptions> SizePreset(std::string_view size, GeneratorModel model) {
  GeneratorOptions options;
  options.model = model;
  options.seed = 1;
  if (model == GeneratorModel::kKueue) {
    // ClusterQueues, cohorts over two cohort levels, workloads (1/6 pending).
    struct KueueSize {
      std::string_view name;
      int queues, cohorts, workloads;
    };
    static constexpr KueueSize kSizes[] = {{"S", 10, 4, 60},
                                           {"M", 1000, 100, 12000},
                                           {"L", 5000, 500, 60000},
                                           {"XL", 20000, 2000, 240000}};
    for (const KueueSize& s : kSizes) {
      if (s.name != size) continue;
      options.queues = s.queues;
      options.cohorts = s.cohorts;
      options.pods = s.workloads;
      options.depth = 3;
      options.nodes = 0;
      options.pending_fraction = 1.0 / 6.0;
      return options;
    }
  } else {
    struct KaiSize {
      std::string_view name;
      int nodes, queues, depth, running, pending;
    };
    static constexpr KaiSize kSizes[] = {{"S", 10, 5, 2, 42, 8},
                                         {"M", 1000, 100, 3, 10000, 2000},
                                         {"L", 5000, 1000, 3, 50000, 10000},
                                         {"XL", 20000, 5000, 4, 200000, 40000}};
    for (const KaiSize& s : kSizes) {
      if (s.name != size) continue;
      options.nodes = s.nodes;
      options.queues = s.queues;
      options.depth = s.depth;
      options.pods = s.running + s.pending;
      options.pending_fraction =
          static_cast<double>(s.pending) / static_cast<double>(s.running + s.pending);
      return options;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("size: unknown size \"", std::string(size), "\" (expected S, M, L or XL)"));
}

absl::StatusOr<GeneratorModel> ParseModel(std::string_view name) {
  if (name == "kai") return GeneratorModel::kKai;
  if (name == "kueue") return GeneratorModel::kKueue;
  return absl::InvalidArgumentError(
      absl::StrCat("model: unknown model \"", std::string(name), "\" (expected kai or kueue)"));
}

absl::StatusOr<GeneratorShape> ParseShape(std::string_view name) {
  if (name == "realistic") return GeneratorShape::kRealistic;
  if (name == "kai-reclaim") return GeneratorShape::kKaiReclaim;
  return absl::InvalidArgumentError(absl::StrCat("shape: unknown shape \"", std::string(name),
                                                 "\" (expected realistic or kai-reclaim)"));
}

}  // namespace arbiter::generator
