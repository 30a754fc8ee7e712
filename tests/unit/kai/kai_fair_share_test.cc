// KAI fair share (SEMANTICS.md §2, §3, §0.7, §6): tables of named cases (the division of one
// resource, and totals and per-queue amounts), then the derived values and the response's queue
// list. Every expected value below follows by hand from the rules cited next to it.
#include "core/kai/kai_fair_share.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/kai/fair_share_answer.h"
#include "core/kai/fair_share_division.h"
#include "gtest/gtest.h"
#include "tests/support/named_cases.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/validated.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::CaseName;
using ::arbiter::testing::KaiFairShareOf;
using ::arbiter::testing::SnapshotBuilder;
using Shares = std::map<std::string, double>;

constexpr double kInf = std::numeric_limits<double>::infinity();

int QueueIndex(const KaiFairShare& shares, const std::string& queue) {
  int q = shares.tree().Find(queue);
  EXPECT_GE(q, 0) << queue;
  return q;
}

int ResourceIndex(const KaiFairShare& shares, const std::string& resource) {
  int r = shares.resources().Find(resource);
  EXPECT_GE(r, 0) << resource;
  return r;
}

// The value of `field` (a QueueAmounts vector) for `queue` and `resource`.
double AmountOf(const KaiFairShare& shares, Row QueueAmounts::*field, const std::string& queue,
                const std::string& resource) {
  int q = QueueIndex(shares, queue);
  int r = ResourceIndex(shares, resource);
  if (q < 0 || r < 0) return std::nan("");
  return (shares.queues[q].*field)[r];
}

// Every queue's fair share of `resource`, by name.
Shares SharesOf(const Snapshot& snapshot, const std::string& resource = "gpu",
                const Policy& policy = {}) {
  KaiFairShare shares = KaiFairShareOf(snapshot, policy);
  Shares result;
  int r = shares.resources().Find(resource);
  for (int q = 0; q < shares.tree().size(); ++q) {
    result[shares.tree().queue(q).name] = r < 0 ? 0 : shares.queues[q].fair_share[r];
  }
  return result;
}

Policy KValue(double k) {
  Policy policy;
  policy.k_value = k;
  return policy;
}

// ---- §2, §3: the division of one resource ----

struct DivisionCase {
  std::string name;
  Snapshot snapshot;
  Policy policy;
  std::string resource;
  Shares expected;  // every queue's fair share of `resource`
};

void PrintTo(const DivisionCase& c, std::ostream* os) { *os << c.name; }

std::vector<DivisionCase> DivisionCases() {
  std::vector<DivisionCase> cases;
  // §2.2 example (ours): whole-unit rounds, then the remainder capped by what a queue still
  // requests (the deviation from KAI, which would give A 3, B 2, C 2).
  cases.push_back({"SemanticsExampleRemainderCappedByRequest",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 7}})
                       .Queue("a")
                       .QueueCreated(1)
                       .Queue("b")
                       .QueueCreated(2)
                       .Queue("c")
                       .QueueCreated(3)
                       .Group("ja", "a")
                       .Pod({{"gpu", 2.5}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 50}})
                       .Group("jc", "c")
                       .Pod({{"gpu", 50}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 2.5}, {"b", 2.5}, {"c", 2}}});

  // Seed 000 "Deserved quota for a queue will always be allocated to it", then the surplus by
  // weight: 11 - 4 - 3 = 4 left, 2 each to b and c.
  cases.push_back({"SeedDeservedFirstThenSurplusByWeight",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 11}})
                       .Queue("a")
                       .Deserved({{"gpu", 4}})
                       .Queue("b")
                       .Deserved({{"gpu", 3}})
                       .Queue("c")
                       .Group("ja", "a")
                       .Pod({{"gpu", 4}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 10}})
                       .Group("jc", "c")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 4}, {"b", 5}, {"c", 2}}});

  // Seed 000's over-quota division: proportional to the over-quota weight (12 by 1:3).
  cases.push_back({"SeedSurplusProportionalToWeight",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 12}})
                       .Queue("a")
                       .Weight({{"gpu", 1}})
                       .Queue("b")
                       .Weight({{"gpu", 3}})
                       .Group("ja", "a")
                       .Pod({{"gpu", 20}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 20}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 3}, {"b", 9}}});

  // Seed 001 "Queues that have already received their full requested resources will not be
  // allocated any further resources": a takes 1 of its 3, and the next round gives the 2 it
  // left to b and c.
  cases.push_back({"SeedSatisfiedQueueLeavesTheRestToOthers",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 9}})
                       .Queue("a")
                       .Queue("b")
                       .Queue("c")
                       .Group("ja", "a")
                       .Pod({{"gpu", 1}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 20}})
                       .Group("jc", "c")
                       .Pod({{"gpu", 20}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 1}, {"b", 4}, {"c", 4}}});

  // Seeds 000/001: surplus goes by priority first; within a priority group by weight.
  cases.push_back({"SeedHigherPriorityGroupIsServedFirst",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("h")
                       .QueuePriority(1)
                       .Queue("l1")
                       .Queue("l2")
                       .Group("jh", "h")
                       .Pod({{"gpu", 6}})
                       .Group("j1", "l1")
                       .Pod({{"gpu", 10}})
                       .Group("j2", "l2")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"h", 6}, {"l1", 2}, {"l2", 2}}});

  // §2.2: every group runs its rounds before any remainder, so the floored fractions of the
  // higher-priority group (3.5 -> 3 twice) flow first to the lower group.
  cases.push_back({"FlooredFractionsFlowToLowerPriorityGroupBeforeRemainder",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 7}})
                       .Queue("h1")
                       .QueuePriority(5)
                       .Queue("h2")
                       .QueuePriority(5)
                       .Queue("low")
                       .Group("j1", "h1")
                       .Pod({{"gpu", 100}})
                       .Group("j2", "h2")
                       .Pod({{"gpu", 100}})
                       .Group("j3", "low")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"h1", 3}, {"h2", 3}, {"low", 1}}});

  // §2.2: priority only orders the over-quota phase; deserved quota comes first for everyone.
  cases.push_back({"DeservedTakesPrecedenceOverPriority",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("high")
                       .QueuePriority(10)
                       .Queue("low")
                       .Deserved({{"gpu", 4}})
                       .Group("jh", "high")
                       .Pod({{"gpu", 100}})
                       .Group("jl", "low")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"high", 6}, {"low", 4}}});

  // §2.2 remainder order, first key: the larger fraction first (7 by 1:2 gives 2.33 and 4.67).
  cases.push_back({"RemainderGoesToLargerFractionFirst",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 7}})
                       .Queue("a")
                       .QueueCreated(1)
                       .Weight({{"gpu", 1}})
                       .Queue("b")
                       .QueueCreated(2)
                       .Weight({{"gpu", 2}})
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 2}, {"b", 5}}});

  // §2.2 remainder order, second key: equal fractions go to the older queue.
  cases.push_back({"RemainderTieGoesToOlderQueue",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 5}})
                       .Queue("a")
                       .QueueCreated(20)
                       .Queue("b")
                       .QueueCreated(10)
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 2}, {"b", 3}}});

  // §2.2 float order (regression): the share of a round is C · (P / ΣP), the ratio first, as KAI
  // computes it. With P = 1 + 1·(1 - 0.1) = 1.9 alone in its group, (3 · 1.9) / 1.9 is an ulp
  // below 3 and floored to 2, which gave b the last unit; 3 · (1.9 / 1.9) is exactly 3.
  cases.push_back({"TheRatioComesBeforeTheProduct",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 3}})
                       .UsageCapacity({{"gpu", 10}})
                       .Usage("a", {{"gpu", 1}})
                       .Queue("a")
                       .QueuePriority(1)
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   KValue(1), "gpu", Shares{{"a", 3}, {"b", 0}}});

  // §2.2: a fraction is kept when a later round floors the queue with no fraction. Round 1
  // (W = 5): a 0.9 -> 0 (fraction 0.9), c satisfied with 0.25, d1 and d2 0.45 -> 0. Round 2
  // (W = 4, left 2): a exactly 1 (fraction 0.9 kept), d1 and d2 0.5 -> 0 (fraction 0.5).
  // Remainder: a (0.9) takes the last unit, not d1.
  cases.push_back({"FractionIsKeptWhenLaterRoundFloorsExactly",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 2.25}})
                       .Queue("a")
                       .Weight({{"gpu", 2}})
                       .Queue("c")
                       .Queue("d1")
                       .Queue("d2")
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}})
                       .Group("jc", "c")
                       .Pod({{"gpu", 0.25}})
                       .Group("j1", "d1")
                       .Pod({{"gpu", 100}})
                       .Group("j2", "d2")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 2}, {"c", 0.25}, {"d1", 0}, {"d2", 0}}});

  // §2.2: w = 0 never receives over-quota; its deserved quota still counts.
  cases.push_back({"ZeroWeightGetsOnlyDeserved",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("a")
                       .Deserved({{"gpu", 2}})
                       .Weight({{"gpu", 0}})
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 10}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 2}, {"b", 8}}});

  // §2.2: with every weight 0 the over-quota phase gives nothing and the rest is discarded.
  cases.push_back({"AllZeroWeightsDiscardTheSurplus",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("a")
                       .Deserved({{"gpu", 1}})
                       .Weight({{"gpu", 0}})
                       .Queue("b")
                       .Weight({{"gpu", 0}})
                       .Group("ja", "a")
                       .Pod({{"gpu", 10}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 1}, {"b", 0}}});

  // §2.1/§2.2: limit 0 gives req' = 0, hence fs = 0 even with deserved quota.
  cases.push_back({"LimitZeroGivesZeroFairShare",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("a")
                       .Deserved({{"gpu", 5}})
                       .Limit({{"gpu", 0}})
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 10}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 0}, {"b", 10}}});

  // §2.1: req' = min(L, request); what a capped queue cannot take goes to its siblings.
  cases.push_back({"LimitCapsFairShareAndPassesTheRestOn",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("a")
                       .Limit({{"gpu", 3}})
                       .Queue("b")
                       .Limit({{"gpu", -1}})
                       .Group("ja", "a")
                       .Pod({{"gpu", 10}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 3}, {"b", 7}}});

  // §2.2: deserved is subtracted one by one and not capped by capacity; Σ fs may exceed T and
  // there is no over-quota phase (§1 "not errors": oversubscribed deserved).
  cases.push_back({"OversubscribedDeservedIsGivenInFull",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("a")
                       .Deserved({{"gpu", 8}})
                       .Queue("b")
                       .Deserved({{"gpu", 8}})
                       .Queue("c")
                       .Group("ja", "a")
                       .Pod({{"gpu", 20}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 6}})
                       .Group("jc", "c")
                       .Pod({{"gpu", 20}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 8}, {"b", 6}, {"c", 0}}});

  // §2.1: a queue without requests gets nothing, even with deserved quota.
  cases.push_back({"DeservedIsCappedByRequest",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("idle")
                       .Deserved({{"gpu", 6}})
                       .Queue("busy")
                       .Group("jb", "busy")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"busy", 10}, {"idle", 0}}});

  // §2.1: deserved -1 below a parent means the parent's share.
  cases.push_back({"DeservedMinusOneBelowParentUsesParentShare",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("p")
                       .Deserved({{"gpu", 4}})
                       .Weight({{"gpu", 0}})
                       .Queue("other")
                       .Queue("child", "p")
                       .Deserved({{"gpu", -1}})
                       .Group("j1", "child")
                       .Pod({{"gpu", 9}})
                       .Group("j2", "other")
                       .Pod({{"gpu", 9}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"child", 4}, {"other", 6}, {"p", 4}}});

  // §3: P = max(0, W' + k(W' - U)): a heavy user's portion is clamped at 0.
  cases.push_back({"TimeAwarePortionIsClampedAtZero",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .UsageCapacity({{"gpu", 100}})
                       .Usage("heavy", {{"gpu", 90}})
                       .Usage("light", {{"gpu", 40}})
                       .Queue("heavy")
                       .Queue("light")
                       .Group("jh", "heavy")
                       .Pod({{"gpu", 100}})
                       .Group("jl", "light")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   KValue(10), "gpu", Shares{{"heavy", 0}, {"light", 10}}});

  // §3: ΣP = 0 ends the rounds and the surplus is discarded.
  cases.push_back({"TimeAwareAllPortionsZeroDiscardsSurplus",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .UsageCapacity({{"gpu", 10}})
                       .Usage("a", {{"gpu", 9}})
                       .Usage("b", {{"gpu", 9}})
                       .Queue("a")
                       .Deserved({{"gpu", 1}})
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   KValue(10), "gpu", Shares{{"a", 1}, {"b", 0}}});

  // §3: deserved quota always takes precedence; time-aware changes only the over-quota rounds.
  cases.push_back({"TimeAwareDoesNotTouchDeserved",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .UsageCapacity({{"gpu", 10}})
                       .Usage("a", {{"gpu", 10}})
                       .Queue("a")
                       .Deserved({{"gpu", 6}})
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   KValue(3), "gpu", Shares{{"a", 6}, {"b", 4}}});

  // §2.1: RELEASING pods do not enter the request the division uses.
  cases.push_back({"ReleasingPodsDoNotRaiseFairShare",
                   SnapshotBuilder()
                       .Node("n1", {{"gpu", 10}})
                       .Queue("a")
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 8}}, "n1", PodPhase::kReleasing)
                       .Pod({{"gpu", 1}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 20}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 1}, {"b", 9}}});

  // §2.2 ties (regression): weights 4/1/2/3/2 over 6 GPUs give b 0.5 and d 1.5 in exact
  // arithmetic; in floating point b's fraction is an ulp below d's. Fractions that equal within
  // 1e-9 tie, so the older queue b takes the remainder unit.
  const Snapshot noisy_fractions = [] {
    SnapshotBuilder builder;
    builder.Capacity({{"gpu", 6}});
    const std::vector<std::pair<std::string, double>> weights = {
        {"a", 4}, {"b", 1}, {"c", 2}, {"d", 3}, {"e", 2}};
    int created = 1;
    for (const auto& [name, weight] : weights) {
      builder.Queue(name).QueueCreated(created++).Weight({{"gpu", weight}});
    }
    for (const auto& [name, weight] : weights) builder.Group("j" + name, name).Pod({{"gpu", 100}});
    return builder.Build();
  }();
  cases.push_back({"FractionsEqualUpToNoiseAreATieDecidedByAge", noisy_fractions, Policy{}, "gpu",
                   Shares{{"a", 2}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}}});

  // §2.2 remainder order, last key: equal fractions and creation times go by name; an absent
  // creation_time is the epoch, older than any set one (§0.2).
  cases.push_back({"RemainderTieGoesToSmallerName",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 5}})
                       .Queue("b")
                       .Queue("a")
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 3}, {"b", 2}}});
  cases.push_back({"RemainderTieTakesAbsentCreationTimeAsOldest",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 5}})
                       .Queue("a")
                       .QueueCreated(1)
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 100}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 2}, {"b", 3}}});

  // §2.2: whole units for every resource, millicores included (no special unit per resource).
  const Snapshot fpga_and_cpu = SnapshotBuilder()
                                    .Capacity({{"example.com/fpga", 3}, {"cpu", 1001}})
                                    .Queue("a")
                                    .Queue("b")
                                    .Group("ja", "a")
                                    .Pod({{"example.com/fpga", 9}, {"cpu", 9000}})
                                    .Group("jb", "b")
                                    .Pod({{"example.com/fpga", 9}, {"cpu", 9000}})
                                    .Build();
  cases.push_back({"OverQuotaIsWholeUnitsForAnyResourceName", fpga_and_cpu, Policy{},
                   "example.com/fpga", Shares{{"a", 2}, {"b", 1}}});
  cases.push_back({"OverQuotaIsWholeMillicoresForCpu", fpga_and_cpu, Policy{}, "cpu",
                   Shares{{"a", 501}, {"b", 500}}});

  // §2.2: deserved -1 is "the total divided at this level", capped by the request.
  cases.push_back({"DeservedMinusOneTakesItsRequestBelowTheLevelTotal",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("a")
                       .Deserved({{"gpu", -1}})
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 4}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 4}, {"b", 6}}});
  cases.push_back({"DeservedMinusOneTakesUpToTheLevelTotal",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("a")
                       .Deserved({{"gpu", -1}})
                       .Queue("b")
                       .Group("ja", "a")
                       .Pod({{"gpu", 40}})
                       .Group("jb", "b")
                       .Pod({{"gpu", 10}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"a", 10}, {"b", 0}}});

  // §2.1: each parent's final fs is the total its children divide, at any depth.
  // Top (12): org-a 8 deserved, org-b 0; the 4 left is 2 each: org-a 10, org-b 2.
  // org-a's 10: dept 2 deserved, solo 0; 8 over-quota: dept 4 -> 6, solo takes its 1; the next
  // round gives dept the remaining 3: 9. dept's 9 by 3:1 = 6.75 and 2.25 -> 6 and 2, and the
  // spare unit goes to the larger fraction: team-1 7.
  cases.push_back(
      {"MultiLevelHierarchyDividesTopDown",
       SnapshotBuilder()
           .Capacity({{"gpu", 12}})
           .Queue("org-a")
           .Deserved({{"gpu", 8}})
           .Queue("org-b")
           .Queue("dept", "org-a")
           .Deserved({{"gpu", 2}})
           .Queue("solo", "org-a")
           .Queue("team-1", "dept")
           .Weight({{"gpu", 3}})
           .Queue("team-2", "dept")
           .Group("j1", "team-1")
           .Pod({{"gpu", 20}})
           .Group("j2", "team-2")
           .Pod({{"gpu", 20}})
           .Group("j3", "solo")
           .Pod({{"gpu", 1}})
           .Group("j4", "org-b")
           .Pod({{"gpu", 3}})
           .Build(),
       Policy{}, "gpu",
       Shares{
           {"org-a", 10}, {"org-b", 2}, {"dept", 9}, {"solo", 1}, {"team-1", 7}, {"team-2", 2}}});

  // §2.1: several top-level queues divide T; each subtree is independent below. p is capped at
  // 1; its children's deserved (5 each) is capped by their requests, not by p's share:
  // oversubscribed at this level.
  cases.push_back({"ParentFairShareIsChildrenTotalEvenWhenSmall",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 4}})
                       .Queue("p")
                       .Limit({{"gpu", 1}})
                       .Queue("q")
                       .Queue("p1", "p")
                       .Deserved({{"gpu", 5}})
                       .Queue("p2", "p")
                       .Deserved({{"gpu", 5}})
                       .Group("j1", "p1")
                       .Pod({{"gpu", 5}})
                       .Group("j2", "p2")
                       .Pod({{"gpu", 5}})
                       .Group("j3", "q")
                       .Pod({{"gpu", 5}})
                       .Build(),
                   Policy{}, "gpu", Shares{{"p", 1}, {"p1", 5}, {"p2", 5}, {"q", 3}}});

  // §3 example: k = 1, U = 0.4 and 0 give portions 0.6 and 1.0; 3.75 and 6.25 floor to 3 and 6,
  // and the spare unit goes to the larger fraction: 4 and 6. k = 0 turns it off: an even split.
  const Snapshot heavy_and_light = SnapshotBuilder()
                                       .Capacity({{"gpu", 10}})
                                       .UsageCapacity({{"gpu", 10}})
                                       .Usage("heavy", {{"gpu", 4}})
                                       .Queue("heavy")
                                       .Queue("light")
                                       .Group("jh", "heavy")
                                       .Pod({{"gpu", 100}})
                                       .Group("jl", "light")
                                       .Pod({{"gpu", 100}})
                                       .Build();
  cases.push_back({"TimeAwareExampleShiftsShareAwayFromHeavyUser", heavy_and_light, KValue(1),
                   "gpu", Shares{{"heavy", 4}, {"light", 6}}});
  cases.push_back({"TimeAwareOffSplitsEvenlyDespiteUsage", heavy_and_light, Policy{}, "gpu",
                   Shares{{"heavy", 5}, {"light", 5}}});

  // §3: a parent's U is its own entry, never summed from its children, and it acts at every
  // level. Children's heavy usage does not lower the parent's share when the parent has none;
  // with the parent's own entry (as adapters send it): W' 0.5, U 0.4 -> P 0.6 vs 1.0.
  SnapshotBuilder parent_and_child;
  parent_and_child.Capacity({{"gpu", 10}})
      .UsageCapacity({{"gpu", 10}})
      .Usage("p-child", {{"gpu", 10}})
      .Queue("p")
      .Queue("q")
      .Queue("p-child", "p")
      .Group("j1", "p-child")
      .Pod({{"gpu", 100}})
      .Group("j2", "q")
      .Pod({{"gpu", 100}});
  cases.push_back({"TimeAwareChildUsageDoesNotLowerItsParent", parent_and_child.Build(), KValue(1),
                   "gpu", Shares{{"p", 5}, {"p-child", 5}, {"q", 5}}});
  cases.push_back({"TimeAwareParentUsageIsItsOwnEntry",
                   SnapshotBuilder(parent_and_child).Usage("p", {{"gpu", 4}}).Build(), KValue(1),
                   "gpu", Shares{{"p", 4}, {"p-child", 4}, {"q", 6}}});
  return cases;
}

class KaiFairShareDivision : public ::testing::TestWithParam<DivisionCase> {};

TEST_P(KaiFairShareDivision, GivesTheExpectedShares) {
  const DivisionCase& c = GetParam();
  EXPECT_EQ(SharesOf(c.snapshot, c.resource, c.policy), c.expected);
}

INSTANTIATE_TEST_SUITE_P(KaiFairShareTest, KaiFairShareDivision,
                         ::testing::ValuesIn(DivisionCases()), CaseName());

// ---- §0.2, §0.7, §2.3: totals and per-queue amounts ----

// One amount of a queue: `field` (a QueueAmounts vector) of `queue` for `resource`.
struct Amount {
  Row QueueAmounts::*field;
  std::string queue;
  std::string resource;
  double value;
};

struct AmountsCase {
  std::string name;
  Snapshot snapshot;
  std::vector<double> total;  // per interned resource (sorted by name); empty: not checked
  std::vector<Amount> amounts;
};

void PrintTo(const AmountsCase& c, std::ostream* os) { *os << c.name; }

std::vector<AmountsCase> AmountsCases() {
  std::vector<AmountsCase> cases;
  // §0.2: capacity defaults to the sum over schedulable nodes.
  cases.push_back({"CapacityDefaultsToSchedulableNodes",
                   SnapshotBuilder()
                       .Node("n1", {{"gpu", 4}, {"cpu", 1000}})
                       .Node("n2", {{"gpu", 4}})
                       .Node("cordoned", {{"gpu", 8}})
                       .Unschedulable()
                       .Queue("a")
                       .Group("ja", "a")
                       .Pod({{"gpu", 100}, {"cpu", 100000}})
                       .Build(),
                   {1000, 8},
                   {{&QueueAmounts::fair_share, "a", "gpu", 8}}});

  // §0.2: Snapshot.capacity replaces the node sum per resource, not as a whole.
  cases.push_back({"CapacityOverridesPerResource",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 3}})
                       .Node("n1", {{"gpu", 4}, {"cpu", 1000}})
                       .Queue("a")
                       .Build(),
                   {1000, 3},
                   {}});

  // §0.7: requested and allocated over the subtree follow the pod phases.
  cases.push_back({"RequestedAndAllocatedFollowPodPhases",
                   SnapshotBuilder()
                       .Node("n1", {{"gpu", 8}})
                       .Queue("dept")
                       .Queue("a", "dept")
                       .Queue("b", "dept")
                       .Group("ja", "a")
                       .Pod({{"gpu", 1}}, "n1", PodPhase::kRunning)
                       .Pod({{"gpu", 2}}, "n1")  // UNSPECIFIED with a node: RUNNING
                       .Pod({{"gpu", 4}})        // UNSPECIFIED without: PENDING
                       .Pod({{"gpu", 8}}, "", PodPhase::kPending)
                       .Pod({{"gpu", 16}}, "n1", PodPhase::kReleasing)  // counts in neither
                       .Group("jb", "b")
                       .Pod({{"gpu", 32}}, "n1", PodPhase::kRunning)
                       .Build(),
                   {},
                   {{&QueueAmounts::requested, "a", "gpu", 1 + 2 + 4 + 8},
                    {&QueueAmounts::allocated, "a", "gpu", 1 + 2},
                    {&QueueAmounts::requested, "b", "gpu", 32},
                    {&QueueAmounts::requested, "dept", "gpu", 15 + 32},
                    {&QueueAmounts::allocated, "dept", "gpu", 3 + 32}}});

  // §0.7: allocatedNP counts RUNNING pods of non-preemptible groups (explicit, or UNSPECIFIED
  // with priority >= 100).
  cases.push_back(
      {"AllocatedNonPreemptibleFollowsPreemptibility",
       SnapshotBuilder()
           .Node("n1", {{"gpu", 64}})
           .Queue("a")
           .Group("explicit", "a")
           .Preemptible(Preemptibility::kNonPreemptible)
           .Pod({{"gpu", 1}}, "n1", PodPhase::kRunning)
           .Group("high-priority", "a")
           .Priority(100)
           .Pod({{"gpu", 2}}, "n1", PodPhase::kRunning)
           .Pod({{"gpu", 64}})  // pending: not allocated
           .Group("low-priority", "a")
           .Priority(99)
           .Pod({{"gpu", 4}}, "n1", PodPhase::kRunning)
           .Group("preemptible-high", "a")
           .Priority(200)
           .Preemptible(Preemptibility::kPreemptible)
           .Pod({{"gpu", 8}}, "n1", PodPhase::kRunning)
           .Build(),
       {},
       {{&QueueAmounts::allocated_np, "a", "gpu", 3}, {&QueueAmounts::allocated, "a", "gpu", 15}}});

  // §2.3: the allocatable share runs from deserved to the limit.
  cases.push_back({"AllocatableShareIsDeservedToLimit",
                   SnapshotBuilder()
                       .Capacity({{"gpu", 10}})
                       .Queue("above")
                       .Deserved({{"gpu", 2}})  // fs 5 > d
                       .Queue("below")
                       .Deserved({{"gpu", 6}})  // fs 3 < d: d
                       .Queue("capped")
                       .Deserved({{"gpu", 6}})
                       .Limit({{"gpu", 1}})
                       .Queue("unlimited")
                       .Deserved({{"gpu", -1}})  // L: no cap
                       .Queue("minus")
                       .Deserved({{"gpu", -1}})
                       .Limit({{"gpu", 7}})
                       .Group("j1", "above")
                       .Pod({{"gpu", 5}})
                       .Group("j2", "below")
                       .Pod({{"gpu", 3}})
                       .Build(),
                   {},
                   {{&QueueAmounts::fair_share, "above", "gpu", 5},
                    {&QueueAmounts::allocatable_share, "above", "gpu", 5},
                    {&QueueAmounts::allocatable_share, "below", "gpu", 6},
                    {&QueueAmounts::allocatable_share, "capped", "gpu", 1},
                    {&QueueAmounts::allocatable_share, "unlimited", "gpu", kInf},
                    {&QueueAmounts::allocatable_share, "minus", "gpu", 7}}});
  return cases;
}

class KaiFairShareAmounts : public ::testing::TestWithParam<AmountsCase> {};

TEST_P(KaiFairShareAmounts, AreTheExpectedOnes) {
  const AmountsCase& c = GetParam();
  const KaiFairShare shares = KaiFairShareOf(c.snapshot);
  if (!c.total.empty()) {
    EXPECT_EQ(shares.total, c.total);
  }
  for (const Amount& a : c.amounts) {
    EXPECT_EQ(AmountOf(shares, a.field, a.queue, a.resource), a.value)
        << a.queue << " " << a.resource;
  }
}

INSTANTIATE_TEST_SUITE_P(KaiFairShareTest, KaiFairShareAmounts, ::testing::ValuesIn(AmountsCases()),
                         CaseName());

// ---- Plain cases: the tie rule, time-aware over several k, derived values, the response ----

TEST(KaiFairShareTest, FractionsTieWithinOneBillionthOfTheLarger) {
  EXPECT_TRUE(FractionsTie(0.5, 0.49999999999999994));
  EXPECT_TRUE(FractionsTie(0.3, 0.3 + 0.9e-9));
  EXPECT_FALSE(FractionsTie(0.3, 0.3 + 1.1e-9));
  EXPECT_TRUE(FractionsTie(5e9, 5e9 + 4));  // 1e-9 of the larger: 5
  EXPECT_FALSE(FractionsTie(5e9, 5e9 + 6));
}

// §3: with all U = 0, any k gives plain weighted division.
TEST(KaiFairShareTest, TimeAwareWithoutUsageEqualsPlainDivision) {
  SnapshotBuilder builder;
  builder.Capacity({{"gpu", 17}})
      .Queue("a")
      .Weight({{"gpu", 1}})
      .Queue("b")
      .Weight({{"gpu", 3}})
      .Queue("c")
      .Weight({{"gpu", 2}})
      .Group("ja", "a")
      .Pod({{"gpu", 100}})
      .Group("jb", "b")
      .Pod({{"gpu", 100}})
      .Group("jc", "c")
      .Pod({{"gpu", 3}});
  Snapshot no_usage = builder.Build();
  Snapshot no_capacity = SnapshotBuilder(builder).Usage("a", {{"gpu", 50}}).Build();
  const Shares plain = SharesOf(no_usage);
  for (double k : {0.5, 1.0, 7.0, 100.0}) {
    Policy policy;
    policy.k_value = k;
    EXPECT_EQ(SharesOf(no_usage, "gpu", policy), plain) << "k = " << k;
    // U is 0 when usage_capacity is absent (§3).
    EXPECT_EQ(SharesOf(no_capacity, "gpu", policy), plain) << "k = " << k;
  }
}

TEST(KaiFairShareTest, SaturationRatio) {
  EXPECT_EQ(Saturation(0, 0), 0);
  EXPECT_EQ(Saturation(1, 0), kInf);
  EXPECT_EQ(Saturation(3, 2), 1.5);
  EXPECT_EQ(Saturation(0, 2), 0);
}

TEST(KaiFairShareTest, QueueSharesListEveryResourceAndEchoDeserved) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 4000}, {"gpu", 4}})
                   .Queue("b")
                   .Deserved({{"gpu", -1}})
                   .Queue("a")
                   .Limit({{"example.com/fpga", 2}})
                   .Group("ja", "a")
                   .Pod({{"gpu", 2}}, "n1", PodPhase::kRunning)
                   .Group("jb", "b")
                   .Pod({{"gpu", 2}})
                   .Build();
  std::vector<QueueShare> queues = ToQueueShares(KaiFairShareOf(s, Policy{}));
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0].queue, "a");
  EXPECT_EQ(queues[1].queue, "b");
  const ResourceMap zeros = {{"cpu", 0}, {"example.com/fpga", 0}, {"gpu", 0}};
  EXPECT_EQ(queues[0].deserved, ResourceMap{});
  EXPECT_EQ(queues[1].deserved, (ResourceMap{{"gpu", -1}}));
  EXPECT_EQ(queues[0].fair_share, (ResourceMap{{"cpu", 0}, {"example.com/fpga", 0}, {"gpu", 2}}));
  EXPECT_EQ(queues[0].allocated, (ResourceMap{{"cpu", 0}, {"example.com/fpga", 0}, {"gpu", 2}}));
  EXPECT_EQ(queues[1].allocated, zeros);
  EXPECT_EQ(queues[1].requested, (ResourceMap{{"cpu", 0}, {"example.com/fpga", 0}, {"gpu", 2}}));
  EXPECT_EQ(queues[0].saturation, 1);
  EXPECT_EQ(queues[1].saturation, 0);
  EXPECT_EQ(queues[0].weighted_share, 0);
  EXPECT_EQ(queues[0].dominant_resource, "");
  EXPECT_FALSE(queues[0].borrowing);
}

// §2.3/§6: saturation is the max over resources, +∞ when fs = 0 < allocated; no NaN.
TEST(KaiFairShareTest, SaturationIsMaxOverResources) {
  Snapshot s = SnapshotBuilder()
                   .Capacity({{"cpu", 4000}, {"gpu", 4}})
                   .Node("n1", {{"cpu", 4000}, {"gpu", 4}})
                   .Queue("a")
                   .Limit({{"gpu", 0}})
                   .Queue("b")
                   .Group("ja", "a")
                   .Pod({{"cpu", 1000}, {"gpu", 1}}, "n1", PodPhase::kRunning)
                   .Group("jb", "b")
                   .Pod({{"cpu", 1000}}, "n1", PodPhase::kRunning)
                   .Pod({{"cpu", 1000}})
                   .Build();
  std::vector<QueueShare> queues = ToQueueShares(KaiFairShareOf(s, Policy{}));
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0].saturation, kInf);  // gpu: fs 0 < allocated 1
  EXPECT_EQ(queues[1].saturation, 0.5);   // cpu: 1000 / 2000; gpu 0 / 0 = 0
}

TEST(KaiFairShareTest, NegativeZeroIsWrittenAsZero) {
  Snapshot s =
      SnapshotBuilder().Capacity({{"gpu", 1}}).Queue("a").Deserved({{"gpu", -0.0}}).Build();
  std::vector<QueueShare> queues = ToQueueShares(KaiFairShareOf(s, Policy{}));
  ASSERT_EQ(queues.size(), 1u);
  EXPECT_FALSE(std::signbit(queues[0].deserved.at("gpu")));
  EXPECT_FALSE(std::signbit(queues[0].fair_share.at("gpu")));
}

// §0.5: the answer does not depend on the order of repeated input fields.
TEST(KaiFairShareTest, InputOrderDoesNotMatter) {
  SnapshotBuilder builder;
  builder.Node("n2", {{"gpu", 3.3}})
      .Node("n1", {{"gpu", 4.1}})
      .Queue("c")
      .Weight({{"gpu", 3}})
      .Queue("a")
      .Weight({{"gpu", 1.7}})
      .Queue("b")
      .Group("jc", "c")
      .Pod({{"gpu", 0.3}})
      .Pod({{"gpu", 9.1}})
      .Group("ja", "a")
      .Pod({{"gpu", 0.1}}, "n1", PodPhase::kRunning)
      .Pod({{"gpu", 7}})
      .Group("jb", "b")
      .Pod({{"gpu", 2.2}});
  Snapshot forward = builder.Build();
  Snapshot reversed = forward;
  std::reverse(reversed.queues.begin(), reversed.queues.end());
  std::reverse(reversed.nodes.begin(), reversed.nodes.end());
  std::reverse(reversed.pod_groups.begin(), reversed.pod_groups.end());
  for (PodGroup& group : reversed.pod_groups) std::reverse(group.pods.begin(), group.pods.end());
  std::vector<QueueShare> a = ToQueueShares(KaiFairShareOf(forward, Policy{}));
  std::vector<QueueShare> b = ToQueueShares(KaiFairShareOf(reversed, Policy{}));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].queue, b[i].queue);
    EXPECT_EQ(a[i].fair_share, b[i].fair_share);
    EXPECT_EQ(a[i].requested, b[i].requested);
    EXPECT_EQ(a[i].allocated, b[i].allocated);
  }
}

TEST(KaiFairShareTest, EmptySnapshotHasNoQueues) {
  KaiFairShare shares = KaiFairShareOf(Snapshot{}, Policy{});
  EXPECT_EQ(shares.tree().size(), 0);
  EXPECT_TRUE(ToQueueShares(shares).empty());
}

}  // namespace
}  // namespace arbiter::kai

namespace arbiter::kai {
namespace {

// A division cancelled at its first poll is incomplete, but every queue's rows are laid out:
// nothing a caller reads before discarding it points nowhere.
TEST(KaiFairShareTest, ACancelledDivisionLeavesEveryRowLaidOut) {
  SnapshotBuilder builder;
  builder.Node("n1", {{"cpu", 8}, {"nvidia.com/gpu", 4}});
  for (int q = 0; q < 4 * static_cast<int>(CancelPoll::kInterval); ++q) {
    builder.Queue("q" + std::to_string(q));
  }
  const Snapshot snapshot = builder.Build();
  const ValidatedSnapshot request = ::arbiter::testing::MustValidate(snapshot);
  const std::function<bool()> cancelled = [] { return true; };
  CancelPoll poll(&cancelled);
  const KaiFairShare shares = ComputeKaiFairShare(request, &poll);
  EXPECT_TRUE(poll.cancelled());
  ASSERT_EQ(static_cast<int>(shares.queues.size()), request.tree().size());
  for (const QueueAmounts& a : shares.queues) {
    EXPECT_EQ(a.fair_share.size(), 2);
    EXPECT_NE(a.allocatable_share.data(), nullptr);
  }
}

}  // namespace
}  // namespace arbiter::kai
