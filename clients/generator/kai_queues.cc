#include "clients/generator/kai_queues.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "clients/generator/model_generators.h"

namespace arbiter::generator::internal {
namespace {

// The top level's deserved is scaled by this when there is a reclaim subtree, which deserves
// the rest.
constexpr double kReclaimDeservedScale = 0.6;

// The size of each of `depth` levels holding `total` queues: growing geometrically with ratio
// total^(1/depth), each at least 1, the last level taking the rounding.
std::vector<int> LevelSizes(int total, int depth) {
  std::vector<int> level_size(depth, 0);
  if (total <= 0) return level_size;
  const double b = std::pow(static_cast<double>(total), 1.0 / depth);
  double weight_sum = 0;
  for (int l = 0; l < depth; ++l) weight_sum += std::pow(b, l);
  int used = 0;
  for (int l = 0; l < depth; ++l) {
    level_size[l] =
        std::max(1, static_cast<int>(std::llround(total * std::pow(b, l) / weight_sum)));
    used += level_size[l];
  }
  level_size[depth - 1] += total - used;
  while (level_size[depth - 1] < 1) {  // rounding took too many from the top levels
    for (int l = depth - 2; l >= 0 && level_size[depth - 1] < 1; --l) {
      if (level_size[l] > 1) --level_size[l], ++level_size[depth - 1];
    }
  }
  return level_size;
}

}  // namespace

KaiQueueTree::KaiQueueTree(const GeneratorOptions& options, const DenseResources& capacity,
                           const KaiResources& resources, Rng& rng) {
  MakeTree(options, resources, rng);
  SetDeserved(capacity, resources.count(), rng);
  SetWeightsAndRuntimes(rng);
  std::vector<double> all, gpu_ok;
  for (int q : leaves_) {
    all.push_back(queues_[q].activity);
    gpu_ok.push_back(queues_[q].cpu_only ? 0 : queues_[q].activity);
  }
  all_leaves_ = WeightedTable(all);
  gpu_leaves_ = WeightedTable(gpu_ok);
}

void KaiQueueTree::MakeTree(const GeneratorOptions& options, const KaiResources& resources,
                            Rng& rng) {
  int total = options.queues;
  int reclaim_leaves = 0;
  if (options.reclaim_groups > 0 && total >= 3) {
    reclaim_leaves = std::min((options.reclaim_groups + 3) / 4, total - 2);
    total -= 1 + reclaim_leaves;
  }
  const int depth = std::min(options.depth, std::max(total, 1));
  const std::vector<int> level_size = LevelSizes(total, depth);
  static const char* const kPrefixes[] = {"dept", "team", "proj", "grp", "sub"};
  std::vector<std::vector<int>> levels(depth);
  for (int l = 0; l < depth; ++l) {
    const int width = std::max(3, static_cast<int>(std::to_string(level_size[l]).size()));
    for (int i = 0; i < level_size[l]; ++i) {
      PlannedQueue queue;
      queue.level = l;
      queue.name = absl::StrFormat("%s-%0*d", kPrefixes[std::min(l, 4)], width, i);
      if (l > 0) {
        const std::vector<int>& parents = levels[l - 1];
        // Every parent gets a child first, then the rest go at random.
        queue.parent =
            i < static_cast<int>(parents.size()) ? parents[i] : parents[rng.Below(parents.size())];
      }
      levels[l].push_back(static_cast<int>(queues_.size()));
      queues_.push_back(std::move(queue));
    }
  }
  if (reclaim_leaves > 0) {
    PlannedQueue top;
    top.name = "reclaim-dept";
    top.reclaim = true;
    const int top_index = static_cast<int>(queues_.size());
    queues_.push_back(top);
    for (int i = 0; i < reclaim_leaves; ++i) {
      PlannedQueue leaf;
      leaf.name = absl::StrFormat("reclaim-team-%03d", i);
      leaf.parent = top_index;
      leaf.level = 1;
      leaf.reclaim = true;
      queues_.push_back(leaf);
    }
  }
  for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
    if (queues_[q].parent >= 0) queues_[queues_[q].parent].children.push_back(q);
  }
  for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
    PlannedQueue& queue = queues_[q];
    queue.deserved = resources.Zero();
    queue.allocated = resources.Zero();
    queue.requested = resources.Zero();
    if (!queue.children.empty()) continue;
    if (queue.reclaim) {
      reclaim_leaves_.push_back(q);
      continue;
    }
    queue.cpu_only = rng.Chance(0.05);
    queue.activity = std::pow(rng.Real(0.3, 1.7), 2);
    leaves_.push_back(q);
  }
  // At least one leaf takes GPU work (a CPU-only team has GPU limit 0).
  if (!leaves_.empty() &&
      std::all_of(leaves_.begin(), leaves_.end(), [&](int q) { return queues_[q].cpu_only; })) {
    queues_[leaves_.front()].cpu_only = false;
  }
}

// Top down: each level divides (a share of) its parent's amount by random weights.
void KaiQueueTree::SetDeserved(const DenseResources& capacity, int resource_count, Rng& rng) {
  // Effective amount a queue's children divide: its finite deserved, or its parent's.
  std::vector<DenseResources> effective(queues_.size());
  std::vector<int> roots;
  for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
    if (queues_[q].parent < 0 && !queues_[q].reclaim) roots.push_back(q);
  }
  const double reclaim_scale = reclaim_leaves_.empty() ? 1.0 : kReclaimDeservedScale;
  auto divide = [&](const std::vector<int>& siblings, const DenseResources& amount, double lo,
                    double hi, double scale) {
    if (siblings.empty()) return;
    std::vector<double> weights;
    double sum = 0;
    for (size_t i = 0; i < siblings.size(); ++i) {
      weights.push_back(rng.Real(0.5, 2.0));
      sum += weights.back();
    }
    const double factor = rng.Real(lo, hi) * scale;
    for (size_t i = 0; i < siblings.size(); ++i) {
      PlannedQueue& queue = queues_[siblings[i]];
      DenseResources& eff = effective[siblings[i]];
      eff.assign(resource_count, 0);
      const bool unlimited_cpu_memory = rng.Chance(0.4);
      const bool opportunistic = rng.Chance(0.1);
      for (int r = 0; r < resource_count; ++r) {
        double value = std::floor(amount[r] * factor * weights[i] / sum);
        if (r == kMemory) value = std::floor(value / kGiB) * kGiB;
        if (r == kGpu && opportunistic) value = 0;
        queue.deserved[r] = value;
        eff[r] = value;
        if (r != kGpu && unlimited_cpu_memory) {
          queue.deserved[r] = -1;
          eff[r] = amount[r];
        }
      }
    }
  };
  divide(roots, capacity, 0.8, 1.05, reclaim_scale);
  for (size_t q = 0; q < queues_.size(); ++q) {  // parents precede children in queues_
    if (!queues_[q].reclaim) divide(queues_[q].children, effective[q], 0.85, 1.0, 1.0);
  }
}

void KaiQueueTree::SetWeightsAndRuntimes(Rng& rng) {
  for (PlannedQueue& queue : queues_) {
    queue.priority = rng.Chance(0.7) ? 0 : static_cast<int>(rng.Between(1, 2));
    queue.gpu_weight = rng.Chance(0.05) ? 0 : static_cast<double>(1 << rng.Below(3));
    queue.same_weight = rng.Chance(0.5);
    queue.created = kNowSeconds - rng.Between(30 * 86400, 365 * 86400);
    if (rng.Chance(0.25)) queue.reclaim_min_runtime = 300 * (1 << (2 * rng.Below(3)));
    if (rng.Chance(0.15)) queue.preempt_min_runtime = 300 * (1 << (2 * rng.Below(3)));
  }
}

int KaiQueueTree::DrawLeaf(bool gpu, Rng& rng) const {
  if (leaves_.empty()) return -1;
  const WeightedTable& table = gpu && !gpu_leaves_.empty() ? gpu_leaves_ : all_leaves_;
  return leaves_[table.Draw(rng)];
}

void KaiQueueTree::AddUsage(int leaf, const DenseResources& request, bool running) {
  for (int q = leaf; q >= 0; q = queues_[q].parent) {
    for (size_t r = 0; r < request.size(); ++r) {
      queues_[q].requested[r] += request[r];
      if (running) queues_[q].allocated[r] += request[r];
    }
  }
}

std::vector<Queue> KaiQueueTree::ToSnapshotQueues(const KaiResources& resources, Rng& rng) {
  for (PlannedQueue& planned : queues_) {
    if (planned.reclaim) planned.deserved = planned.requested;
  }
  std::vector<Queue> out;
  out.reserve(queues_.size());
  for (const PlannedQueue& planned : queues_) {
    Queue queue;
    queue.name = planned.name;
    if (planned.parent >= 0) queue.parent = queues_[planned.parent].name;
    queue.deserved = resources.ToMap(planned.deserved, /*skip_zero=*/false);
    queue.priority = planned.priority;
    queue.creation_time = Timestamp{planned.created, 0};
    queue.over_quota_weight["nvidia.com/gpu"] = planned.gpu_weight;
    if (planned.same_weight) {
      for (int r = 0; r < resources.count(); ++r) {
        queue.over_quota_weight[resources.name(r)] = planned.gpu_weight;
      }
    }
    if (planned.reclaim_min_runtime > 0) {
      queue.reclaim_min_runtime = Duration{planned.reclaim_min_runtime, 0};
    }
    if (planned.preempt_min_runtime > 0) {
      queue.preempt_min_runtime = Duration{planned.preempt_min_runtime, 0};
    }
    if (!planned.reclaim) {
      if (planned.cpu_only) {
        queue.limit["nvidia.com/gpu"] = 0;
      } else if (rng.Chance(0.3)) {
        queue.limit["nvidia.com/gpu"] =
            std::ceil(std::max({planned.allocated[kGpu] * rng.Real(1.1, 2.0),
                                planned.deserved[kGpu] * rng.Real(1.0, 1.5), 1.0}));
      }
      if (rng.Chance(0.1)) {
        queue.limit["cpu"] = std::ceil(
            std::max({planned.allocated[kCpu] * rng.Real(1.1, 2.0),
                      std::max(planned.deserved[kCpu], 0.0) * rng.Real(1.0, 1.5), 1000.0}));
      }
      if (planned.deserved[kCpu] == -1 && rng.Chance(0.5)) {
        queue.limit["cpu"] = -1;
        queue.limit["memory"] = -1;
      }
    }
    out.push_back(std::move(queue));
  }
  return out;
}

}  // namespace arbiter::generator::internal
