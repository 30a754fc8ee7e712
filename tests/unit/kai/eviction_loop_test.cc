// The loop every eviction action shares (core/kai/eviction_loop.cc, SEMANTICS.md §4.1, §4.8,
// §6): a unit that needs no victim is left to ALLOCATE, or placed once ALLOCATE has run, and a
// failed unit records the placement reason it ended on.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::Bindings;
using ::arbiter::testing::Evictions;
using ::arbiter::testing::GangHoldsTheNode;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::NonPreemptibleBorrower;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PendingMessage;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// §6: a failed eviction action with no earlier reason records the placement reason it ended on.
TEST(EvictionAction, FailureWithoutEarlierReasonRecordsThePlacementReason) {
  Snapshot s = NonPreemptibleBorrower().Group("job", "team-a").Pods(1, Gpu(2)).Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kReclaim}));
  EXPECT_THAT(Pending(result), ElementsAre("job:insufficient-resources"));
  EXPECT_EQ(PendingMessage(result, "job"),
            "pod job-0 needs 2 nvidia.com/gpu on one node; the largest free is 0 (node n1)");
}

// §4.1: a unit that fits without victims is ALLOCATE's job; without ALLOCATE it stays pending.
TEST(EvictionAction, UnitThatNeedsNoVictimIsLeftToAllocate) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Group("job", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result =
      RunCycle(s, PolicyWith({Action::kReclaim, Action::kPreempt, Action::kConsolidate}));
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_THAT(Pending(result), ElementsAre("job:not-attempted"));
}

// §4.8 (a scenario may need no victim) after §4.1's ALLOCATE: once ALLOCATE has run, a unit
// that fits with no victim fits only thanks to this response's evictions. The first reclaim
// evicts the whole gang; the second job then fits on what it releases and is placed, pipelined,
// without evicting anything more. (Regression: it used to stay pending, and every later
// reclaimer of the same shape with it.)
TEST(EvictionAction, UnitThatFitsOnCapacityReleasedByAnEarlierReclaimIsPlaced) {
  Snapshot s = GangHoldsTheNode()
                   .Group("job-1", "team-a")
                   .Pods(1, Gpu(2))
                   .Group("job-2", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kReclaim}));
  EXPECT_THAT(Bindings(result), ElementsAre("job-1-0@n1+", "job-2-0@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("gang-0@n1 FAIR_SHARE_RECLAIM for job-1",
                                             "gang-1@n1 FAIR_SHARE_RECLAIM for job-1",
                                             "gang-2@n1 FAIR_SHARE_RECLAIM for job-1",
                                             "gang-3@n1 FAIR_SHARE_RECLAIM for job-1"));
  EXPECT_THAT(result.pending, IsEmpty());
}

// When ALLOCATE comes later in the list, the unit that needs no victim is left to it.
TEST(EvictionAction, UnitThatNeedsNoVictimIsLeftToALaterAllocate) {
  Snapshot s = GangHoldsTheNode()
                   .Group("job-1", "team-a")
                   .Pods(1, Gpu(2))
                   .Group("job-2", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kReclaim, Action::kAllocate}));
  EXPECT_THAT(Bindings(result), ElementsAre("job-1-0@n1+", "job-2-0@n1+"));
  EXPECT_EQ(result.evictions.size(), 4u);
  EXPECT_THAT(result.pending, IsEmpty());
}

}  // namespace
}  // namespace arbiter::kai
