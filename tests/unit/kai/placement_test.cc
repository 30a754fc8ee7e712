// Placement (SEMANTICS.md §4.5): predicates, score bands, binpack and spread, pipelining.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::AllocateOnly;
using ::arbiter::testing::Bindings;
using ::arbiter::testing::Cpu;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PendingMessage;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// ---- Predicates ----

TEST(Placement, NodeSelectorMustEqualTheNodeLabels) {
  Snapshot s = SnapshotBuilder()
                   .Node("a100", Gpu(8))
                   .Label("gpu", "a100")
                   .Node("h100", Gpu(8))
                   .Label("gpu", "h100")
                   .Node("plain", Gpu(8))
                   .Queue("team")
                   .Group("job", "team")
                   .Pod(Gpu(1))
                   .Selector("gpu", "h100")
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@h100"));
}

TEST(Placement, NoNodeMatchesSelectorNamesTheRejections) {
  Snapshot s = SnapshotBuilder()
                   .Node("a100", Gpu(8))
                   .Label("gpu", "a100")
                   .Node("down", Gpu(8))
                   .Label("gpu", "h100")
                   .Unschedulable()
                   .Node("infra", Gpu(8))
                   .Label("gpu", "h100")
                   .Taint("dedicated", "infra", "NoSchedule")
                   .Queue("team")
                   .Group("job", "team")
                   .Pod(Gpu(1))
                   .Selector("gpu", "h100")
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Pending(result), ElementsAre("job:no-node-matches-selector"));
  EXPECT_EQ(PendingMessage(result, "job"),
            "pod job-0 matches no node: 1 node unschedulable, 1 node without node_selector "
            "gpu=h100, 1 node with a taint it does not tolerate");
}

TEST(Placement, NoNodesAtAll) {
  Snapshot s = SnapshotBuilder().Queue("team").Group("job", "team").Pods(1, Gpu(1)).Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Pending(result), ElementsAre("job:no-node-matches-selector"));
  EXPECT_EQ(PendingMessage(result, "job"), "pod job-0 matches no node: there are no nodes");
}

// Node amounts span the resources some node lists or some pod on a node uses (core/kai/cluster.h).
// With none at all, every node still enters the index: a pod that requests nothing fits any
// feasible node, under either placement, while a pod asking for a resource no node has fits none.
TEST(Placement, PodRequestingNothingFitsWhenNoNodeListsAnyResource) {
  for (Placement placement : {Placement::kBinpack, Placement::kSpread}) {
    Snapshot s = SnapshotBuilder()
                     .Node("n1", {})
                     .Queue("team")
                     .Group("empty", "team")
                     .Pod({})
                     .Group("cpu", "team")
                     .Pod(Cpu(1))
                     .Build();
    ScheduleResult result = RunCycle(s, AllocateOnly(placement));
    EXPECT_THAT(Bindings(result), ElementsAre("empty-0@n1")) << static_cast<int>(placement);
    EXPECT_THAT(Pending(result), ElementsAre("cpu:insufficient-resources"));
    EXPECT_EQ(PendingMessage(result, "cpu"),
              "pod cpu-0 needs 1 cpu on one node; the largest free is 0 (node n1)");
  }
}

TEST(Placement, UnschedulableNodeIsNeverUsed) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Unschedulable()
                   .Node("n2", Gpu(8))
                   .Queue("team")
                   .Group("job", "team")
                   .Pods(2, Gpu(4))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@n2", "job-1@n2"));
}

struct TaintCase {
  std::string name;
  std::string effect;
  std::vector<Toleration> tolerations;
  bool feasible;
};

class TaintTest : public ::testing::TestWithParam<TaintCase> {};

TEST_P(TaintTest, TaintBlocksUnlessTolerated) {
  const TaintCase& c = GetParam();
  SnapshotBuilder b;
  b.Node("tainted", Gpu(8)).Taint("dedicated", "ml", c.effect).Queue("team").Group("job", "team");
  b.Pod(Gpu(1));
  for (const Toleration& t : c.tolerations) b.Tolerate(t.key, t.op, t.value, t.effect);
  ScheduleResult result = RunCycle(b.Build(), AllocateOnly());
  if (c.feasible) {
    EXPECT_THAT(Bindings(result), ElementsAre("job-0@tainted"));
  } else {
    EXPECT_THAT(Pending(result), ElementsAre("job:no-node-matches-selector"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Taints, TaintTest,
    ::testing::Values(
        TaintCase{"NoScheduleBlocks", "NoSchedule", {}, false},
        TaintCase{"NoExecuteBlocks", "NoExecute", {}, false},
        TaintCase{"PreferNoScheduleDoesNotBlock", "PreferNoSchedule", {}, true},
        TaintCase{
            "EqualKeyAndValueTolerates", "NoSchedule", {{"dedicated", "Equal", "ml", ""}}, true},
        TaintCase{"EmptyOperatorMeansEqual", "NoSchedule", {{"dedicated", "", "ml", ""}}, true},
        TaintCase{
            "EqualWithOtherValueDoesNot", "NoSchedule", {{"dedicated", "Equal", "web", ""}}, false},
        TaintCase{"ExistsTolerateAnyValue", "NoSchedule", {{"dedicated", "Exists", "", ""}}, true},
        TaintCase{
            "ExistsWithEmptyKeyToleratesEverything", "NoExecute", {{"", "Exists", "", ""}}, true},
        TaintCase{"MatchingEffectTolerates",
                  "NoSchedule",
                  {{"dedicated", "Exists", "", "NoSchedule"}},
                  true},
        TaintCase{
            "OtherEffectDoesNot", "NoSchedule", {{"dedicated", "Exists", "", "NoExecute"}}, false}),
    [](const ::testing::TestParamInfo<TaintCase>& param) { return param.param.name; });

// ---- Score bands ----

// PreferNoSchedule only scores lower (band 50): the untainted node wins even where binpack prefers
// the tainted one, and the tainted node is still used when nothing else fits.
TEST(Placement, PreferNoScheduleTaintOnlyScoresLower) {
  Snapshot s = SnapshotBuilder()
                   .Node("a-prefer", Gpu(2))
                   .Taint("spot", "true", "PreferNoSchedule")
                   .Node("b-empty", Gpu(8))
                   .Queue("team")
                   .Group("first", "team")
                   .Pods(1, Gpu(2))
                   .Group("second", "team")
                   .Pods(1, Gpu(8))
                   .Group("third", "team")
                   .Pods(1, Gpu(2))
                   .Build();
  // first: binpack would take a-prefer (fuller), but b-empty has the 50 band.
  // second: takes the rest of b-empty? It needs 8 and b-empty has 6 left: only a-prefer... which
  // has 2: it fits nowhere. third: b-empty has 6 free, so it goes there too.
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("first-0@b-empty", "third-0@b-empty"));
}

TEST(Placement, PreferNoScheduleNodeUsedWhenNothingElseFits) {
  Snapshot s = SnapshotBuilder()
                   .Node("a-prefer", Gpu(8))
                   .Taint("spot", "true", "PreferNoSchedule")
                   .Node("b-small", Gpu(2))
                   .Queue("team")
                   .Group("job", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@a-prefer"));
}

TEST(Placement, ToleratedPreferNoScheduleKeepsTheBand) {
  Snapshot s = SnapshotBuilder()
                   .Node("a-prefer", Gpu(4))
                   .Taint("spot", "true", "PreferNoSchedule")
                   .Node("b-empty", Gpu(8))
                   .Queue("team")
                   .Group("job", "team")
                   .Pod(Gpu(2))
                   .Tolerate("spot", "Exists", "", "")
                   .Build();
  // Both nodes in the 50 band; binpack picks the fuller a-prefer.
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@a-prefer"));
}

// Band 10: a pod without GPUs prefers nodes without GPUs.
TEST(Placement, CpuPodPrefersNodeWithoutGpus) {
  Snapshot s = SnapshotBuilder()
                   .Node("a-gpu", {{"cpu", 4000}, {"nvidia.com/gpu", 8}})
                   .Node("b-cpu", Cpu(64000))
                   .Queue("team")
                   .Group("job", "team")
                   .Pods(1, Cpu(1000))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@b-cpu"));
}

// Placement scores a GPU pod on GPUs, not on CPU.
TEST(Placement, GpuPodIsScoredOnGpus) {
  Snapshot s = SnapshotBuilder()
                   .Node("a", {{"cpu", 64000}, {"nvidia.com/gpu", 4}})  // most cpu, fewest gpus
                   .Node("b", {{"cpu", 8000}, {"nvidia.com/gpu", 8}})
                   .Queue("team")
                   .Group("busy", "team")
                   .RunningPods(1, Gpu(2), "a")
                   .Group("job", "team")
                   .Pods(1, {{"cpu", 1000}, {"nvidia.com/gpu", 1}})
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@a"));
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly(Placement::kSpread))), ElementsAre("job-0@b"));
}

TEST(Placement, CpuPodIsScoredOnCpu) {
  Snapshot s = SnapshotBuilder()
                   .Node("a", {{"cpu", 16000}, {"memory", 1000}})
                   .Node("b", {{"cpu", 4000}, {"memory", 64000}})
                   .Queue("team")
                   .Group("job", "team")
                   .Pods(1, {{"cpu", 1000}, {"memory", 100}})
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@b"));
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly(Placement::kSpread))), ElementsAre("job-0@a"));
}

// ---- Binpack and spread ----

TEST(Placement, BinpackFillsTheFullestNodeFirst) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(8))
                   .Node("n3", Gpu(8))
                   .Queue("team")
                   .Group("old", "team")
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("job", "team")
                   .Pods(4, Gpu(2))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())),
              ElementsAre("job-0@n2", "job-1@n2", "job-2@n2", "job-3@n1"));
}

TEST(Placement, SpreadPicksTheEmptiestNode) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(8))
                   .Node("n3", Gpu(4))
                   .Queue("team")
                   .Group("old", "team")
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("job", "team")
                   .Pods(4, Gpu(2))
                   .Build();
  // Free fractions: n1 1, n2 0.75, n3 1. Ties by name.
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly(Placement::kSpread))),
              ElementsAre("job-0@n1", "job-1@n3", "job-2@n1", "job-3@n2"));
}

TEST(Placement, EqualScoresGoToTheSmallerName) {
  Snapshot s = SnapshotBuilder()
                   .Node("n2", Gpu(8))
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Group("job", "team")
                   .Pods(1, Gpu(8))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@n1"));
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly(Placement::kSpread))), ElementsAre("job-0@n1"));
}

// ---- Pipelining ----

TEST(Placement, PodThatFitsOnlyOnReleasingCapacityIsPipelined) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Group("leaving", "team")
                   .Pod(Gpu(8), "n1", PodPhase::kReleasing)
                   .Group("job", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@n1+"));
}

TEST(Placement, FitsNowBeatsPipelinedWhateverTheScore) {
  Snapshot s = SnapshotBuilder()
                   .Node("a-releasing", Gpu(8))
                   .Node("b-free", Gpu(8))
                   .Queue("team")
                   .Group("leaving", "team")
                   .Pod(Gpu(6), "a-releasing", PodPhase::kReleasing)
                   .Group("job", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("job-0@b-free"));
}

TEST(Placement, TwoPodsNeverClaimTheSameReleasingCapacity) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Queue("team")
                   .Group("leaving", "team")
                   .Pod(Gpu(4), "n1", PodPhase::kReleasing)
                   .Group("a", "team")
                   .Pods(1, Gpu(4))
                   .Group("b", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("a-0@n1+"));
  // A group whose only pods are releasing has no active pod, so it is listed too (§6).
  EXPECT_THAT(Pending(result), ElementsAre("b:insufficient-resources", "leaving:gang-incomplete"));
}

TEST(Placement, PodBoundNowDoesNotTakeCapacityAPipelinedPodClaimed) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 4000}, {"nvidia.com/gpu", 2}})
                   .Queue("team")
                   .Group("leaving", "team")
                   .Pod({{"cpu", 0}, {"nvidia.com/gpu", 2}}, "n1", PodPhase::kReleasing)
                   .Group("a", "team")
                   .Pods(1, {{"cpu", 4000}, {"nvidia.com/gpu", 2}})
                   .Group("b", "team")
                   .Pods(1, Cpu(4000))
                   .Build();
  // a waits for the GPUs but claims the idle cpu too; b must not bind onto that cpu.
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("a-0@n1+"));
  // A group whose only pods are releasing has no active pod, so it is listed too (§6).
  EXPECT_THAT(Pending(result), ElementsAre("b:insufficient-resources", "leaving:gang-incomplete"));
}

// KAI pipelines a gang as a whole: one pipelined pod makes the whole unit pipelined.
TEST(Placement, GangWithOnePipelinedPodIsPipelinedWhole) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("leaving", "team")
                   .Pod(Gpu(4), "n2", PodPhase::kReleasing)
                   .Group("train", "team")
                   .MinMember(2)
                   .Pods(2, Gpu(4))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("train-0@n1+", "train-1@n2+"));
}

TEST(Placement, ElasticPodPipelinedAloneWhenTheGangRuns) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Queue("team")
                   .Group("leaving", "team")
                   .Pod(Gpu(2), "n1", PodPhase::kReleasing)
                   .Group("web", "team")
                   .RunningPods(1, Gpu(2), "n1")
                   .Pods(1, Gpu(2))
                   .Build();
  EXPECT_THAT(Bindings(RunCycle(s, AllocateOnly())), ElementsAre("web-1@n1+"));
}

// ---- Pending explanations ----

TEST(Placement, InsufficientResourcesNamesTheLargestFreeAmount) {
  Snapshot s = SnapshotBuilder()
                   .Node("gpu-1", Gpu(8))
                   .Node("gpu-7", Gpu(8))
                   .Queue("team")
                   .Group("busy", "team")
                   .RunningPods(1, Gpu(7), "gpu-1")
                   .RunningPods(1, Gpu(6), "gpu-7")
                   .Group("job", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Pending(result), ElementsAre("job:insufficient-resources"));
  EXPECT_EQ(PendingMessage(result, "job"),
            "pod job-0 needs 4 nvidia.com/gpu on one node; the largest free is 2 (node gpu-7)");
}

TEST(Placement, InsufficientResourcesWhenNoNodeHasEverythingAtOnce) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 8000}, {"memory", 1}})
                   .Node("n2", {{"cpu", 1000}, {"memory", 64}})
                   .Queue("team")
                   .Group("job", "team")
                   .Pods(1, {{"cpu", 4000}, {"memory", 16}})
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_EQ(PendingMessage(result, "job"),
            "pod job-0 needs 4000 cpu, 16 memory on one node; no feasible node has all of them "
            "free");
}

TEST(Placement, FractionalAmountsUseTheShortestForm) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(1))
                   .Queue("team")
                   .Group("busy", "team")
                   .RunningPods(1, Gpu(0.7), "n1")
                   .Group("job", "team")
                   .Pods(1, Gpu(0.5))
                   .Build();
  EXPECT_EQ(PendingMessage(RunCycle(s, AllocateOnly()), "job"),
            "pod job-0 needs 0.5 nvidia.com/gpu on one node; the largest free is "
            "0.30000000000000004 (node n1)");
}

// one_pod_per_node: a node that holds a pod of the group is infeasible for the group's other pods,
// as for a Slurm job's nodes or anti-affinity on the host name.
TEST(OnePodPerNode, BinpackPutsTheGangsPodsOnDistinctNodes) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(8))
                   .Node("n3", Gpu(4))
                   .Queue("team")
                   .Group("mpi", "team")
                   .MinMember(3)
                   .OnePodPerNode()
                   .Pods(3, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("mpi-0@n3", "mpi-1@n1", "mpi-2@n2"));
}

TEST(OnePodPerNode, WithoutItBinpackStacksTheSameGang) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(8))
                   .Node("n3", Gpu(4))
                   .Queue("team")
                   .Group("mpi", "team")
                   .MinMember(3)
                   .Pods(3, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("mpi-0@n3", "mpi-1@n3", "mpi-2@n1"));
}

TEST(OnePodPerNode, AGangWiderThanTheNodesThatCanHoldItStaysPending) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(8))
                   .Queue("team")
                   .Group("mpi", "team")
                   .MinMember(3)
                   .OnePodPerNode()
                   .Pods(3, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("mpi:gang-does-not-fit"));
}

TEST(OnePodPerNode, ARunningPodKeepsItsNodeFromTheGroupsNextPod) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(8))
                   .Queue("team")
                   .Group("mpi", "team")
                   .OnePodPerNode()
                   .Pod(Gpu(2), "n1", PodPhase::kRunning)
                   .Pod(Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("mpi-1@n2"));
}

TEST(OnePodPerNode, SpreadSkipsTheGroupsNodesToo) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("mpi", "team")
                   .MinMember(2)
                   .OnePodPerNode()
                   .Pods(2, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly(Placement::kSpread));
  EXPECT_THAT(Bindings(result), ElementsAre("mpi-0@n1", "mpi-1@n2"));
}

}  // namespace
}  // namespace arbiter::kai
