// Kueue resource flavors (SEMANTICS.md §5.8): quotas per flavor-resource, usage charged by an
// admission's flavors, the dominant resource share summed over flavors, flavor compatibility,
// the flavor assignment with its fungibility, and the answer's flavor fields. One named test per
// rule, each on the smallest tree that shows it.

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/pending_reasons.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using testing::Admitted;
using testing::Allocated;
using testing::Evicted;
using testing::FindPending;
using testing::FindQueue;
using ::testing::HasSubstr;
using testing::PendingReasons;
using testing::RunKueue;
using testing::SnapshotBuilder;

using PodSetMap = std::map<std::string, std::map<std::string, std::string>>;

// Admission.pod_sets of `group`, as pod set -> resource -> flavor; empty when not admitted.
PodSetMap FlavorsOf(const ScheduleResult& result, const std::string& group) {
  PodSetMap out;
  for (const Admission& a : result.admissions) {
    if (a.pod_group != group) continue;
    for (const PodSetFlavors& set : a.pod_sets) {
      out[set.pod_set] = std::map<std::string, std::string>(set.flavors.begin(), set.flavors.end());
    }
  }
  return out;
}

// QueueShare.flavor_resources of `queue` as "flavor/resource nominal subtree usage borrowed".
std::vector<std::string> Rows(const ScheduleResult& result, const std::string& queue) {
  std::vector<std::string> rows;
  const QueueShare* share = FindQueue(result.queues, queue);
  if (share == nullptr) return rows;
  for (const FlavorResourceShare& row : share->flavor_resources) {
    rows.push_back(absl::StrFormat("%s/%s %g %g %g %g", row.flavor, row.resource, row.nominal,
                                   row.subtree_quota, row.usage, row.borrowed));
  }
  return rows;
}

// A cohort `pool` with team-a offering cpu in on-demand then spot (4 each) and team-b offering
// on-demand only (4), the flavors declared without constraints.
SnapshotBuilder TwoFlavorPool() {
  SnapshotBuilder b;
  b.Now(1000).Flavor("on-demand").Flavor("spot");
  b.Queue("pool");
  b.Queue("team-a", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("on-demand", {{"cpu", 4}})
      .FlavorQuota("spot", {{"cpu", 4}});
  b.Queue("team-b", "pool").ResourceGroup({"cpu"}).FlavorQuota("on-demand", {{"cpu", 4}});
  return b;
}

// ---- §5.8.1 the implicit flavor ----

TEST(Semantics58, RequestWithoutFlavorsCarriesNoFlavorFields) {
  Snapshot s = SnapshotBuilder()
                   .Now(1000)
                   .Queue("pool")
                   .Queue("a", "pool")
                   .Deserved({{"cpu", 4}})
                   .Group("w", "a")
                   .Pod({{"cpu", 2}})
                   .PodSet("main")
                   .Build();
  const ScheduleResult result = RunKueue(s);
  ASSERT_EQ(result.admissions.size(), 1u);
  EXPECT_TRUE(result.admissions[0].pod_sets.empty());
  for (const QueueShare& q : result.queues) EXPECT_TRUE(q.flavor_resources.empty()) << q.queue;
}

TEST(Semantics58, PodSetFieldsWithoutFlavorsDoNotChangeTheAnswer) {
  SnapshotBuilder plain;
  plain.Now(1000).Queue("pool").Queue("a", "pool").Deserved({{"cpu", 3}});
  plain.Queue("b", "pool").Deserved({{"cpu", 3}});
  plain.Group("b1", "b").Admitted(10).Pod({{"cpu", 0.1}}).Pod({{"cpu", 0.2}}).Pod({{"cpu", 2.4}});
  plain.Group("w", "a").Created(5).Pod({{"cpu", 0.7}}).Pod({{"cpu", 1.1}}).Pod({{"cpu", 1.3}});
  Snapshot with_sets = plain.Build();
  with_sets.pod_groups[0].pods[1].pod_set = "x";
  with_sets.pod_groups[0].flavors.push_back(PodSetFlavors{"x", {{"cpu", "spot"}}});
  with_sets.pod_groups[1].pods[0].pod_set = "z";
  with_sets.pod_groups[1].pods[2].pod_set = "y";
  with_sets.queues[1].flavor_fungibility.when_can_borrow = WhenCanBorrow::kTryNextFlavor;
  const ScheduleResult a = RunKueue(plain.Build());
  const ScheduleResult b = RunKueue(with_sets);
  EXPECT_EQ(Admitted(a), Admitted(b));
  ASSERT_EQ(a.queues.size(), b.queues.size());
  for (size_t i = 0; i < a.queues.size(); ++i) {
    EXPECT_EQ(a.queues[i].allocated, b.queues[i].allocated) << a.queues[i].queue;
    EXPECT_EQ(a.queues[i].requested, b.queues[i].requested) << a.queues[i].queue;
    EXPECT_EQ(a.queues[i].weighted_share, b.queues[i].weighted_share) << a.queues[i].queue;
    EXPECT_TRUE(b.queues[i].flavor_resources.empty());
  }
  for (const Admission& admission : b.admissions) EXPECT_TRUE(admission.pod_sets.empty());
}

TEST(Semantics58, LegacyAndFlavoredQueuesShareATree) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Queue("legacy", "pool").Deserved({{"cpu", 2}});
  b.Group("l1", "legacy").Pod({{"cpu", 3}});
  b.Group("a1", "team-a").Pod({{"cpu", 3}});
  const ScheduleResult result = RunKueue(b.Build());
  // The legacy queue's implicit flavor "" is its own cell: nothing lends it cpu beyond its 2.
  EXPECT_EQ(PendingReasons(result).at("l1"), kExceedsMaxQuota);
  EXPECT_EQ(FlavorsOf(result, "a1"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
  EXPECT_THAT(Rows(result, "legacy"), ::testing::ElementsAre("/cpu 2 2 0 0"));
}

TEST(Semantics58, LegacyQueueAdmissionListsTheImplicitFlavorInAFlavoredRequest) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Queue("legacy", "pool").Deserved({{"cpu", 2}});
  b.Group("l1", "legacy").Pod({{"cpu", 1}}).PodSet("main");
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(FlavorsOf(result, "l1"), (PodSetMap{{"main", {{"cpu", ""}}}}));
}

// ---- §5.8.2 quotas ----

TEST(Semantics58, SubtreeQuotaIsPerFlavorResource) {
  SnapshotBuilder b = TwoFlavorPool();
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_THAT(Rows(result, "pool"),
              ::testing::ElementsAre("on-demand/cpu 0 8 0 0", "spot/cpu 0 4 0 0"));
  EXPECT_THAT(Rows(result, "team-b"), ::testing::ElementsAre("on-demand/cpu 4 4 0 0"));
}

TEST(Semantics58, FlavorBorrowingLimitCapsThatFlavorOnly) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("f1").Flavor("f2").Queue("pool");
  b.Queue("a", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("f1", {{"cpu", 2}}, {{"cpu", 1}})
      .FlavorQuota("f2", {{"cpu", 2}});
  b.Queue("b", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("f1", {{"cpu", 6}})
      .FlavorQuota("f2", {{"cpu", 6}});
  // 4 cpu: f1 can reach 2 + 1 (borrowing limit), f2 can reach 2 + 6.
  b.Group("w", "a").Pod({{"cpu", 4}});
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(FlavorsOf(result, "w"), (PodSetMap{{"", {{"cpu", "f2"}}}}));
}

TEST(Semantics58, FlavorLendingLimitKeepsQuotaOfThatFlavor) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("f1").Queue("pool");
  b.Queue("a", "pool").ResourceGroup({"cpu"}).FlavorQuota("f1", {{"cpu", 4}}, {}, {{"cpu", 1}});
  b.Queue("b", "pool").ResourceGroup({"cpu"}).FlavorQuota("f1", {{"cpu", 0}});
  b.Group("w", "b").Pod({{"cpu", 2}});
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(PendingReasons(result).at("w"), kExceedsMaxQuota);
  EXPECT_THAT(FindPending(result, "w")->message, HasSubstr("cpu in flavor f1"));
}

// ---- §5.8.3 usage of admitted groups ----

TEST(Semantics58, AdmittedUsageIsChargedToItsFlavors) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Group("a1", "team-a").Admitted(10).Pod({{"cpu", 3}}).AssignedFlavor("", "cpu", "spot");
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_THAT(Rows(result, "team-a"),
              ::testing::ElementsAre("on-demand/cpu 4 4 0 0", "spot/cpu 4 4 3 0"));
  EXPECT_DOUBLE_EQ(Allocated(result.queues, "team-a", "cpu"), 3);
}

TEST(Semantics58, PodSetsAreChargedToTheirOwnFlavors) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Group("a1", "team-a")
      .Admitted(10)
      .Pod({{"cpu", 1}})
      .PodSet("driver")
      .Pod({{"cpu", 2}})
      .PodSet("workers")
      .AssignedFlavor("driver", "cpu", "on-demand")
      .AssignedFlavor("workers", "cpu", "spot");
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_THAT(Rows(result, "team-a"),
              ::testing::ElementsAre("on-demand/cpu 4 4 1 0", "spot/cpu 4 4 2 0"));
}

TEST(Semantics58, StaleFlavorIsChargedAtNominalZeroAndNeverCountsInTheShare) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Group("b1", "team-b").Admitted(10).Pod({{"cpu", 2}}).AssignedFlavor("", "cpu", "old");
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_THAT(Rows(result, "team-b"),
              ::testing::ElementsAre("old/cpu 0 0 2 2", "on-demand/cpu 4 4 0 0"));
  const QueueShare* team_b = FindQueue(result.queues, "team-b");
  ASSERT_NE(team_b, nullptr);
  EXPECT_FALSE(team_b->borrowing);
  EXPECT_EQ(team_b->weighted_share, 0);
  EXPECT_DOUBLE_EQ(Allocated(result.queues, "team-b", "cpu"), 2);
}

TEST(Semantics58, LegacyQueueIgnoresPodGroupFlavors) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Queue("legacy", "pool").Deserved({{"cpu", 2}});
  b.Group("l1", "legacy").Admitted(10).Pod({{"cpu", 1}}).AssignedFlavor("", "cpu", "spot");
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_THAT(Rows(result, "legacy"), ::testing::ElementsAre("/cpu 2 2 1 0"));
}

// ---- §5.8.4 dominant resource share across flavors ----

TEST(Semantics58, ShareSumsBorrowingOverFlavorsAndLendableOverTheRootsFlavors) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("f1").Flavor("f2").Queue("pool");
  b.Queue("a", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("f1", {{"cpu", 2}})
      .FlavorQuota("f2", {{"cpu", 2}});
  b.Queue("b", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("f1", {{"cpu", 8}})
      .FlavorQuota("f2", {{"cpu", 8}});
  b.Group("a1", "a").Admitted(10).Pod({{"cpu", 3}}).AssignedFlavor("", "cpu", "f1");
  b.Group("a2", "a").Admitted(10).Pod({{"cpu", 4}}).AssignedFlavor("", "cpu", "f2");
  const ScheduleResult result = RunKueue(b.Build());
  const QueueShare* a = FindQueue(result.queues, "a");
  ASSERT_NE(a, nullptr);
  // Borrowed (3 − 2) + (4 − 2) = 3 over pot(pool) 10 + 10 = 20: 150.
  EXPECT_DOUBLE_EQ(a->weighted_share, 150);
  EXPECT_EQ(a->dominant_resource, "cpu");
  EXPECT_TRUE(a->borrowing);
}

TEST(Semantics58, UnusedQuotaOfOneFlavorDoesNotOffsetBorrowingOnAnother) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("f1").Flavor("f2").Queue("pool");
  b.Queue("a", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("f1", {{"cpu", 4}})
      .FlavorQuota("f2", {{"cpu", 2}});
  b.Queue("b", "pool").ResourceGroup({"cpu"}).FlavorQuota("f2", {{"cpu", 6}});
  b.Group("a1", "a").Admitted(10).Pod({{"cpu", 3}}).AssignedFlavor("", "cpu", "f2");
  const ScheduleResult result = RunKueue(b.Build());
  const QueueShare* a = FindQueue(result.queues, "a");
  ASSERT_NE(a, nullptr);
  // 3 cpu < 6 nominal over both flavors, yet f2 is borrowed by 1: 1·1000 / (4 + 8).
  EXPECT_TRUE(a->borrowing);
  EXPECT_DOUBLE_EQ(a->weighted_share, 1000.0 / 12);
}

// ---- §5.8.5 pod sets and flavor compatibility ----

SnapshotBuilder TaintedSpot() {
  SnapshotBuilder b;
  b.Now(1000)
      .Flavor("on-demand")
      .FlavorLabel("capacity", "on-demand")
      .Flavor("spot")
      .FlavorLabel("capacity", "spot")
      .FlavorTaint("spot", "true", "NoSchedule");
  b.Queue("pool");
  b.Queue("a", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("on-demand", {{"cpu", 2}})
      .FlavorQuota("spot", {{"cpu", 8}});
  return b;
}

TEST(Semantics58, SelectorOnAFlavorLabelPicksThatFlavor) {
  SnapshotBuilder b = TaintedSpot();
  b.Group("w", "a")
      .Pod({{"cpu", 1}})
      .Selector("capacity", "spot")
      .Tolerate("spot", "Exists", "", "");
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "spot"}}}}));
}

TEST(Semantics58, SelectorKeysTheFlavorDoesNotLabelAreIgnored) {
  SnapshotBuilder b = TaintedSpot();
  b.Group("w", "a").Pod({{"cpu", 1}}).Selector("zone", "z1");
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
}

TEST(Semantics58, UntoleratedTaintRulesTheFlavorOut) {
  SnapshotBuilder b = TaintedSpot();
  b.Group("w", "a").Pod({{"cpu", 4}});  // on-demand can reach 2; spot is tainted
  const ScheduleResult result = RunKueue(b.Build());
  // The least severe outcome: exceeds-max-quota (on-demand) beats no-matching-flavor (spot).
  EXPECT_EQ(PendingReasons(result).at("w"), kExceedsMaxQuota);
  EXPECT_THAT(FindPending(result, "w")->message, HasSubstr("does not tolerate the taint"));
}

TEST(Semantics58, FlavorTolerationsCountAsThePods) {
  SnapshotBuilder b = TaintedSpot();
  b.snapshot().resource_flavors[1].tolerations.push_back(Toleration{"spot", "Exists", "", ""});
  b.Group("w", "a").Pod({{"cpu", 4}});
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "spot"}}}}));
}

TEST(Semantics58, PreferNoScheduleTaintIsIgnored) {
  SnapshotBuilder b = TaintedSpot();
  b.snapshot().resource_flavors[1].node_taints[0].effect = "PreferNoSchedule";
  b.Group("w", "a").Pod({{"cpu", 4}});
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "spot"}}}}));
}

TEST(Semantics58, NoCompatibleFlavorIsNoMatchingFlavor) {
  SnapshotBuilder b = TaintedSpot();
  b.Group("w", "a").Pod({{"cpu", 1}}).Selector("capacity", "spot");
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(PendingReasons(result).at("w"), kNoMatchingFlavor);
  const PendingPodGroup* pending = FindPending(result, "w");
  ASSERT_NE(pending, nullptr);
  EXPECT_THAT(pending->message, HasSubstr("pod set \"\""));
  EXPECT_THAT(pending->message, HasSubstr("flavor on-demand: pod w-0 selects capacity=spot"));
  EXPECT_THAT(pending->message,
              HasSubstr("flavor spot: pod w-0 does not tolerate the taint spot=true:NoSchedule"));
}

TEST(Semantics58, EveryPodOfAPodSetMustSuitTheFlavor) {
  SnapshotBuilder b = TaintedSpot();
  b.Group("w", "a")
      .Pod({{"cpu", 1}})
      .Tolerate("spot", "Exists", "", "")
      .Pod({{"cpu", 3}});  // on-demand is too small for 4; the second pod does not tolerate spot
  EXPECT_EQ(PendingReasons(RunKueue(b.Build())).at("w"), kExceedsMaxQuota);
}

TEST(Semantics58, UndeclaredFlavorIsCompatibleWithEverything) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("declared").FlavorTaint("t", "", "NoExecute").Queue("pool");
  b.Queue("a", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("declared", {{"cpu", 4}})
      .FlavorQuota("undeclared", {{"cpu", 4}});
  b.Group("w", "a").Pod({{"cpu", 1}}).Selector("anything", "x");
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "undeclared"}}}}));
}

// ---- §5.8.6 flavor assignment ----

TEST(Semantics58, FirstFlavorThatFitsWithoutBorrowingIsTaken) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Group("w", "team-a").Pod({{"cpu", 4}});
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
}

TEST(Semantics58, MayStopSearchTakesTheFirstFlavorThatFitsByBorrowing) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Group("a1", "team-a").Admitted(10).Pod({{"cpu", 4}}).AssignedFlavor("", "cpu", "on-demand");
  b.Group("w", "team-a").Pod({{"cpu", 2}});  // on-demand only by borrowing team-b's
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
}

TEST(Semantics58, TryNextFlavorOnBorrowPrefersAFlavorWithoutBorrowing) {
  SnapshotBuilder b = TwoFlavorPool();
  b.snapshot().queues[1].flavor_fungibility.when_can_borrow = WhenCanBorrow::kTryNextFlavor;
  b.Group("a1", "team-a").Admitted(10).Pod({{"cpu", 4}}).AssignedFlavor("", "cpu", "on-demand");
  b.Group("w", "team-a").Pod({{"cpu", 2}});
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "spot"}}}}));
}

TEST(Semantics58, TryNextFlavorOnBorrowKeepsTheBestWhenAllBorrow) {
  SnapshotBuilder b = TwoFlavorPool();
  b.snapshot().queues[1].flavor_fungibility.when_can_borrow = WhenCanBorrow::kTryNextFlavor;
  b.Group("a1", "team-a").Admitted(10).Pod({{"cpu", 4}}).AssignedFlavor("", "cpu", "on-demand");
  b.Group("a2", "team-a").Admitted(10).Pod({{"cpu", 4}}).AssignedFlavor("", "cpu", "spot");
  b.Group("w", "team-a").Pod({{"cpu", 2}});  // spot cannot borrow (team-b has none): on-demand
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
}

// team-a: on-demand 2 (full of a preemptible lower-priority workload), spot 4 free.
SnapshotBuilder PreemptOrNext(WhenCanPreempt when) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("on-demand").Flavor("spot").Queue("solo");
  b.Queue("team-a", "solo")
      .ResourceGroup({"cpu"})
      .FlavorQuota("on-demand", {{"cpu", 2}})
      .FlavorQuota("spot", {{"cpu", 4}})
      .KueuePolicy(WithinClusterQueue::kLowerPriority, ReclaimWithinCohort::kNever)
      .Fungibility(WhenCanBorrow::kUnspecified, when);
  b.Group("low", "team-a")
      .Priority(0)
      .Admitted(10)
      .Pod({{"cpu", 2}})
      .AssignedFlavor("", "cpu", "on-demand");
  b.Group("w", "team-a").Priority(5).Pod({{"cpu", 2}});
  return b;
}

TEST(Semantics58, WhenCanPreemptTryNextFlavorSkipsAFlavorThatNeedsPreemption) {
  const ScheduleResult result = RunKueue(PreemptOrNext(WhenCanPreempt::kUnspecified).Build());
  EXPECT_EQ(FlavorsOf(result, "w"), (PodSetMap{{"", {{"cpu", "spot"}}}}));
  EXPECT_TRUE(Evicted(result).empty());
}

TEST(Semantics58, WhenCanPreemptMayStopSearchPreemptsInTheFirstFlavor) {
  const ScheduleResult result = RunKueue(PreemptOrNext(WhenCanPreempt::kMayStopSearch).Build());
  EXPECT_EQ(Evicted(result).at("low"), EvictionReason::kKueueInClusterQueue);
  EXPECT_EQ(FlavorsOf(result, "w"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
}

TEST(Semantics58, PreemptionOverBorrowingPrefersPreemptingToBorrowing) {
  // on-demand needs preemption in team-a; spot fits only by borrowing from team-b.
  for (const FlavorPreference preference :
       {FlavorPreference::kBorrowingOverPreemption, FlavorPreference::kPreemptionOverBorrowing}) {
    SnapshotBuilder b;
    b.Now(1000).Flavor("on-demand").Flavor("spot").Queue("pool");
    b.Queue("team-a", "pool")
        .ResourceGroup({"cpu"})
        .FlavorQuota("on-demand", {{"cpu", 2}})
        .FlavorQuota("spot", {{"cpu", 0}})
        .KueuePolicy(WithinClusterQueue::kLowerPriority, ReclaimWithinCohort::kNever)
        .Fungibility(WhenCanBorrow::kTryNextFlavor, WhenCanPreempt::kTryNextFlavor, preference);
    b.Queue("team-b", "pool").ResourceGroup({"cpu"}).FlavorQuota("spot", {{"cpu", 4}});
    b.Group("low", "team-a").Admitted(10).Pod({{"cpu", 2}}).AssignedFlavor("", "cpu", "on-demand");
    b.Group("w", "team-a").Priority(5).Pod({{"cpu", 2}});
    const ScheduleResult result = RunKueue(b.Build());
    const bool preempt_first = preference == FlavorPreference::kPreemptionOverBorrowing;
    EXPECT_EQ(FlavorsOf(result, "w"),
              (PodSetMap{{"", {{"cpu", preempt_first ? "on-demand" : "spot"}}}}))
        << static_cast<int>(preference);
    EXPECT_EQ(Evicted(result).count("low"), preempt_first ? 1u : 0u);
  }
}

TEST(Semantics58, NoCandidatesTriesTheNextFlavor) {
  SnapshotBuilder b = PreemptOrNext(WhenCanPreempt::kMayStopSearch);
  b.snapshot().pod_groups[0].preemptibility = Preemptibility::kNonPreemptible;
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(FlavorsOf(result, "w"), (PodSetMap{{"", {{"cpu", "spot"}}}}));
}

TEST(Semantics58, LaterPodSetsSeeWhatEarlierOnesTook) {
  SnapshotBuilder b = TwoFlavorPool();
  b.snapshot().queues[1].flavor_fungibility.when_can_borrow = WhenCanBorrow::kTryNextFlavor;
  // Pod set "a" (first by name) takes 3 of on-demand's 4; "b" would then borrow there: spot.
  b.Group("w", "team-a").Pod({{"cpu", 2}}).PodSet("b").Pod({{"cpu", 3}}).PodSet("a");
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"),
            (PodSetMap{{"a", {{"cpu", "on-demand"}}}, {"b", {{"cpu", "spot"}}}}));
}

TEST(Semantics58, EachResourceGroupPicksItsOwnFlavor) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("cpu-small").Flavor("cpu-big").Flavor("a100").Flavor("h100");
  b.Queue("solo");
  b.Queue("a", "solo")
      .ResourceGroup({"cpu", "memory"})
      .FlavorQuota("cpu-small", {{"cpu", 2}, {"memory", 100}})
      .FlavorQuota("cpu-big", {{"cpu", 16}, {"memory", 1000}})
      .ResourceGroup({"gpu"})
      .FlavorQuota("a100", {{"gpu", 1}})
      .FlavorQuota("h100", {{"gpu", 8}});
  b.Group("w", "a").Pod({{"cpu", 1}, {"memory", 200}, {"gpu", 2}});
  EXPECT_EQ(FlavorsOf(RunKueue(b.Build()), "w"),
            (PodSetMap{{"", {{"cpu", "cpu-big"}, {"gpu", "h100"}, {"memory", "cpu-big"}}}}));
}

TEST(Semantics58, ResourceNotCoveredNamesTheSmallestResource) {
  SnapshotBuilder b = TwoFlavorPool();
  b.Group("w", "team-a").Pod({{"cpu", 1}, {"zz", 1}, {"gpu", 1}});
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(PendingReasons(result).at("w"), kResourceNotCovered);
  EXPECT_THAT(FindPending(result, "w")->message, HasSubstr("no quota for gpu"));
}

TEST(Semantics58, InsufficientQuotaInEveryFlavorIsInsufficientQuota) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("f1").Flavor("f2").Queue("pool");
  b.Queue("a", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("f1", {{"cpu", 0}})
      .FlavorQuota("f2", {{"cpu", 0}});
  b.Queue("b", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("f1", {{"cpu", 2}})
      .FlavorQuota("f2", {{"cpu", 2}});
  b.Group("b1", "b").Admitted(10).Pod({{"cpu", 2}}).AssignedFlavor("", "cpu", "f1");
  b.Group("b2", "b").Admitted(10).Pod({{"cpu", 2}}).AssignedFlavor("", "cpu", "f2");
  b.Group("w", "a").Pod({{"cpu", 1}});
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(PendingReasons(result).at("w"), kInsufficientQuota);
  EXPECT_THAT(FindPending(result, "w")->message, HasSubstr("flavor f1: "));
  EXPECT_THAT(FindPending(result, "w")->message, HasSubstr("flavor f2: "));
}

// ---- §5.8.7 admission and §5.8.8 preemption ----

TEST(Semantics58, PreemptionOnlyTakesVictimsOfTheContestedFlavor) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("on-demand").Flavor("spot").Queue("solo");
  b.Queue("team-a", "solo")
      .ResourceGroup({"cpu"})
      .FlavorQuota("on-demand", {{"cpu", 2}})
      .FlavorQuota("spot", {{"cpu", 2}})
      .KueuePolicy(WithinClusterQueue::kLowerPriority, ReclaimWithinCohort::kNever)
      .Fungibility(WhenCanBorrow::kUnspecified, WhenCanPreempt::kMayStopSearch);
  // The lowest priority runs on spot; on-demand holds a higher one, still below w.
  b.Group("lowest", "team-a")
      .Priority(0)
      .Admitted(10)
      .Pod({{"cpu", 2}})
      .AssignedFlavor("", "cpu", "spot");
  b.Group("low", "team-a")
      .Priority(1)
      .Admitted(10)
      .Pod({{"cpu", 2}})
      .AssignedFlavor("", "cpu", "on-demand");
  b.Group("w", "team-a").Priority(5).Pod({{"cpu", 2}});
  const ScheduleResult result = RunKueue(b.Build());
  const auto evicted = Evicted(result);
  EXPECT_EQ(evicted.count("lowest"), 0u);
  EXPECT_EQ(evicted.count("low"), 1u);
  EXPECT_EQ(FlavorsOf(result, "w"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
}

TEST(Semantics58, PreemptWithoutTargetsReservesOnItsAssignedFlavorOnly) {
  SnapshotBuilder b;
  b.Now(1000).Flavor("f1").Flavor("f2").Queue("pool");
  b.Queue("a", "pool")
      .ResourceGroup({"cpu"})
      .FlavorQuota("f1", {{"cpu", 6}})
      .FlavorQuota("f2", {{"cpu", 2}})
      .KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kLowerPriority)
      .Fungibility(WhenCanBorrow::kUnspecified, WhenCanPreempt::kMayStopSearch);
  b.Queue("b", "pool").ResourceGroup({"cpu"}).FlavorQuota("f1", {{"cpu", 0}});
  b.Queue("c", "pool").ResourceGroup({"cpu"}).FlavorQuota("f1", {{"cpu", 0}});
  b.Queue("d", "pool").ResourceGroup({"cpu"}).FlavorQuota("f2", {{"cpu", 0}});
  // b borrows 4 of a's 6 on f1 and may not be preempted: w (6 on f1, within a's nominal) has no
  // candidates, is set aside and reserves its 6 on f1 for the rest of the round (§5.8.7 step 4).
  b.Group("b1", "b")
      .Admitted(10)
      .Preemptible(Preemptibility::kNonPreemptible)
      .Pod({{"cpu", 4}})
      .AssignedFlavor("", "cpu", "f1");
  b.Group("w", "a").Pod({{"cpu", 6}});
  b.Group("c1", "c").Pod({{"cpu", 1}});  // f1: fits at the round's start, not after w reserves
  b.Group("d1", "d").Pod({{"cpu", 1}});  // f2: the reservation is on f1 only
  const testing::RoundsResult round = testing::RunRounds(b.Build(), 1);
  EXPECT_EQ(round.reason.at("w"), kNoPreemptionCandidates);
  EXPECT_EQ(round.reason.at("c1"), kNoLongerFits);
  EXPECT_EQ(round.admitted.count("d1"), 1u);
}

TEST(Semantics58, AdmittedWorkloadHoldsItsAssignedFlavorInLaterRounds) {
  SnapshotBuilder b = TwoFlavorPool();
  b.snapshot().queues[1].flavor_fungibility.when_can_borrow = WhenCanBorrow::kTryNextFlavor;
  b.Group("w1", "team-a").Created(1).Pod({{"cpu", 4}});
  b.Group("w2", "team-a").Created(2).Pod({{"cpu", 4}});
  b.Group("w3", "team-a").Created(3).Pod({{"cpu", 4}});
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(FlavorsOf(result, "w1"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
  EXPECT_EQ(FlavorsOf(result, "w2"), (PodSetMap{{"", {{"cpu", "spot"}}}}));
  // on-demand by borrowing team-b's 4 (the best of two borrowing flavors: spot has none).
  EXPECT_EQ(FlavorsOf(result, "w3"), (PodSetMap{{"", {{"cpu", "on-demand"}}}}));
  EXPECT_THAT(Rows(result, "team-a"),
              ::testing::ElementsAre("on-demand/cpu 4 4 8 4", "spot/cpu 4 4 4 0"));
}

}  // namespace
}  // namespace arbiter::kueue
