// Fair-sharing preemption (SEMANTICS.md §5.5): candidates, their order, the target ordering
// from the root, each strategy, the rerun, the second pass, all or nothing and fill-back. Every
// case says by hand which shares are compared and why the victims are the ones expected.
#include "core/kueue/fair_preemption.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using testing::KueuePolicy;
using testing::RoundsResult;
using testing::RunRounds;
using testing::SnapshotBuilder;
using Victims = std::map<std::string, EvictionReason>;

constexpr auto kNever = WithinClusterQueue::kNever;
constexpr auto kLower = WithinClusterQueue::kLowerPriority;
constexpr auto kAny = ReclaimWithinCohort::kAny;
constexpr auto kInCq = EvictionReason::kKueueInClusterQueue;
constexpr auto kReclaim = EvictionReason::kKueueInCohortReclamation;
constexpr auto kFair = EvictionReason::kKueueInCohortFairSharing;
constexpr auto kLessOrEqualFinal = KueuePreemptionStrategy::kLessThanOrEqualToFinalShare;
constexpr auto kLessInitial = KueuePreemptionStrategy::kLessThanInitialShare;

// §5.5 steps 1 and 5: within its own ClusterQueue, LOWER_PRIORITY preempts only lower
// priorities (reason KUEUE_IN_CLUSTER_QUEUE); w is admitted once the victim is gone.
TEST(FairPreemptionTest, InClusterQueuePreemptsLowerPriorityOnly) {
  const Snapshot s = SnapshotBuilder()
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
                         .Build();
  const RoundsResult r = RunRounds(s, 0);
  EXPECT_EQ(r.evicted, (Victims{{"lo", kInCq}}));
  EXPECT_EQ(r.admitted, (std::map<std::string, bool>{{"w", true}}));
  const ScheduleResult result = testing::RunKueue(s);
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(result.evictions[0].message,
            "preempted within cluster queue q for w (priority 0 against 5)");
}

// §5.5 step 1: LOWER_OR_NEWER_EQUAL_PRIORITY also takes equal priorities created after w.
TEST(FairPreemptionTest, InClusterQueueLowerOrNewerEqualPriority) {
  auto snapshot = [](WithinClusterQueue within) {
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
  };
  EXPECT_EQ(RunRounds(snapshot(WithinClusterQueue::kLowerOrNewerEqualPriority), 0).evicted,
            (Victims{{"newer", kInCq}}));
  const RoundsResult lower = RunRounds(snapshot(kLower), 0);
  EXPECT_TRUE(lower.evicted.empty());
  EXPECT_EQ(lower.reason.at("w"), "no-preemption-candidates");
}

// §5.5 step 2: workloads already being evicted (a RELEASING pod) go first, then lower
// priority, then newer admission_time.
TEST(FairPreemptionTest, CandidatesReleasingFirstThenLowerPriorityThenNewer) {
  auto snapshot = [](bool releasing) {
    SnapshotBuilder b;
    b.Node("n1", {{"cpu", 100}});
    b.Queue("q").Deserved({{"cpu", 6}}).KueuePolicy(kLower, kAny);
    b.Group("r", "q").Priority(3).Admitted(0);
    b.Pod({{"cpu", 2}}, "n1", releasing ? PodPhase::kReleasing : PodPhase::kRunning);
    b.Group("l", "q").Priority(1).Pod({{"cpu", 2}}, "n1").Admitted(0);
    b.Group("n", "q").Priority(1).Pod({{"cpu", 2}}, "n1").Admitted(9);
    b.Group("w", "q").Priority(5).Pod({{"cpu", 2}});
    return b.Build();
  };
  EXPECT_EQ(RunRounds(snapshot(true), 0).evicted, (Victims{{"r", kInCq}}));
  EXPECT_EQ(RunRounds(snapshot(false), 0).evicted, (Victims{{"n", kInCq}}));
}

// §5.5 steps 3 and 5: x stays within its nominal quota with w, so it reclaims from a borrower
// without any share test (reason KUEUE_IN_COHORT_RECLAMATION), although D1 with w (333) is
// above D2 (167) and fair sharing alone would refuse. x2's workload is non-preemptible.
TEST(FairPreemptionTest, ReclaimsNominalQuotaWithoutShareTest) {
  auto snapshot = [](double x_nominal, double root_quota) {
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
  };
  const RoundsResult within = RunRounds(snapshot(4, 2), 0);
  EXPECT_EQ(within.evicted, (Victims{{"y0", kReclaim}}));
  EXPECT_EQ(within.admitted.count("w"), 1u);
  // Without nominal quota x borrows with w: D1 (with w 1000) is above D2 (167): no victim.
  const RoundsResult borrowing = RunRounds(snapshot(0, 6), 0);
  EXPECT_TRUE(borrowing.evicted.empty());
  EXPECT_EQ(borrowing.reason.at("w"), "no-preemption-candidates");
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

// §5.5 steps 5, 7 and 9 with both strategies: LESS_THAN_OR_EQUAL_TO_FINAL_SHARE evicts a1
// (a keeps 600 >= 500) but a0 fails it (a would keep 0); the second pass
// (LESS_THAN_INITIAL_SHARE, 500 < 600) takes a0; fill-back then puts a1 back, since w fits
// without evicting it.
TEST(FairPreemptionTest, SecondPassAndFillBackLeaveAMinimalSet) {
  const RoundsResult r = RunRounds(BigVictimSnapshot(), 0);
  EXPECT_EQ(r.evicted, (Victims{{"a0", kFair}}));
  EXPECT_EQ(r.admitted, (std::map<std::string, bool>{{"w", true}}));
}

// §5.5 step 8: with the first strategy alone no target set makes room, so nothing is evicted,
// not even a1 which passed it.
TEST(FairPreemptionTest, AllOrNothing) {
  const RoundsResult r = RunRounds(BigVictimSnapshot(), 0, KueuePolicy({kLessOrEqualFinal}));
  EXPECT_TRUE(r.evicted.empty());
  EXPECT_EQ(r.reason.at("w"), "no-preemption-candidates");
}

// §5.5 step 5 with LESS_THAN_INITIAL_SHARE as the only strategy: 500 < 1000 takes a1, then
// 500 < 600 takes a0; fill-back returns a1.
TEST(FairPreemptionTest, LessThanInitialShareAlone) {
  const RoundsResult r = RunRounds(BigVictimSnapshot(), 0, KueuePolicy({kLessInitial}));
  EXPECT_EQ(r.evicted, (Victims{{"a0", kFair}}));
}

// §5.5 step 6: y (800) is visited before x (600 with w): both of y's 4-unit workloads fail the
// first strategy (y would keep 400 < 600). Evicting x's own low-priority xl lowers x to 400 with
// w, and the rerun of the first pass over the retry list now takes y1 (400 <= 400). Fill-back
// returns xl. Without an eviction in x there is no rerun and no target set.
TEST(FairPreemptionTest, RerunAfterEvictingInTheOwnQueue) {
  auto snapshot = [](WithinClusterQueue within) {
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
  };
  const Policy first_only = KueuePolicy({kLessOrEqualFinal});
  EXPECT_EQ(RunRounds(snapshot(kLower), 0, first_only).evicted, (Victims{{"y1", kFair}}));
  const RoundsResult no_rerun = RunRounds(snapshot(kNever), 0, first_only);
  EXPECT_TRUE(no_rerun.evicted.empty());
  EXPECT_EQ(no_rerun.reason.at("w"), "no-preemption-candidates");
}

// §5.5 step 7: the second pass takes queue heads in share order. All four 3-unit victims fail
// the first strategy (their queue would keep 250 < 333); the second pass takes y's head
// (333 < 500), still short by one unit, drops y and takes z's head. (Dropping the queue cannot
// change a result here: a victim that failed the first strategy leaves its side below w's, so
// the second strategy would refuse that side again, as Kueue's own comment on the rule notes.)
TEST(FairPreemptionTest, SecondPassTakesQueueHeadsInShareOrder) {
  const Snapshot s = SnapshotBuilder()
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
                         .Build();
  EXPECT_EQ(RunRounds(s, 0).evicted, (Victims{{"y1", kFair}, {"z1", kFair}}));
}

// §5.5 step 4: the target is picked from the root down by the shares of each level, and the
// strategy compares the nodes one level below the lowest common ancestor. D1 (550) is above D2
// (500 with w), so the victim comes from D1's biggest queue a (300), not from c, whose own share
// (350) is the largest of all queues. D1 would keep 500 >= 500: it passes.
TEST(FairPreemptionTest, TargetsTheBiggestOffenderFromTheRootDown) {
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
  const Snapshot s = b.Build();
  EXPECT_EQ(RunRounds(s, 0).evicted, (Victims{{"a-0", kFair}}));
  const ScheduleResult result = testing::RunKueue(s);
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(result.evictions[0].message,
            "preempted for w by fair sharing: cohort D1 keeps share 500 without it, at least the "
            "500 of cohort D2 with the workload");
}

// §5.5 step 1: RECLAIM LOWER_PRIORITY only takes lower priorities from other queues; ANY takes
// all. w needs both of y's workloads.
TEST(FairPreemptionTest, ReclaimLowerPriorityLeavesHigherPrioritiesAlone) {
  auto snapshot = [](ReclaimWithinCohort reclaim) {
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
  };
  EXPECT_EQ(RunRounds(snapshot(kAny), 0).evicted,
            (Victims{{"y-hi", kReclaim}, {"y-lo", kReclaim}}));
  const RoundsResult lower = RunRounds(snapshot(ReclaimWithinCohort::kLowerPriority), 0);
  EXPECT_TRUE(lower.evicted.empty());
  EXPECT_EQ(lower.reason.at("w"), "no-preemption-candidates");
}

// §0.7, §5.5 step 1: a non-preemptible workload is never a victim.
TEST(FairPreemptionTest, NonPreemptibleIsNeverAVictim) {
  const Snapshot s = SnapshotBuilder()
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
                         .Build();
  const RoundsResult r = RunRounds(s, 0);
  EXPECT_TRUE(r.evicted.empty());
  EXPECT_EQ(r.reason.at("w"), "no-preemption-candidates");
}

// §5.3, §5.5 step 5: with weight 0 and borrowing, x's side is +∞ against y's finite share: no
// strategy can pass. With weight 1 the same request evicts y1 (y keeps 500 >= 200).
TEST(FairPreemptionTest, ZeroWeightPreemptorCannotWinByFairSharing) {
  auto snapshot = [](double weight) {
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
  };
  const RoundsResult zero = RunRounds(snapshot(0), 0);
  EXPECT_TRUE(zero.evicted.empty());
  EXPECT_EQ(zero.reason.at("w"), "no-preemption-candidates");
  EXPECT_EQ(RunRounds(snapshot(1), 0).evicted, (Victims{{"y1", kFair}}));
}

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
