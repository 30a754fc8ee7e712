// Dominant resource share (SEMANTICS.md §5.3) and the queue list of ComputeKueueShares (§6).
// Every expected value follows by hand from §5.2 and §5.3, worked out in the comments.
#include "core/kueue/dominant_resource_share.h"

#include <limits>
#include <string>

#include "core/kueue/kueue.h"
#include "gtest/gtest.h"
#include "tests/support/validated.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using testing::BuildTree;
using testing::FindQueue;
using testing::SnapshotBuilder;

constexpr double kInf = std::numeric_limits<double>::infinity();

DominantResourceShare Share(double unweighted, double weight, bool borrowing = true) {
  DominantResourceShare drs;
  drs.unweighted = unweighted;
  drs.weight = weight;
  drs.borrowing = borrowing;
  drs.weighted = unweighted == 0 ? 0 : (weight == 0 ? kInf : unweighted / weight);
  return drs;
}

// §5.3 rule 1: a node without a parent has share 0 and is not borrowing, whatever it uses.
TEST(DominantResourceShareTest, RootHasZeroShare) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("solo")
                         .Deserved({{"cpu", 1}})
                         .Group("g", "solo")
                         .Pod({{"cpu", 5}})
                         .Admitted(0)
                         .Build());
  const DominantResourceShare drs = ComputeDrs(t->tree, t->q("solo"));
  EXPECT_EQ(drs.weighted, 0);
  EXPECT_FALSE(drs.borrowing);
  EXPECT_EQ(drs.dominant_resource, -1);
}

// §5.3 rule 3: the denominator is pot(P(n)), not the parent's subtree quota; a borrowing limit
// on the intermediate cohort shrinks it for everything below.
// root -> P (borrowing limit 20) -> {q: 10, s: 10}; root -> o: 60.
// SQ(P) = 20, SQ(root) = 80, pot(P) = min(0 + 80, 20 + 20) = 40.
TEST(DominantResourceShareTest, DenominatorIsTheParentsPotentialAvailable) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Queue("P", "root")
                         .BorrowingLimit({{"nvidia.com/gpu", 20}})
                         .Queue("q", "P")
                         .Deserved({{"nvidia.com/gpu", 10}})
                         .Queue("s", "P")
                         .Deserved({{"nvidia.com/gpu", 10}})
                         .Queue("o", "root")
                         .Deserved({{"nvidia.com/gpu", 60}})
                         .Group("g", "q")
                         .Pod({{"nvidia.com/gpu", 16}})
                         .Admitted(0)
                         .Build());
  const DominantResourceShare q = ComputeDrs(t->tree, t->q("q"));
  EXPECT_EQ(q.unweighted, 150);  // (16 - 10) * 1000 / 40; the subtree (20) would give 300
  EXPECT_EQ(q.weighted, 150);
  EXPECT_EQ(q.dominant_resource, t->r("nvidia.com/gpu"));
  EXPECT_TRUE(q.borrowing);
  const DominantResourceShare p = ComputeDrs(t->tree, t->q("P"));
  EXPECT_FALSE(p.borrowing);  // 16 <= SQ(P) = 20
  EXPECT_EQ(p.weighted, 0);
}

// §5.3 rule 3: n's own lendable quota is part of the denominator (root -> {q: 10, s: 10}).
TEST(DominantResourceShareTest, OwnLendableQuotaCountsInTheDenominator) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Queue("q", "root")
                         .Deserved({{"cpu", 10}})
                         .Queue("s", "root")
                         .Deserved({{"cpu", 10}})
                         .Group("g", "q")
                         .Pod({{"cpu", 15}})
                         .Admitted(0)
                         .Build());
  EXPECT_EQ(ComputeDrs(t->tree, t->q("q")).unweighted, 250);  // 5 * 1000 / 20
}

// §5.3 rule 3 with a lending limit: q lends only 4 of its 10, so pot(root) = 4 + 10 = 14.
TEST(DominantResourceShareTest, LendingLimitShrinksWhatTheParentCouldReach) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Queue("q", "root")
                         .Deserved({{"cpu", 10}})
                         .LendingLimit({{"cpu", 4}})
                         .Queue("s", "root")
                         .Deserved({{"cpu", 10}})
                         .Group("g", "q")
                         .Pod({{"cpu", 12}})
                         .Admitted(0)
                         .Build());
  EXPECT_EQ(ComputeDrs(t->tree, t->q("q")).unweighted, 2.0 * 1000 / 14);
}

// §5.3 rule 6: a higher weight is a larger entitlement: the share is divided by it.
TEST(DominantResourceShareTest, WeightDividesTheShare) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Queue("q", "root")
                         .Deserved({{"cpu", 10}})
                         .FairSharingWeight(2.5)
                         .Queue("s", "root")
                         .Deserved({{"cpu", 10}})
                         .Group("g", "q")
                         .Pod({{"cpu", 15}})
                         .Admitted(0)
                         .Build());
  const DominantResourceShare drs = ComputeDrs(t->tree, t->q("q"));
  EXPECT_EQ(drs.unweighted, 250);
  EXPECT_EQ(drs.weighted, 100);
}

// §5.3 rule 6: weight 0 and a positive ratio is +∞; weight 0 without borrowing stays 0.
TEST(DominantResourceShareTest, WeightZeroBorrowerIsInfiniteAndNonBorrowerIsZero) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Queue("q", "root")
                         .Deserved({{"cpu", 10}})
                         .FairSharingWeight(0)
                         .Queue("s", "root")
                         .Deserved({{"cpu", 10}})
                         .FairSharingWeight(0)
                         .Group("g", "q")
                         .Pod({{"cpu", 15}})
                         .Admitted(0)
                         .Group("h", "s")
                         .Pod({{"cpu", 5}})
                         .Admitted(0)
                         .Build());
  const DominantResourceShare q = ComputeDrs(t->tree, t->q("q"));
  EXPECT_EQ(q.weighted, kInf);
  EXPECT_EQ(q.unweighted, 250);
  EXPECT_TRUE(q.ZeroWeightBorrower());
  const DominantResourceShare s = ComputeDrs(t->tree, t->q("s"));
  EXPECT_EQ(s.weighted, 0);
  EXPECT_FALSE(s.ZeroWeightBorrower());
}

// §5.3 rules 2 and 4: a borrowed resource the parent could never lend sets the flag but adds
// no ratio (q covers gpu with nominal 0; nobody lends gpu).
TEST(DominantResourceShareTest, BorrowingFlagIsSeparateFromTheRatio) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Queue("q", "root")
                         .Deserved({{"cpu", 10}, {"nvidia.com/gpu", 0}})
                         .Group("g", "q")
                         .Pod({{"nvidia.com/gpu", 1}})
                         .Admitted(0)
                         .Build());
  const DominantResourceShare drs = ComputeDrs(t->tree, t->q("q"));
  EXPECT_TRUE(drs.borrowing);
  EXPECT_EQ(drs.unweighted, 0);
  EXPECT_EQ(drs.weighted, 0);
  EXPECT_EQ(drs.dominant_resource, -1);
}

// §5.3 rule 5: equal ratios pick the smaller resource name; a larger ratio wins regardless.
TEST(DominantResourceShareTest, DominantResourceIsTheLargestRatioSmallerNameOnTies) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Queue("q", "root")
                         .Deserved({{"cpu", 10}, {"memory", 100}})
                         .Queue("s", "root")
                         .Deserved({{"cpu", 10}, {"memory", 100}})
                         .Group("g", "q")
                         .Pod({{"cpu", 15}, {"memory", 150}})
                         .Admitted(0)
                         .Group("h", "s")
                         .Pod({{"cpu", 12}, {"memory", 130}})
                         .Admitted(0)
                         .Build());
  const DominantResourceShare q = ComputeDrs(t->tree, t->q("q"));
  EXPECT_EQ(q.unweighted, 250);  // cpu 5/20 and memory 50/200 tie
  EXPECT_EQ(q.dominant_resource, t->r("cpu"));
  const DominantResourceShare s = ComputeDrs(t->tree, t->q("s"));
  EXPECT_EQ(s.unweighted, 150);  // memory 30/200 beats cpu 2/20
  EXPECT_EQ(s.dominant_resource, t->r("memory"));
}

// §5.3 CompareDRS: zero-weight borrowers above everything, compared among themselves by their
// unweighted ratio; everything else by the weighted share, exactly.
TEST(DominantResourceShareTest, CompareDrsOrdersZeroWeightBorrowersLast) {
  struct Case {
    const char* name;
    DominantResourceShare a, b;
    int expected;
  };
  const Case cases[] = {
      {"LowerWeightedShareIsSmaller", Share(100, 1), Share(200, 1), -1},
      {"WeightedNotUnweighted", Share(300, 3), Share(200, 1), -1},
      {"EqualWeightedShares", Share(200, 2), Share(100, 1), 0},
      {"ZeroWeightBorrowerAboveAnyFiniteShare", Share(1, 0), Share(1e12, 1), 1},
      {"TwoZeroWeightBorrowersCompareUnweighted", Share(5, 0), Share(7, 0), -1},
      {"ZeroWeightWithoutRatioIsZero", Share(0, 0), Share(1, 1), -1},
      {"NotBorrowingEqualsZero", Share(0, 1, false), Share(0, 5, false), 0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CompareDrs(c.a, c.b), c.expected) << c.name;
    EXPECT_EQ(CompareDrs(c.b, c.a), -c.expected) << c.name;
  }
}

// §5.3: a cohort's share depends only on its aggregate usage and SQ, not on how its children
// split it.
TEST(DominantResourceShareTest, CohortShareDependsOnlyOnAggregateUsage) {
  auto build = [](double a_usage, double b_usage) {
    return BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Deserved({{"cpu", 20}})
                         .Queue("C", "root")
                         .Queue("a", "C")
                         .Deserved({{"cpu", 5}})
                         .Queue("b", "C")
                         .Deserved({{"cpu", 5}})
                         .Group("ga", "a")
                         .Pod({{"cpu", a_usage}})
                         .Admitted(0)
                         .Group("gb", "b")
                         .Pod({{"cpu", b_usage}})
                         .Admitted(0)
                         .Build());
  };
  auto even = build(8, 8);
  auto skewed = build(15, 1);
  const DominantResourceShare x = ComputeDrs(even->tree, even->q("C"));
  const DominantResourceShare y = ComputeDrs(skewed->tree, skewed->q("C"));
  EXPECT_EQ(x.unweighted, 200);  // (16 - 10) * 1000 / 30
  EXPECT_EQ(x.unweighted, y.unweighted);
  EXPECT_NE(ComputeDrs(even->tree, even->q("a")).unweighted,
            ComputeDrs(skewed->tree, skewed->q("a")).unweighted);
}

// §5.3 "DRS of n with w": w's usage added at its queue, bubbled, evaluated, then undone.
TEST(DominantResourceShareTest, DrsWithAddsTheWorkloadAndRestoresTheTree) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Deserved({{"cpu", 20}})
                         .Queue("C", "root")
                         .Queue("a", "C")
                         .Deserved({{"cpu", 5}})
                         .LendingLimit({{"cpu", 1}})
                         .Queue("b", "C")
                         .Deserved({{"cpu", 5}})
                         .Build());
  const Usage w = t->Of("cpu", 10);
  bool borrows = false;
  // a keeps LQ(a) = 5 - 1 = 4 for itself; 6 bubble into C, whose SQ is (5 - 4) + 5 = 6: C is
  // not borrowing.
  DominantResourceShare c = DrsWith(t->tree, t->q("C"), t->q("a"), w, &borrows);
  EXPECT_FALSE(c.borrowing);
  EXPECT_FALSE(borrows);
  DominantResourceShare a = DrsWith(t->tree, t->q("a"), t->q("a"), w, &borrows);
  EXPECT_TRUE(borrows);
  // a borrows 10 - 5 = 5 of pot(C) = LQ(C) 0 + pot(root) 26 (root's 20 and C's 6).
  EXPECT_EQ(a.unweighted, 5.0 * 1000 / 26);
  EXPECT_EQ(t->tree.usage(t->q("a"), t->r("cpu")), 0);
  EXPECT_EQ(t->tree.usage(t->q("C"), t->r("cpu")), 0);
}

// §5.3 check, KEP story 3: C1 and C2 each borrowing 150 of CS's 300 are balanced at 500; inside
// C1, 1A at 30 gives 100 and 1C (weight 3) at 90 gives 300 / 3 = 100.
TEST(DominantResourceShareTest, KepStory3SharesAreBalanced) {
  SnapshotBuilder b;
  b.Queue("org");
  b.Queue("CS", "org").Queue("cs-cq", "CS").Deserved({{"nvidia.com/gpu", 300}});
  b.Queue("C1", "org");
  b.Queue("1A", "C1").Deserved({{"nvidia.com/gpu", 0}});
  b.Queue("1B", "C1").Deserved({{"nvidia.com/gpu", 0}});
  b.Queue("1C", "C1").Deserved({{"nvidia.com/gpu", 0}}).FairSharingWeight(3);
  b.Queue("C2", "org");
  b.Queue("2A", "C2").Deserved({{"nvidia.com/gpu", 0}});
  b.Group("1a", "1A").Pod({{"nvidia.com/gpu", 30}}).Admitted(0);
  b.Group("1b", "1B").Pod({{"nvidia.com/gpu", 30}}).Admitted(0);
  b.Group("1c", "1C").Pod({{"nvidia.com/gpu", 90}}).Admitted(0);
  b.Group("2a", "2A").Pod({{"nvidia.com/gpu", 150}}).Admitted(0);
  auto t = BuildTree(b.Build());
  EXPECT_EQ(ComputeDrs(t->tree, t->q("C1")).weighted, 500);
  EXPECT_EQ(ComputeDrs(t->tree, t->q("C2")).weighted, 500);
  EXPECT_EQ(ComputeDrs(t->tree, t->q("1A")).weighted, 100);
  EXPECT_EQ(ComputeDrs(t->tree, t->q("1C")).weighted, 100);
  EXPECT_EQ(ComputeDrs(t->tree, t->q("CS")).weighted, 0);
}

// §6 KUEUE: ComputeKueueShares lists every queue in name order with the configured deserved,
// allocated = bubbled Use (every resource of R), requested = allocated + the subtree's pending
// requests, the share, dominant resource and borrowing flag, and an empty fair_share.
TEST(DominantResourceShareTest, ComputeKueueSharesAnswersEveryQueue) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("root")
                         .Queue("b", "root")
                         .Deserved({{"cpu", 10}})
                         .LendingLimit({{"cpu", 4}})
                         .Queue("a", "root")
                         .Deserved({{"cpu", 10}, {"memory", 8}})
                         .Group("b-run", "b")
                         .Pod({{"cpu", 12}})
                         .Admitted(0)
                         .Group("b-wait", "b")
                         .Pod({{"cpu", 3}, {"memory", 1}})
                         .Build();
  const std::vector<QueueShare> shares =
      ComputeKueueShares(::arbiter::testing::MustValidate(s, testing::KueuePolicy()));
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_EQ(shares[0].queue, "a");
  EXPECT_EQ(shares[1].queue, "b");
  EXPECT_EQ(shares[2].queue, "root");
  const QueueShare* b = FindQueue(shares, "b");
  EXPECT_EQ(b->deserved, (ResourceMap{{"cpu", 10}}));
  EXPECT_EQ(b->allocated, (ResourceMap{{"cpu", 12}, {"memory", 0}}));
  EXPECT_EQ(b->requested, (ResourceMap{{"cpu", 15}, {"memory", 1}}));
  EXPECT_TRUE(b->fair_share.empty());
  // b lends 4 of its 10: pot(root) = 4 + 10 = 14; b borrows 2 -> 2000 / 14.
  EXPECT_EQ(b->weighted_share, 2000.0 / 14);
  EXPECT_EQ(b->dominant_resource, "cpu");
  EXPECT_TRUE(b->borrowing);
  // The root holds only what b used beyond its 6 protected units.
  const QueueShare* root = FindQueue(shares, "root");
  EXPECT_EQ(root->allocated, (ResourceMap{{"cpu", 6}, {"memory", 0}}));
  EXPECT_EQ(root->requested, (ResourceMap{{"cpu", 9}, {"memory", 1}}));
  EXPECT_EQ(root->weighted_share, 0);
  EXPECT_FALSE(root->borrowing);
  const QueueShare* a = FindQueue(shares, "a");
  EXPECT_EQ(a->dominant_resource, "");
  EXPECT_EQ(a->saturation, 0);
}

}  // namespace
}  // namespace arbiter::kueue
