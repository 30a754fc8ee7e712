// Fair-sharing preemption (SEMANTICS.md §5.5): candidates, their order, the target ordering from
// the root, each strategy, the rerun, the second pass, all or nothing and fill-back, as a table of
// named cases, then the candidate comparator. Every case says by hand which shares are compared and
// why the victims are the ones expected.
#include "core/kueue/fair_preemption.h"

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/named_cases.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using ::arbiter::testing::CaseName;
using testing::KueuePolicy;
using testing::RoundsResult;
using testing::RunRounds;
using testing::SnapshotBuilder;
using Victims = std::map<std::string, EvictionReason>;
using Admitted = std::map<std::string, bool>;  // name -> admitted after evictions

constexpr auto kNever = WithinClusterQueue::kNever;
constexpr auto kLower = WithinClusterQueue::kLowerPriority;
constexpr auto kAny = ReclaimWithinCohort::kAny;
constexpr auto kInCq = EvictionReason::kKueueInClusterQueue;
constexpr auto kReclaim = EvictionReason::kKueueInCohortReclamation;
constexpr auto kFair = EvictionReason::kKueueInCohortFairSharing;
constexpr auto kLessOrEqualFinal = KueuePreemptionStrategy::kLessThanOrEqualToFinalShare;
constexpr auto kLessInitial = KueuePreemptionStrategy::kLessThanInitialShare;

// ---- §5.5: one preemptor w against a cluster state, and the decisions that follow ----

// The outcome of admission rounds until quiet: exactly `evicted`, and w either admitted as
// `admitted` says or pending with `pending_reason`. An empty field is not checked.
struct PreemptionCase {
  std::string name;
  Snapshot snapshot;
  Policy policy;
  // Exactly these victims, with their reasons.
  Victims evicted;
  // When not empty: w stays pending with this reason code.
  std::string pending_reason = "";
  // When set: exactly these admissions.
  std::optional<Admitted> admitted = std::nullopt;
  // When not empty: a full cycle evicts one workload, with this sentence.
  std::string message = "";
};

void PrintTo(const PreemptionCase& c, std::ostream* os) { *os << c.name; }

// §5.5 step 1: three workloads of equal priority 5 in one queue: "older" and "newer" admitted, w
// created between them.
Snapshot EqualPrioritySnapshot(WithinClusterQueue within) {
  return SnapshotBuilder()
      .Queue("q")
      .Deserved({{"cpu", 4}})
      .KueuePolicy(within, kAny)
      .Group("older", "q")
      .Priority(5)
      .Created(0)
      .Pod({{"cpu", 2}})
      .Admitted(0)
      .Group("newer", "q")
      .Priority(5)
      .Created(10)
      .Pod({{"cpu", 2}})
      .Admitted(0)
      .Group("w", "q")
      .Priority(5)
      .Created(5)
      .Pod({{"cpu", 2}})
      .Build();
}

// §5.5 step 2: r (priority 3, RELEASING when `releasing`), l (priority 1) and n (priority 1,
// admitted later) fill q; w (priority 5) needs one of them.
Snapshot CandidateOrderSnapshot(bool releasing) {
  SnapshotBuilder b;
  b.Node("n1", {{"cpu", 100}});
  b.Queue("q").Deserved({{"cpu", 6}}).KueuePolicy(kLower, kAny);
  b.Group("r", "q").Priority(3).Admitted(0);
  b.Pod({{"cpu", 2}}, "n1", releasing ? PodPhase::kReleasing : PodPhase::kRunning);
  b.Group("l", "q").Priority(1).Pod({{"cpu", 2}}, "n1").Admitted(0);
  b.Group("n", "q").Priority(1).Pod({{"cpu", 2}}, "n1").Admitted(9);
  b.Group("w", "q").Priority(5).Pod({{"cpu", 2}});
  return b.Build();
}

// §5.5 step 3: x (nominal `x_nominal`) and x2 (a non-preemptible 5) under D1, y (y0, 1) under D2; w
// needs 1 in x.
Snapshot NominalQuotaSnapshot(double x_nominal, double root_quota) {
  return SnapshotBuilder()
      .Queue("root")
      .Deserved({{"cpu", root_quota}})
      .Queue("D1", "root")
      .Queue("x", "D1")
      .Deserved({{"cpu", x_nominal}})
      .KueuePolicy(kNever, kAny)
      .Queue("x2", "D1")
      .Deserved({{"cpu", 0}})
      .Queue("D2", "root")
      .Queue("y", "D2")
      .Deserved({{"cpu", 0}})
      .Group("x2a", "x2")
      .Preemptible(Preemptibility::kNonPreemptible)
      .Pod({{"cpu", 5}})
      .Admitted(0)
      .Group("y0", "y")
      .Pod({{"cpu", 1}})
      .Admitted(0)
      .Group("w", "x")
      .Pod({{"cpu", 1}})
      .Build();
}

// a holds the whole pool of 10 with a0 (6) and a1 (4, newer: first candidate); b's w needs 5.
// Shares with w: b 500, a 1000.
Snapshot BigVictimSnapshot() {
  return SnapshotBuilder()
      .Queue("root")
      .Deserved({{"cpu", 10}})
      .Queue("a", "root")
      .Deserved({{"cpu", 0}})
      .Queue("b", "root")
      .Deserved({{"cpu", 0}})
      .KueuePolicy(kNever, kAny)
      .Group("a0", "a")
      .Pod({{"cpu", 6}})
      .Admitted(0)
      .Group("a1", "a")
      .Pod({{"cpu", 4}})
      .Admitted(5)
      .Group("w", "b")
      .Pod({{"cpu", 5}})
      .Build();
}

// §5.5 step 6: x holds xl (priority 0, 2), y holds y0 and y1 (4 each); w (priority 5) needs 4 in x.
Snapshot RerunSnapshot(WithinClusterQueue within) {
  return SnapshotBuilder()
      .Queue("root")
      .Deserved({{"cpu", 10}})
      .Queue("x", "root")
      .Deserved({{"cpu", 0}})
      .KueuePolicy(within, kAny)
      .Queue("y", "root")
      .Deserved({{"cpu", 0}})
      .Group("xl", "x")
      .Priority(0)
      .Pod({{"cpu", 2}})
      .Admitted(0)
      .Group("y0", "y")
      .Pod({{"cpu", 4}})
      .Admitted(0)
      .Group("y1", "y")
      .Pod({{"cpu", 4}})
      .Admitted(5)
      .Group("w", "x")
      .Priority(5)
      .Pod({{"cpu", 4}})
      .Build();
}

// §5.5 step 4: D1 holds a (6 units) and b (5), D2 holds c (7) and x, where w needs 3.
Snapshot BiggestOffenderSnapshot() {
  SnapshotBuilder b;
  b.Queue("root").Deserved({{"cpu", 20}});
  b.Queue("D1", "root");
  b.Queue("a", "D1").Deserved({{"cpu", 0}});
  b.Queue("b", "D1").Deserved({{"cpu", 0}});
  b.Queue("D2", "root");
  b.Queue("c", "D2").Deserved({{"cpu", 0}});
  b.Queue("x", "D2").Deserved({{"cpu", 0}}).KueuePolicy(kNever, kAny);
  auto units = [&b](const std::string& queue, int count) {
    for (int i = 0; i < count; ++i) {
      b.Group(queue + "-" + std::to_string(i), queue).Pod({{"cpu", 1}}).Admitted(0);
    }
  };
  units("a", 6);
  units("b", 5);
  units("c", 7);
  b.Group("w", "x").Pod({{"cpu", 3}});
  return b.Build();
}

// §5.5 step 1: y holds y-hi (priority 10) and y-lo (priority 0); w (priority 5) needs both.
Snapshot ReclaimPrioritySnapshot(ReclaimWithinCohort reclaim) {
  return SnapshotBuilder()
      .Queue("root")
      .Queue("x", "root")
      .Deserved({{"cpu", 4}})
      .KueuePolicy(kNever, reclaim)
      .Queue("y", "root")
      .Deserved({{"cpu", 0}})
      .Group("y-hi", "y")
      .Priority(10)
      .Pod({{"cpu", 2}})
      .Admitted(0)
      .Group("y-lo", "y")
      .Priority(0)
      .Pod({{"cpu", 2}})
      .Admitted(0)
      .Group("w", "x")
      .Priority(5)
      .Pod({{"cpu", 4}})
      .Build();
}

// §5.3: x (fair-sharing weight `weight`) borrows for w (2); y holds y0 and y1 (5 each).
Snapshot WeightedPreemptorSnapshot(double weight) {
  return SnapshotBuilder()
      .Queue("root")
      .Deserved({{"cpu", 10}})
      .Queue("x", "root")
      .Deserved({{"cpu", 0}})
      .FairSharingWeight(weight)
      .KueuePolicy(kNever, kAny)
      .Queue("y", "root")
      .Deserved({{"cpu", 0}})
      .Group("y0", "y")
      .Pod({{"cpu", 5}})
      .Admitted(0)
      .Group("y1", "y")
      .Pod({{"cpu", 5}})
      .Admitted(5)
      .Group("w", "x")
      .Pod({{"cpu", 2}})
      .Build();
}

std::vector<PreemptionCase> PreemptionCases() {
  const Policy defaults = KueuePolicy();
  const Policy first_only = KueuePolicy({kLessOrEqualFinal});
  std::vector<PreemptionCase> cases;

  // §5.5 steps 1 and 5: within its own ClusterQueue, LOWER_PRIORITY preempts only lower priorities
  // (reason KUEUE_IN_CLUSTER_QUEUE); w is admitted once the victim is gone.
  cases.push_back({"InClusterQueuePreemptsLowerPriorityOnly",
                   SnapshotBuilder()
                       .Queue("q")
                       .Deserved({{"cpu", 4}})
                       .KueuePolicy(kLower, kAny)
                       .Group("lo", "q")
                       .Priority(0)
                       .Pod({{"cpu", 2}})
                       .Admitted(0)
                       .Group("hi", "q")
                       .Priority(10)
                       .Pod({{"cpu", 2}})
                       .Admitted(0)
                       .Group("w", "q")
                       .Priority(5)
                       .Pod({{"cpu", 2}})
                       .Build(),
                   defaults, Victims{{"lo", kInCq}}, "", Admitted{{"w", true}},
                   "preempted within cluster queue q for w (priority 0 against 5)"});

  // §5.5 step 1: LOWER_OR_NEWER_EQUAL_PRIORITY also takes equal priorities created after w...
  cases.push_back({"InClusterQueueLowerOrNewerEqualPriority",
                   EqualPrioritySnapshot(WithinClusterQueue::kLowerOrNewerEqualPriority), defaults,
                   Victims{{"newer", kInCq}}});
  // ... and LOWER_PRIORITY takes neither.
  cases.push_back({"InClusterQueueLowerOrNewerEqualPriority_LowerPriorityTakesNone",
                   EqualPrioritySnapshot(kLower), defaults, Victims{}, "no-preemption-candidates"});

  // §5.5 step 2: workloads already being evicted (a RELEASING pod) go first, then lower priority,
  // then newer admission_time.
  cases.push_back({"CandidatesReleasingFirstThenLowerPriorityThenNewer",
                   CandidateOrderSnapshot(/*releasing=*/true), defaults, Victims{{"r", kInCq}}});
  cases.push_back({"CandidatesReleasingFirstThenLowerPriorityThenNewer_NoneReleasing",
                   CandidateOrderSnapshot(/*releasing=*/false), defaults, Victims{{"n", kInCq}}});

  // §5.5 steps 3 and 5: x stays within its nominal quota with w, so it reclaims from a borrower
  // without any share test (reason KUEUE_IN_COHORT_RECLAMATION), although D1 with w (333) is above
  // D2 (167) and fair sharing alone would refuse. x2's workload is non-preemptible.
  cases.push_back({"ReclaimsNominalQuotaWithoutShareTest", NominalQuotaSnapshot(4, 2), defaults,
                   Victims{{"y0", kReclaim}}, "", Admitted{{"w", true}}});
  // Without nominal quota x borrows with w: D1 (with w 1000) is above D2 (167): no victim.
  cases.push_back({"ReclaimsNominalQuotaWithoutShareTest_BorrowingPreemptorFindsNone",
                   NominalQuotaSnapshot(0, 6), defaults, Victims{}, "no-preemption-candidates"});

  // §5.5 steps 5, 7 and 9 with both strategies: LESS_THAN_OR_EQUAL_TO_FINAL_SHARE evicts a1 (a
  // keeps 600 >= 500) but a0 fails it (a would keep 0); the second pass (LESS_THAN_INITIAL_SHARE,
  // 500 < 600) takes a0; fill-back then puts a1 back, since w fits without evicting it.
  cases.push_back({"SecondPassAndFillBackLeaveAMinimalSet", BigVictimSnapshot(), defaults,
                   Victims{{"a0", kFair}}, "", Admitted{{"w", true}}});

  // §5.5 step 8: with the first strategy alone no target set makes room, so nothing is evicted, not
  // even a1 which passed it.
  cases.push_back(
      {"AllOrNothing", BigVictimSnapshot(), first_only, Victims{}, "no-preemption-candidates"});

  // §5.5 step 5 with LESS_THAN_INITIAL_SHARE as the only strategy: 500 < 1000 takes a1, then 500 <
  // 600 takes a0; fill-back returns a1.
  cases.push_back({"LessThanInitialShareAlone", BigVictimSnapshot(), KueuePolicy({kLessInitial}),
                   Victims{{"a0", kFair}}});

  // §5.5 step 6: y (800) is visited before x (600 with w): both of y's 4-unit workloads fail the
  // first strategy (y would keep 400 < 600). Evicting x's own low-priority xl lowers x to 400 with
  // w, and the rerun of the first pass over the retry list now takes y1 (400 <= 400). Fill-back
  // returns xl.
  cases.push_back({"RerunAfterEvictingInTheOwnQueue", RerunSnapshot(kLower), first_only,
                   Victims{{"y1", kFair}}});
  // Without an eviction in x there is no rerun and no target set.
  cases.push_back({"RerunAfterEvictingInTheOwnQueue_NoOwnEvictionNoRerun", RerunSnapshot(kNever),
                   first_only, Victims{}, "no-preemption-candidates"});

  // §5.5 step 7: the second pass takes queue heads in share order. All four 3-unit victims fail the
  // first strategy (their queue would keep 250 < 333); the second pass takes y's head (333 < 500),
  // still short by one unit, drops y and takes z's head. (Dropping the queue cannot change a result
  // here: a victim that failed the first strategy leaves its side below w's, so the second strategy
  // would refuse that side again, as Kueue's own comment on the rule notes.)
  cases.push_back({"SecondPassTakesQueueHeadsInShareOrder",
                   SnapshotBuilder()
                       .Queue("root")
                       .Deserved({{"cpu", 12}})
                       .Queue("x", "root")
                       .Deserved({{"cpu", 0}})
                       .KueuePolicy(kNever, kAny)
                       .Queue("y", "root")
                       .Deserved({{"cpu", 0}})
                       .Queue("z", "root")
                       .Deserved({{"cpu", 0}})
                       .Group("y0", "y")
                       .Pod({{"cpu", 3}})
                       .Admitted(0)
                       .Group("y1", "y")
                       .Pod({{"cpu", 3}})
                       .Admitted(5)
                       .Group("z0", "z")
                       .Pod({{"cpu", 3}})
                       .Admitted(0)
                       .Group("z1", "z")
                       .Pod({{"cpu", 3}})
                       .Admitted(5)
                       .Group("w", "x")
                       .Pod({{"cpu", 4}})
                       .Build(),
                   defaults, Victims{{"y1", kFair}, {"z1", kFair}}});

  // §5.5 step 4: the target is picked from the root down by the shares of each level, and the
  // strategy compares the nodes one level below the lowest common ancestor. D1 (550) is above D2
  // (500 with w), so the victim comes from D1's biggest queue a (300), not from c, whose own share
  // (350) is the largest of all queues. D1 would keep 500 >= 500: it passes.
  cases.push_back({"TargetsTheBiggestOffenderFromTheRootDown", BiggestOffenderSnapshot(), defaults,
                   Victims{{"a-0", kFair}}, "", std::nullopt,
                   "preempted for w by fair sharing: cohort D1 keeps share 500 "
                   "without it, at "
                   "least the 500 of cohort D2 with the workload"});

  // §5.5 step 1: RECLAIM ANY takes all priorities from other queues: w needs both of y's
  // workloads...
  cases.push_back({"ReclaimLowerPriorityLeavesHigherPrioritiesAlone_AnyTakesAll",
                   ReclaimPrioritySnapshot(kAny), defaults,
                   Victims{{"y-hi", kReclaim}, {"y-lo", kReclaim}}});
  // ... while RECLAIM LOWER_PRIORITY only takes lower priorities, which are not enough.
  cases.push_back({"ReclaimLowerPriorityLeavesHigherPrioritiesAlone",
                   ReclaimPrioritySnapshot(ReclaimWithinCohort::kLowerPriority), defaults,
                   Victims{}, "no-preemption-candidates"});

  // §0.7, §5.5 step 1: a non-preemptible workload is never a victim.
  cases.push_back({"NonPreemptibleIsNeverAVictim",
                   SnapshotBuilder()
                       .Queue("q")
                       .Deserved({{"cpu", 2}})
                       .KueuePolicy(kLower, kAny)
                       .Group("keep", "q")
                       .Priority(0)
                       .Preemptible(Preemptibility::kNonPreemptible)
                       .Pod({{"cpu", 2}})
                       .Admitted(0)
                       .Group("w", "q")
                       .Priority(5)
                       .Pod({{"cpu", 2}})
                       .Build(),
                   defaults, Victims{}, "no-preemption-candidates"});

  // §5.3, §5.5 step 5: with weight 0 and borrowing, x's side is +∞ against y's finite share: no
  // strategy can pass...
  cases.push_back({"ZeroWeightPreemptorCannotWinByFairSharing", WeightedPreemptorSnapshot(0),
                   defaults, Victims{}, "no-preemption-candidates"});
  // ... with weight 1 the same request evicts y1 (y keeps 500 >= 200).
  cases.push_back({"ZeroWeightPreemptorCannotWinByFairSharing_WeightOneWins",
                   WeightedPreemptorSnapshot(1), defaults, Victims{{"y1", kFair}}});
  return cases;
}

class FairPreemption : public ::testing::TestWithParam<PreemptionCase> {};

TEST_P(FairPreemption, EvictsTheExpectedVictims) {
  const PreemptionCase& c = GetParam();
  const RoundsResult r = RunRounds(c.snapshot, 0, c.policy);
  EXPECT_EQ(r.evicted, c.evicted);
  if (!c.pending_reason.empty()) {
    ASSERT_EQ(r.reason.count("w"), 1u) << "w is not pending";
    EXPECT_EQ(r.reason.at("w"), c.pending_reason);
  }
  if (c.admitted.has_value()) {
    EXPECT_EQ(r.admitted, *c.admitted);
  }
  if (!c.message.empty()) {
    const ScheduleResult result = testing::RunKueue(c.snapshot, c.policy);
    ASSERT_EQ(result.evictions.size(), 1u);
    EXPECT_EQ(result.evictions[0].message, c.message);
  }
}

INSTANTIATE_TEST_SUITE_P(FairPreemptionTest, FairPreemption, ::testing::ValuesIn(PreemptionCases()),
                         CaseName());

// §5.5 step 2 across queues: other queues' candidates before the preemptor's own.
TEST(FairPreemptionTest, CandidateOrderPutsOtherQueuesFirst) {
  Workload own, other;
  PodGroup own_group, other_group;
  own_group.name = "a";
  other_group.name = "b";
  own.group = &own_group;
  other.group = &other_group;
  own.cq = 1;
  other.cq = 2;
  EXPECT_TRUE(CandidateBefore(other, own, /*preemptor_cq=*/1));
  EXPECT_FALSE(CandidateBefore(own, other, 1));
  own.releasing = true;
  EXPECT_TRUE(CandidateBefore(own, other, 1));  // being evicted comes first of all
}

}  // namespace
}  // namespace arbiter::kueue
