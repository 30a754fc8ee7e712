// One KAI cycle through ScheduleKai (core/kai/kai_schedule.h), whole: determinism, the
// scenario tables, and the session rules a cycle keeps.

#include "core/kai/kai_schedule.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"
#include "tests/unit/kai/kai_test_util.h"
#include "tests/unit/kai/scenario_json.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::IsOk;

using ::arbiter::testing::AllocateOnly;
using ::arbiter::testing::Bindings;
using ::arbiter::testing::Cpu;
using ::arbiter::testing::Describe;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// =================================================================================================
// Determinism (SEMANTICS.md §0.5): equal requests give equal responses, whatever the order of the
// repeated fields in the input.

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

// =================================================================================================
// Whole-cycle scenarios (issue 3): each is a table test here, and the same request and the
// expected decisions are kept as proto3 JSON in tests/scenarios/kai/<name>/ for the scenario
// runner. This test fails when a file no longer matches its case; run it with
// ARBITER_UPDATE_SCENARIOS=1 to rewrite the files after a deliberate change.

struct Scenario {
  std::string name;
  Snapshot snapshot;
  Policy policy;
  std::vector<std::string> bindings;        // "pod@node", "+" when pipelined
  std::vector<std::string> pending;         // "group:reason"
  std::vector<std::string> evictions = {};  // "pod@node REASON for preemptor"
};

std::string ReasonName(EvictionReason reason) {
  switch (reason) {
    case EvictionReason::kFairShareReclaim:
      return "FAIR_SHARE_RECLAIM";
    case EvictionReason::kQuotaReclaim:
      return "QUOTA_RECLAIM";
    case EvictionReason::kPriorityPreemption:
      return "PRIORITY_PREEMPTION";
    case EvictionReason::kConsolidation:
      return "CONSOLIDATION";
    default:
      return "OTHER";
  }
}

std::vector<std::string> Evictions(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Eviction& e : result.evictions) {
    out.push_back(e.pod + "@" + e.node + " " + ReasonName(e.reason) + " for " +
                  e.preemptor_pod_group);
  }
  return out;
}

std::vector<Scenario> Scenarios() {
  std::vector<Scenario> all;

  // A gang that fits only whole: "train" (3 × 4 GPUs) fits across both nodes; "eval" (2 × 2
  // GPUs) then finds 2 GPUs for one pod and none for the other, so neither is bound.
  all.push_back(Scenario{"gang_fits_only_whole",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(8))
                             .Node("node-b", Gpu(6))
                             .Queue("research")
                             .Group("eval", "research")
                             .Priority(1)
                             .MinMember(2)
                             .Pods(2, Gpu(2))
                             .Group("train", "research")
                             .Priority(2)
                             .MinMember(3)
                             .Pods(3, Gpu(4))
                             .Build(),
                         AllocateOnly(),
                         {"train-0@node-b", "train-1@node-a", "train-2@node-a"},
                         {"eval:gang-does-not-fit"}});

  // A limit up the tree: dept caps nvidia.com/gpu at 6 and team-b already runs 4, so team-a's
  // 2 × 2 GPU gang would take dept to 8, though the cluster has room. "solo" in another
  // department is placed.
  all.push_back(Scenario{"limit_up_the_tree",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(8))
                             .Node("node-b", Gpu(8))
                             .Queue("dept")
                             .Limit(Gpu(6))
                             .Queue("team-a", "dept")
                             .Queue("team-b", "dept")
                             .Queue("other")
                             .Group("busy", "team-b")
                             .RunningPods(2, Gpu(2), "node-a")
                             .Group("gang", "team-a")
                             .MinMember(2)
                             .Pods(2, Gpu(2))
                             .Group("solo", "other")
                             .Pods(1, Gpu(2))
                             .Build(),
                         AllocateOnly(),
                         {"solo-0@node-a"},
                         {"gang:queue-over-limit"}});

  // Non-preemptible work must fit in deserved (4 GPUs), counting only non-preemptible
  // allocation: "serve-2" would take it to 6; the preemptible "batch" may go above deserved.
  all.push_back(Scenario{"non_preemptible_over_quota",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(8))
                             .Node("node-b", Gpu(8))
                             .Queue("inference")
                             .Deserved(Gpu(4))
                             .Group("serve-1", "inference")
                             .Priority(100)
                             .RunningPods(1, Gpu(2), "node-a")
                             .Group("serve-2", "inference")
                             .Priority(100)
                             .Pods(1, Gpu(4))
                             .Group("batch", "inference")
                             .Priority(10)
                             .Pods(1, Gpu(6))
                             .Build(),
                         AllocateOnly(),
                         {"batch-0@node-a"},
                         {"serve-2:non-preemptible-over-quota"}});

  // Selectors and taints: h100 nodes are tainted for research; a-spot prefers no scheduling, so
  // "any" takes a100-1 although a-spot ties on score and sorts first, while "spot-ok", which
  // tolerates it, takes a-spot; the v100 node is unschedulable.
  all.push_back(Scenario{"selectors_and_taints",
                         SnapshotBuilder()
                             .Node("a100-1", Gpu(8))
                             .Label("gpu", "a100")
                             .Node("h100-1", Gpu(8))
                             .Label("gpu", "h100")
                             .Taint("dedicated", "research", "NoSchedule")
                             .Node("a-spot", Gpu(8))
                             .Label("gpu", "a100")
                             .Taint("spot", "true", "PreferNoSchedule")
                             .Node("v100-1", Gpu(8))
                             .Label("gpu", "v100")
                             .Unschedulable()
                             .Queue("team")
                             .Group("h100-tolerating", "team")
                             .Pod(Gpu(4))
                             .Selector("gpu", "h100")
                             .Tolerate("dedicated", "Equal", "research", "NoSchedule")
                             .Group("h100-plain", "team")
                             .Pod(Gpu(4))
                             .Selector("gpu", "h100")
                             .Group("any", "team")
                             .Pod(Gpu(8))
                             .Group("spot-ok", "team")
                             .Pod(Gpu(4))
                             .Tolerate("spot", "Exists", "", "")
                             .Group("v100", "team")
                             .Pod(Gpu(1))
                             .Selector("gpu", "v100")
                             .Build(),
                         AllocateOnly(),
                         {"any-0@a100-1", "h100-tolerating-0@h100-1", "spot-ok-0@a-spot"},
                         {"h100-plain:no-node-matches-selector", "v100:no-node-matches-selector"}});

  // Binpack versus spread on the same cluster: binpack fills the busier node first, spread
  // takes the node with the largest free fraction.
  auto placement_cluster = [] {
    return SnapshotBuilder()
        .Node("node-a", Gpu(8))
        .Node("node-b", Gpu(8))
        .Node("node-c", Gpu(4))
        .Queue("team")
        .Group("running", "team")
        .RunningPods(1, Gpu(4), "node-b")
        .Group("web", "team")
        .Pods(3, Gpu(2))
        .Build();
  };
  all.push_back(Scenario{"binpack",
                         placement_cluster(),
                         AllocateOnly(Placement::kBinpack),
                         {"web-0@node-b", "web-1@node-b", "web-2@node-c"},
                         {}});
  all.push_back(Scenario{"spread",
                         placement_cluster(),
                         AllocateOnly(Placement::kSpread),
                         {"web-0@node-a", "web-1@node-c", "web-2@node-a"},
                         {}});

  // Pipelined binding onto releasing pods: node-a is full of a releasing job. "small" fits now on
  // node-b; "gang" fits only on node-a's releasing capacity and is pipelined as a whole;
  // "late" finds nothing left to claim.
  all.push_back(
      Scenario{"pipelined_onto_releasing",
               SnapshotBuilder()
                   .Node("node-a", {{"cpu", 32000}, {"nvidia.com/gpu", 8}})
                   .Node("node-b", {{"cpu", 32000}, {"nvidia.com/gpu", 4}})
                   .Queue("team")
                   .Group("finished", "team")
                   .Pod({{"cpu", 8000}, {"nvidia.com/gpu", 8}}, "node-a", PodPhase::kReleasing)
                   .Group("small", "team")
                   .Priority(3)
                   .Pods(1, Gpu(4))
                   .Group("gang", "team")
                   .Priority(2)
                   .MinMember(2)
                   .Pods(2, Gpu(4))
                   .Group("late", "team")
                   .Priority(1)
                   .Pods(1, Gpu(2))
                   .Build(),
               AllocateOnly(),
               {"gang-0@node-a+", "gang-1@node-a+", "small-0@node-b"},
               {"finished:gang-incomplete", "late:insufficient-resources"}});

  // Issue 4: a team reclaims its deserved quota from a team that borrowed it. team-b holds all 8
  // GPUs with deserved 4 (and fair share 4, since team-a asks for its deserved 4); team-a's
  // 2 × 2 GPU gang is within its fair share, and team-b's elastic group gives up its last two
  // pods, one at a time, each while team-b is above its allocatable share: fair-share reclaim.
  all.push_back(Scenario{"reclaim_deserved_quota",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(8))
                             .Queue("team-a")
                             .Deserved(Gpu(4))
                             .Queue("team-b")
                             .Deserved(Gpu(4))
                             .Group("borrowed", "team-b")
                             .RunningPods(4, Gpu(2), "node-a")
                             .Group("train", "team-a")
                             .MinMember(2)
                             .Pods(2, Gpu(2))
                             .Build(),
                         Policy{},
                         {"train-0@node-a+", "train-1@node-a+"},
                         {},
                         {"borrowed-2@node-a FAIR_SHARE_RECLAIM for train",
                          "borrowed-3@node-a FAIR_SHARE_RECLAIM for train"}});

  // Issue 4: a lower-priority job is preempted in the same queue.
  all.push_back(Scenario{"preempt_lower_priority",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(4))
                             .Queue("team")
                             .Deserved(Gpu(4))
                             .Group("batch", "team")
                             .Priority(10)
                             .MinMember(2)
                             .RunningPods(2, Gpu(2), "node-a")
                             .Group("urgent", "team")
                             .Priority(50)
                             .Pods(1, Gpu(4))
                             .Build(),
                         Policy{},
                         {"urgent-0@node-a+"},
                         {},
                         {"batch-0@node-a PRIORITY_PREEMPTION for urgent",
                          "batch-1@node-a PRIORITY_PREEMPTION for urgent"}});

  // Issue 4: consolidation lets a 4-GPU job fit on a fragmented node set: three 4-GPU nodes
  // each hold one 2-GPU pod; one pod moves next to another and frees a whole node.
  all.push_back(Scenario{"consolidate_fragmented",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(4))
                             .Node("node-b", Gpu(4))
                             .Node("node-c", Gpu(4))
                             .Queue("team")
                             .Group("web-a", "team")
                             .RunningPods(1, Gpu(2), "node-a")
                             .Group("web-b", "team")
                             .RunningPods(1, Gpu(2), "node-b")
                             .Group("web-c", "team")
                             .RunningPods(1, Gpu(2), "node-c")
                             .Group("train", "team")
                             .Pods(1, Gpu(4))
                             .Build(),
                         Policy{},
                         {"train-0@node-c+", "web-c-0@node-a+"},
                         {},
                         {"web-c-0@node-c CONSOLIDATION for train"}});
  return all;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class ScenarioTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(ScenarioTest, DecisionsAndFiles) {
  const Scenario& s = GetParam();
  ScheduleResult result = arbiter::testing::RunCycle(s.snapshot, s.policy);
  EXPECT_EQ(Bindings(result), s.bindings);
  EXPECT_EQ(Pending(result), s.pending);
  EXPECT_EQ(Evictions(result), s.evictions);

  const std::filesystem::path dir =
      std::filesystem::path(ARBITER_SOURCE_DIR) / "tests/scenarios/kai" / s.name;
  const std::string request = arbiter::testing::RequestJson(s.snapshot, s.policy);
  const std::string expected = arbiter::testing::DecisionsJson(result);
  if (std::getenv("ARBITER_UPDATE_SCENARIOS") != nullptr) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "request.json") << request;
    std::ofstream(dir / "expected.json") << expected;
  }
  EXPECT_EQ(ReadFile(dir / "request.json"), request);
  EXPECT_EQ(ReadFile(dir / "expected.json"), expected);
}

INSTANTIATE_TEST_SUITE_P(Kai, ScenarioTest, ::testing::ValuesIn(Scenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& param) {
                           return param.param.name;
                         });

// =================================================================================================
// The working-state rules of SEMANTICS.md §4.1 (pipelined claims, restored victims) and the
// decision rules pinned by comparing the cycle with KAI's code (§4.3's candidate condition, §4.1
// over §4.8). Each test names the rule it holds in place.

// "pod@node for preemptor" per eviction.
std::vector<std::string> EvictionsFor(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Eviction& e : result.evictions) {
    out.push_back(absl::StrCat(e.pod, "@", e.node, " for ", e.preemptor_pod_group));
  }
  return out;
}

// ---- §4.1: a pod bound with after_evictions claims releasing capacity first ----

// One node's statements, on a fixture of two 2-GPU nodes: "v" runs 1 GPU on n1.
struct TwoNodes {
  Snapshot snapshot = SnapshotBuilder()
                          .Node("n1", Gpu(2))
                          .Node("n2", Gpu(2))
                          .Queue("team")
                          .Group("v", "team")
                          .RunningPods(1, Gpu(1), "n1")
                          .Group("job", "team")
                          .MinMember(2)
                          .Pods(2, Gpu(1))
                          .Build();
  KaiFairShare shares = ::arbiter::testing::KaiFairShareOf(snapshot, Policy{});
  Session session{shares};
  const Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  int gpu = cluster.NodeSpaceOf(cluster.resources().Find("nvidia.com/gpu"));
  int Group(const std::string& name) const {
    for (int g = 0; g < cluster.num_groups(); ++g) {
      if (cluster.group_name(g) == name) return g;
    }
    return -1;
  }
};

// The pod would fit now on n1's idle GPU, but it is bound with after_evictions: it takes the GPU
// that v releases, and the idle GPU stays idle for the next pod. (Regression: it took the idle
// GPU, left the releasing one unclaimed, and the next pod lost the fits-now band on n1.)
TEST(PipelinedClaim, APipelinedPodThatFitsNowTakesReleasingCapacityFirst) {
  TwoNodes f;
  f.state.Evict(f.cluster.group(f.Group("v")).first_pod);
  ASSERT_EQ(f.state.idle(0, f.gpu), 1);
  ASSERT_EQ(f.state.releasing(0, f.gpu), 1);
  const int job = f.Group("job");
  f.state.Bind(f.state.pending_pod(job, 0), 0, /*after_evictions=*/true);
  EXPECT_EQ(f.state.idle(0, f.gpu), 1);
  EXPECT_EQ(f.state.releasing(0, f.gpu), 0);
  EXPECT_TRUE(f.session.placer().Choose(f.state.pending_pod(job, 0)).fits_now);
}

// A pod bound now and then pipelined with its gang (§4.5) is accounted as KAI re-pipelines it
// on its node: it gives back its idle capacity and claims the releasing capacity first.
TEST(PipelinedClaim, APodPipelinedWithItsGangTakesReleasingCapacityFirst) {
  TwoNodes f;
  f.state.Evict(f.cluster.group(f.Group("v")).first_pod);
  const int job = f.Group("job");
  const int pod = f.state.pending_pod(job, 0);
  f.state.Bind(pod, 0, /*after_evictions=*/false);
  ASSERT_EQ(f.state.idle(0, f.gpu), 0);
  f.state.MarkPipelined(pod);
  EXPECT_TRUE(f.state.after_evictions(pod));
  EXPECT_EQ(f.state.idle(0, f.gpu), 1);
  EXPECT_EQ(f.state.releasing(0, f.gpu), 0);
}

// A moved victim claims releasing capacity first too.
TEST(PipelinedClaim, AMovedVictimTakesReleasingCapacityFirst) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(2))
                   .Node("n2", Gpu(2))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(1), "n2")
                   .Build();
  KaiFairShare shares = ::arbiter::testing::KaiFairShareOf(s, Policy{});
  Session session{shares};
  const Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  const int gpu = cluster.NodeSpaceOf(cluster.resources().Find("nvidia.com/gpu"));
  state.Evict(cluster.group(0).first_pod);  // a leaves n1
  state.Evict(cluster.group(1).first_pod);  // b leaves n2: 1 idle, 1 releasing there
  state.Relocate(cluster.group(0).first_pod, 1);
  EXPECT_EQ(state.idle(1, gpu), 1);
  EXPECT_EQ(state.releasing(1, gpu), 0);
}

// The cycle end to end (PREEMPT, spread): "low" must go for "high" to pass its queue's limit.
// high's first pod fits now on n1 but is pipelined, so it takes the GPU low releases; its second
// pod then fits now on n1 as well. (Regression: the second pod went to n2.)
TEST(PipelinedClaim, TheNextPodOfTheUnitKeepsTheFitsNowBand) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(2))
                   .Node("n2", Gpu(2))
                   .Queue("team")
                   .Limit(Gpu(2))
                   .Queue("other")
                   .Group("low", "team")
                   .Priority(10)
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("held", "other")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .RunningPods(1, Gpu(1), "n2")
                   .Group("high", "team")
                   .Priority(50)
                   .MinMember(2)
                   .Pods(2, Gpu(1))
                   .Build();
  ScheduleResult result =
      RunCycle(s, PolicyWith({Action::kAllocate, Action::kPreempt}, Placement::kSpread));
  EXPECT_THAT(Bindings(result), ElementsAre("high-0@n1+", "high-1@n1+"));
  EXPECT_THAT(EvictionsFor(result), ElementsAre("low-0@n1 for high"));
}

// ALLOCATE's whole-gang pipelining, end to end (spread): "gang" binds its first pod now on n1 and
// its second, pipelined, on n2; the whole gang is then pipelined, so its first pod claims what n1
// releases and leaves n1's idle GPU to "next", which is bound now. (Regression: the first pod
// kept n1's idle GPU and "next" was pipelined onto the releasing one.)
TEST(PipelinedClaim, AGangPipelinedAsAWholeLeavesIdleCapacityToTheNextJob) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(2))
                   .Node("n2", Gpu(1))
                   .Queue("team")
                   .Group("leaving", "team")
                   .Pod(Gpu(1), "n1", PodPhase::kReleasing)
                   .Pod(Gpu(1), "n2", PodPhase::kReleasing)
                   .Group("gang", "team")
                   .Created(1)
                   .MinMember(2)
                   .Pods(2, Gpu(1))
                   .Group("next", "team")
                   .Created(2)
                   .Pods(1, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate}, Placement::kSpread));
  EXPECT_THAT(Bindings(result), ElementsAre("gang-0@n1+", "gang-1@n2+", "next-0@n1"));
}

// ---- §4.1: a victim re-placed on its own node is restored ----

// "high" needs 2 GPUs of n1: the victim search draws v1 (not enough alone), then v2, and tries
// both. high takes v2's GPUs; v1 is re-placed on n1, its own node, so it is restored: RUNNING
// there, not in the answer, and a victim again. "later" then preempts it. (Regression: v1 stayed
// "moved" in the working state, was never a victim again, and "later" stayed pending.)
SnapshotBuilder HighOverTwoVictims() {
  SnapshotBuilder b;
  b.Node("n1", Gpu(3))
      .Queue("team")
      .Group("v1", "team")
      .Priority(0)
      .RunningPods(1, Gpu(1), "n1")
      .Group("v2", "team")
      .Priority(1)
      .RunningPods(1, Gpu(2), "n1")
      .Group("high", "team")
      .Priority(10)
      .Created(10)
      .Pods(1, Gpu(2));
  return b;
}

TEST(RestoredVictim, AVictimReplacedOnItsOwnNodeIsRestoredAndCanBeEvictedLater) {
  Snapshot s =
      HighOverTwoVictims().Group("later", "team").Priority(10).Created(20).Pods(1, Gpu(1)).Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kPreempt}));
  EXPECT_THAT(Bindings(result), ElementsAre("high-0@n1+", "later-0@n1+"));
  EXPECT_THAT(EvictionsFor(result), ElementsAre("v1-0@n1 for later", "v2-0@n1 for high"));
  EXPECT_THAT(result.pending, IsEmpty());
}

// The restore in the working state: the pod is RUNNING again on its node, counted for its queue,
// and its node's releasing capacity no longer holds its requests.
TEST(RestoredVictim, RestoreUndoesTheEviction) {
  TwoNodes f;
  const int v = f.Group("v");
  const int pod = f.cluster.group(v).first_pod;
  const int team = f.cluster.tree().Find("team");
  const int gpu = f.cluster.resources().Find("nvidia.com/gpu");
  f.state.Evict(pod);
  f.state.Restore(pod);
  EXPECT_EQ(f.state.pod_state(pod), PodState::kRunning);
  EXPECT_EQ(f.state.running(v), 1);
  EXPECT_EQ(f.state.evicted(v), 0);
  EXPECT_EQ(f.state.moved(v), 0);
  EXPECT_EQ(f.state.allocated(team)[gpu], 1);
  EXPECT_EQ(f.state.idle(0, f.gpu), 1);
  EXPECT_EQ(f.state.releasing(0, f.gpu), 0);
}

// A pipelined claim on the releasing capacity the victim's eviction made takes the shortfall
// from idle once the victim is restored, so the node's free capacity stays exact.
TEST(RestoredVictim, AClaimOnTheVictimsReleasingCapacityMovesToIdle) {
  TwoNodes f;
  const int pod = f.cluster.group(f.Group("v")).first_pod;
  f.state.Evict(pod);
  const int job = f.Group("job");
  f.state.Bind(f.state.pending_pod(job, 0), 0, /*after_evictions=*/true);  // claims v's GPU
  f.state.Restore(pod);
  EXPECT_EQ(f.state.idle(0, f.gpu), 0);
  EXPECT_EQ(f.state.releasing(0, f.gpu), 0);
  EXPECT_EQ(f.state.free(0, f.gpu), 0);
}

// ---- Pinned decision rules ----

// §4.3, pinned: an action's own condition on candidates is checked when the job comes up. Until
// then the job is its queue's job in the comparisons (KAI pops it, then skips it). team-a's best
// job "big" cannot reclaim (2 GPUs above its fair share of 1) but still stands for team-a, which
// is then not starved, so team-b's "b" comes first and reclaims the one evictable GPU; team-a's
// "small" comes after and finds no victim. Filtering "big" out beforehand would let team-a (the
// older queue, starved with "small") go first instead.
TEST(PinnedRules, AnActionsCandidateConditionIsCheckedWhenTheJobComesUp) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(2))
                   .Queue("team-a")
                   .QueueCreated(1)
                   .Deserved(Gpu(1))
                   .Queue("team-b")
                   .QueueCreated(2)
                   .Deserved(Gpu(1))
                   .Queue("team-c")
                   .QueueCreated(3)
                   .Deserved(Gpu(0))
                   .Group("held", "team-c")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("v", "team-c")
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("big", "team-a")
                   .Priority(10)
                   .Pods(1, Gpu(2))
                   .Group("small", "team-a")
                   .Priority(5)
                   .Pods(1, Gpu(1))
                   .Group("b", "team-b")
                   .Pods(1, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kReclaim}));
  EXPECT_THAT(Bindings(result), ElementsAre("b-0@n1+"));
  EXPECT_THAT(EvictionsFor(result), ElementsAre("v-0@n1 for b"));
  EXPECT_THAT(Pending(result),
              ElementsAre("big:insufficient-resources", "small:insufficient-resources"));
}

// §4.1 over §4.8, pinned: without ALLOCATE in the call, an eviction action never places a unit
// that needs no victim, even one that fits only on capacity this response's evictions release.
// job-1 reclaims the gang; job-2 would fit on what the gang releases, and stays pending.
TEST(PinnedRules, WithoutAllocateAUnitThatNeedsNoVictimStaysPending) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(4))
                   .Group("gang", "team-b")
                   .MinMember(4)
                   .RunningPods(4, Gpu(2), "n1")
                   .Group("job-1", "team-a")
                   .Pods(1, Gpu(2))
                   .Group("job-2", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  const std::vector<std::vector<Action>> lists = {{Action::kReclaim},
                                                  {Action::kReclaim, Action::kPreempt},
                                                  {Action::kReclaim, Action::kConsolidate}};
  for (const std::vector<Action>& actions : lists) {
    SCOPED_TRACE(actions.size());
    ScheduleResult result = RunCycle(s, PolicyWith(actions));
    EXPECT_THAT(Bindings(result), ElementsAre("job-1-0@n1+"));
    EXPECT_EQ(result.evictions.size(), 4u);
    EXPECT_THAT(Pending(result), ElementsAre("job-2:not-attempted"));
  }
}

// ---- The victim search's counters (CycleHooks::phase_counters) ----

// Every eviction action reports its counters once, before its phase ends; ALLOCATE does not.
// One reclaimer, placed after drawing the gang that holds the node.
TEST(SearchCounters, EachEvictionActionReportsWhatItsSearchDid) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(4))
                   .Group("gang", "team-b")
                   .MinMember(4)
                   .RunningPods(4, Gpu(2), "n1")
                   .Group("job", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  std::map<std::string, std::map<std::string, int64_t>> reported;
  std::vector<std::string> order;
  CycleHooks hooks;
  hooks.phase_counters = [&](std::string_view phase,
                             const std::vector<std::pair<std::string_view, int64_t>>& counters) {
    order.emplace_back(phase);
    for (const auto& [name, value] : counters)
      reported[std::string(phase)][std::string(name)] = value;
  };
  hooks.phase_done = [&](std::string_view phase) { order.push_back("done " + std::string(phase)); };
  absl::StatusOr<ScheduleResult> result = ::arbiter::testing::ScheduleKaiWithHooks(
      s, PolicyWith({Action::kAllocate, Action::kReclaim, Action::kPreempt}), hooks);
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(order, ElementsAre("done fair_share", "done allocate", "reclaim", "done reclaim",
                                 "preempt", "done preempt", "done respond"));
  EXPECT_EQ(reported["reclaim"]["candidates"], 1);
  EXPECT_EQ(reported["reclaim"]["placed"], 1);
  EXPECT_EQ(reported["reclaim"]["failed"], 0);
  EXPECT_EQ(reported["reclaim"]["victims_drawn"], 1);  // the whole gang is one eviction unit
  EXPECT_GE(reported["reclaim"]["tries"], 2);          // without victims, then with the gang
  EXPECT_EQ(reported["preempt"]["candidates"], 0);
  EXPECT_EQ(reported["preempt"].size(), 16u);
  EXPECT_EQ(reported["reclaim"]["explanations"], 0);  // nothing failed
}

// A unit that fails while min-runtime protects victims is searched again without min-runtime, to
// say in its pending reason whether that protection stopped it. That search is counted apart:
// its tries are in `explanation_tries`, not in `tries`.
TEST(SearchCounters, TheSearchThatExplainsAFailureIsCountedApart) {
  const Snapshot s = ::arbiter::testing::ProtectedGangHoldsTheNode()
                         .Group("job", "team-a")
                         .Pods(1, Gpu(2))
                         .Build();
  std::map<std::string, int64_t> reclaim;
  CycleHooks hooks;
  hooks.phase_counters = [&](std::string_view phase,
                             const std::vector<std::pair<std::string_view, int64_t>>& counters) {
    if (phase != "reclaim") return;
    for (const auto& [name, value] : counters) reclaim[std::string(name)] = value;
  };
  absl::StatusOr<ScheduleResult> result = ::arbiter::testing::ScheduleKaiWithHooks(
      s, PolicyWith({Action::kAllocate, Action::kReclaim}), hooks);
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->evictions, IsEmpty());
  EXPECT_EQ(reclaim["failed"], 1);
  // The protected gang is no victim: the action's own search tries the unit without victims and
  // draws nothing; the explanation draws the gang and tries it.
  EXPECT_EQ(reclaim["victims_drawn"], 0);
  EXPECT_EQ(reclaim["explanations"], 1);
  EXPECT_GE(reclaim["explanation_tries"], 1);
}

// ---- The attempts, in order (CycleHooks::attempt) ----

// Every attempt is told once, in the order the actions made it, with the pods its commit evicted
// and no others; the answer is the one computed without the hook. team-a's job fits on n1's
// free GPUs in ALLOCATE; job-2 does not and reclaims the gang, whose four pods it evicts; `late`
// (8 GPUs, team-b) is refused by RECLAIM's precheck and finds no victims in PREEMPT, and neither
// attempt is told job-2's evictions.
TEST(AttemptTrace, EveryAttemptIsToldInOrderWithWhatItsCommitEvicted) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(2))
                   .Queue("team-a")
                   .Deserved(Gpu(6))
                   .Queue("team-b")
                   .Deserved(Gpu(4))
                   .Group("gang", "team-b")
                   .MinMember(4)
                   .RunningPods(4, Gpu(2), "n1")
                   .Group("job-1", "team-a")
                   .Pods(1, Gpu(2))
                   .Group("job-2", "team-a")
                   .Pods(1, Gpu(4))
                   .Group("late", "team-b")
                   .Pods(1, Gpu(8))
                   .Build();
  const Policy policy = PolicyWith({Action::kAllocate, Action::kReclaim, Action::kPreempt});
  std::vector<std::string> told;
  CycleHooks hooks;
  hooks.attempt = [&](const AttemptTrace& attempt) {
    std::string line =
        absl::StrCat(std::string(attempt.action), " ", std::string(attempt.pod_group), " ",
                     attempt.pods, " ", std::string(attempt.outcome));
    for (std::string_view pod : attempt.evicted) absl::StrAppend(&line, " -", std::string(pod));
    for (std::string_view pod : attempt.moved) absl::StrAppend(&line, " ~", std::string(pod));
    told.push_back(line);
  };
  absl::StatusOr<ScheduleResult> traced =
      ::arbiter::testing::ScheduleKaiWithHooks(s, policy, hooks);
  ASSERT_THAT(traced, IsOk());
  EXPECT_THAT(told, ElementsAre("allocate job-1 1 placed", "allocate job-2 1 pending",
                                "allocate late 1 pending",
                                "reclaim job-2 1 placed -gang-0 -gang-1 -gang-2 -gang-3",
                                "reclaim late 1 refused", "preempt late 1 pending"));
  const ScheduleResult plain = RunCycle(s, policy);
  EXPECT_EQ(Bindings(*traced), Bindings(plain));
  EXPECT_EQ(traced->evictions.size(), plain.evictions.size());
}

// A victim the solution re-placed on its own node is in neither list of the answer; the attempt
// names it as restored, so the victim set the search took can be read back. The case of
// RestoredVictim above: preempt for high takes v1 and v2, evicts v2 and restores v1.
TEST(AttemptTrace, AVictimRestoredOnItsOwnNodeIsToldAsRestored) {
  Snapshot s = HighOverTwoVictims().Build();
  std::vector<std::string> told;
  CycleHooks hooks;
  hooks.attempt = [&](const AttemptTrace& attempt) {
    std::string line =
        absl::StrCat(std::string(attempt.action), " ", std::string(attempt.pod_group), " ",
                     std::string(attempt.outcome));
    for (std::string_view pod : attempt.evicted) absl::StrAppend(&line, " -", std::string(pod));
    for (std::string_view pod : attempt.moved) absl::StrAppend(&line, " ~", std::string(pod));
    for (std::string_view pod : attempt.restored) absl::StrAppend(&line, " =", std::string(pod));
    told.push_back(line);
  };
  absl::StatusOr<ScheduleResult> traced = ::arbiter::testing::ScheduleKaiWithHooks(
      s, PolicyWith({Action::kAllocate, Action::kPreempt}), hooks);
  ASSERT_THAT(traced, IsOk());
  EXPECT_THAT(told, ElementsAre("allocate high pending", "preempt high placed -v2-0 =v1-0"));
  EXPECT_THAT(EvictionsFor(*traced), ElementsAre("v2-0@n1 for high"));
}

}  // namespace
}  // namespace arbiter::kai
