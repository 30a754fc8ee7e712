// ALLOCATE (SEMANTICS.md §4.2, §4.4, §4.6): units, gangs, elastic growth and quota checks.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::IsOk;
using ::arbiter::testing::StatusIs;

using ::arbiter::testing::AllocateOnly;
using ::arbiter::testing::Bindings;
using ::arbiter::testing::Cpu;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PendingMessage;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

int CountBound(const ScheduleResult& result, const std::string& group) {
  int count = 0;
  for (const Binding& b : result.bindings) count += b.pod_group == group ? 1 : 0;
  return count;
}

// §4.2: a gang is placed all or nothing.
TEST(Allocate, GangThatFitsOnlyPartlyPlacesNothing) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Group("train", "team")
                   .MinMember(3)
                   .Pods(3, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("train:gang-does-not-fit"));
  EXPECT_EQ(PendingMessage(result, "train"),
            "each of the 3 pods of the gang fits on some node alone, but only 2 fit together");
}

TEST(Allocate, GangThatFitsWholeIsPlacedWhole) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("train", "team")
                   .MinMember(3)
                   .Pods(3, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  // Binpack: the first pod takes the fuller node n2, the others fill n1.
  EXPECT_THAT(Bindings(result), ElementsAre("train-0@n2", "train-1@n1", "train-2@n1"));
  EXPECT_THAT(result.pending, IsEmpty());
}

// §4.2: with active < g the unit is exactly the missing g - active pods; then one pod at a time.
TEST(Allocate, GangUnitIsTheMissingPodsThenElasticGrowth) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(3))
                   .Queue("team")
                   .Group("train", "team")
                   .MinMember(2)
                   .Pod(Gpu(1), "n1", PodPhase::kRunning, "a")
                   .Pod(Gpu(1), "", PodPhase::kPending, "b")
                   .Pod(Gpu(1), "", PodPhase::kPending, "c")
                   .Pod(Gpu(1), "", PodPhase::kPending, "d")
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  // b completes the gang; c grows it; d does not fit, but the gang is met, so it is not pending.
  EXPECT_THAT(Bindings(result), ElementsAre("b@n1", "c@n1"));
  EXPECT_THAT(result.pending, IsEmpty());
}

// §4.2, §4.3: an elastic group grows by one pod and goes back to compete, so two equal queues
// alternate instead of the first taking everything.
TEST(Allocate, ElasticGroupsGrowOnePodAtATimeAndAlternate) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Cpu(4000))
                   .Queue("a")
                   .Queue("b")
                   .Group("ja", "a")
                   .Pods(4, Cpu(1000))
                   .Group("jb", "b")
                   .Pods(4, Cpu(1000))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_EQ(CountBound(result, "ja"), 2);
  EXPECT_EQ(CountBound(result, "jb"), 2);
}

// §0.7: a group with fewer than g non-RELEASING pods is never allocated.
TEST(Allocate, GroupWithTooFewPodsIsGangIncomplete) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Group("train", "team")
                   .MinMember(3)
                   .Pods(2, Gpu(1))
                   .Pod(Gpu(1), "n1", PodPhase::kReleasing)
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("train:gang-incomplete"));
  EXPECT_EQ(PendingMessage(result, "train"),
            "needs 3 pods to start (min_member 3) but has 2 that are not releasing");
}

// §4.4: the limit applies at every ancestor.
TEST(Allocate, LimitOfAnAncestorBlocksTheUnit) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Cpu(16000))
                   .Queue("dept")
                   .Limit(Cpu(5000))
                   .Queue("team-a", "dept")
                   .Queue("team-b", "dept")
                   .Group("running", "team-b")
                   .RunningPods(1, Cpu(3000), "n1")
                   .Group("train", "team-a")
                   .MinMember(2)
                   .Pods(2, Cpu(2000))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("train:queue-over-limit"));
  EXPECT_EQ(PendingMessage(result, "train"),
            "queue dept would exceed its limit on cpu: 3000 allocated + 4000 requested > limit "
            "5000");
}

TEST(Allocate, LimitIsCheckedOnlyForRequestedResources) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 8000}, {"nvidia.com/gpu", 4}})
                   .Queue("team")
                   .Limit({{"nvidia.com/gpu", 0}})
                   .Group("cpu-job", "team")
                   .Pods(1, Cpu(1000))
                   .Group("gpu-job", "team")
                   .Pods(1, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("cpu-job-0@n1"));
  EXPECT_THAT(Pending(result), ElementsAre("gpu-job:queue-over-limit"));
}

TEST(Allocate, LimitStopsElasticGrowthAtTheCap) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Cpu(16000))
                   .Queue("team")
                   .Limit(Cpu(3000))
                   .Group("web", "team")
                   .Pods(5, Cpu(1000))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_EQ(CountBound(result, "web"), 3);
  EXPECT_THAT(result.pending, IsEmpty());  // its gang (1) is met
}

// §4.4: non-preemptible work must fit within deserved, counting only non-preemptible allocation.
TEST(Allocate, NonPreemptibleGroupOverDeservedStaysPending) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Deserved(Gpu(4))
                   .Group("np-running", "team")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .RunningPods(1, Gpu(3), "n1")
                   .Group("np-new", "team")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("np-new:non-preemptible-over-quota"));
  EXPECT_EQ(PendingMessage(result, "np-new"),
            "queue team would exceed its deserved nvidia.com/gpu with non-preemptible work: 3 "
            "allocated + 2 requested > deserved 4");
}

TEST(Allocate, NonPreemptibleGroupMayRunWhileQueueIsAboveDeserved) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Deserved(Gpu(4))
                   .Group("preemptible", "team")
                   .RunningPods(5, Gpu(1), "n1")
                   .Group("np-new", "team")
                   .Priority(100)
                   .Pods(1, Gpu(2))  // priority 100: NP
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("np-new-0@n1"));
}

TEST(Allocate, PreemptibleGroupIgnoresTheNonPreemptibleQuota) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Deserved(Gpu(1))
                   .Group("job", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1"));
}

TEST(Allocate, NonPreemptibleQuotaAppliesAtAncestors) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("dept")
                   .Deserved(Gpu(2))
                   .Queue("team", "dept")
                   .Deserved(Gpu(-1))
                   .Group("np", "team")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .Pods(1, Gpu(3))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  EXPECT_THAT(Pending(result), ElementsAre("np:non-preemptible-over-quota"));
  EXPECT_EQ(PendingMessage(result, "np"),
            "queue dept would exceed its deserved nvidia.com/gpu with non-preemptible work: 0 "
            "allocated + 3 requested > deserved 2");
}

// §4.1: only listed actions run.
TEST(Allocate, WithoutAllocateInTheActionsNothingIsPlaced) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Group("job", "team")
                   .Pods(1, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kPreempt}));
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("job:not-attempted"));
}

TEST(Allocate, EmptyActionListMeansTheDefaultActions) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Group("job", "team")
                   .Pods(1, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, Policy{});
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1"));
}

// §6: the queue list is the start-of-call fair share; pending is by pod group.
TEST(Allocate, QueuesAreTheFairShareAtTheStartOfTheCall) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Deserved(Gpu(8))
                   .Group("job", "team")
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateOnly());
  ASSERT_EQ(result.queues.size(), 1u);
  EXPECT_EQ(result.queues[0].allocated.at("nvidia.com/gpu"), 0);
  EXPECT_EQ(result.queues[0].requested.at("nvidia.com/gpu"), 2);
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1"));
}

TEST(Allocate, CancelledBetweenActions) {
  Snapshot s = SnapshotBuilder().Node("n1", Gpu(8)).Queue("team").Build();
  int calls = 0;
  CycleHooks hooks;
  hooks.cancelled = [&calls] { return ++calls > 1; };  // fair share runs, allocate does not
  std::vector<std::string> phases;
  hooks.phase_done = [&phases](std::string_view phase) { phases.emplace_back(phase); };
  absl::StatusOr<ScheduleResult> result =
      ::arbiter::testing::ScheduleKaiWithHooks(s, AllocateOnly(), hooks);
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(std::string(result.status().message()), ::testing::HasSubstr("allocate"));
  EXPECT_THAT(phases, ElementsAre("fair_share"));
}

TEST(Allocate, PhasesAreReportedInOrder) {
  Snapshot s = SnapshotBuilder().Node("n1", Gpu(8)).Queue("team").Build();
  std::vector<std::string> phases;
  CycleHooks hooks;
  hooks.phase_done = [&phases](std::string_view phase) { phases.emplace_back(phase); };
  ASSERT_THAT(::arbiter::testing::ScheduleKaiWithHooks(
                  s, PolicyWith({Action::kReclaim, Action::kAllocate}), hooks),
              IsOk());
  EXPECT_THAT(phases, ElementsAre("fair_share", "reclaim", "allocate", "respond"));
}

}  // namespace
}  // namespace arbiter::kai
