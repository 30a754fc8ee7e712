// The KAI-shaped request: nodes of a few shapes (kai_nodes.h), a queue tree with mixed quotas
// (kai_queues.h), running pod groups that fill about 85% of the GPUs and pending groups that ask
// for more than is free (kai_pod_groups.h). This file draws the groups, places the running ones
// and writes everything into the snapshot. Every constant is documented in docs/generator.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/generator/kai_gpu_sharing.h"
#include "clients/generator/kai_nodes.h"
#include "clients/generator/kai_pod_groups.h"
#include "clients/generator/kai_queues.h"
#include "clients/generator/kai_resources.h"
#include "clients/generator/model_generators.h"
#include "clients/generator/random.h"

namespace arbiter::generator::internal {
namespace {

constexpr double kGpuFill = 0.85;          // share of schedulable GPUs held by running pods
constexpr double kReleasingGroups = 0.01;  // running groups that are terminating
constexpr double kPendingGpuShare = 0.6;   // least chance that a pending group is GPU work
constexpr double kMeanGpusPerPod = 2.5;    // of GPU work, to plan how many pods to draw

class KaiGenerator {
 public:
  explicit KaiGenerator(const GeneratorOptions& options)
      : options_(options),
        rng_(options.seed),
        resources_(options.extra_resources),
        nodes_(options.nodes, resources_, rng_),
        queues_(options, nodes_.schedulable_capacity(), resources_, rng_) {}

  GeneratedRequest Run() && {
    snapshot_.now = Timestamp{kNowSeconds, 0};
    int pending_budget = std::min(
        options_.pods, static_cast<int>(std::llround(options_.pods * options_.pending_fraction)));
    const int running_budget = options_.pods - pending_budget;
    std::vector<GroupSpec> pending = DrawReclaimGroups(pending_budget);
    const std::vector<GroupSpec> running = DrawRunningGroups(running_budget, pending_budget);
    const std::vector<std::vector<int>> placements = PlaceLargestFirst(running);
    DrawPendingGroups(pending_budget, pending);
    // Generation order: running groups (those that did not fit stay pending), then pending.
    for (size_t i = 0; i < running.size(); ++i) {
      Emit(running[i], placements[i].empty() ? nullptr : &placements[i]);
    }
    for (const GroupSpec& spec : pending) Emit(spec, nullptr);
    snapshot_.queues = queues_.ToSnapshotQueues(resources_, rng_);
    snapshot_.nodes = nodes_.TakeNodes();
    // Last, from a random stream of its own: without it nothing above changes.
    if (options_.gpu_sharing > 0) {
      ApplyGpuSharing(options_.gpu_sharing, options_.seed, reclaim_groups_, snapshot_);
    }

    GeneratedRequest request;
    request.policy.fairness_model = FairnessModel::kKai;
    request.snapshot = std::move(snapshot_);
    return request;
  }

 private:
  // The reclaim groups, first of the pending ones, taken from `pending_budget`.
  std::vector<GroupSpec> DrawReclaimGroups(int& pending_budget) {
    std::vector<GroupSpec> groups;
    const std::vector<int>& leaves = queues_.reclaim_leaves();
    if (leaves.empty()) return groups;
    for (int i = 0; i < options_.reclaim_groups && pending_budget > 0; ++i) {
      groups.push_back(
          ReclaimGroupSpec(pending_budget, leaves[i % leaves.size()], resources_, rng_));
      pending_budget -= groups.back().pods;
    }
    return groups;
  }

  // Running groups of `budget` pods: GPU kinds until the GPUs are ~85% full, then CPU kinds.
  // Elastic inference groups leave a few pods pending, taken from `pending_budget`.
  std::vector<GroupSpec> DrawRunningGroups(int budget, int& pending_budget) {
    const double gpu_target = kGpuFill * nodes_.schedulable_capacity()[kGpu];
    double gpu_planned = 0;
    std::vector<GroupSpec> running;
    int remaining = budget;
    while (remaining > 0 && !queues_.leaves().empty()) {
      const double need_pods = std::max(0.0, gpu_target - gpu_planned) / kMeanGpusPerPod;
      const bool gpu = rng_.Chance(std::min(1.0, need_pods / remaining));
      GroupSpec spec = DrawGroupSpec(DrawGroupKind(gpu, rng_), remaining, resources_, rng_);
      // Near the GPU target, draw again (smaller groups are likelier), then fall back to CPU.
      const double left = gpu_target - gpu_planned;
      for (int redraw = 0; gpu && spec.pods * spec.request[kGpu] > left; ++redraw) {
        spec = DrawGroupSpec(DrawGroupKind(/*gpu=*/redraw < 4, rng_), remaining, resources_, rng_);
      }
      spec.leaf = queues_.DrawLeaf(gpu, rng_);
      // With reclaim groups, nothing is releasing: a pipelined binding onto releasing pods would
      // let a reclaim group run without evicting anyone.
      spec.releasing = rng_.Chance(kReleasingGroups) && queues_.reclaim_leaves().empty();
      if (spec.kind == GroupKind::kInference && pending_budget > 0 && rng_.Chance(0.15)) {
        spec.pending_extra =
            static_cast<int>(std::min<int64_t>(rng_.Between(1, 2), pending_budget));
        pending_budget -= spec.pending_extra;
      }
      gpu_planned += spec.pods * spec.request[kGpu];
      remaining -= spec.pods;
      running.push_back(std::move(spec));
    }
    return running;
  }

  // The node of each pod of each group, or none for a group that found no room (every group has
  // a pod, so a placed group's list is never empty). The largest pods are placed first, so that
  // whole-node pods find whole nodes.
  std::vector<std::vector<int>> PlaceLargestFirst(const std::vector<GroupSpec>& groups) {
    std::vector<int> order(groups.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const DenseResources& x = groups[a].request;
      const DenseResources& y = groups[b].request;
      if (x[kGpu] != y[kGpu]) return x[kGpu] > y[kGpu];
      return x[kCpu] > y[kCpu];
    });
    std::vector<std::vector<int>> placements(groups.size());
    for (int i : order) nodes_.Place(groups[i], placements[i]);
    return placements;
  }

  // Pending groups for the rest of `pending_budget`, appended to `pending`: mostly GPU work, so
  // that they ask for more than is free (at least kPendingGpuShare of the groups, more while the
  // demand is below twice the free GPUs).
  void DrawPendingGroups(int& pending_budget, std::vector<GroupSpec>& pending) {
    const double free_gpu = nodes_.FreeGpus();
    double pending_gpu = 0;
    for (const GroupSpec& spec : pending) pending_gpu += spec.pods * spec.request[kGpu];
    while (pending_budget > 0 && !queues_.leaves().empty()) {
      const double need_pods = std::max(0.0, 2 * free_gpu - pending_gpu) / kMeanGpusPerPod;
      const bool gpu =
          rng_.Chance(std::max(kPendingGpuShare, std::min(1.0, need_pods / pending_budget)));
      GroupSpec spec = DrawGroupSpec(DrawGroupKind(gpu, rng_), pending_budget, resources_, rng_);
      spec.leaf = queues_.DrawLeaf(gpu, rng_);
      pending_budget -= spec.pods;
      pending_gpu += spec.pods * spec.request[kGpu];
      pending.push_back(std::move(spec));
    }
  }

  // Appends the group to the snapshot and its pods' usage to its queues; `nodes` holds a node
  // per pod when it runs.
  void Emit(const GroupSpec& spec, const std::vector<int>* nodes) {
    PodGroup group;
    group.name = absl::StrFormat("%s-%07d", GroupKindName(spec.kind), group_counter_++);
    if (spec.reclaim) group.name = absl::StrCat("reclaim-", group.name);
    group.queue = queues_.name(spec.leaf);
    group.priority = spec.priority;
    group.preemptibility = spec.preemptibility;
    group.min_member = spec.min_member;
    const int64_t age =
        nodes != nullptr ? rng_.Between(600, 30 * 86400) : rng_.Between(0, 2 * 86400);
    group.creation_time = Timestamp{kNowSeconds - age, 0};
    const bool unknown_start = rng_.Chance(0.05);
    const ResourceMap request = resources_.ToMap(spec.request, /*skip_zero=*/true);
    const int pod_count = spec.pods + (nodes != nullptr ? spec.pending_extra : 0);
    for (int p = 0; p < pod_count; ++p) {
      Pod pod;
      pod.name = absl::StrCat(group.name, "-", p);
      pod.requests = request;
      pod.node_selector = spec.selector;
      pod.tolerations = spec.tolerations;
      if (nodes != nullptr && p < spec.pods) {
        pod.node_name = nodes_.node((*nodes)[p]).name;
        pod.phase = spec.releasing ? PodPhase::kReleasing : PodPhase::kRunning;
        if (!unknown_start) {
          pod.start_time =
              Timestamp{kNowSeconds - age + rng_.Between(0, std::min<int64_t>(age, 300)), 0};
        }
        if (!spec.releasing) queues_.AddUsage(spec.leaf, spec.request, /*running=*/true);
      } else {
        pod.phase = PodPhase::kPending;
        queues_.AddUsage(spec.leaf, spec.request, /*running=*/false);
      }
      group.pods.push_back(std::move(pod));
    }
    snapshot_.pod_groups.push_back(std::move(group));
    reclaim_groups_.push_back(spec.reclaim);
  }

  const GeneratorOptions options_;
  Rng rng_;
  const KaiResources resources_;
  KaiNodes nodes_;  // drawn first
  KaiQueueTree queues_;
  Snapshot snapshot_;
  std::vector<bool> reclaim_groups_;  // per group of snapshot_: a reclaim group (never shares)
  int group_counter_ = 0;
};

}  // namespace

GeneratedRequest GenerateKai(const GeneratorOptions& options) {
  return KaiGenerator(options).Run();
}

}  // namespace arbiter::generator::internal
