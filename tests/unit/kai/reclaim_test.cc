// RECLAIM (core/kai/reclaim.cc, SEMANTICS.md §4.7, §4.8, §4.10): a table of named cases, one
// cycle each with the evictions, bindings and pending groups it must give (eviction sets,
// reasons, victims' units, min-runtime, the saturation guard, re-placed victims), then the checks
// that do not fit a table.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/named_cases.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::Bindings;
using ::arbiter::testing::CaseName;
using ::arbiter::testing::EvictionCase;
using ::arbiter::testing::Evictions;
using ::arbiter::testing::ExpectDecisions;
using ::arbiter::testing::GangHoldsTheNode;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::NonPreemptibleBorrower;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PendingMessage;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::ProtectedGangHoldsTheNode;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SmallAndWideOnN1;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using Decisions = std::vector<std::string>;

Policy AllocateReclaim() { return PolicyWith({Action::kAllocate, Action::kReclaim}); }

// One node of `gpus` GPUs at t = 1000 s: team-a deserves them all and team-b none, and team-b's
// groups are protected from reclaim for 600 s after they start.
SnapshotBuilder TeamBProtectedFor600s(double gpus) {
  SnapshotBuilder b;
  b.Now(1000)
      .Node("n1", Gpu(gpus))
      .Queue("team-a")
      .Deserved(Gpu(gpus))
      .Queue("team-b")
      .Deserved(Gpu(0))
      .ReclaimMinRuntime(600);
  return b;
}

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

// RECLAIM refused before any victim was searched: nothing evicted, "job" pending on placement,
// and the reclaim outcome appended to its message.
void ExpectReclaimRefused(const ScheduleResult& result, const std::string& why) {
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("job:insufficient-resources"));
  EXPECT_THAT(PendingMessage(result, "job"), HasSubstr("; reclaim: " + why));
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

Policy WithMultiplier(double m) {
  Policy policy = AllocateReclaim();
  policy.reclaimer_utilization_multiplier = m;
  return policy;
}

// Two zoned 4-GPU nodes; team-b (deserved 2) runs `pods` pods of `gpus` GPUs each on n1, the one
// node in zone a, where team-a's 4-GPU job must go.
Snapshot ZonedBorrower(int pods, double gpus) {
  return SnapshotBuilder()
      .Node("n1", Gpu(4))
      .Label("zone", "a")
      .Node("n2", Gpu(4))
      .Label("zone", "b")
      .Queue("team-a")
      .Deserved(Gpu(4))
      .Queue("team-b")
      .Deserved(Gpu(2))
      .Group("borrower", "team-b")
      .RunningPods(pods, Gpu(gpus), "n1")
      .Group("job", "team-a")
      .Pod(Gpu(4))
      .Selector("zone", "a")
      .Build();
}

Policy WithoutConsolidatingReclaim() {
  Policy policy = AllocateReclaim();
  policy.consolidating_reclaim = false;
  return policy;
}

std::vector<EvictionCase> ReclaimCases() {
  std::vector<EvictionCase> cases;

  // §4.10: team-b (fair share 6) holds 8, above its allocatable share: fair-share reclaim. The
  // elastic victim gives up one pod, its last in pod order (§4.7).
  cases.push_back({"FairShareReclaimFromQueueAboveItsAllocatableShare",
                   Borrowed().Group("job", "team-a").Pods(1, Gpu(2)).Build(), AllocateReclaim(),
                   Decisions{"borrower-3@n1 FAIR_SHARE_RECLAIM for job"}, Decisions{"job-0@n1+"},
                   Decisions{},
                   "reclaimed for job: queue team-b holds 8 nvidia.com/gpu, above its allocatable "
                   "share 6"});

  // §4.10: the capacity divided is larger than the node, so team-b's fair share covers what it
  // holds (not above its allocatable share) but it is above deserved while team-a stays within
  // its own: quota reclaim.
  cases.push_back(
      {"QuotaReclaimWhenVictimIsAboveDeservedOnly",
       SnapshotBuilder()
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
           .Build(),
       AllocateReclaim(),
       Decisions{"borrower-4@n1 QUOTA_RECLAIM for job", "borrower-5@n1 QUOTA_RECLAIM for job"},
       Decisions{"job-0@n1+"}});

  // §4.7: a protected elastic victim may shrink, but not below min_member. One pod may go
  // (4 -> 3 = min_member); the second pod of job would need another.
  cases.push_back({"MinRuntimeLetsAnElasticGroupShrinkToMinMember",
                   SnapshotBuilder()
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
                       .Build(),
                   AllocateReclaim(), Decisions{"elastic-3@n1 FAIR_SHARE_RECLAIM for job"},
                   Decisions{"job-0@n1+"}});

  // §4.10, SaturationCluster(): with m = 1 team-b gives a pod...
  cases.push_back({"SaturationGuardAllowsALessSaturatedReclaimer", SaturationCluster(),
                   WithMultiplier(1), Decisions{"b-run-4@n1 FAIR_SHARE_RECLAIM for job"}});
  // ... with m = 1.5 team-a2 does.
  cases.push_back({"SaturationGuardWithLargerMultiplierRejects", SaturationCluster(),
                   WithMultiplier(1.5), Decisions{"a2-run-1@n2 FAIR_SHARE_RECLAIM for job"}});

  // §4.8: with consolidating reclaim (the default) a victim that fits elsewhere is moved there
  // (CONSOLIDATION plus a binding) instead of being reclaimed...
  cases.push_back(
      {"ConsolidatingReclaimMovesVictimsThatFitElsewhere", ZonedBorrower(2, 2), AllocateReclaim(),
       Decisions{"borrower-0@n1 CONSOLIDATION for job", "borrower-1@n1 CONSOLIDATION for job"},
       Decisions{"borrower-0@n2+", "borrower-1@n2+", "job-0@n1+"}});
  // ... without it every victim is evicted: both pods would have to be reclaimed, and the second
  // one would be judged with team-b already down to its deserved 2 (and within its allocatable
  // share 4), which neither strategy allows.
  cases.push_back({"ConsolidatingReclaimMovesVictimsThatFitElsewhere_WithoutMovesNoneIsReclaimed",
                   ZonedBorrower(2, 2), WithoutConsolidatingReclaim(), Decisions{}, std::nullopt,
                   Decisions{"job:insufficient-resources"}});

  // The strategy test precedes each subtraction (§4.10): team-b at 4 (fair share 4, deserved 2)
  // is above deserved when its one 4-GPU pod is judged, and ends at 0: quota reclaim.
  cases.push_back({"LastVictimMayTakeTheQueueBelowItsShare", ZonedBorrower(1, 4),
                   WithoutConsolidatingReclaim(),
                   Decisions{"borrower-0@n1 QUOTA_RECLAIM for job"}});
  return cases;
}

class ReclaimDecisions : public ::testing::TestWithParam<EvictionCase> {};

TEST_P(ReclaimDecisions, AreTheExpectedOnes) { ExpectDecisions(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Reclaim, ReclaimDecisions, ::testing::ValuesIn(ReclaimCases()),
                         CaseName());

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
  ScheduleResult result = RunCycle(s, AllocateReclaim());
  ASSERT_EQ(result.bindings.size(), 2u);
  EXPECT_NE(result.bindings[0].node, result.bindings[1].node);
  EXPECT_TRUE(result.bindings[0].after_evictions && result.bindings[1].after_evictions);
  int on_n1 = 0;
  for (const Eviction& e : result.evictions) on_n1 += e.node == "n1" ? 1 : 0;
  EXPECT_GT(on_n1, 0);
  EXPECT_LT(on_n1, static_cast<int>(result.evictions.size()));
}

TEST(Reclaim, ReclaimerThatWouldExceedItsFairShareDoesNotReclaim) {
  Snapshot s = Borrowed().Group("job", "team-a").MinMember(3).Pods(3, Gpu(2)).Build();
  ExpectReclaimRefused(RunCycle(s, AllocateReclaim()),
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
  ScheduleResult result = RunCycle(s, AllocateReclaim());
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1+"));
  EXPECT_EQ(result.evictions.size(), 4u);
}

// §4.7: protected by min-runtime, a non-elastic victim is not eligible.
TEST(Reclaim, MinRuntimeProtectsAGang) {
  Snapshot s = ProtectedGangHoldsTheNode().Group("job", "team-a").Pods(1, Gpu(2)).Build();
  ScheduleResult protected_result = RunCycle(s, AllocateReclaim());
  EXPECT_THAT(protected_result.evictions, IsEmpty());
  // Issue 32: the reason says that min-runtime is what protects the victims, and until when.
  EXPECT_THAT(PendingMessage(protected_result, "job"),
              HasSubstr("; reclaim: the victims that would let it fit are protected by "
                        "reclaim_min_runtime until 1970-01-01T00:25:00Z"));
  s.now = Timestamp{1600, 0};  // the runtime is over
  EXPECT_EQ(RunCycle(s, AllocateReclaim()).evictions.size(), 4u);
}

// §0 and §4.7: a group is elastic when it has more than g non-RELEASING pods, also while only g
// of them run. Protected by min-runtime, such a group is still a victim, and a scenario that takes
// it below g is invalid: "small" (one of its three pods running) is drawn first, and every try
// on n1 evicts it, so the job stays pending. (Judging elasticity on the running pods alone made
// "small" no victim and evicted "wide" for the job; seed 712 of the differential's eviction
// features, where KAI leaves the job pending.)
TEST(Reclaim, MinRuntimeElasticWithOnlyItsGangRunningIsAVictimThatMustKeepIt) {
  auto snapshot = [](int64_t small_started) {
    SnapshotBuilder b;
    b.Now(1000)
        .Node("n1", Gpu(2))
        .Queue("team-a")
        .Deserved(Gpu(2))
        .Queue("team-b")
        .Deserved(Gpu(0))
        .ReclaimMinRuntime(600);
    return SmallAndWideOnN1(b, "team-b", small_started)
        .Group("job", "team-a")
        .Pods(1, Gpu(1))
        .Build();
  };
  ScheduleResult result = RunCycle(snapshot(900), AllocateReclaim());
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(Pending(result), Contains("job:insufficient-resources"));
  // Once small's min-runtime is over, it is the first victim and goes alone.
  result = RunCycle(snapshot(0), AllocateReclaim());
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(result.evictions[0].pod, "small-0");
  EXPECT_THAT(Bindings(result), ElementsAre("job-0@n1+"));
}

// The reason's search without min-runtime repeats the failed search's victims and does not make
// again the tries it shares with it (Solver::Record), except those with a protected victim, whose
// verdicts differ without min-runtime. Here every try evicts the protected elastic group: the
// failed search rejects the one that takes it below g, and the search without min-runtime must
// make that try again to find that min-runtime is what stops the job.
TEST(Reclaim, MinRuntimeReasonRetriesWhatAProtectedElasticVictimFailed) {
  Snapshot s = TeamBProtectedFor600s(2)
                   .Group("elastic", "team-b")
                   .MinMember(1)
                   .RunningPods(2, Gpu(1), "n1")
                   .Started(900)
                   .Group("job", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  const ScheduleResult result = RunCycle(s, AllocateReclaim());
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(PendingMessage(result, "job"),
              HasSubstr("reclaim: the victims that would let it fit are protected by "
                        "reclaim_min_runtime until 1970-01-01T00:25:00Z"));
}

// §4.7: reclaim min-runtime is read at the child of the two leaves' lowest common ancestor on the
// victim's side, so one victim may be protected from one reclaimer and not from another in the
// same cycle. "small" (elastic, its one RUNNING pod started at 900) and "wide" (g = 1, started at
// 900) run in org/team-b. From "outsider" (a top-level queue) the child is org, protected for
// 600 s: small may not lose its last pod and wide is no victim, so outsider (first in §4.3
// order: org is over its share) stays pending. From "insider" (org/team-c) the child is team-b,
// whose 0 s protects nothing: small goes. The solver keeps each search's protection verdicts;
// one kept from outsider's search would keep small from insider.
TEST(Reclaim, MinRuntimeProtectionIsJudgedForEachReclaimer) {
  Snapshot s = SnapshotBuilder()
                   .Now(1000)
                   .Node("n1", Gpu(2))
                   .Queue("outsider-team")
                   .Deserved(Gpu(1))
                   .Queue("org")
                   .Deserved(Gpu(1))
                   .ReclaimMinRuntime(600)
                   .Queue("team-b", "org")
                   .Deserved(Gpu(0))
                   .ReclaimMinRuntime(0)
                   .Queue("team-c", "org")
                   .Deserved(Gpu(1))
                   .Group("small", "team-b")
                   .Priority(10)
                   .MinMember(1)
                   .RunningPods(1, Gpu(1), "n1")
                   .Started(900)
                   .Pods(2, Gpu(1))
                   .Group("wide", "team-b")
                   .Priority(20)
                   .MinMember(1)
                   .RunningPods(1, Gpu(1), "n1")
                   .Started(900)
                   .Group("outsider", "outsider-team")
                   .Pods(1, Gpu(1))
                   .Group("insider", "team-c")
                   .Pods(1, Gpu(1))
                   .Build();
  const ScheduleResult result = RunCycle(s, AllocateReclaim());
  EXPECT_THAT(Evictions(result), ElementsAre("small-0@n1 FAIR_SHARE_RECLAIM for insider"));
  EXPECT_THAT(Bindings(result), ElementsAre("insider-0@n1+"));
  EXPECT_THAT(Pending(result), Contains("outsider:insufficient-resources"));
}

// The min-runtime reason names the latest end among the victims the unit needs: two gangs that
// started at 800 and 900 must both go for the 8-GPU job, so it waits until the later one's end.
TEST(Reclaim, MinRuntimeReasonNamesTheLatestEndAmongTheNeededVictims) {
  Snapshot s = TeamBProtectedFor600s(8)
                   .Group("early", "team-b")
                   .MinMember(2)
                   .RunningPods(2, Gpu(2), "n1")
                   .Started(800)
                   .Group("late", "team-b")
                   .MinMember(2)
                   .RunningPods(2, Gpu(2), "n1")
                   .Started(900)
                   .Group("job", "team-a")
                   .Pods(1, Gpu(8))
                   .Build();
  ScheduleResult result = RunCycle(s, AllocateReclaim());
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(PendingMessage(result, "job"),
              HasSubstr("reclaim: the victims that would let it fit are protected by "
                        "reclaim_min_runtime until 1970-01-01T00:25:00Z"));
}

// When even without min-runtime no set of victims would let the unit fit, the reason does not
// blame min-runtime.
TEST(Reclaim, MinRuntimeIsNotNamedWhenNoVictimsWouldHelpAnyway) {
  Snapshot s = ProtectedGangHoldsTheNode().Group("job", "team-a").Pods(1, Gpu(16)).Build();
  ScheduleResult result = RunCycle(s, AllocateReclaim());
  EXPECT_THAT(PendingMessage(result, "job"), Not(HasSubstr("min_runtime")));
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
  ExpectReclaimRefused(RunCycle(s, AllocateReclaim()),
                       "queue dept would exceed its deserved nvidia.com/gpu with non-preemptible "
                       "work");
}

}  // namespace
}  // namespace arbiter::kai
