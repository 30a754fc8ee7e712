// Synthetic, realistic scheduling requests for benchmarks, property tests and load tests.
//
// Generate() is a pure function of its options: the same options (seed included) give the same
// request on every platform, because every random draw comes from std::mt19937_64's raw output
// through arbiter's own helpers (the std:: distributions are implementation-defined). The
// generated request is always valid (ValidateRequest accepts it), no node holds more than its
// allocatable and no queue is over its limit at any level (KAI) or beyond its quota tree's
// limits (Kueue). Every parameter and fixed constant is documented in docs/generator.md; they do
// not change without a note there, so that benchmark figures stay comparable.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/model.h"

namespace arbiter::generator {

// Which model's shape to generate.
enum class GeneratorModel {
  kKai,    // nodes, a KAI queue tree, running and pending pod groups; Policy KAI
  kKueue,  // ClusterQueues under cohorts, admitted and pending workloads; Policy KUEUE
};

enum class GeneratorShape {
  kRealistic,  // the realistic cluster of docs/generator.md
  // KAI's reclaim yardstick (docs/generator.md): per node eight running and eight pending
  // one-GPU jobs, the running ones in a queue that deserves nothing, the pending ones in a queue
  // that deserves every GPU. Only `nodes` applies; KAI model only.
  kKaiReclaim,
};

struct GeneratorOptions {
  // KAI: nodes of the cluster. Kueue: ignored (the quota tree is the capacity; no nodes).
  int nodes = 10;
  // KAI: queues in the tree, non-leaf queues included. Kueue: ClusterQueues (leaves).
  int queues = 5;
  // Levels of the queue tree (1 = flat). Kueue: cohort levels + 1 (3 = root cohorts, cohorts,
  // ClusterQueues).
  int depth = 2;
  // KAI: pods, running and pending together. Kueue: workloads, admitted and pending together.
  int pods = 50;
  // Seed of the generator; every seed gives a different, equally valid request.
  uint64_t seed = 1;
  // Share of `pods` that is pending (KAI) or not admitted (Kueue), in [0, 1].
  double pending_fraction = 1.0 / 6.0;
  // Extra resource kinds beyond cpu, memory and nvidia.com/gpu ("example.com/res-0", ...).
  int extra_resources = 0;
  GeneratorModel model = GeneratorModel::kKai;
  // KAI: pending groups placed in queues below their fair share while other queues are above
  // theirs, each needing a whole GPU node, so that they can only run by reclaim. Counted within
  // the pending pods. Kueue: ignored.
  int reclaim_groups = 0;
  // Kueue: cohorts (non-leaf queues) over all cohort levels. KAI: ignored.
  int cohorts = 2;
  GeneratorShape shape = GeneratorShape::kRealistic;
  // Kueue: resource flavors per resource (SEMANTICS §5.8). 0 = legacy quotas (`deserved` maps,
  // the implicit flavor); N >= 1 = every queue with quota gives it as resource groups of N
  // flavors each (docs/generator.md). KAI: ignored.
  int flavors = 0;
  // KAI: the percentage, in [0, 100], of GPU pods that share GPU devices (SEMANTICS §4.13):
  // gpu_fraction and gpu_memory pods, device keys for the running ones, and gpu_device_memory on
  // the GPU nodes (docs/generator.md, "GPU sharing"). 0 = none, and the request is exactly the
  // one without the option. The kai-reclaim shape and Kueue: ignored.
  double gpu_sharing = 0;
};

struct GeneratedRequest {
  Snapshot snapshot;
  Policy policy;
};

// A valid request for `options`. Options out of range are clamped (negative counts to 0,
// pending_fraction into [0, 1], gpu_sharing into [0, 100], depth to at least 1). Cost: O(pods · log
// nodes + queues).
GeneratedRequest Generate(const GeneratorOptions& options);

// The size presets of docs/generator.md: "S", "M", "L", "XL" for the KAI model (issue sizes:
// S 10 nodes / 5 queues / 50 pods ... XL 20,000 nodes / 5,000 queues / 240,000 pods); for the
// Kueue model, "M" is 1,000 ClusterQueues under 100 cohorts with 12,000 workloads and the other
// sizes scale it. Seed 1. InvalidArgument for any other size name.
absl::StatusOr<GeneratorOptions> SizePreset(std::string_view size,
                                            GeneratorModel model = GeneratorModel::kKai);

// "kai" or "kueue" (as the CLI spells --model). InvalidArgument otherwise.
absl::StatusOr<GeneratorModel> ParseModel(std::string_view name);

// "realistic" or "kai-reclaim".
absl::StatusOr<GeneratorShape> ParseShape(std::string_view name);

}  // namespace arbiter::generator
