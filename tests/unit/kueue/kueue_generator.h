// Kueue-shaped snapshots for property and speed tests: a root cohort, divisions, teams and
// ClusterQueues with nominal quotas, some lending and borrowing limits and weights, a population
// of admitted workloads that respects every limit (admitted greedily while they fit) and a
// pending backlog. Deterministic for a given seed.
#pragma once

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"
#include "core/queue_tree.h"
#include "core/resources.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/validated.h"

namespace arbiter::kueue::testing {

using ::arbiter::testing::MustValidate;

struct KueueShape {
  int divisions = 9;          // cohorts under the root
  int teams = 90;             // cohorts under the divisions (round robin)
  int cluster_queues = 1000;  // leaves under the teams (round robin)
  int admitted = 10000;
  int pending = 2000;
  uint32_t seed = 1;
};

inline std::string Numbered(const char* prefix, int i) {
  char name[64];
  snprintf(name, sizeof(name), "%s%05d", prefix, i);
  return name;
}

inline Snapshot GenerateKueueSnapshot(const KueueShape& shape) {
  std::mt19937 rng(shape.seed);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Snapshot snapshot;
  snapshot.now = Timestamp{100000, 0};
  auto add_queue = [&snapshot](const std::string& name, const std::string& parent) -> Queue& {
    Queue queue;
    queue.name = name;
    queue.parent = parent;
    snapshot.queues.push_back(std::move(queue));
    return snapshot.queues.back();
  };
  add_queue("root", "").deserved = {{"cpu", 64000}};
  for (int d = 0; d < shape.divisions; ++d) {
    Queue& division = add_queue(Numbered("div-", d), "root");
    if (d % 3 == 0) division.fair_sharing_weight = 2;
  }
  for (int t = 0; t < shape.teams; ++t) {
    Queue& team = add_queue(Numbered("team-", t), Numbered("div-", t % shape.divisions));
    if (t % 4 == 0) team.borrowing_limit = {{"cpu", 40000}, {"memory", 80000}};
    if (t % 5 == 0) team.lending_limit = {{"cpu", 10000}};
  }
  std::vector<int> demand(shape.cluster_queues);
  for (int c = 0; c < shape.cluster_queues; ++c) {
    Queue& cq = add_queue(Numbered("cq-", c), Numbered("team-", c % shape.teams));
    cq.deserved = {{"cpu", 1000.0 * uniform(4, 16)},
                   {"memory", 1024.0 * uniform(8, 32)},
                   {"nvidia.com/gpu", static_cast<double>(uniform(0, 4))}};
    if (c % 7 == 0) cq.lending_limit = {{"cpu", 2000}};
    if (c % 11 == 0) cq.borrowing_limit = {{"cpu", 8000}, {"nvidia.com/gpu", 2}};
    if (c % 13 == 0) cq.fair_sharing_weight = c % 26 == 0 ? 0 : 3;
    const int within = uniform(0, 3);
    const int reclaim = uniform(0, 3);
    cq.kueue_preemption.within_cluster_queue = static_cast<WithinClusterQueue>(within);
    cq.kueue_preemption.reclaim_within_cohort = static_cast<ReclaimWithinCohort>(reclaim);
    demand[c] = uniform(1, 10) * uniform(1, 10);
  }
  std::discrete_distribution<int> pick_queue(demand.begin(), demand.end());

  // Admit greedily on the quota tree so that the starting state respects every limit.
  Policy kueue;
  kueue.fairness_model = FairnessModel::kKueue;
  const ValidatedSnapshot request = MustValidate(snapshot, kueue);
  const QueueTree& queues = request.tree();
  const ResourceSet& resources = request.resources();
  QuotaTree tree = QuotaTree::Build(request);
  const int cpu = resources.Find("cpu");
  const int memory = resources.Find("memory");
  const int gpu = resources.Find("nvidia.com/gpu");
  auto make_group = [&](int index, int cq, bool admitted) {
    PodGroup group;
    group.name = Numbered(admitted ? "run-" : "wait-", index);
    group.queue = Numbered("cq-", cq);
    group.priority = uniform(0, 2) * 10;
    group.creation_time = Timestamp{uniform(0, 90000), 0};
    const int pods = uniform(1, 2);
    const double pod_cpu = 250.0 * uniform(1, 4);
    const double pod_memory = 256.0 * uniform(1, 8);
    const double pod_gpu = uniform(0, 5) == 0 ? 1 : 0;
    for (int p = 0; p < pods; ++p) {
      Pod pod;
      pod.name = Numbered("p", p);
      pod.requests = {{"cpu", pod_cpu}, {"memory", pod_memory}};
      if (pod_gpu > 0) pod.requests["nvidia.com/gpu"] = pod_gpu;
      if (admitted) pod.node_name = "node";
      group.pods.push_back(std::move(pod));
    }
    if (admitted) {
      group.admitted = true;
      group.admission_time = Timestamp{uniform(90000, 99999), 0};
      if (uniform(0, 49) == 0) group.pods.front().phase = PodPhase::kReleasing;
      if (uniform(0, 19) == 0) group.preemptibility = Preemptibility::kNonPreemptible;
    }
    Usage usage;
    usage.push_back(ResourceAmount{cpu, pod_cpu * pods});
    if (pod_gpu > 0) usage.push_back(ResourceAmount{gpu, pod_gpu * pods});
    usage.push_back(ResourceAmount{memory, pod_memory * pods});
    std::sort(usage.begin(), usage.end(), [](const ResourceAmount& a, const ResourceAmount& b) {
      return a.resource < b.resource;
    });
    return std::make_pair(std::move(group), std::move(usage));
  };
  int admitted = 0;
  for (int attempt = 0; admitted < shape.admitted && attempt < shape.admitted * 4; ++attempt) {
    const int cq = pick_queue(rng);
    auto [group, usage] = make_group(admitted, cq, true);
    const int leaf = queues.Find(group.queue);
    if (!tree.Fits(leaf, usage)) continue;
    tree.AddUsage(leaf, usage);
    snapshot.pod_groups.push_back(std::move(group));
    ++admitted;
  }
  for (int i = 0; i < shape.pending; ++i) {
    snapshot.pod_groups.push_back(make_group(i, pick_queue(rng), false).first);
  }
  snapshot.nodes.push_back(Node{"node", {}, {}, {}, false});
  return snapshot;
}

}  // namespace arbiter::kueue::testing
