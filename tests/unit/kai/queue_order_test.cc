// Candidate order (SEMANTICS.md §4.3): the queue chain rules 1-8, the job order in a leaf, and the
// top-down choice through the tree.
#include "core/kai/queue_order.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/kai/kai_fair_share.h"
#include "core/kai/session.h"
#include "core/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::IsOk;

using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;

constexpr double kInf = std::numeric_limits<double>::infinity();

// One side of a chain comparison; vectors are over R = {cpu, nvidia.com/gpu}.
struct Side {
  std::vector<double> fair_share{8, 8};
  std::vector<double> deserved{0, 0};
  std::vector<double> allocatable_share{8, 8};
  std::vector<double> allocated{0, 0};
  std::vector<double> unit{1, 1};
  int32_t priority = 0;
  int64_t created = 0;
};

struct ChainCase {
  std::string name;
  Side a;  // queue "a"
  Side b;  // queue "b"
  bool a_first;
  bool by_name = false;  // decided by the queue names, which do not swap with the sides
};

// Writes `values` into `row` (one value per resource of the row).
void Set(Row row, const std::vector<double>& values) {
  ASSERT_EQ(static_cast<size_t>(row.size()), values.size());
  std::copy(values.begin(), values.end(), row.begin());
}

// Queues "a" and "b" at the top level with the case's values; the top-level total is 16 each.
bool AGoesFirst(const ChainCase& c) {
  Snapshot snapshot = SnapshotBuilder()
                          .Capacity({{"cpu", 16}, {"nvidia.com/gpu", 16}})
                          .Queue("a")
                          .QueuePriority(c.a.priority)
                          .QueueCreated(c.a.created)
                          .Queue("b")
                          .QueuePriority(c.b.priority)
                          .QueueCreated(c.b.created)
                          .Build();
  KaiFairShare shares = ::arbiter::testing::KaiFairShareOf(snapshot, Policy{});
  const Side* sides[] = {&c.a, &c.b};
  for (int q = 0; q < 2; ++q) {
    Set(shares.queues[q].fair_share, sides[q]->fair_share);
    Set(shares.queues[q].deserved, sides[q]->deserved);
    Set(shares.queues[q].allocatable_share, sides[q]->allocatable_share);
  }
  QueueChain chain(shares);
  ChainKey ka = chain.Key(0, c.a.allocated.data(), c.a.unit.data());
  ChainKey kb = chain.Key(1, c.b.allocated.data(), c.b.unit.data());
  if (ka < kb) return true;
  if (kb < ka) return false;
  return chain.TieBreakBefore(0, 1);
}

class ChainTest : public ::testing::TestWithParam<ChainCase> {};

TEST_P(ChainTest, DecidingRule) {
  const ChainCase& c = GetParam();
  EXPECT_EQ(AGoesFirst(c), c.a_first);
  if (c.by_name) return;
  // The comparison is antisymmetric: swapping the sides swaps the answer.
  ChainCase swapped{c.name, c.b, c.a, !c.a_first};
  EXPECT_EQ(AGoesFirst(swapped), swapped.a_first);
}

Side With(Side s, void (*edit)(Side&)) {
  edit(s);
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    QueueChain, ChainTest,
    ::testing::Values(
        // Rule 1: over fair share (fs < allocated in all resources) goes last, before priority.
        ChainCase{"Rule1NotOverFairShareBeatsOver",
                  With({},
                       [](Side& s) {
                         s.allocated = {9, 9};
                         s.priority = 5;
                       }),
                  Side{}, false},
        ChainCase{"Rule1OverInOneResourceOnlyIsNotOver",
                  With({},
                       [](Side& s) {
                         s.allocated = {9, 0};
                         s.priority = 5;
                       }),
                  Side{}, true},
        // Rule 2: starved (allocated + unit <= deserved in all) wins, before priority.
        ChainCase{"Rule2StarvedWins",
                  With({},
                       [](Side& s) {
                         s.deserved = {4, 4};
                       }),
                  With({}, [](Side& s) { s.priority = 5; }), true},
        ChainCase{"Rule2StarvedNeedsAllResources",
                  With({},
                       [](Side& s) {
                         s.deserved = {4, 0};
                       }),
                  With({}, [](Side& s) { s.priority = 5; }), false},
        ChainCase{"Rule2DeservedMinusOneIsInfinite",
                  With({},
                       [](Side& s) {
                         s.deserved = {-1, -1};
                         s.allocated = {7, 7};
                       }),
                  With({}, [](Side& s) { s.priority = 5; }), true},
        // Rule 3: higher queue priority.
        ChainCase{"Rule3HigherPriorityFirst",
                  With({},
                       [](Side& s) {
                         s.priority = 2;
                         s.allocated = {6, 6};
                       }),
                  Side{}, true},
        // Rule 4: penalised (allocatableShare 0 where it would use some) goes last.
        ChainCase{"Rule4PenalisedLoses",
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {0, 8};
                         s.unit = {1, 0};
                       }),
                  With({},
                       [](Side& s) {
                         s.allocated = {7, 7};
                       }),
                  false},
        ChainCase{"Rule4ZeroShareOfAnUnusedResourceIsNoPenalty",
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {0, 8};
                         s.unit = {0, 1};
                       }),
                  With({},
                       [](Side& s) {
                         s.allocated = {7, 7};
                       }),
                  true},
        // Rule 5: smaller dominant share with the unit (max over resources of x / share).
        ChainCase{"Rule5SmallerDominantShareWithUnit",
                  With({},
                       [](Side& s) {
                         s.allocated = {1, 3};
                       }),
                  With({},
                       [](Side& s) {
                         s.allocated = {2, 2};
                       }),
                  false},
        ChainCase{"Rule5NoCapUsesTheTopLevelTotal",
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {kInf, kInf};
                         s.fair_share = {16, 16};
                         s.allocated = {14, 14};  // 15/16 of the total, against 5/8 for b
                       }),
                  With({},
                       [](Side& s) {
                         s.allocated = {4, 4};
                       }),
                  false},
        ChainCase{"Rule5ZeroShareCountsThousandTimes",
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {0, 0};
                         s.unit = {0.002, 0};
                       }),
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {0, 0};
                         s.unit = {0.001, 0};
                       }),
                  false},
        // Rule 6: equal with the unit, smaller without it.
        ChainCase{"Rule6SmallerDominantShareWithoutUnit",
                  With({},
                       [](Side& s) {
                         s.allocated = {2, 0};
                         s.unit = {2, 0};
                       }),
                  With({},
                       [](Side& s) {
                         s.allocated = {3, 0};
                         s.unit = {1, 0};
                       }),
                  true},
        // Rule 7: smaller allocatableShare vector (<= in all, < in one).
        ChainCase{"Rule7SmallerAllocatableShare",
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {16, 16};
                         s.unit = {0, 0};
                         s.created = 9;
                       }),
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {16, 32};
                         s.unit = {0, 0};
                       }),
                  true},
        ChainCase{"Rule7IncomparableVectorsFallToCreation",
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {16, 32};
                         s.unit = {0, 0};
                         s.created = 9;
                       }),
                  With({},
                       [](Side& s) {
                         s.allocatable_share = {32, 16};
                         s.unit = {0, 0};
                       }),
                  false},
        // Rule 8: older creation time, then the smaller name.
        ChainCase{"Rule8OlderQueueFirst", With({}, [](Side& s) { s.created = 5; }),
                  With({}, [](Side& s) { s.created = 3; }), false},
        ChainCase{"Rule8SmallerNameFirst", Side{}, Side{}, true, true}),
    [](const ::testing::TestParamInfo<ChainCase>& param) { return param.param.name; });

// ---- Job order and the tree ----

std::vector<std::string> Drain(const Snapshot& snapshot) {
  Policy policy;
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule), IsOk());
  KaiFairShare shares = ::arbiter::testing::KaiFairShareOf(snapshot, policy);
  Session session{shares};
  QueueOrder order(session.cluster(), shares, session.state());
  std::vector<int> groups;
  for (int g = 0; g < session.cluster().num_groups(); ++g) groups.push_back(g);
  order.AddAll(groups);
  std::vector<std::string> names;
  for (int g = order.Next(); g >= 0; g = order.Next()) {
    names.push_back(session.cluster().group_name(g));
    order.Update(g, /*keep=*/false);
  }
  return names;
}

TEST(JobOrder, PriorityThenElasticStateThenCreationThenName) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 100}})
                   .Queue("team")
                   .Group("e-low", "team")
                   .Priority(-1)
                   .Pods(1, {{"cpu", 1}})
                   .Group("d-high", "team")
                   .Priority(9)
                   .Created(50)
                   .Pods(1, {{"cpu", 1}})
                   .Group("c-above-gang", "team")
                   .MinMember(1)
                   .RunningPods(2, {{"cpu", 1}}, "n1")
                   .Pods(1, {{"cpu", 1}})
                   .Group("b-at-gang", "team")
                   .MinMember(1)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Pods(1, {{"cpu", 1}})
                   .Group("a-below-gang", "team")
                   .MinMember(2)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Pods(1, {{"cpu", 1}})
                   .Group("z-old", "team")
                   .Created(1)
                   .Pods(1, {{"cpu", 1}})
                   .Group("y-new", "team")
                   .Created(2)
                   .Pods(1, {{"cpu", 1}})
                   .Build();
  // Priority 9 first; then elastic state (active < g, = g, > g) for priority 0, where the pending
  // single-pod groups have active 0 < 1; then creation; then name.
  EXPECT_THAT(Drain(s), ElementsAre("d-high", "a-below-gang", "z-old", "y-new", "b-at-gang",
                                    "c-above-gang", "e-low"));
}

TEST(QueueOrderTree, TheBestChildIsEnteredAtEachLevel) {
  // dept-a's subtree holds more allocation than dept-b's, so dept-b goes first even though
  // dept-a's leaf team-a2 has the least of all leaves.
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 100}})
                   .Queue("dept-a")
                   .Queue("dept-b")
                   .Queue("team-a1", "dept-a")
                   .Queue("team-a2", "dept-a")
                   .Queue("team-b1", "dept-b")
                   .Group("run-a1", "team-a1")
                   .RunningPods(1, {{"cpu", 10}}, "n1")
                   .Group("run-b1", "team-b1")
                   .RunningPods(1, {{"cpu", 4}}, "n1")
                   .Group("job-a2", "team-a2")
                   .Pods(1, {{"cpu", 1}})
                   .Group("job-b1", "team-b1")
                   .Pods(1, {{"cpu", 1}})
                   .Build();
  EXPECT_THAT(Drain(s), ElementsAre("job-b1", "job-a2"));
}

TEST(QueueOrderTree, OrderFollowsAllocationsAfterEachAttempt) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 100}})
                   .Queue("a")
                   .Queue("b")
                   .Group("ja", "a")
                   .Pods(3, {{"cpu", 1}})
                   .Group("jb", "b")
                   .Pods(3, {{"cpu", 1}})
                   .Build();
  Policy policy;
  KaiFairShare shares = ::arbiter::testing::KaiFairShareOf(s, policy);
  Session session{shares};
  QueueOrder order(session.cluster(), shares, session.state());
  order.AddAll({0, 1});
  std::vector<std::string> picks;
  for (int i = 0; i < 6; ++i) {
    const int g = order.Next();
    ASSERT_GE(g, 0);
    picks.push_back(session.cluster().group_name(g));
    const int pod = order.unit(g).pods[0];
    session.state().Bind(pod, 0, false);
    order.Update(g, /*keep=*/true);
  }
  EXPECT_EQ(order.Next(), -1);
  EXPECT_THAT(picks, ElementsAre("ja", "jb", "ja", "jb", "ja", "jb"));
}

}  // namespace
}  // namespace arbiter::kai
