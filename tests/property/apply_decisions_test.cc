// How a response is applied to its snapshot for the next cycle (issue 3's definition, used by
// every property test): tests/support/apply_decisions.h.
#include "clients/simulator/apply_decisions.h"

#include "core/api/arbiter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"

namespace arbiter::testing {
namespace {

using ::arbiter::simulator::ApplyDecisions;

Snapshot Cluster() {
  return SnapshotBuilder()
      .Now(1000)
      .Node("n1", {{"cpu", 8}})
      .Node("n2", {{"cpu", 8}})
      .Queue("team")
      .Group("running", "team")
      .RunningPods(2, {{"cpu", 2}}, "n1")
      .Started(10)
      .Group("waiting", "team")
      .Pods(2, {{"cpu", 1}})
      .Group("leaving", "team")
      .Pod({{"cpu", 1}}, "n2", PodPhase::kReleasing)
      .Build();
}

const Pod& FindPod(const Snapshot& s, const std::string& group, const std::string& pod) {
  for (const PodGroup& g : s.pod_groups) {
    if (g.name != group) continue;
    for (const Pod& p : g.pods) {
      if (p.name == pod) return p;
    }
  }
  ADD_FAILURE() << "no pod " << group << "/" << pod;
  static const Pod kNone;
  return kNone;
}

TEST(ApplyDecisions, BoundPodRunsOnItsNodeFromNow) {
  ScheduleResult result;
  result.bindings.push_back({"waiting", "waiting-0", "n2", false, {}});
  auto next = ApplyDecisions(Cluster(), Policy{}, result);
  ASSERT_THAT(next, IsOk());
  const Pod& pod = FindPod(*next, "waiting", "waiting-0");
  EXPECT_EQ(pod.phase, PodPhase::kRunning);
  EXPECT_EQ(pod.node_name, "n2");
  ASSERT_TRUE(pod.start_time.has_value());
  EXPECT_EQ(*pod.start_time, Seconds(1000));
  EXPECT_EQ(EffectivePhase(FindPod(*next, "waiting", "waiting-1")), PodPhase::kPending);
  EXPECT_EQ(*next->now, Seconds(1000));
}

TEST(ApplyDecisions, EvictedPodIsPendingAgainInItsGroup) {
  ScheduleResult result;
  result.evictions.push_back(
      {"running", "running-0", "n1", EvictionReason::kFairShareReclaim, "waiting", "reclaimed"});
  auto next = ApplyDecisions(Cluster(), Policy{}, result);
  ASSERT_THAT(next, IsOk());
  const Pod& pod = FindPod(*next, "running", "running-0");
  EXPECT_EQ(pod.phase, PodPhase::kPending);
  EXPECT_TRUE(pod.node_name.empty());
  EXPECT_FALSE(pod.start_time.has_value());
  EXPECT_EQ(EffectivePhase(FindPod(*next, "running", "running-1")), PodPhase::kRunning);
}

TEST(ApplyDecisions, MovedPodRunsOnItsNewNode) {
  ScheduleResult result;
  result.evictions.push_back(
      {"running", "running-1", "n1", EvictionReason::kConsolidation, "waiting", "moved"});
  result.bindings.push_back({"running", "running-1", "n2", true, {}});
  auto next = ApplyDecisions(Cluster(), Policy{}, result);
  ASSERT_THAT(next, IsOk());
  const Pod& pod = FindPod(*next, "running", "running-1");
  EXPECT_EQ(pod.phase, PodPhase::kRunning);
  EXPECT_EQ(pod.node_name, "n2");
}

TEST(ApplyDecisions, ReleasingPodsDisappear) {
  auto next = ApplyDecisions(Cluster(), Policy{}, ScheduleResult{});
  ASSERT_THAT(next, IsOk());
  for (const PodGroup& g : next->pod_groups) {
    if (g.name == "leaving") {
      EXPECT_TRUE(g.pods.empty());
    }
  }
}

TEST(ApplyDecisions, RejectsInconsistentResponses) {
  ScheduleResult twice;
  twice.bindings.push_back({"waiting", "waiting-0", "n2", false, {}});
  twice.bindings.push_back({"waiting", "waiting-0", "n1", false, {}});
  EXPECT_THAT(ApplyDecisions(Cluster(), Policy{}, twice),
              StatusIs(absl::StatusCode::kInvalidArgument));

  ScheduleResult running_bound;  // a RUNNING pod bound without being moved
  running_bound.bindings.push_back({"running", "running-0", "n2", false, {}});
  EXPECT_THAT(ApplyDecisions(Cluster(), Policy{}, running_bound),
              StatusIs(absl::StatusCode::kInvalidArgument));

  ScheduleResult pending_evicted;
  pending_evicted.evictions.push_back(
      {"waiting", "waiting-0", "", EvictionReason::kQuotaReclaim, "running", ""});
  EXPECT_THAT(ApplyDecisions(Cluster(), Policy{}, pending_evicted),
              StatusIs(absl::StatusCode::kInvalidArgument));

  ScheduleResult unknown_node;
  unknown_node.bindings.push_back({"waiting", "waiting-0", "n9", false, {}});
  EXPECT_THAT(ApplyDecisions(Cluster(), Policy{}, unknown_node),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ApplyDecisions, KueueAdmitsAndEvictsWholeWorkloads) {
  Snapshot s = SnapshotBuilder()
                   .Now(500)
                   .Queue("cq")
                   .Deserved({{"cpu", 4}})
                   .Group("old", "cq")
                   .Admitted(100)
                   .Pods(2, {{"cpu", 1}})
                   .Group("new", "cq")
                   .Pods(1, {{"cpu", 4}})
                   .Build();
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  ScheduleResult result;
  result.evictions.push_back({"old", "old-0", "", EvictionReason::kKueueInClusterQueue, "new", ""});
  result.evictions.push_back({"old", "old-1", "", EvictionReason::kKueueInClusterQueue, "new", ""});
  result.admissions.push_back({"new", "cq", true, {}});
  auto next = ApplyDecisions(s, policy, result);
  ASSERT_THAT(next, IsOk());
  for (const PodGroup& g : next->pod_groups) {
    if (g.name == "old") {
      EXPECT_FALSE(g.admitted);
      EXPECT_FALSE(g.admission_time.has_value());
    } else {
      EXPECT_TRUE(g.admitted);
      EXPECT_EQ(*g.admission_time, Seconds(500));
    }
  }
  ScheduleResult again;
  again.admissions.push_back({"old", "cq", false, {}});  // already admitted
  EXPECT_THAT(ApplyDecisions(s, policy, again), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ApplyDecisions, KueueAdmissionKeepsItsFlavorsAndEvictionDropsThem) {
  const Snapshot s = SnapshotBuilder()
                         .Now(500)
                         .Flavor("spot")
                         .Queue("cq")
                         .ResourceGroup({"cpu"})
                         .FlavorQuota("spot", {{"cpu", 4}})
                         .Group("old", "cq")
                         .Admitted(100)
                         .Pods(1, {{"cpu", 4}})
                         .AssignedFlavor("", "cpu", "spot")
                         .Group("new", "cq")
                         .Pods(1, {{"cpu", 4}})
                         .Build();
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  ScheduleResult result;
  result.evictions.push_back({"old", "old-0", "", EvictionReason::kKueueInClusterQueue, "new", ""});
  result.admissions.push_back({"new", "cq", true, {{"", {{"cpu", "spot"}}}}});
  auto next = ApplyDecisions(s, policy, result);
  ASSERT_THAT(next, IsOk());
  for (const PodGroup& g : next->pod_groups) {
    if (g.name == "old") {
      EXPECT_TRUE(g.flavors.empty());
    } else {
      ASSERT_EQ(g.flavors.size(), 1u);
      EXPECT_EQ(g.flavors[0].flavors.at("cpu"), "spot");
    }
  }
}

TEST(ApplyDecisions, ALegacyQueuesAdmissionLeavesOutTheImplicitFlavor) {
  // In a flavored request a queue without resource groups is answered with the implicit flavor
  // "" (SEMANTICS §5.8.9), which a pod group may not carry (§1 step 4).
  const Snapshot s = SnapshotBuilder()
                         .Now(500)
                         .Flavor("spot")
                         .Queue("legacy")
                         .Deserved({{"cpu", 4}})
                         .Group("new", "legacy")
                         .Pods(1, {{"cpu", 4}})
                         .Build();
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  ScheduleResult result;
  result.admissions.push_back({"new", "legacy", false, {{"", {{"cpu", ""}}}}});
  auto next = ApplyDecisions(s, policy, result);
  ASSERT_THAT(next, IsOk());
  EXPECT_TRUE(next->pod_groups[0].admitted);
  EXPECT_TRUE(next->pod_groups[0].flavors.empty());
  EXPECT_THAT(Schedule(*next, policy), IsOk());
}

// GPU sharing (SEMANTICS §4.13): one node with two GPU devices of 100 units; a sharing pod runs on
// "dev-a", two sharing pods wait (one on two devices), and a whole-GPU pod waits.
Snapshot SharingCluster() {
  return SnapshotBuilder()
      .Now(1000)
      .Node("n1", {{"nvidia.com/gpu", 2}, {"cpu", 8}})
      .Node("n2", {{"nvidia.com/gpu", 2}, {"cpu", 8}})
      .Queue("team")
      .Group("nb", "team")
      .Pod({{"cpu", 1}}, "n1", PodPhase::kRunning)
      .GpuFraction(0.5)
      .GpuGroups({"dev-a"})
      .Started(10)
      .Group("waiting", "team")
      .Pod({{"cpu", 1}})
      .GpuFraction(0.25)
      .Pod({{"cpu", 1}})
      .GpuFraction(0.25)
      .GpuDevices(2)
      .Group("whole", "team")
      .Pod({{"nvidia.com/gpu", 1}})
      .Build();
}

TEST(ApplyDecisions, ABoundSharingPodRunsOnItsBindingsDevicesAndANewDeviceKeepsItsName) {
  ScheduleResult result;
  result.bindings.push_back({"waiting", "waiting-0", "n1", false, {"dev-a"}});
  result.bindings.push_back({"waiting", "waiting-1", "n1", false, {"dev-a", "new-0"}});
  result.bindings.push_back({"whole", "whole-0", "n2", false, {}});
  auto next = ApplyDecisions(SharingCluster(), Policy{}, result);
  ASSERT_THAT(next, IsOk());
  const Pod& joined = FindPod(*next, "waiting", "waiting-0");
  EXPECT_EQ(joined.phase, PodPhase::kRunning);
  EXPECT_EQ(joined.node_name, "n1");
  EXPECT_THAT(joined.gpu_groups, ::testing::ElementsAre("dev-a"));
  // "new-0" names the device the binding opened, from now on: keys are opaque, and unique on
  // their node while the device exists (§4.13.2).
  EXPECT_THAT(FindPod(*next, "waiting", "waiting-1").gpu_groups,
              ::testing::ElementsAre("dev-a", "new-0"));
  EXPECT_TRUE(FindPod(*next, "whole", "whole-0").gpu_groups.empty());
  EXPECT_THAT(FindPod(*next, "nb", "nb-0").gpu_groups, ::testing::ElementsAre("dev-a"));
}

TEST(ApplyDecisions, AnEvictedSharingPodWaitsWithoutItsDevices) {
  ScheduleResult result;
  result.evictions.push_back(
      {"nb", "nb-0", "n1", EvictionReason::kFairShareReclaim, "whole", "reclaimed"});
  auto next = ApplyDecisions(SharingCluster(), Policy{}, result);
  ASSERT_THAT(next, IsOk());
  const Pod& pod = FindPod(*next, "nb", "nb-0");
  EXPECT_EQ(pod.phase, PodPhase::kPending);
  EXPECT_TRUE(pod.node_name.empty());
  EXPECT_TRUE(pod.gpu_groups.empty());
  EXPECT_THAT(Schedule(*next, Policy{}), IsOk());  // a PENDING pod with devices is invalid
}

TEST(ApplyDecisions, AMovedSharingPodTakesItsNewDevices) {
  ScheduleResult result;  // a move to another device of the same node (§4.13.5)
  result.evictions.push_back(
      {"nb", "nb-0", "n1", EvictionReason::kConsolidation, "waiting", "moved"});
  result.bindings.push_back({"nb", "nb-0", "n1", true, {"new-0"}});
  auto next = ApplyDecisions(SharingCluster(), Policy{}, result);
  ASSERT_THAT(next, IsOk());
  const Pod& pod = FindPod(*next, "nb", "nb-0");
  EXPECT_EQ(pod.phase, PodPhase::kRunning);
  EXPECT_EQ(pod.node_name, "n1");
  EXPECT_THAT(pod.gpu_groups, ::testing::ElementsAre("new-0"));
}

TEST(ApplyDecisions, RejectsABindingWithOtherThanThePodsNumberOfDevices) {
  ScheduleResult too_few;
  too_few.bindings.push_back({"waiting", "waiting-1", "n1", false, {"dev-a"}});  // d = 2
  EXPECT_THAT(ApplyDecisions(SharingCluster(), Policy{}, too_few),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("shares 2")));
  ScheduleResult none;
  none.bindings.push_back({"waiting", "waiting-0", "n1", false, {}});
  EXPECT_THAT(ApplyDecisions(SharingCluster(), Policy{}, none),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ScheduleResult whole;
  whole.bindings.push_back({"whole", "whole-0", "n2", false, {"new-0"}});
  EXPECT_THAT(
      ApplyDecisions(SharingCluster(), Policy{}, whole),
      StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("does not share GPUs")));
}

// Cycle after cycle through the core: the applied snapshot is a valid request, its devices are
// the ones the core chose, and a device opened later on the same node gets another name.
TEST(ApplyDecisions, TheCoresDevicesCarryOverToTheNextCycle) {
  Snapshot s = SharingCluster();
  s.pod_groups.pop_back();                       // the whole-GPU pod
  s.nodes[0].allocatable["nvidia.com/gpu"] = 3;  // room for a third device on n1
  Policy policy;
  auto first = Schedule(s, policy);
  ASSERT_THAT(first, IsOk());
  auto next = ApplyDecisions(s, policy, *first);
  ASSERT_THAT(next, IsOk());
  const Pod& two = FindPod(*next, "waiting", "waiting-1");
  ASSERT_EQ(two.phase, PodPhase::kRunning);
  ASSERT_EQ(two.gpu_groups.size(), 2u);
  EXPECT_EQ(FindPod(*next, "waiting", "waiting-0").phase, PodPhase::kRunning);

  // Another pod that needs a device of its own on the node of waiting-1.
  PodGroup late;
  late.name = "late";
  late.queue = "team";
  late.creation_time = Seconds(900);
  Pod pod;
  pod.name = "late-0";
  pod.gpu_fraction = 0.9;
  late.pods.push_back(pod);
  next->pod_groups.push_back(late);
  auto second = Schedule(*next, policy);
  ASSERT_THAT(second, IsOk());
  ASSERT_EQ(second->bindings.size(), 1u) << "late-0 is placed";
  const Binding& b = second->bindings[0];
  EXPECT_EQ(b.node, "n1");  // binpack: the fuller node
  EXPECT_THAT(b.gpu_groups, ::testing::ElementsAre("new-1")) << "new-0 is waiting-1's device";
  auto third = ApplyDecisions(*next, policy, *second);
  ASSERT_THAT(third, IsOk());
  EXPECT_THAT(Schedule(*third, policy), IsOk());
}

}  // namespace
}  // namespace arbiter::testing
