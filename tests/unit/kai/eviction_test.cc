// RECLAIM, PREEMPT and CONSOLIDATE (SEMANTICS.md §4.7-4.11): eviction sets, reasons, victims'
// units and order, min-runtime, the saturation guard and re-placed victims.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::IsOk;

using ::arbiter::testing::Bindings;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PendingMessage;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

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

// "pod@node REASON for preemptor" per eviction.
std::vector<std::string> Evictions(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Eviction& e : result.evictions) {
    out.push_back(absl::StrCat(e.pod, "@", e.node, " ", ReasonName(e.reason), " for ",
                               e.preemptor_pod_group));
  }
  return out;
}

Policy Actions(std::vector<Action> actions) { return PolicyWith(std::move(actions)); }
const std::vector<Action> kAllocateReclaim = {Action::kAllocate, Action::kReclaim};

// Two teams with equal deserved GPUs on one 8-GPU node; team-b borrowed all of it with an
// elastic group of four 2-GPU pods.
SnapshotBuilder Borrowed() {
  SnapshotBuilder b;
  b.Node("n1", Gpu(8))
      .Queue("team-a")
      .Deserved(Gpu(4))
      .Queue("team-b")
      .Deserved(Gpu(4))
      .Group("borrower", "team-b")
      .RunningPods(4, Gpu(2), "n1");
  return b;
}

// The same node held by team-b's gang of four 2-GPU pods at its min_member.
SnapshotBuilder GangHoldsTheNode() {
  SnapshotBuilder b;
  b.Node("n1", Gpu(8))
      .Queue("team-a")
      .Deserved(Gpu(4))
      .Queue("team-b")
      .Deserved(Gpu(4))
      .Group("gang", "team-b")
      .MinMember(4)
      .RunningPods(4, Gpu(2), "n1");
  return b;
}

// The same node held by a non-preemptible borrower in team-b.
SnapshotBuilder NonPreemptibleBorrower() {
  SnapshotBuilder b;
  b.Node("n1", Gpu(8))
      .Queue("team-a")
      .Deserved(Gpu(4))
      .Queue("team-b")
      .Deserved(Gpu(4))
      .Group("borrower", "team-b")
      .Preemptible(Preemptibility::kNonPreemptible)
      .RunningPods(4, Gpu(2), "n1");
  return b;
}

// RECLAIM refused before any victim was searched: nothing evicted, "job" pending on placement,
// and the reclaim outcome appended to its message.
void ExpectReclaimRefused(const ScheduleResult& result, const std::string& why) {
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("job:insufficient-resources"));
  EXPECT_THAT(PendingMessage(result, "job"), HasSubstr("; reclaim: " + why));
}

// ---- RECLAIM ----

// §4.10: team-b (fair share 6) holds 8, above its allocatable share: fair-share reclaim. The
// elastic victim gives up one pod, its last in pod order (§4.7).
TEST(Reclaim, FairShareReclaimFromQueueAboveItsAllocatableShare) {
  Snapshot s = Borrowed().Group("job", "team-a").Pods(1, Gpu(2)).Build();
  ScheduleResult result = RunCycle(s, Actions(kAllocateReclaim));
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("borrower-3@n1 FAIR_SHARE_RECLAIM for job"));
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(result.evictions[0].message,
            "reclaimed for job: queue team-b holds 8 nvidia.com/gpu, above its allocatable share "
            "6");
  EXPECT_THAT(result.pending, IsEmpty());
}

// one_pod_per_node holds for a reclaimer too: its pods wait, pipelined, on two distinct nodes, so
// the reclaim frees room on both rather than twice on one.
TEST(Reclaim, AOnePodPerNodeReclaimerTakesDistinctNodes) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(4))
                   .Group("b1", "team-b")
                   .RunningPods(4, Gpu(1), "n1")
                   .Group("b2", "team-b")
                   .RunningPods(4, Gpu(1), "n2")
                   .Group("job", "team-a")
                   .MinMember(2)
                   .OnePodPerNode()
                   .Pods(2, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions(kAllocateReclaim));
  ASSERT_EQ(result.bindings.size(), 2u);
  EXPECT_NE(result.bindings[0].node, result.bindings[1].node);
  EXPECT_TRUE(result.bindings[0].after_evictions && result.bindings[1].after_evictions);
  int on_n1 = 0;
  for (const Eviction& e : result.evictions) on_n1 += e.node == "n1" ? 1 : 0;
  EXPECT_GT(on_n1, 0);
  EXPECT_LT(on_n1, static_cast<int>(result.evictions.size()));
}

// §4.10: the capacity divided is larger than the node, so team-b's fair share covers what it
// holds (not above its allocatable share) but it is above deserved while team-a stays within
// its own: quota reclaim.
TEST(Reclaim, QuotaReclaimWhenVictimIsAboveDeservedOnly) {
  Snapshot s = SnapshotBuilder()
                   .Capacity(Gpu(16))
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(2))
                   .Group("borrower", "team-b")
                   .RunningPods(6, Gpu(1), "n1")
                   .Group("job", "team-a")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions(kAllocateReclaim));
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("borrower-4@n1 QUOTA_RECLAIM for job",
                                             "borrower-5@n1 QUOTA_RECLAIM for job"));
}

TEST(Reclaim, ReclaimerThatWouldExceedItsFairShareDoesNotReclaim) {
  Snapshot s = Borrowed().Group("job", "team-a").MinMember(3).Pods(3, Gpu(2)).Build();
  ExpectReclaimRefused(RunCycle(s, Actions(kAllocateReclaim)),
                       "queue team-a would exceed its fair share of nvidia.com/gpu: 0 allocated "
                       "+ 6 requested > 4");
}

// §0.7: a non-preemptible group is never a victim.
TEST(Reclaim, NonPreemptibleGroupIsNeverAVictim) {
  Snapshot s = NonPreemptibleBorrower().Group("job", "team-a").Pods(1, Gpu(2)).Build();
  ScheduleResult result = RunCycle(s, Policy{});
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("job:insufficient-resources"));
  EXPECT_THAT(PendingMessage(result, "job"), HasSubstr("reclaim: no set of victims lets it fit"));
}

// §4.7: a gang at its min_member is evicted whole.
TEST(Reclaim, GangVictimIsEvictedWhole) {
  Snapshot s = GangHoldsTheNode().Group("job", "team-a").Pods(1, Gpu(2)).Build();
  ScheduleResult result = RunCycle(s, Actions(kAllocateReclaim));
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1+"));
  EXPECT_EQ(result.evictions.size(), 4u);
}

// §4.7: protected by min-runtime, a non-elastic victim is not eligible.
TEST(Reclaim, MinRuntimeProtectsAGang) {
  Snapshot s = SnapshotBuilder()
                   .Now(1000)
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(4))
                   .ReclaimMinRuntime(600)
                   .Group("gang", "team-b")
                   .MinMember(4)
                   .RunningPods(4, Gpu(2), "n1")
                   .Started(900)
                   .Group("job", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  EXPECT_THAT(RunCycle(s, Actions(kAllocateReclaim)).evictions, IsEmpty());
  s.now = Timestamp{1600, 0};  // the runtime is over
  EXPECT_EQ(RunCycle(s, Actions(kAllocateReclaim)).evictions.size(), 4u);
}

// §4.7: a protected elastic victim may shrink, but not below min_member.
TEST(Reclaim, MinRuntimeLetsAnElasticGroupShrinkToMinMember) {
  Snapshot s = SnapshotBuilder()
                   .Now(1000)
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(4))
                   .ReclaimMinRuntime(600)
                   .Group("elastic", "team-b")
                   .MinMember(3)
                   .Pod(Gpu(2), "n1", PodPhase::kRunning)
                   .Started(900)
                   .Pod(Gpu(2), "n1", PodPhase::kRunning)
                   .Started(900)
                   .Pod(Gpu(2), "n1", PodPhase::kRunning)
                   .Started(900)
                   .Pod(Gpu(2), "n1", PodPhase::kRunning)
                   .Started(900)
                   .Group("job", "team-a")
                   .Pods(2, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions(kAllocateReclaim));
  // One pod may go (4 -> 3 = min_member); the second pod of job would need another.
  EXPECT_THAT(Evictions(result), ElementsAre("elastic-3@n1 FAIR_SHARE_RECLAIM for job"));
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1+"));
}

// §4.10: a reclaimer side that ends above its fair share must stay strictly less saturated
// than the sibling it takes from, by the multiplier m. dept-a (fair share 4) holds 4 and would
// hold 6 (saturation 1.5); dept-b (fair share 4) drops from 10 to 8 (saturation 2). With m = 1,
// 1.5 < 2 and team-b gives a pod; with m = 1.5, 2.25 >= 2 rejects every set drawn from dept-b,
// and team-a2, a sibling inside dept-a, gives one instead.
Snapshot SaturationCluster() {
  return SnapshotBuilder()
      .Capacity(Gpu(8))
      .Node("n1", Gpu(10))
      .Node("n2", Gpu(4))
      .Queue("dept-a")
      .Deserved(Gpu(4))
      .Queue("dept-b")
      .Deserved(Gpu(4))
      .Queue("team-a1", "dept-a")
      .Deserved(Gpu(2))
      .Queue("team-a2", "dept-a")
      .Deserved(Gpu(2))
      .Queue("team-b", "dept-b")
      .Deserved(Gpu(4))
      .Group("b-run", "team-b")
      .RunningPods(5, Gpu(2), "n1")
      .Group("a2-run", "team-a2")
      .RunningPods(2, Gpu(2), "n2")
      .Group("job", "team-a1")
      .Pods(1, Gpu(2))
      .Build();
}

TEST(Reclaim, SaturationGuardAllowsALessSaturatedReclaimer) {
  Policy policy = Actions(kAllocateReclaim);
  policy.reclaimer_utilization_multiplier = 1;
  EXPECT_THAT(Evictions(RunCycle(SaturationCluster(), policy)),
              ElementsAre("b-run-4@n1 FAIR_SHARE_RECLAIM for job"));
}

TEST(Reclaim, SaturationGuardWithLargerMultiplierRejects) {
  Policy policy = Actions(kAllocateReclaim);
  policy.reclaimer_utilization_multiplier = 1.5;
  EXPECT_THAT(Evictions(RunCycle(SaturationCluster(), policy)),
              ElementsAre("a2-run-1@n2 FAIR_SHARE_RECLAIM for job"));
}

// §4.8: with consolidating reclaim (the default) a victim that fits elsewhere is moved there
// (CONSOLIDATION plus a binding) instead of being reclaimed; without it every victim is evicted.
TEST(Reclaim, ConsolidatingReclaimMovesVictimsThatFitElsewhere) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Label("zone", "a")
                   .Node("n2", Gpu(4))
                   .Label("zone", "b")
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(2))
                   .Group("borrower", "team-b")
                   .RunningPods(2, Gpu(2), "n1")
                   .Group("job", "team-a")
                   .Pod(Gpu(4))
                   .Selector("zone", "a")
                   .Build();
  Policy policy = Actions(kAllocateReclaim);
  ScheduleResult moved = RunCycle(s, policy);
  EXPECT_THAT(Evictions(moved), ElementsAre("borrower-0@n1 CONSOLIDATION for job",
                                            "borrower-1@n1 CONSOLIDATION for job"));
  EXPECT_THAT(Bindings(moved), ElementsAre("borrower-0@n2+", "borrower-1@n2+", "job-0@n1+"));
  // Without moves both pods would have to be reclaimed; the second one would be judged with
  // team-b already down to its deserved 2 (and within its allocatable share 4), which neither
  // strategy allows.
  policy.consolidating_reclaim = false;
  ScheduleResult evicted = RunCycle(s, policy);
  EXPECT_THAT(evicted.evictions, IsEmpty());
  EXPECT_THAT(Pending(evicted), ElementsAre("job:insufficient-resources"));
}

TEST(Reclaim, LastVictimMayTakeTheQueueBelowItsShare) {
  // The strategy test precedes each subtraction (§4.10): team-b at 4 (fair share 4, deserved 2)
  // is above deserved when its one 4-GPU pod is judged, and ends at 0: quota reclaim.
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Label("zone", "a")
                   .Node("n2", Gpu(4))
                   .Label("zone", "b")
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(2))
                   .Group("borrower", "team-b")
                   .RunningPods(1, Gpu(4), "n1")
                   .Group("job", "team-a")
                   .Pod(Gpu(4))
                   .Selector("zone", "a")
                   .Build();
  Policy policy = Actions(kAllocateReclaim);
  policy.consolidating_reclaim = false;
  EXPECT_THAT(Evictions(RunCycle(s, policy)), ElementsAre("borrower-0@n1 QUOTA_RECLAIM for job"));
}

// §6: a failed eviction action with no earlier reason records the placement reason it ended on.
TEST(Reclaim, FailureWithoutEarlierReasonRecordsThePlacementReason) {
  Snapshot s = NonPreemptibleBorrower().Group("job", "team-a").Pods(1, Gpu(2)).Build();
  ScheduleResult result = RunCycle(s, Actions({Action::kReclaim}));
  EXPECT_THAT(Pending(result), ElementsAre("job:insufficient-resources"));
  EXPECT_EQ(PendingMessage(result, "job"),
            "pod job-0 needs 2 nvidia.com/gpu on one node; the largest free is 0 (node n1)");
}

// §4.1: a unit that fits without victims is ALLOCATE's job; without ALLOCATE it stays pending.
TEST(Reclaim, UnitThatNeedsNoVictimIsLeftToAllocate) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Group("job", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result =
      RunCycle(s, Actions({Action::kReclaim, Action::kPreempt, Action::kConsolidate}));
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("job:not-attempted"));
}

// §4.10: the validator's last test, allocatedNP(X) + a <= deserved(X) on every queue from the
// leaf up and in every resource, does not depend on the victims. Here the reclaimer asks only
// cpu, but its department already runs non-preemptible GPU work above its deserved GPUs: no
// victim set can pass, and the reason names the department rather than the victim search.
TEST(Reclaim, NonPreemptibleReclaimerBlockedByAnAncestorsNonPreemptibleWork) {
  const ResourceMap node = {{"cpu", 8}, {"nvidia.com/gpu", 8}};
  Snapshot s = SnapshotBuilder()
                   .Node("n1", node)
                   .Queue("dept")
                   .Deserved({{"cpu", 4}, {"nvidia.com/gpu", 2}})
                   .Queue("dept-a", "dept")
                   .Deserved({{"cpu", 4}, {"nvidia.com/gpu", 0}})
                   .Queue("dept-b", "dept")
                   .Deserved({{"cpu", 0}, {"nvidia.com/gpu", 2}})
                   .Queue("other")
                   .Deserved({{"cpu", 0}, {"nvidia.com/gpu", 0}})
                   .Group("serving", "dept-b")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .RunningPods(1, Gpu(4), "n1")
                   .Group("borrower", "other")
                   .RunningPods(8, {{"cpu", 1}}, "n1")
                   .Group("job", "dept-a")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .Pods(1, {{"cpu", 2}})
                   .Build();
  ExpectReclaimRefused(RunCycle(s, Actions(kAllocateReclaim)),
                       "queue dept would exceed its deserved nvidia.com/gpu with non-preemptible "
                       "work");
}

// §4.8 (a scenario may need no victim) after §4.1's ALLOCATE: once ALLOCATE has run, a unit
// that fits with no victim fits only thanks to this response's evictions. The first reclaim
// evicts the whole gang; the second job then fits on what it releases and is placed, pipelined,
// without evicting anything more. (Regression: it used to stay pending, and every later
// reclaimer of the same shape with it.)
TEST(Reclaim, UnitThatFitsOnCapacityReleasedByAnEarlierReclaimIsPlaced) {
  Snapshot s = GangHoldsTheNode()
                   .Group("job-1", "team-a")
                   .Pods(1, Gpu(2))
                   .Group("job-2", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions(kAllocateReclaim));
  EXPECT_THAT(Bindings(result), ElementsAre("job-1-0@n1+", "job-2-0@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("gang-0@n1 FAIR_SHARE_RECLAIM for job-1",
                                             "gang-1@n1 FAIR_SHARE_RECLAIM for job-1",
                                             "gang-2@n1 FAIR_SHARE_RECLAIM for job-1",
                                             "gang-3@n1 FAIR_SHARE_RECLAIM for job-1"));
  EXPECT_THAT(result.pending, IsEmpty());
}

// When ALLOCATE comes later in the list, the unit that needs no victim is left to it.
TEST(Reclaim, UnitThatNeedsNoVictimIsLeftToALaterAllocate) {
  Snapshot s = GangHoldsTheNode()
                   .Group("job-1", "team-a")
                   .Pods(1, Gpu(2))
                   .Group("job-2", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions({Action::kReclaim, Action::kAllocate}));
  EXPECT_THAT(Bindings(result), ElementsAre("job-1-0@n1+", "job-2-0@n1+"));
  EXPECT_EQ(result.evictions.size(), 4u);
  EXPECT_THAT(result.pending, IsEmpty());
}

// ---- PREEMPT ----

// §4.4 inside §4.8's try: the preemptor's queue is at its limit; one victim pod does not bring it
// low enough, two do. The solver may skip the first set only because its limit check would fail
// with every candidate evicted; the second set must still be tried and taken.
TEST(Preempt, VictimsUnderTheLimitedQueueLiftItsLimit) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team")
                   .Deserved(Gpu(4))
                   .Limit(Gpu(4))
                   .Group("low", "team")
                   .Priority(10)
                   .RunningPods(4, Gpu(1), "n1")
                   .Group("high", "team")
                   .Priority(50)
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions({Action::kAllocate, Action::kPreempt}));
  EXPECT_THAT(Bindings(result), ElementsAre("high-0@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("low-2@n1 PRIORITY_PREEMPTION for high",
                                             "low-3@n1 PRIORITY_PREEMPTION for high"));
  EXPECT_THAT(result.pending, IsEmpty());
}

TEST(Preempt, HigherPriorityJobEvictsLowerPriorityInTheSameQueue) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Queue("team")
                   .Deserved(Gpu(4))
                   .Group("low", "team")
                   .Priority(10)
                   .RunningPods(2, Gpu(2), "n1")
                   .Group("high", "team")
                   .Priority(50)
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions({Action::kAllocate, Action::kPreempt}));
  EXPECT_THAT(Bindings(result), ElementsAre("high-0@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("low-1@n1 PRIORITY_PREEMPTION for high"));
  EXPECT_EQ(result.evictions[0].message, "preempted for high: priority 50 over 10 in queue team");
}

TEST(Preempt, EqualPriorityIsNotPreempted) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .Priority(10)
                   .RunningPods(2, Gpu(2), "n1")
                   .Group("b", "team")
                   .Priority(10)
                   .Pods(1, Gpu(2))
                   .Build();
  EXPECT_THAT(RunCycle(s, Actions({Action::kPreempt})).evictions, IsEmpty());
}

TEST(Preempt, OtherQueuesAreNotPreempted) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Queue("team-a")
                   .Queue("team-b")
                   .Group("low", "team-b")
                   .Priority(1)
                   .RunningPods(2, Gpu(2), "n1")
                   .Group("high", "team-a")
                   .Priority(50)
                   .Pods(1, Gpu(2))
                   .Build();
  EXPECT_THAT(RunCycle(s, Actions({Action::kPreempt})).evictions, IsEmpty());
}

TEST(Preempt, PreemptMinRuntimeProtects) {
  Snapshot s = SnapshotBuilder()
                   .Now(100)
                   .Node("n1", Gpu(4))
                   .Queue("team")
                   .PreemptMinRuntime(300)
                   .Group("low", "team")
                   .Priority(10)
                   .MinMember(2)
                   .RunningPods(2, Gpu(2), "n1")
                   .Started(0)
                   .Group("high", "team")
                   .Priority(50)
                   .Pods(1, Gpu(2))
                   .Build();
  EXPECT_THAT(RunCycle(s, Actions({Action::kPreempt})).evictions, IsEmpty());
}

// ---- CONSOLIDATE ----

// Two 4-GPU nodes each hold one 2-GPU pod: moving one frees a whole node for a 4-GPU job.
TEST(Consolidate, MovesPodsSoThatAFragmentedJobFits) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("big", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions({Action::kAllocate, Action::kConsolidate}));
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(result.evictions[0].reason, EvictionReason::kConsolidation);
  EXPECT_EQ(result.evictions[0].preemptor_pod_group, "big");
  // The moved pod is bound to its new node, and big takes the freed one.
  ASSERT_EQ(result.bindings.size(), 2u);
  for (const Binding& b : result.bindings) EXPECT_TRUE(b.after_evictions);
  EXPECT_NE(result.bindings[0].node, result.bindings[1].node);
}

TEST(Consolidate, SkippedWhenTheClusterLacksTheResourceInAll) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(3), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(3), "n2")
                   .Group("big", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions({Action::kAllocate, Action::kConsolidate}));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(PendingMessage(result, "big"),
              HasSubstr("; consolidate: the cluster has 2 nvidia.com/gpu free in all, below the "
                        "4 requested"));
}

TEST(Consolidate, NothingMovesWithoutPreemptibleVictims) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .Priority(100)
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("b", "team")
                   .Priority(100)
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("big", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, Actions({Action::kAllocate, Action::kConsolidate}));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(PendingMessage(result, "big"),
              HasSubstr("; consolidate: no set of victims lets it fit"));
}

TEST(Consolidate, ZeroMaxPreempteesDisablesIt) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("big", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  Policy policy = Actions({Action::kAllocate, Action::kConsolidate});
  policy.max_consolidation_preemptees = 0;
  EXPECT_THAT(RunCycle(s, policy).evictions, IsEmpty());
}

TEST(Consolidate, NonPreemptibleCandidateIsNotConsolidatedFor) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("big", "team")
                   .Priority(100)
                   .Pods(1, Gpu(4))
                   .Build();
  EXPECT_THAT(RunCycle(s, Actions({Action::kAllocate, Action::kConsolidate})).evictions, IsEmpty());
}

}  // namespace
}  // namespace arbiter::kai

namespace arbiter::kai {
namespace {

// The work a call does, read from the cancellation hook: it is asked once per CancelPoll::kInterval
// units of work (core/cancel_poll.h), so the count of questions measures work without a clock.
int QuestionsAsked(const Snapshot& snapshot, const Policy& policy, ScheduleResult* result) {
  int asked = 0;
  CycleHooks hooks;
  hooks.cancelled = [&asked] {
    ++asked;
    return false;
  };
  absl::StatusOr<ScheduleResult> answer =
      ::arbiter::testing::ScheduleKaiWithHooks(snapshot, policy, hooks);
  EXPECT_THAT(answer, IsOk());
  if (answer.ok()) *result = *std::move(answer);
  return asked;
}

Snapshot GangOnEmptyNodes(int nodes, int pods) {
  SnapshotBuilder builder;
  builder.Queue("q").Deserved({{"cpu", -1}});
  for (int i = 0; i < nodes; ++i) builder.Node(absl::StrCat("n", i), {{"cpu", 1000}});
  builder.Group("gang", "q").Priority(300).MinMember(pods).Pods(pods, {{"cpu", 1000}});
  return builder.Build();
}

// Issue 11: with nothing to evict, the solver tried the gang part by part (1, 2, ..., 1,501
// pods), about 1.1 million placements. The parts that place with no victim are tried once,
// whole: a few thousand placements, a handful of questions to the hook.
TEST(Preempt, GangThatFitsButForItsLastPodIsNotTriedPartByPart) {
  ScheduleResult result;
  const int asked =
      QuestionsAsked(GangOnEmptyNodes(1500, 1501), PolicyWith({Action::kPreempt}), &result);
  EXPECT_THAT(Pending(result), ElementsAre("gang:gang-does-not-fit"));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_LT(asked, 100);  // part by part: more than 1,000
}

TEST(Preempt, GangThatFitsWithoutVictimsIsNotTriedPartByPart) {
  ScheduleResult result;
  const int asked =
      QuestionsAsked(GangOnEmptyNodes(1500, 1500), PolicyWith({Action::kPreempt}), &result);
  // PREEMPT leaves a unit that needs no victim to ALLOCATE, which is not listed.
  EXPECT_THAT(Pending(result), ElementsAre("gang:not-attempted"));
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_LT(asked, 100);
}

}  // namespace
}  // namespace arbiter::kai
