// Determinism (SEMANTICS.md §0.5): equal requests give equal responses, whatever the order of the
// repeated fields in the input.
#include <algorithm>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::Describe;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;

// A cluster where order matters: ties on scores and queue shares, gangs, limits, taints,
// selectors, releasing pods and pods that cannot fit.
Snapshot Busy() {
  SnapshotBuilder b;
  for (int n = 0; n < 12; ++n) {
    b.Node("node-" + std::to_string(n),
           {{"cpu", 16000}, {"memory", 64}, {"nvidia.com/gpu", n % 3 == 0 ? 0.0 : 4.0}})
        .Label("zone", n % 2 == 0 ? "a" : "b");
    if (n == 5) b.Taint("dedicated", "infra", "NoSchedule");
    if (n == 7) b.Taint("spot", "true", "PreferNoSchedule");
  }
  b.Queue("dept-1").Deserved({{"nvidia.com/gpu", 16}}).Queue("dept-2").Limit({{"cpu", 60000}});
  for (int q = 0; q < 6; ++q) {
    b.Queue("team-" + std::to_string(q), q < 3 ? "dept-1" : "dept-2")
        .Deserved({{"nvidia.com/gpu", 2.0 * q}, {"cpu", 8000}});
  }
  b.Group("old-0", "team-1").RunningPods(2, {{"cpu", 2000}, {"nvidia.com/gpu", 2}}, "node-1");
  b.Group("old-1", "team-4").RunningPods(3, {{"cpu", 4000}}, "node-3");
  b.Group("leaving", "team-2").Pod({{"nvidia.com/gpu", 4}}, "node-2", PodPhase::kReleasing);
  for (int g = 0; g < 24; ++g) {
    b.Group("job-" + std::to_string(g), "team-" + std::to_string(g % 6))
        .Priority(g % 4)
        .MinMember(g % 5 == 0 ? 3 : 1)
        .Created(g % 3);
    for (int p = 0; p < 1 + g % 4; ++p) {
      b.Pod({{"cpu", 1000.0 * (1 + g % 3)},
             {"memory", 2},
             {"nvidia.com/gpu", g % 2 == 0 ? 1.0 : 0.0}});
      if (g % 7 == 0) b.Selector("zone", "b");
      if (g % 6 == 0) b.Tolerate("dedicated", "Exists", "", "");
    }
  }
  b.Group("huge", "team-0").Pods(1, {{"nvidia.com/gpu", 64}});
  return b.Build();
}

Policy Placing(Placement placement) {
  Policy policy;
  policy.placement = placement;
  return policy;
}

TEST(Determinism, SameRequestTwiceGivesEqualResults) {
  for (Placement placement : {Placement::kBinpack, Placement::kSpread}) {
    const Snapshot s = Busy();
    const std::string first = Describe(RunCycle(s, Placing(placement)));
    EXPECT_EQ(first, Describe(RunCycle(s, Placing(placement))));
    EXPECT_NE(first.find("B "), std::string::npos);  // the cycle did place pods
    EXPECT_NE(first.find("P huge"), std::string::npos);
  }
}

TEST(Determinism, PermutedInputGivesEqualResults) {
  for (Placement placement : {Placement::kBinpack, Placement::kSpread}) {
    const Snapshot s = Busy();
    const std::string expected = Describe(RunCycle(s, Placing(placement)));
    for (uint32_t seed = 1; seed <= 5; ++seed) {
      std::mt19937 rng(seed);
      Snapshot permuted = s;
      std::shuffle(permuted.nodes.begin(), permuted.nodes.end(), rng);
      std::shuffle(permuted.queues.begin(), permuted.queues.end(), rng);
      std::shuffle(permuted.pod_groups.begin(), permuted.pod_groups.end(), rng);
      for (PodGroup& group : permuted.pod_groups) {
        std::shuffle(group.pods.begin(), group.pods.end(), rng);
        for (Pod& pod : group.pods)
          std::shuffle(pod.tolerations.begin(), pod.tolerations.end(), rng);
      }
      for (Node& node : permuted.nodes) std::shuffle(node.taints.begin(), node.taints.end(), rng);
      EXPECT_EQ(Describe(RunCycle(permuted, Placing(placement))), expected) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace arbiter::kai
