// The indexed node choice (NodeIndex + Placer) against a direct reading of SEMANTICS.md §4.5 that
// scores every node, over seeded random clusters, while binds, commits and rollbacks change the
// free capacity under the index.
#include <random>
#include <string>
#include <vector>

#include "core/kai/kai_fair_share.h"
#include "core/kai/placement.h"
#include "core/kai/session.h"
#include "core/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::IsOk;

using ::arbiter::testing::SnapshotBuilder;

bool NaiveFeasible(const Node& node, const Pod& pod, bool* preferred) {
  if (node.unschedulable) return false;
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  *preferred = true;
  for (const Taint& taint : node.taints) {
    bool tolerated = false;
    for (const Toleration& t : pod.tolerations) tolerated = tolerated || Tolerates(t, taint);
    if (taint.effect == "PreferNoSchedule") {
      *preferred = *preferred && tolerated;
    } else if (!tolerated) {
      return false;
    }
  }
  return true;
}

// Scores every node as §4.5 says and returns the first node, in (score desc, name) order, where
// the pod fits now or pipelined.
NodeChoice NaiveChoose(const Cluster& cluster, const WorkingState& state, bool spread, int pod) {
  const Pod& p = *cluster.pod(pod).pod;
  // Node amounts span the node resources; a pod asking for another fits nowhere.
  if (cluster.pod(pod).requests_off_nodes) return NodeChoice{};
  const double* req = cluster.node_requests(pod);
  const bool gpu_pod = cluster.pod(pod).requests_gpu;
  const int s = gpu_pod ? cluster.node_gpu() : cluster.node_cpu();
  auto alloc = [&](int n) { return s < 0 ? 0.0 : cluster.allocatable(n)[s]; };
  auto free = [&](int n) { return s < 0 ? 0.0 : state.free(n, s); };
  std::vector<int> feasible;
  std::vector<bool> preferred(cluster.num_nodes());
  double min = 0, max = 0;
  bool any = false;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    bool pref = false;
    if (!NaiveFeasible(*cluster.node(n).node, p, &pref)) continue;
    preferred[n] = pref;
    feasible.push_back(n);
    if (alloc(n) > 0) {
      if (!any || free(n) < min) min = free(n);
      if (!any || free(n) > max) max = free(n);
      any = true;
    }
  }
  NodeChoice best;
  double best_score = 0;
  for (int n : feasible) {
    const bool now = state.FitsNow(n, req);
    if (!now && !state.FitsPipelined(n, req)) continue;
    double score =
        (now ? 100 : 0) + (preferred[n] ? 50 : 0) + (!gpu_pod && !cluster.node(n).has_gpu ? 10 : 0);
    score += spread ? SpreadScore(free(n), alloc(n)) : BinpackScore(free(n), alloc(n), min, max);
    if (best.node < 0 || score > best_score) {  // n ascends: equal scores keep the smaller name
      best = NodeChoice{n, now, {}};
      best_score = score;
    }
  }
  return best;
}

Snapshot RandomCluster(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  SnapshotBuilder b;
  const char* zones[] = {"a", "b", "c"};
  const double cpus[] = {0, 4000, 8000, 16000, 16000};
  const double gpus[] = {0, 0, 2, 4, 8};
  const int nodes = 40;
  for (int n = 0; n < nodes; ++n) {
    ResourceMap allocatable{{"cpu", cpus[pick(5)]}, {"memory", 1000.0 * (1 + pick(8))}};
    const double gpu = gpus[pick(5)];
    if (gpu > 0) allocatable["nvidia.com/gpu"] = gpu;
    b.Node("node-" + std::to_string(100 + n), allocatable).Label("zone", zones[pick(3)]);
    switch (pick(6)) {
      case 0:
        b.Taint("dedicated", "ml", "NoSchedule");
        break;
      case 1:
        b.Taint("spot", "true", "PreferNoSchedule");
        break;
      case 2:
        b.Unschedulable();
        break;
      default:
        break;
    }
  }
  b.Queue("team");
  // Running and releasing pods fill some nodes (possibly over capacity, which is allowed).
  b.Group("busy", "team");
  for (int i = 0; i < 50; ++i) {
    const std::string node = "node-" + std::to_string(100 + pick(nodes));
    b.Pod(
        {{"cpu", 1000.0 * pick(4)}, {"memory", 500.0 * pick(3)}, {"nvidia.com/gpu", 1.0 * pick(3)}},
        node, pick(3) == 0 ? PodPhase::kReleasing : PodPhase::kRunning);
  }
  for (int i = 0; i < 150; ++i) {
    b.Group("job-" + std::to_string(1000 + i), "team");
    ResourceMap req{{"cpu", 500.0 * pick(9)}, {"memory", 250.0 * pick(6)}};
    if (pick(3) == 0) req["nvidia.com/gpu"] = 1.0 * (1 + pick(4));
    b.Pod(req);
    if (pick(4) == 0) b.Selector("zone", zones[pick(3)]);
    if (pick(4) == 0) b.Tolerate("dedicated", "Exists", "", "");
    if (pick(4) == 0) b.Tolerate("spot", "Equal", "true", "PreferNoSchedule");
  }
  return b.Build();
}

class PlacementIndexTest : public ::testing::TestWithParam<std::tuple<uint32_t, Placement>> {};

TEST_P(PlacementIndexTest, IndexedChoiceEqualsScoringEveryNode) {
  const auto [seed, placement] = GetParam();
  Snapshot snapshot = RandomCluster(seed);
  Policy policy;
  policy.placement = placement;
  ASSERT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule), IsOk());
  KaiFairShare shares = ::arbiter::testing::KaiFairShareOf(snapshot, policy);
  Session session{shares};
  const Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  std::mt19937 rng(seed * 7 + 1);
  int compared = 0, bound = 0;
  for (int pod = 0; pod < cluster.num_pods(); ++pod) {
    if (state.pod_state(pod) != PodState::kPending) continue;
    const NodeChoice naive = NaiveChoose(cluster, state, placement == Placement::kSpread, pod);
    const NodeChoice indexed = session.placer().Choose(pod);
    ++compared;
    ASSERT_EQ(indexed.node, naive.node) << "pod " << cluster.pod_name(pod);
    ASSERT_EQ(indexed.fits_now, naive.fits_now) << "pod " << cluster.pod_name(pod);
    if (indexed.node < 0) continue;
    const WorkingState::Mark mark = state.Checkpoint();
    state.Bind(pod, indexed.node, !indexed.fits_now);
    if (rng() % 4 == 0) {
      state.Rollback(mark);
    } else {
      state.Commit(mark);
      ++bound;
    }
  }
  EXPECT_GT(compared, 100);
  EXPECT_GT(bound, 20);
}

INSTANTIATE_TEST_SUITE_P(Seeds, PlacementIndexTest,
                         ::testing::Combine(::testing::Values(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u),
                                            ::testing::Values(Placement::kBinpack,
                                                              Placement::kSpread)));

}  // namespace
}  // namespace arbiter::kai
