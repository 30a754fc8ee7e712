// CONSOLIDATE (core/kai/consolidate.cc, SEMANTICS.md §4.9): moving running pods so that a
// fragmented job fits, and when it does not try.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::Gpu;
using ::arbiter::testing::PendingMessage;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Two 4-GPU nodes each hold one 2-GPU pod: moving one frees a whole node for a 4-GPU job.
TEST(Consolidate, MovesPodsSoThatAFragmentedJobFits) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("big", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kConsolidate}));
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(result.evictions[0].reason, EvictionReason::kConsolidation);
  EXPECT_EQ(result.evictions[0].preemptor_pod_group, "big");
  // The moved pod is bound to its new node, and big takes the freed one.
  ASSERT_EQ(result.bindings.size(), 2u);
  for (const Binding& b : result.bindings) EXPECT_TRUE(b.after_evictions);
  EXPECT_NE(result.bindings[0].node, result.bindings[1].node);
}

TEST(Consolidate, SkippedWhenTheClusterLacksTheResourceInAll) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(3), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(3), "n2")
                   .Group("big", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kConsolidate}));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(PendingMessage(result, "big"),
              HasSubstr("; consolidate: the cluster has 2 nvidia.com/gpu free in all, below the "
                        "4 requested"));
}

TEST(Consolidate, NothingMovesWithoutPreemptibleVictims) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .Priority(100)
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("b", "team")
                   .Priority(100)
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("big", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kConsolidate}));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(PendingMessage(result, "big"),
              HasSubstr("; consolidate: no set of victims lets it fit"));
}

TEST(Consolidate, ZeroMaxPreempteesDisablesIt) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("big", "team")
                   .Pods(1, Gpu(4))
                   .Build();
  Policy policy = PolicyWith({Action::kAllocate, Action::kConsolidate});
  policy.max_consolidation_preemptees = 0;
  EXPECT_THAT(RunCycle(s, policy).evictions, IsEmpty());
}

TEST(Consolidate, NonPreemptibleCandidateIsNotConsolidatedFor) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(4))
                   .Node("n2", Gpu(4))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(2), "n2")
                   .Group("big", "team")
                   .Priority(100)
                   .Pods(1, Gpu(4))
                   .Build();
  EXPECT_THAT(RunCycle(s, PolicyWith({Action::kAllocate, Action::kConsolidate})).evictions,
              IsEmpty());
}

}  // namespace
}  // namespace arbiter::kai
