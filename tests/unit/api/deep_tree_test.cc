// Issue 11: the depth of the queue tree is the caller's to choose, so no code path may recurse
// once per level. Each case runs a whole call (validation, fair shares, every action or the
// admission rounds) on a chain of 200,000 queues, on a thread with a 1 MiB stack.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/api/arbiter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/small_stack.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter {
namespace {

using ::arbiter::testing::RunOnSmallStack;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;

constexpr int kDeepChain = 200000;

std::string Level(int i) { return absl::StrFormat("level-%06d", i); }

// level-000000 <- level-000001 <- ... <- level-(depth-1), each the only child of the one before.
SnapshotBuilder Chain(int depth) {
  SnapshotBuilder builder;
  for (int i = 0; i < depth; ++i) builder.Queue(Level(i), i == 0 ? "" : Level(i - 1));
  return builder;
}

// KAI: the bottom leaf runs a low-priority group on the only node; a high-priority group of the
// same leaf preempts it.
Snapshot KaiChain(int depth) {
  SnapshotBuilder builder = Chain(depth);
  builder.Queue("leaf", Level(depth - 1))
      .Node("n1", {{"cpu", 4000}})
      .Group("high", "leaf")
      .Priority(200)
      .Preemptible(Preemptibility::kPreemptible)
      .Pods(2, {{"cpu", 2000}})
      .Group("low", "leaf")
      .Priority(10)
      .RunningPods(2, {{"cpu", 2000}}, "n1");
  return builder.Build();
}

// Kueue: the root cohort holds all the quota; "near" (under the root) borrows it all, and a
// workload of "deep" (at the bottom of the chain) reclaims half of it by fair sharing.
Snapshot KueueChain(int depth) {
  SnapshotBuilder builder = Chain(depth);
  builder.snapshot().queues[0].deserved = {{"cpu", 10}};
  builder.Queue("deep", Level(depth - 1))
      .Deserved({{"cpu", 0}})
      .KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny)
      .Queue("near", Level(0))
      .Deserved({{"cpu", 0}})
      .Group("near-1", "near")
      .Admitted(0)
      .Pod({{"cpu", 5}})
      .Group("near-2", "near")
      .Admitted(0)
      .Pod({{"cpu", 5}})
      .Group("deep-1", "deep")
      .Pod({{"cpu", 5}});
  return builder.Build();
}

Policy KaiPolicy() {
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;
  return policy;
}

Policy KueuePolicy() {
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  return policy;
}

std::vector<std::string> Evicted(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Eviction& e : result.evictions) out.push_back(absl::StrCat(e.pod_group, "/", e.pod));
  return out;
}

std::vector<std::string> Bound(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Binding& b : result.bindings) out.push_back(absl::StrCat(b.pod, "@", b.node));
  return out;
}

void ExpectKaiChainAnswer(int depth) {
  const Snapshot snapshot = KaiChain(depth);
  absl::StatusOr<ScheduleResult> result = Schedule(snapshot, KaiPolicy());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(Evicted(*result), ElementsAre("low/low-0", "low/low-1"));
  EXPECT_THAT(Bound(*result), ElementsAre("high-0@n1", "high-1@n1"));
  EXPECT_EQ(result->queues.size(), static_cast<size_t>(depth) + 1);
  absl::StatusOr<FairShareResult> shares = ComputeFairShares(snapshot, KaiPolicy());
  ASSERT_TRUE(shares.ok()) << shares.status();
  EXPECT_EQ(shares->queues.front().fair_share.at("cpu"), 4000);
}

void ExpectKueueChainAnswer(int depth) {
  const Snapshot snapshot = KueueChain(depth);
  absl::StatusOr<ScheduleResult> result = Schedule(snapshot, KueuePolicy());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(Evicted(*result), ElementsAre("near-1/near-1-0"));
  ASSERT_EQ(result->admissions.size(), 1u);
  EXPECT_EQ(result->admissions[0].pod_group, "deep-1");
  absl::StatusOr<FairShareResult> shares = ComputeFairShares(snapshot, KueuePolicy());
  ASSERT_TRUE(shares.ok()) << shares.status();
  EXPECT_EQ(shares->queues.size(), static_cast<size_t>(depth) + 2);
}

// The same answers on a shallow chain, where nothing could overflow the stack.
TEST(DeepTreeTest, ShallowChainsGiveTheExpectedAnswers) {
  ExpectKaiChainAnswer(3);
  ExpectKueueChainAnswer(3);
}

TEST(DeepTreeTest, KaiChainOf200000QueuesRunsOnASmallStack) {
  RunOnSmallStack([] { ExpectKaiChainAnswer(kDeepChain); });
}

TEST(DeepTreeTest, KueueChainOf200000CohortsRunsOnASmallStack) {
  RunOnSmallStack([] { ExpectKueueChainAnswer(kDeepChain); });
}

}  // namespace
}  // namespace arbiter
