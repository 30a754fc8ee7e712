// The Kueue quota tree (SEMANTICS.md §5.2). Every expected value follows by hand from the
// formulas of §5.2, worked out in the comments.
#include "core/kueue/quota_tree.h"

#include <limits>

#include "core/kueue/pending_reasons.h"
#include "gtest/gtest.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using testing::BuildTree;
using testing::BuiltTree;
using testing::SnapshotBuilder;

// root (own cpu 10)
//   team (lending limit 5)
//     a: nominal 8, lending limit 2  -> LQ(a) = 6
//     b: nominal 4                    -> LQ(b) = 0
//   c: nominal 3, lending limit -1    -> no limit, LQ(c) = 0
// SQ(team) = 0 + (8 - 6) + (4 - 0) = 6, LQ(team) = max(0, 6 - 5) = 1
// SQ(root) = 10 + (6 - 1) + (3 - 0) = 18
std::unique_ptr<BuiltTree> LendingTree() {
  return BuildTree(SnapshotBuilder()
                       .Queue("root")
                       .Deserved({{"cpu", 10}})
                       .Queue("team", "root")
                       .LendingLimit({{"cpu", 5}})
                       .Queue("a", "team")
                       .Deserved({{"cpu", 8}})
                       .LendingLimit({{"cpu", 2}})
                       .Queue("b", "team")
                       .Deserved({{"cpu", 4}})
                       .Queue("c", "root")
                       .Deserved({{"cpu", 3}})
                       .LendingLimit({{"cpu", -1}})
                       .Build());
}

// §5.2: SQ and LQ with lending limits on a ClusterQueue and on a cohort.
TEST(QuotaTreeTest, SubtreeQuotaKeepsLocalQuotaOutAtEveryLevel) {
  auto t = LendingTree();
  const int cpu = t->r("cpu");
  EXPECT_EQ(t->tree.subtree_quota(t->q("a"), cpu), 8);
  EXPECT_EQ(t->tree.local_quota(t->q("a"), cpu), 6);
  EXPECT_EQ(t->tree.local_quota(t->q("b"), cpu), 0);
  EXPECT_EQ(t->tree.subtree_quota(t->q("team"), cpu), 6);
  EXPECT_EQ(t->tree.local_quota(t->q("team"), cpu), 1);
  EXPECT_EQ(t->tree.local_quota(t->q("c"), cpu), 0);  // -1 = no lending limit
  EXPECT_EQ(t->tree.subtree_quota(t->q("root"), cpu), 18);
}

// §5.2: pot(root) = SQ; pot(n) = LQ(n) + pot(P(n)). All 25 units are reachable from a, only
// what is not protected elsewhere from b and c.
TEST(QuotaTreeTest, PotentialAvailableAddsLocalQuotaDownThePath) {
  auto t = LendingTree();
  const int cpu = t->r("cpu");
  EXPECT_EQ(t->tree.PotentialAvailable(t->q("root"), cpu), 18);
  EXPECT_EQ(t->tree.PotentialAvailable(t->q("team"), cpu), 19);  // 1 + 18
  EXPECT_EQ(t->tree.PotentialAvailable(t->q("a"), cpu), 25);     // 6 + 19
  EXPECT_EQ(t->tree.PotentialAvailable(t->q("b"), cpu), 19);     // 0 + 19
  EXPECT_EQ(t->tree.PotentialAvailable(t->q("c"), cpu), 18);
}

// §5.2: adding v at n keeps up to LA(n) locally and bubbles the rest, level by level.
TEST(QuotaTreeTest, UsageBubblesUpOnlyAboveLocalAvailable) {
  auto t = LendingTree();
  const int cpu = t->r("cpu");
  const int a = t->q("a"), team = t->q("team"), root = t->q("root");
  t->tree.AddUsage(a, t->Of("cpu", 7));  // LA(a) = 6: 1 goes to team; LA(team) = 1 keeps it
  EXPECT_EQ(t->tree.usage(a, cpu), 7);
  EXPECT_EQ(t->tree.usage(team, cpu), 1);
  EXPECT_EQ(t->tree.usage(root, cpu), 0);
  t->tree.AddUsage(a, t->Of("cpu", 3));  // LA(a) = 0, LA(team) = 0: all 3 reach the root
  EXPECT_EQ(t->tree.usage(a, cpu), 10);
  EXPECT_EQ(t->tree.usage(team, cpu), 4);
  EXPECT_EQ(t->tree.usage(root, cpu), 3);
}

// §5.2: removal mirrors addition: the parent loses at most what n stored in it.
TEST(QuotaTreeTest, RemovalReturnsOnlyWhatWasStoredInTheParent) {
  auto t = LendingTree();
  const int cpu = t->r("cpu");
  const int a = t->q("a"), team = t->q("team"), root = t->q("root");
  t->tree.AddUsage(a, t->Of("cpu", 10));    // a 10, team 4, root 3
  t->tree.RemoveUsage(a, t->Of("cpu", 5));  // a stored 4 in team; team stored 3 in root
  EXPECT_EQ(t->tree.usage(a, cpu), 5);
  EXPECT_EQ(t->tree.usage(team, cpu), 0);
  EXPECT_EQ(t->tree.usage(root, cpu), 0);
}

// §5.2: Use(cohort) = Σ max(0, Use(c) − LQ(c)) gives the same tree as adding one by one.
TEST(QuotaTreeTest, RebuiltUsageMatchesBubbledUsage) {
  auto t = LendingTree();
  const int cpu = t->r("cpu");
  std::vector<double> leaf(static_cast<size_t>(t->tree.size()) * t->tree.resource_count(), 0);
  leaf[static_cast<size_t>(t->q("a")) * t->tree.resource_count() + cpu] = 10;
  leaf[static_cast<size_t>(t->q("b")) * t->tree.resource_count() + cpu] = 2;
  t->tree.SetLeafUsage(leaf);
  EXPECT_EQ(t->tree.usage(t->q("team"), cpu), 6);  // (10 - 6) + (2 - 0)
  EXPECT_EQ(t->tree.usage(t->q("root"), cpu), 5);  // 6 - 1
}

// §5.2: avail(root) = SQ − Use; avail(n) = LA(n) + avail(P(n)) without borrowing limits.
TEST(QuotaTreeTest, AvailableCountsProtectedQuotaOnlyForItsOwnSubtree) {
  auto t = LendingTree();
  const int cpu = t->r("cpu");
  t->tree.AddUsage(t->q("a"), t->Of("cpu", 5));  // stays within LQ(a) = 6
  // 25 units in all, 5 used: a sees 20; c cannot use a's last protected unit nor team's.
  EXPECT_EQ(t->tree.Available(t->q("a"), cpu), 20);
  EXPECT_EQ(t->tree.Available(t->q("b"), cpu), 19);
  EXPECT_EQ(t->tree.Available(t->q("c"), cpu), 18);
}

// root (own cpu 100000)
//   research (borrowing limit 10000): r1 nominal 20000, r2 nominal 1000
//   ops: nominal 30000
// SQ(research) = 21000, SQ(root) = 151000.
std::unique_ptr<BuiltTree> ResearchTree(double r1_usage) {
  return BuildTree(SnapshotBuilder()
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
                       .Pod({{"cpu", r1_usage}})
                       .Admitted(0)
                       .Build());
}

// §5.2: a borrowing limit on an intermediate cohort caps every queue below it:
// avail(research) = LA + min(avail(root), SQ − LQ − max(0, Use − LQ) + BL).
TEST(QuotaTreeTest, BorrowingLimitOnIntermediateCohortCapsEveryQueueBelow) {
  auto t = ResearchTree(26000);
  const int cpu = t->r("cpu");
  // avail(root) = 151000 - 26000 = 125000; research: 21000 - 26000 + 10000 = 5000.
  EXPECT_EQ(t->tree.Available(t->q("r1"), cpu), 5000);
  EXPECT_EQ(t->tree.Available(t->q("r2"), cpu), 5000);
  EXPECT_EQ(t->tree.Available(t->q("ops"), cpu), 125000);
  // pot(research) = min(0 + 151000, 21000 + 10000) = 31000, inherited below.
  EXPECT_EQ(t->tree.PotentialAvailable(t->q("research"), cpu), 31000);
  EXPECT_EQ(t->tree.PotentialAvailable(t->q("r2"), cpu), 31000);
  EXPECT_TRUE(t->tree.Fits(t->q("r2"), t->Of("cpu", 5000)));
  EXPECT_FALSE(t->tree.Fits(t->q("r2"), t->Of("cpu", 5001)));
}

// §6: the sentence names the cohort whose limit binds, the resource and the shortfall.
TEST(QuotaTreeTest, ShortfallNamesTheBindingBorrowingLimit) {
  auto t = ResearchTree(26000);
  const QuotaTree::Bound bound = t->tree.AvailableBound(t->q("r2"), t->r("cpu"));
  EXPECT_EQ(bound.node, t->q("research"));
  EXPECT_TRUE(bound.borrowing_limit);
  EXPECT_EQ(ShortfallMessage(t->tree, t->q("r2"), t->r("cpu"), 7000),
            "cohort research would exceed its borrowing limit on cpu by 2000");
  // Without the cohort's limit in the way, the root's quota binds.
  EXPECT_EQ(ShortfallMessage(t->tree, t->q("ops"), t->r("cpu"), 125500),
            "cohort root would exceed its quota on cpu by 500");
}

// §5.2: a ClusterQueue's own borrowing limit: 10 nominal + 2 borrowable, 11 used -> 1 left.
TEST(QuotaTreeTest, BorrowingLimitOnClusterQueue) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("root")
                         .Deserved({{"cpu", 100}})
                         .Queue("q", "root")
                         .Deserved({{"cpu", 10}})
                         .BorrowingLimit({{"cpu", 2}})
                         .Group("g", "q")
                         .Pod({{"cpu", 11}})
                         .Admitted(0)
                         .Build());
  EXPECT_EQ(t->tree.Available(t->q("q"), t->r("cpu")), 1);
  EXPECT_EQ(t->tree.PotentialAvailable(t->q("q"), t->r("cpu")), 12);
  EXPECT_EQ(ShortfallMessage(t->tree, t->q("q"), t->r("cpu"), 3),
            "cluster queue q would exceed its borrowing limit on cpu by 2");
}

// §5.1: borrowing and lending limits have no effect on top-level queues.
TEST(QuotaTreeTest, LimitsOnTopLevelQueuesHaveNoEffect) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("solo")
                         .Deserved({{"cpu", 10}})
                         .BorrowingLimit({{"cpu", 1}})
                         .LendingLimit({{"cpu", 2}})
                         .Build());
  const int solo = t->q("solo"), cpu = t->r("cpu");
  EXPECT_FALSE(t->tree.has_borrowing_limit(solo, cpu));
  EXPECT_EQ(t->tree.local_quota(solo, cpu), 0);
  EXPECT_EQ(t->tree.PotentialAvailable(solo, cpu), 10);
  EXPECT_EQ(t->tree.Available(solo, cpu), 10);
  EXPECT_EQ(ShortfallMessage(t->tree, solo, cpu, 12),
            "cluster queue solo would exceed its nominal quota on cpu by 2");
}

// §5.2: over-admission makes avail negative; Available clamps it; Fits checks only resources
// with a positive request.
TEST(QuotaTreeTest, OverAdmissionLeavesNothingAvailable) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("q")
                         .Deserved({{"cpu", 10}, {"memory", 5}})
                         .Group("g", "q")
                         .Pod({{"cpu", 12}})
                         .Admitted(0)
                         .Build());
  const int q = t->q("q");
  EXPECT_EQ(t->tree.RawAvailable(q, t->r("cpu")), -2);
  EXPECT_EQ(t->tree.Available(q, t->r("cpu")), 0);
  EXPECT_TRUE(t->tree.Fits(q, t->Of("memory", 5)));
  EXPECT_FALSE(t->tree.Fits(q, Usage{{t->r("cpu"), 1}, {t->r("memory"), 1}}));
}

// §5.1: a present key is a covered resource (0 included); a cohort covers its own keys and its
// children's.
TEST(QuotaTreeTest, CoveredResourcesAreOwnKeysAndChildrenKeys) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("org")
                         .Deserved({{"memory", 1}})
                         .Queue("a", "org")
                         .Deserved({{"cpu", 0}})
                         .Queue("b", "org")
                         .Deserved({{"nvidia.com/gpu", 2}})
                         .Build());
  EXPECT_TRUE(t->tree.covers(t->q("a"), t->r("cpu")));
  EXPECT_FALSE(t->tree.covers(t->q("a"), t->r("nvidia.com/gpu")));
  EXPECT_EQ(t->tree.covered(t->q("org")),
            (std::vector<int>{t->r("cpu"), t->r("memory"), t->r("nvidia.com/gpu")}));
}

// §5.2: a ClusterQueue borrows r iff nominal < Use; a cohort iff SQ < Use.
TEST(QuotaTreeTest, BorrowsOnlyAboveQuota) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("org")
                         .Queue("a", "org")
                         .Deserved({{"cpu", 4}})
                         .Queue("b", "org")
                         .Deserved({{"cpu", 4}})
                         .Group("a1", "a")
                         .Pod({{"cpu", 4}})
                         .Admitted(0)
                         .Group("b1", "b")
                         .Pod({{"cpu", 5}})
                         .Admitted(0)
                         .Build());
  const int cpu = t->r("cpu");
  EXPECT_FALSE(t->tree.Borrows(t->q("a"), cpu));
  EXPECT_TRUE(t->tree.Borrows(t->q("b"), cpu));
  EXPECT_TRUE(t->tree.Borrows(t->q("org"), cpu));  // 9 > SQ 8
}

// Simulations undo exactly: no floating-point residue after add and rollback.
TEST(QuotaTreeTest, RollbackRestoresUsageExactly) {
  auto t = BuildTree(SnapshotBuilder()
                         .Queue("org")
                         .Deserved({{"cpu", 1}})
                         .Queue("a", "org")
                         .Deserved({{"cpu", 0.3}})
                         .LendingLimit({{"cpu", 0.1}})
                         .Group("g", "a")
                         .Pod({{"cpu", 0.7}})
                         .Admitted(0)
                         .Build());
  const int cpu = t->r("cpu");
  const double a_before = t->tree.usage(t->q("a"), cpu);
  const double org_before = t->tree.usage(t->q("org"), cpu);
  const size_t mark = t->tree.Mark();
  t->tree.AddUsage(t->q("a"), t->Of("cpu", 0.1));
  t->tree.RemoveUsage(t->q("a"), t->Of("cpu", 0.3));
  t->tree.AddUsage(t->q("a"), t->Of("cpu", 0.2));
  t->tree.Rollback(mark);
  EXPECT_EQ(t->tree.usage(t->q("a"), cpu), a_before);
  EXPECT_EQ(t->tree.usage(t->q("org"), cpu), org_before);
}

}  // namespace
}  // namespace arbiter::kueue
