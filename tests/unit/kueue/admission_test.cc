// Admission rounds (SEMANTICS.md §5.4): heads, nomination, the tournament, and the processing
// steps of a round. Each case spells out the tree and says by hand what the rounds must do.
#include "core/kueue/admission.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using testing::Keys;
using testing::RoundsResult;
using testing::RunRounds;
using testing::SnapshotBuilder;
using Names = std::set<std::string>;

constexpr auto kNever = WithinClusterQueue::kNever;
constexpr auto kAny = ReclaimWithinCohort::kAny;

// §5.4 step 2: a ClusterQueue's head is its highest-priority, then oldest, then smallest-named
// pending group. The queue holds one unit, so only the first head is admitted.
TEST(AdmissionTest, HeadIsHighestPriorityThenOldestThenSmallestName) {
  struct Case {
    const char* name;
    int32_t a_priority, b_priority;
    int64_t a_created, b_created;
    const char* admitted;
  };
  const Case cases[] = {
      {"HigherPriorityFirst", 0, 5, 0, 9, "b"},
      {"OlderFirstOnEqualPriority", 0, 0, 5, 1, "b"},
      {"SmallerNameOnFullTie", 0, 0, 1, 1, "a"},
  };
  for (const Case& c : cases) {
    const Snapshot s = SnapshotBuilder()
                           .Queue("q")
                           .Deserved({{"cpu", 1}})
                           .Group("a", "q")
                           .Priority(c.a_priority)
                           .Created(c.a_created)
                           .Pod({{"cpu", 1}})
                           .Group("b", "q")
                           .Priority(c.b_priority)
                           .Created(c.b_created)
                           .Pod({{"cpu", 1}})
                           .Build();
    const RoundsResult r = RunRounds(s, 0);
    EXPECT_EQ(Keys(r.admitted), Names{c.admitted}) << c.name;
  }
}

// §5.4: one head per ClusterQueue per round. Round 1 admits a1 (lower share) and then b1; a2
// only becomes a's head in round 2, when nothing is left. Taking a's whole backlog first would
// have admitted a1 and a2 and left b1 out.
TEST(AdmissionTest, AdmitsOneHeadPerClusterQueuePerRound) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Deserved({{"cpu", 3}})
                         .Queue("a", "root")
                         .Deserved({{"cpu", 0}})
                         .Queue("b", "root")
                         .Deserved({{"cpu", 0}})
                         .Group("a1", "a")
                         .Created(0)
                         .Pod({{"cpu", 1}})
                         .Group("a2", "a")
                         .Created(1)
                         .Pod({{"cpu", 1}})
                         .Group("b1", "b")
                         .Created(5)
                         .Pod({{"cpu", 2}})
                         .Build();
  const RoundsResult r = RunRounds(s, 0);
  EXPECT_EQ(Keys(r.admitted), (Names{"a1", "b1"}));
  EXPECT_EQ(r.reason.at("a2"), "insufficient-quota");
  EXPECT_EQ(r.message.at("a2"), "cohort root would exceed its quota on cpu by 1");
}

// §5.4: rounds repeat until quiet, so one call admits what successive Kueue cycles would.
TEST(AdmissionTest, RoundsRepeatUntilNothingMoreFits) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Deserved({{"cpu", 4}})
                         .Queue("a", "root")
                         .Deserved({{"cpu", 0}})
                         .Queue("b", "root")
                         .Deserved({{"cpu", 0}})
                         .Group("a1", "a")
                         .Created(0)
                         .Pod({{"cpu", 1}})
                         .Group("a2", "a")
                         .Created(1)
                         .Pod({{"cpu", 1}})
                         .Group("a3", "a")
                         .Created(2)
                         .Pod({{"cpu", 1}})
                         .Group("b1", "b")
                         .Created(0)
                         .Pod({{"cpu", 2}})
                         .Build();
  const RoundsResult one = RunRounds(s, 1);
  EXPECT_EQ(Keys(one.admitted), (Names{"a1", "b1"}));
  EXPECT_EQ(one.reason.at("a2"), "not-reached");
  const RoundsResult all = RunRounds(s, 0);
  EXPECT_EQ(Keys(all.admitted), (Names{"a1", "a2", "b1"}));
  EXPECT_EQ(all.reason.at("a3"), "insufficient-quota");
  EXPECT_EQ(all.rounds, 4);  // a1+b1, a2, a3 set aside, quiet
}

// §5.4 step 4 rule 1: an entry whose queue does not borrow what it requests goes before a
// borrower, even with a larger share. a borrows memory (share 4000 / 11) but asks for cpu inside
// its nominal quota; b asks for cpu it must borrow (share 2000 / 102). Two cpu units are free.
TEST(AdmissionTest, TournamentPutsEntriesWithinNominalFirst) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Deserved({{"cpu", 100}})
                         .Queue("a", "root")
                         .Deserved({{"cpu", 2}, {"memory", 1}})
                         .Queue("b", "root")
                         .Deserved({{"cpu", 0}, {"memory", 10}})
                         .Queue("c", "root")
                         .Deserved({{"cpu", 0}})
                         .Group("a0", "a")
                         .Pod({{"memory", 5}})
                         .Admitted(0)
                         .Group("c0", "c")
                         .Pod({{"cpu", 100}})
                         .Admitted(0)
                         .Group("a1", "a")
                         .Created(10)
                         .Pod({{"cpu", 2}})
                         .Group("b1", "b")
                         .Created(0)
                         .Pod({{"cpu", 2}})
                         .Build();
  const RoundsResult r = RunRounds(s, 1);
  EXPECT_EQ(Keys(r.admitted), Names{"a1"});
  EXPECT_EQ(r.reason.at("b1"), "no-longer-fits");  // §5.4 step 5.6
  EXPECT_EQ(r.message.at("b1"),
            "no longer fits after earlier workloads of this cycle: cohort root would exceed its "
            "quota on cpu by 2");
}

// §5.4 step 4 rules 2-5 between two borrowers of one pool with room for one of them: lower
// share, then higher priority, then older creation_time, then the smaller name.
TEST(AdmissionTest, TournamentOrdersBorrowersByShareThenPriorityThenAgeThenName) {
  struct Case {
    const char* name;
    double a_used, b_used;
    int32_t a_priority, b_priority;
    int64_t a_created, b_created;
    const char* admitted;
  };
  const Case cases[] = {
      // a with a1: 6 of 10 -> 600; b with b1: 5 -> 500.
      {"LowerShareFirst", 4, 3, 9, 0, 0, 9, "b1"},
      {"HigherPriorityOnEqualShares", 3.5, 3.5, 0, 5, 0, 9, "b1"},
      {"OlderOnEqualPriority", 3.5, 3.5, 5, 5, 9, 1, "b1"},
      {"SmallerNameOnFullTie", 3.5, 3.5, 5, 5, 1, 1, "a1"},
  };
  for (const Case& c : cases) {
    const Snapshot s = SnapshotBuilder()
                           .Queue("root")
                           .Deserved({{"cpu", 10}})
                           .Queue("a", "root")
                           .Deserved({{"cpu", 0}})
                           .Queue("b", "root")
                           .Deserved({{"cpu", 0}})
                           .Group("a0", "a")
                           .Pod({{"cpu", c.a_used}})
                           .Admitted(0)
                           .Group("b0", "b")
                           .Pod({{"cpu", c.b_used}})
                           .Admitted(0)
                           .Group("a1", "a")
                           .Priority(c.a_priority)
                           .Created(c.a_created)
                           .Pod({{"cpu", 2}})
                           .Group("b1", "b")
                           .Priority(c.b_priority)
                           .Created(c.b_created)
                           .Pod({{"cpu", 2}})
                           .Build();
    EXPECT_EQ(Keys(RunRounds(s, 1).admitted), Names{c.admitted}) << c.name;
  }
}

// §5.4 step 4: each cohort compares its children one level below it. At the root D1 (with its
// winner a1) has 14 of 20 -> 700 and D2 (with c1) 8 -> 400, so c1 goes first and takes the last
// room, although a's own share with a1 (200) is below c's (400).
TEST(AdmissionTest, TournamentComparesTheNodesDirectlyUnderEachCohort) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Deserved({{"cpu", 20}})
                         .Queue("D1", "root")
                         .Queue("a", "D1")
                         .Deserved({{"cpu", 0}})
                         .Queue("b", "D1")
                         .Deserved({{"cpu", 0}})
                         .Queue("D2", "root")
                         .Queue("c", "D2")
                         .Deserved({{"cpu", 0}})
                         .Group("a0", "a")
                         .Pod({{"cpu", 1}})
                         .Admitted(0)
                         .Group("b0", "b")
                         .Pod({{"cpu", 10}})
                         .Admitted(0)
                         .Group("c0", "c")
                         .Pod({{"cpu", 5}})
                         .Admitted(0)
                         .Group("a1", "a")
                         .Pod({{"cpu", 3}})
                         .Group("c1", "c")
                         .Pod({{"cpu", 3}})
                         .Build();
  EXPECT_EQ(Keys(RunRounds(s, 0).admitted), Names{"c1"});
}

// §5.4 step 3: the NoFit reasons and their sentences.
TEST(AdmissionTest, NominationNoFitReasonsNameQueueResourceAndAmounts) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("q")
                         .Deserved({{"cpu", 4}})
                         .Queue("root")
                         .Deserved({{"cpu", 100000}})
                         .Queue("research", "root")
                         .BorrowingLimit({{"cpu", 10000}})
                         .Queue("r1", "research")
                         .Deserved({{"cpu", 20000}})
                         .Queue("r2", "research")
                         .Deserved({{"cpu", 1000}})
                         .Queue("ops", "root")
                         .Deserved({{"cpu", 30000}})
                         .Group("r1-job", "r1")
                         .Pod({{"cpu", 26000}})
                         .Admitted(0)
                         .Group("gpu-job", "q")
                         .Pod({{"nvidia.com/gpu", 1}})
                         .Group("big-job", "q")
                         .Pod({{"cpu", 3}})
                         .Pod({{"cpu", 2}})
                         .Group("r2-job", "r2")
                         .Pod({{"cpu", 7000}})
                         .Build();
  const RoundsResult r = RunRounds(s, 0);
  EXPECT_EQ(r.reason.at("gpu-job"), "resource-not-covered");
  EXPECT_EQ(r.message.at("gpu-job"), "cluster queue q has no quota for nvidia.com/gpu");
  EXPECT_EQ(r.reason.at("big-job"), "exceeds-max-quota");
  EXPECT_EQ(r.message.at("big-job"),
            "cluster queue q can reach at most 4 cpu, the workload requests 5");
  // r2 asks 7000 beyond its nominal 1000; the first node that could hold it is the root, and r2
  // may not reclaim: the cohort's borrowing limit is what stands in the way.
  EXPECT_EQ(r.reason.at("r2-job"), "insufficient-quota");
  EXPECT_EQ(r.message.at("r2-job"),
            "cohort research would exceed its borrowing limit on cpu by 2000");
}

// §5.4 step 3: a request beyond nominal is still contested when a cohort below the root could
// hold it without borrowing (team's own 10 units, lent to o): preemption may reclaim it. With
// no candidate it ends as no-preemption-candidates, not insufficient-quota.
TEST(AdmissionTest, ContestedWhenACohortBelowTheRootCouldHoldTheRequest) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Queue("team", "root")
                         .Deserved({{"cpu", 10}})
                         .Queue("a", "team")
                         .Deserved({{"cpu", 0}})
                         .Queue("other", "root")
                         .Queue("o", "other")
                         .Deserved({{"cpu", 0}})
                         .Group("o0", "o")
                         .Pod({{"cpu", 8}})
                         .Admitted(0)
                         .Group("a1", "a")
                         .Pod({{"cpu", 5}})
                         .Build();
  const RoundsResult r = RunRounds(s, 0);
  EXPECT_EQ(r.reason.at("a1"), "no-preemption-candidates");
  EXPECT_EQ(r.message.at("a1"),
            "cohort root would exceed its quota on cpu by 3, and no workload can be preempted to "
            "make room");
  // The same request under a root that owns the quota itself is not contested.
  const Snapshot flat = SnapshotBuilder()
                            .Queue("root")
                            .Deserved({{"cpu", 10}})
                            .Queue("a", "root")
                            .Deserved({{"cpu", 0}})
                            .Queue("o", "root")
                            .Deserved({{"cpu", 0}})
                            .Group("o0", "o")
                            .Pod({{"cpu", 8}})
                            .Admitted(0)
                            .Group("a1", "a")
                            .Pod({{"cpu", 5}})
                            .Build();
  EXPECT_EQ(RunRounds(flat, 0).reason.at("a1"), "insufficient-quota");
}

// §5.4 step 5.3: a head that needs preemption but has no candidate reserves its nominal room
// for the rest of the round (b0 has a higher priority than a1, and a reclaims lower priority
// only), so b1, processed after it, no longer fits in that round. With reclaim ANY nothing is
// reserved (b0 is protected differently here: non-preemptible).
TEST(AdmissionTest, NoPreemptionCandidatesReservesNominalQuotaForTheRound) {
  auto snapshot = [](ReclaimWithinCohort reclaim, Preemptibility b0_preemptibility) {
    return SnapshotBuilder()
        .Queue("root")
        .Queue("a", "root")
        .Deserved({{"cpu", 4}})
        .KueuePolicy(kNever, reclaim)
        .Queue("b", "root")
        .Deserved({{"cpu", 0}})
        .Group("b0", "b")
        .Priority(10)
        .Preemptible(b0_preemptibility)
        .Pod({{"cpu", 3}})
        .Admitted(0)
        .Group("a1", "a")
        .Pod({{"cpu", 4}})
        .Group("b1", "b")
        .Pod({{"cpu", 1}})
        .Build();
  };
  const RoundsResult reserved =
      RunRounds(snapshot(ReclaimWithinCohort::kLowerPriority, Preemptibility::kPreemptible), 1);
  EXPECT_EQ(reserved.reason.at("a1"), "no-preemption-candidates");
  EXPECT_EQ(reserved.reason.at("b1"), "no-longer-fits");
  EXPECT_TRUE(reserved.admitted.empty());
  // The reservation lasts one round: a1 is set aside, and b1 is admitted in the next.
  EXPECT_EQ(
      Keys(RunRounds(snapshot(ReclaimWithinCohort::kLowerPriority, Preemptibility::kPreemptible), 0)
               .admitted),
      Names{"b1"});
  const RoundsResult any = RunRounds(snapshot(kAny, Preemptibility::kNonPreemptible), 1);
  EXPECT_EQ(any.reason.at("a1"), "no-preemption-candidates");
  EXPECT_EQ(Keys(any.admitted), Names{"b1"});
}

// x1 and x2 lend their 2 units each to y, which holds all 4 with y's workloads.
SnapshotBuilder TwoReclaimersOneBorrower() {
  SnapshotBuilder b;
  b.Queue("root")
      .Queue("x1", "root")
      .Deserved({{"cpu", 2}})
      .KueuePolicy(kNever, kAny)
      .Queue("x2", "root")
      .Deserved({{"cpu", 2}})
      .KueuePolicy(kNever, kAny)
      .Queue("y", "root")
      .Deserved({{"cpu", 0}});
  return b;
}

// §5.4 steps 5.1 and 5.4: both heads target y0. w1 goes first and claims it; w2's targets
// overlap, and re-nominated without y0 it fits: it is deferred, its usage added, waiting. Next
// round both are admitted after the eviction.
TEST(AdmissionTest, OverlappingTargetsDeferAnEntryThatFitsOnceTheyAreGone) {
  SnapshotBuilder b = TwoReclaimersOneBorrower();
  b.Group("y0", "y").Pod({{"cpu", 4}}).Admitted(0);
  b.Group("w1", "x1").Pod({{"cpu", 2}});
  b.Group("w2", "x2").Pod({{"cpu", 2}});
  const RoundsResult one = RunRounds(b.Build(), 1);
  EXPECT_EQ(one.reason.at("w1"), "waiting-for-preemptions");
  EXPECT_EQ(one.message.at("w1"), "waiting for 1 preempted workload to release quota: y0");
  EXPECT_EQ(one.reason.at("w2"), "waiting-for-preemptions");
  EXPECT_EQ(one.message.at("w2"),
            "fits once the workloads preempted for w1 in this cycle are gone");
  EXPECT_EQ(one.preemptor.at("y0"), "w1");
  const RoundsResult all = RunRounds(b.Build(), 0);
  EXPECT_EQ(all.admitted, (std::map<std::string, bool>{{"w1", true}, {"w2", true}}));
  EXPECT_EQ(all.evicted.at("y0"), EvictionReason::kKueueInCohortReclamation);
}

// §5.4 step 5.1: re-nominated without the claimed victim, w2 still needs preemption and takes
// fresh targets: y1 (newer, first candidate) for w1, y0 for w2.
TEST(AdmissionTest, OverlappingTargetsAreRenominatedWithFreshTargets) {
  SnapshotBuilder b = TwoReclaimersOneBorrower();
  b.Group("y0", "y").Pod({{"cpu", 2}}).Admitted(0);
  b.Group("y1", "y").Pod({{"cpu", 2}}).Admitted(5);
  b.Group("w1", "x1").Pod({{"cpu", 2}});
  b.Group("w2", "x2").Pod({{"cpu", 2}});
  const RoundsResult r = RunRounds(b.Build(), 0);
  EXPECT_EQ(r.preemptor, (std::map<std::string, std::string>{{"y0", "w2"}, {"y1", "w1"}}));
  EXPECT_EQ(r.admitted, (std::map<std::string, bool>{{"w1", true}, {"w2", true}}));
}

// §5.4 step 6: evictions release capacity, so groups set aside earlier are heads again.
// z1 cannot fit in round 1 (set aside); x1 reclaims y0 (4 units); in round 2 both fit.
TEST(AdmissionTest, SetAsideGroupsReturnAfterEvictions) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Deserved({{"cpu", 2}})
                         .Queue("x", "root")
                         .Deserved({{"cpu", 2}})
                         .KueuePolicy(kNever, kAny)
                         .Queue("y", "root")
                         .Deserved({{"cpu", 0}})
                         .Queue("z", "root")
                         .Deserved({{"cpu", 0}})
                         .Group("y0", "y")
                         .Pod({{"cpu", 4}})
                         .Admitted(0)
                         .Group("x1", "x")
                         .Pod({{"cpu", 2}})
                         .Group("z1", "z")
                         .Pod({{"cpu", 2}})
                         .Build();
  const RoundsResult one = RunRounds(s, 1);
  EXPECT_EQ(one.reason.at("z1"), "insufficient-quota");
  const RoundsResult all = RunRounds(s, 0);
  EXPECT_EQ(all.admitted, (std::map<std::string, bool>{{"x1", true}, {"z1", false}}));
  EXPECT_EQ(Keys(all.admitted).count("y0"), 0u);
  EXPECT_EQ(all.evicted.size(), 1u);
}

// §5.4 step 6: a group admitted in this call is never a preemption candidate in it. a1 borrows
// b's whole nominal quota in round 1 (b's first head is not covered and set aside); b1, b's
// next head, is within b's nominal quota yet finds no candidate.
TEST(AdmissionTest, GroupsAdmittedInTheCallAreNeverPreempted) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Queue("a", "root")
                         .Deserved({{"cpu", 0}})
                         .Queue("b", "root")
                         .Deserved({{"cpu", 4}})
                         .KueuePolicy(kNever, kAny)
                         .Group("a1", "a")
                         .Pod({{"cpu", 4}})
                         .Group("b0", "b")
                         .Created(0)
                         .Pod({{"nvidia.com/gpu", 1}})
                         .Group("b1", "b")
                         .Created(1)
                         .Pod({{"cpu", 4}})
                         .Build();
  const RoundsResult r = RunRounds(s, 0);
  EXPECT_EQ(Keys(r.admitted), Names{"a1"});
  EXPECT_TRUE(r.evicted.empty());
  EXPECT_EQ(r.reason.at("b1"), "no-preemption-candidates");
  EXPECT_EQ(r.reason.at("b0"), "resource-not-covered");
}

// §5.4 step 2, §6: a group without pods is never a head: gang-incomplete.
TEST(AdmissionTest, GroupWithoutPodsIsGangIncomplete) {
  Snapshot s = SnapshotBuilder()
                   .Queue("q")
                   .Deserved({{"cpu", 4}})
                   .Group("empty", "q")
                   .Group("job", "q")
                   .Created(5)
                   .Pod({{"cpu", 1}})
                   .Build();
  const RoundsResult r = RunRounds(s, 0);
  EXPECT_EQ(r.reason.at("empty"), "gang-incomplete");
  EXPECT_EQ(r.message.at("empty"), "the workload has no pods");
  EXPECT_EQ(Keys(r.admitted), Names{"job"});
}

// §5.4 step 7, pinned: a Fit entry that fits only once this round's claimed targets are gone is
// admitted with after_evictions. p needs preemption (t borrows 3 of the root's 6) and claims t0;
// f was nominated Fit on the round's starting tree, but with p's usage added and t0 still in the
// tree it no longer fits: it takes quota that t0's eviction releases.
TEST(AdmissionTest, FitEntryThatNeedsThisRoundsClaimedTargetsWaitsForTheirEvictions) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Queue("p", "root")
                         .Deserved({{"cpu", 4}})
                         .KueuePolicy(kNever, kAny)
                         .Queue("f", "root")
                         .Deserved({{"cpu", 2}})
                         .KueuePolicy(kNever, kAny)
                         .Queue("t", "root")
                         .Deserved({{"cpu", 0}})
                         .Group("t0", "t")
                         .Pod({{"cpu", 3}})
                         .Admitted(0)
                         .Group("p0", "p")
                         .Priority(10)
                         .Pod({{"cpu", 4}})
                         .Group("f0", "f")
                         .Priority(1)
                         .Pod({{"cpu", 2}})
                         .Build();
  const RoundsResult one = RunRounds(s, 1);
  EXPECT_EQ(one.admitted, (std::map<std::string, bool>{{"f0", true}}));
  EXPECT_EQ(one.preemptor.at("t0"), "p0");
  const RoundsResult all = RunRounds(s, 0);
  EXPECT_EQ(all.admitted, (std::map<std::string, bool>{{"f0", true}, {"p0", true}}));
  EXPECT_EQ(all.evicted.at("t0"), EvictionReason::kKueueInCohortReclamation);
}

// §5.4 step 4, pinned: a NoFit entry takes part in the tournament with no usage. a1's head asks
// more than a1 could ever reach (NoFit), yet it stands for cohort c1 until it is processed: with
// no usage it does not borrow, so it beats a2's entry (a2 borrows) inside c1, and one level up
// c1, represented by it, loses to b on priority. b is admitted first and takes the last free
// quota; a2 then needs t's borrowed quota back and is admitted after the eviction. Setting the
// NoFit entry aside before the tournament would let a2 represent c1 and win on priority
// instead (a2 admitted first, b after the eviction).
TEST(AdmissionTest, NoFitEntryTakesPartInTheTournamentWithNoUsage) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Queue("c1", "root")
                         .Queue("a1", "c1")
                         .Deserved({{"cpu", 10}})
                         .KueuePolicy(kNever, kAny)
                         .Queue("a2", "c1")
                         .Deserved({{"cpu", 0}})
                         .KueuePolicy(kNever, kAny)
                         .Queue("b", "root")
                         .Deserved({{"cpu", 2}})
                         .KueuePolicy(kNever, kAny)
                         .Queue("t", "root")
                         .Deserved({{"cpu", 0}})
                         .Group("held", "a1")
                         .Pod({{"cpu", 7}})
                         .Admitted(0)
                         .Group("t0", "t")
                         .Pod({{"cpu", 2}})
                         .Admitted(0)
                         .Group("huge", "a1")
                         .Priority(1)
                         .Pod({{"cpu", 100}})
                         .Group("a2-job", "a2")
                         .Priority(10)
                         .Pod({{"cpu", 3}})
                         .Group("b-job", "b")
                         .Priority(5)
                         .Pod({{"cpu", 2}})
                         .Build();
  const RoundsResult one = RunRounds(s, 1);
  EXPECT_EQ(one.admitted, (std::map<std::string, bool>{{"b-job", false}}));
  EXPECT_EQ(one.reason.at("huge"), "exceeds-max-quota");
  EXPECT_EQ(one.reason.at("a2-job"), "no-longer-fits");
  const RoundsResult all = RunRounds(s, 0);
  EXPECT_EQ(all.admitted, (std::map<std::string, bool>{{"a2-job", true}, {"b-job", false}}));
  EXPECT_EQ(all.preemptor.at("t0"), "a2-job");
  EXPECT_EQ(all.reason.at("huge"), "exceeds-max-quota");
}

}  // namespace
}  // namespace arbiter::kueue
