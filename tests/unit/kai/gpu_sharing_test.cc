// GPU sharing (SEMANTICS.md §4.13): sizes and amounts, devices and the pool, device choice,
// placement with the sharing band, and the eviction actions on devices. The tables follow the
// shape of KAI's GPU-sharing allocation and reclaim tests: nodes, running pods with their device
// groups, pending pods, and the expected device groups of each binding.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::AllocateOnly;
using ::arbiter::testing::Evictions;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PendingMessage;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kGpu[] = "nvidia.com/gpu";

ResourceMap Gpus(double n) { return {{kGpu, n}, {"cpu", 64}}; }
ResourceMap OneCpu() { return {{"cpu", 1}}; }

// "group/pod@node[keys]" per binding ("+" when pipelined), in response order.
std::vector<std::string> Placed(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Binding& b : result.bindings) {
    out.push_back(absl::StrCat(b.pod_group, "/", b.pod, "@", b.node, b.after_evictions ? "+" : "",
                               "[", absl::StrJoin(b.gpu_groups, ","), "]"));
  }
  return out;
}

const QueueShare& ShareOf(const ScheduleResult& result, const std::string& queue) {
  for (const QueueShare& share : result.queues) {
    if (share.queue == queue) return share;
  }
  static const QueueShare none;
  return none;
}

double Requested(const ScheduleResult& result, const std::string& queue) {
  const ResourceMap& requested = ShareOf(result, queue).requested;
  const auto it = requested.find(kGpu);
  return it == requested.end() ? -1 : it->second;
}

// ---- §4.13.1 Sizes and amounts ----

// 0.29 of 100 units is 29 (rounded half away from zero), 0.72 is 72: 101 units do not fit one
// device. KAI truncates and would put both on it (§4.13.8, 2).
TEST(GpuSharingSizes, FractionsRoundToUnitsAndNeverOverCommitADevice) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(1))
                   .Queue("q")
                   .Group("a", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.29)
                   .Group("b", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.72)
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("a/a-0@n0[new-0]"));
  EXPECT_THAT(Pending(result), ElementsAre("b:insufficient-resources"));
}

// Three pods of 0.6 on a 2-GPU node: 1.8 <= 2 as a scalar, but no device holds two of them.
TEST(GpuSharingSizes, ThreeSixTenthsDoNotFitTwoDevices) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(2))
                   .Queue("q")
                   .Group("a", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.6)
                   .Group("b", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.6)
                   .Group("c", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.6)
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("a/a-0@n0[new-0]", "b/b-0@n0[new-1]"));
  EXPECT_THAT(Pending(result), ElementsAre("c:insufficient-resources"));
  EXPECT_EQ(PendingMessage(result, "c"),
            "pod c-0 needs 0.6 of a GPU on one node; the largest free GPU device share is 0.4 on "
            "n0");
}

// The smallest fraction still takes one unit: 0.004 of 100 units rounds to 0, then 1.
TEST(GpuSharingSizes, ATinyFractionTakesOneUnit) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(1))
                   .Queue("q")
                   .Group("a", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.99)
                   .Group("b", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.004)
                   .Group("c", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.004)
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("a/a-0@n0[new-0]", "b/b-0@n0[new-0]"));
  EXPECT_THAT(Pending(result), ElementsAre("c:insufficient-resources"));
}

// A fraction pod's queue amount is d · f; a pending memory pod's is d · mem / Mref, Mref the
// smallest device memory that holds it; d when none does.
TEST(GpuSharingSizes, QueueAmountsAreTheEffectiveRequests) {
  Snapshot s = SnapshotBuilder()
                   .Node("small", Gpus(1))
                   .DeviceMemory(10000)
                   .Node("mid", Gpus(1))
                   .DeviceMemory(40000)
                   .Node("big", Gpus(1))
                   .DeviceMemory(80000)
                   .Queue("fractions")
                   .Queue("memory")
                   .Queue("huge")
                   .Group("f", "fractions")
                   .Pod(OneCpu())
                   .GpuFraction(0.25)
                   .GpuDevices(2)
                   .Group("m", "memory")
                   .Pod(OneCpu())
                   .GpuMemory(20000)
                   .Group("h", "huge")
                   .Pod(OneCpu())
                   .GpuMemory(100000)
                   .GpuDevices(3)
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({}));
  EXPECT_EQ(Requested(result, "fractions"), 0.5);
  EXPECT_EQ(Requested(result, "memory"), 0.5);  // 20000 / 40000
  EXPECT_EQ(Requested(result, "huge"), 3);      // no device holds it: d
}

// A running memory pod counts at its own node's device memory.
TEST(GpuSharingSizes, ARunningMemoryPodCountsAtItsNode) {
  Snapshot s = SnapshotBuilder()
                   .Node("big", Gpus(1))
                   .DeviceMemory(80000)
                   .Queue("q")
                   .Group("m", "q")
                   .Pod(OneCpu(), "big", PodPhase::kRunning)
                   .GpuMemory(20000)
                   .GpuGroups({"g1"})
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_EQ(ShareOf(result, "q").allocated.at(kGpu), 0.25);
}

// A memory pod bound on a node counts there: after the first binds on the 80000 node (0.25),
// the second's §4.4 check passes a limit of 0.75 that two pending amounts (0.5 each) would break.
TEST(GpuSharingSizes, ABoundMemoryPodCountsAtItsNewNode) {
  Snapshot s = SnapshotBuilder()
                   .Node("mid", Gpus(1))
                   .DeviceMemory(40000)
                   .Label("kind", "mid")
                   .Node("big", Gpus(1))
                   .DeviceMemory(80000)
                   .Label("kind", "big")
                   .Queue("q")
                   .Limit({{kGpu, 0.75}})
                   .Group("a", "q")
                   .Pod(OneCpu())
                   .GpuMemory(20000)
                   .Selector("kind", "big")
                   .Group("b", "q")
                   .Pod(OneCpu())
                   .GpuMemory(20000)
                   .Selector("kind", "mid")
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("a/a-0@big[new-0]", "b/b-0@mid[new-0]"));
}

// ---- §4.13.2 Devices ----

// Two running halves on one key fill that device; the node's only GPU is taken by it.
TEST(GpuSharingDevices, RunningPodsOnOneKeyShareOneDevice) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(1))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"gpu-x"})
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"gpu-x"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.1)
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("p:insufficient-resources"));
}

// An active shared device takes one whole GPU from the pool: a whole-GPU pod never lands on it.
TEST(GpuSharingDevices, ASharedDeviceTakesAWholeGpuFromThePool) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(2))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.1)
                   .GpuGroups({"k"})
                   .Group("w", "q")
                   .Pods(2, {{kGpu, 1}})
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("w/w-0@n0[]"));
}

// New devices are named new-<j>, the smallest j that no device on the node has.
TEST(GpuSharingDevices, NewDevicesTakeTheSmallestFreeName) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(3))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.9)
                   .GpuGroups({"new-0"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .GpuDevices(2)
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("p/p-0@n0[new-1,new-2]"));
}

// Only keys of the form new-<j> in decimal name a j: "new-01" is another key, so the first
// device opened beside new-0, new-01 and new-2 is new-1, the next new-3.
TEST(GpuSharingDevices, OnlyCanonicalNewKeysTakeAName) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(5))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.9)
                   .GpuGroups({"new-0"})
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.9)
                   .GpuGroups({"new-01"})
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.9)
                   .GpuGroups({"new-2"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .GpuDevices(2)
                   .Build();
  EXPECT_THAT(Placed(RunCycle(s, AllocateOnly())), ElementsAre("p/p-0@n0[new-1,new-3]"));
}

// A draining device (only releasing pods) counts as releasing in the pool: a whole-GPU pod
// pipelines onto it, and no sharing pod joins it.
TEST(GpuSharingDevices, AWholeGpuPodPipelinesOntoADrainingDevice) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(1))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kReleasing)
                   .GpuFraction(0.5)
                   .GpuGroups({"k"})
                   .Group("w", "q")
                   .Pod({{kGpu, 1}})
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("w/w-0@n0+[]"));
}

TEST(GpuSharingDevices, NoSharingPodJoinsADrainingDevice) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(2))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kReleasing)
                   .GpuFraction(0.5)
                   .GpuGroups({"k"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.2)
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("p/p-0@n0[new-0]"));
}

// ---- §4.13.3 Device choice ----

struct ChoiceCase {
  std::string name;
  Placement placement;
  Placement device_placement;
  std::vector<std::string> placed;
};

class GpuSharingChoice : public ::testing::TestWithParam<ChoiceCase> {};

// Devices a (0.5 used), b (0.3 used), c (0.5 used) on a 4-GPU node; the pod asks 0.2.
TEST_P(GpuSharingChoice, PicksTheDeviceThePlacementOrders) {
  const ChoiceCase& c = GetParam();
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(4))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"c"})
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.3)
                   .GpuGroups({"b"})
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"a"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.2)
                   .Build();
  Policy policy = AllocateOnly(c.placement);
  policy.gpu_device_placement = c.device_placement;
  EXPECT_THAT(Placed(RunCycle(s, policy)), ::testing::ElementsAreArray(c.placed));
}

INSTANTIATE_TEST_SUITE_P(
    Table, GpuSharingChoice,
    ::testing::Values(
        // BINPACK: the fullest device first (idle 50 ties between a and c: key ascending).
        ChoiceCase{
            "BinpackFullestThenKey", Placement::kBinpack, Placement::kUnspecified, {"p/p-0@n0[a]"}},
        // SPREAD: a new device first.
        ChoiceCase{"SpreadNewDeviceFirst",
                   Placement::kSpread,
                   Placement::kUnspecified,
                   {"p/p-0@n0[new-0]"}},
        // gpu_device_placement overrides placement.
        ChoiceCase{"DevicePlacementOverridesPlacement",
                   Placement::kSpread,
                   Placement::kBinpack,
                   {"p/p-0@n0[a]"}},
        ChoiceCase{"DeviceSpreadUnderNodeBinpack",
                   Placement::kBinpack,
                   Placement::kSpread,
                   {"p/p-0@n0[new-0]"}}),
    [](const ::testing::TestParamInfo<ChoiceCase>& param_info) { return param_info.param.name; });

// SPREAD with no whole GPU left: the emptiest active device.
TEST(GpuSharingChoice, SpreadTakesTheEmptiestDeviceWhenNoneCanOpen) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(2))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"a"})
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.3)
                   .GpuGroups({"b"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.2)
                   .Build();
  Policy policy = AllocateOnly();
  policy.gpu_device_placement = Placement::kSpread;
  EXPECT_THAT(Placed(RunCycle(s, policy)), ElementsAre("p/p-0@n0[b]"));
}

// BINPACK joins the fullest device even when it has room only once a releasing pod is gone:
// the pod is pipelined although another device is idle enough (as KAI does).
TEST(GpuSharingChoice, BinpackJoinsWithReleasingCapacityAndPipelines) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(2))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"a"})
                   .Pod(OneCpu(), "n0", PodPhase::kReleasing)
                   .GpuFraction(0.4)
                   .GpuGroups({"a"})
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.2)
                   .GpuGroups({"b"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.3)
                   .Build();
  EXPECT_THAT(Placed(RunCycle(s, AllocateOnly())), ElementsAre("p/p-0@n0+[a]"));
}

// A pod of several devices takes distinct devices, joined ones first under BINPACK.
TEST(GpuSharingChoice, SeveralDevicesAreDistinct) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(3))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"a"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .GpuDevices(3)
                   .Build();
  EXPECT_THAT(Placed(RunCycle(s, AllocateOnly())), ElementsAre("p/p-0@n0[a,new-0,new-1]"));
}

// ---- §4.13.4 Placement ----

// +200: a node with a joinable device comes before one whose pool scores higher.
TEST(GpuSharingPlacement, TheSharingBandPrefersAJoinableDevice) {
  Snapshot s = SnapshotBuilder()
                   .Node("busy", Gpus(8))
                   .Node("shared", Gpus(8))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "shared", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"k"})
                   .Pod({{kGpu, 7}}, "busy", PodPhase::kRunning)
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .Build();
  EXPECT_THAT(Placed(RunCycle(s, AllocateOnly())), ElementsAre("p/p-0@shared[k]"));
}

// A memory pod cannot use a node whose device memory is unknown; with none known it matches no
// node.
TEST(GpuSharingPlacement, AMemoryPodNeedsAKnownDeviceMemory) {
  Snapshot s = SnapshotBuilder()
                   .Node("unknown", Gpus(4))
                   .Node("known", Gpus(1))
                   .DeviceMemory(40000)
                   .Queue("q")
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuMemory(10000)
                   .Build();
  EXPECT_THAT(Placed(RunCycle(s, AllocateOnly())), ElementsAre("p/p-0@known[new-0]"));
  Snapshot none = SnapshotBuilder()
                      .Node("unknown", Gpus(4))
                      .Queue("q")
                      .Group("p", "q")
                      .Pod(OneCpu())
                      .GpuMemory(10000)
                      .Build();
  ScheduleResult result = RunCycle(none, AllocateOnly());
  EXPECT_THAT(Pending(result), ElementsAre("p:no-node-matches-selector"));
}

// The pending message of a memory pod names only nodes whose devices could hold it: not a node
// with free GPUs of unknown memory.
TEST(GpuSharingPlacement, AMemoryPodsMessageNamesOnlyNodesItCouldUse) {
  Snapshot s = SnapshotBuilder()
                   .Node("a", Gpus(4))
                   .Node("b", Gpus(1))
                   .DeviceMemory(40000)
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "b", PodPhase::kRunning)
                   .GpuMemory(30000)
                   .GpuGroups({"k"})
                   .Group("p", "q")
                   .Pod(OneCpu())
                   .GpuMemory(20000)
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_EQ(PendingMessage(result, "p"),
            "pod p-0 needs 20000 of GPU memory on one node; the largest free GPU device share is "
            "0.25 on b");
}

// A gang's pods see the devices its earlier pods opened.
TEST(GpuSharingPlacement, GangPodsJoinDevicesTheirGangOpened) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(1))
                   .Queue("q")
                   .Group("g", "q")
                   .MinMember(2)
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .Build();
  EXPECT_THAT(Placed(RunCycle(s, AllocateOnly())),
              ElementsAre("g/g-0@n0[new-0]", "g/g-1@n0[new-0]"));
}

// A gang that does not fit rolls its devices back: the next job sees the node as it was.
TEST(GpuSharingPlacement, AFailedGangLeavesNoDevice) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(1))
                   .Queue("q")
                   .Group("a", "q")
                   .MinMember(3)
                   .Created(1)
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .Pod(OneCpu())
                   .GpuFraction(0.5)
                   .Group("b", "q")
                   .Created(2)
                   .Pod({{kGpu, 1}})
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Placed(result), ElementsAre("b/b-0@n0[]"));
  EXPECT_THAT(Pending(result), ElementsAre("a:gang-does-not-fit"));
}

// ---- §4.13.5 Eviction actions ----

// Reclaim: a queue over its fair share holds the only GPU with two halves; a whole-GPU job of a
// starved queue needs the device drained, so both halves go.
TEST(GpuSharingEviction, ReclaimDrainsADevice) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(1))
                   .Queue("greedy")
                   .Deserved({{kGpu, 0}})
                   .Queue("starved")
                   .Deserved({{kGpu, 1}})
                   .Group("r", "greedy")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"k"})
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"k"})
                   .Group("w", "starved")
                   .Pod({{kGpu, 1}})
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kReclaim}));
  EXPECT_THAT(Placed(result), ElementsAre("w/w-0@n0+[]"));
  EXPECT_THAT(Evictions(result),
              ElementsAre("r-0@n0 FAIR_SHARE_RECLAIM for w", "r-1@n0 FAIR_SHARE_RECLAIM for w"));
}

// Consolidation moves a sharing pod to another device of its own node: that is a move (an
// eviction and a binding with the new devices), never a restore.
TEST(GpuSharingEviction, AVictimOnAnotherDeviceOfItsNodeIsMoved) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(2))
                   .Queue("q")
                   .Group("small", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.3)
                   .GpuGroups({"a"})
                   .Group("other", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.5)
                   .GpuGroups({"b"})
                   .Group("whole", "q")
                   .Pod({{kGpu, 1}})
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kConsolidate}));
  EXPECT_THAT(Placed(result), ElementsAre("small/small-0@n0+[b]", "whole/whole-0@n0+[]"));
  EXPECT_THAT(Evictions(result), ElementsAre("small-0@n0 CONSOLIDATION for whole"));
}

// §4.9's test with the device room: 0.2 free on the one device, no whole GPU: consolidation is
// skipped for a pod of 0.3, and says why.
TEST(GpuSharingEviction, ConsolidationIsSkippedWhenNoDeviceHasRoom) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", Gpus(1))
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.8)
                   .GpuGroups({"k"})
                   .Group("s", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.3)
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kConsolidate}));
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_EQ(PendingMessage(result, "s"),
            "pod s-0 needs 0.3 of a GPU on one node; the largest free GPU device share is 0.2 on "
            "n0; consolidate: the cluster has 0.2 nvidia.com/gpu free in all, below the 0.3 "
            "requested");
}

// The test counts a sharing pod by its units: 0.294 takes 29 units, which the device's 29 free
// units hold, so consolidation runs (counting 0.294 against 0.29 would skip it). The §4.7 order
// draws r first; alone on device k, it drains it, so s opens new-0 and r, re-placed, joins s
// there (a move: k is draining, never joinable); the CPU pod b that blocks n0 moves to n1.
TEST(GpuSharingEviction, TheSkipTestCountsUnitsNotTheUnroundedAmount) {
  Snapshot s = SnapshotBuilder()
                   .Node("n0", {{kGpu, 1}, {"cpu", 2}})
                   .Node("n1", {{"cpu", 2}})
                   .Queue("q")
                   .Group("r", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .GpuFraction(0.71)
                   .GpuGroups({"k"})
                   .Group("b", "q")
                   .Pod(OneCpu(), "n0", PodPhase::kRunning)
                   .Group("s", "q")
                   .Pod(OneCpu())
                   .GpuFraction(0.294)
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kConsolidate}));
  EXPECT_THAT(Placed(result), ElementsAre("b/b-0@n1+[]", "r/r-0@n0+[new-0]", "s/s-0@n0+[new-0]"));
  EXPECT_THAT(Evictions(result),
              ElementsAre("b-0@n0 CONSOLIDATION for s", "r-0@n0 CONSOLIDATION for s"));
}

}  // namespace
}  // namespace arbiter::kai
