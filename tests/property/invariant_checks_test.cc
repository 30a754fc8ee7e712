// The invariant checks of the property tests catch what they claim to: each is shown a small
// hand-made violation (and its lawful counterpart), so that a passing property is not vacuous.
#include <cstdlib>
#include <utility>
#include <vector>

#include "clients/simulator/apply_decisions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property/property_support.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"

namespace arbiter::testing {
namespace {

using ::arbiter::simulator::ApplyDecisions;

Snapshot Cluster() {
  return SnapshotBuilder()
      .Now(1000)
      .Node("n1", {{"cpu", 4}})
      .Node("n2", {{"cpu", 4}})
      .Taint("dedicated", "infer", "NoSchedule")
      .Queue("dept")
      .Limit({{"cpu", 5}})
      .Queue("team", "dept")
      .ReclaimMinRuntime(600)
      .Queue("other", "dept")
      .Group("run", "team")
      .MinMember(2)
      .RunningPods(2, {{"cpu", 2}}, "n1")
      .Started(900)
      .Group("wait", "other")
      .MinMember(2)
      .Pods(2, {{"cpu", 2}})
      .Group("vip", "team")
      .Priority(200)
      .RunningPods(1, {{"cpu", 1}}, "n2")
      .Build();
}

Snapshot Applied(const Snapshot& s, const ScheduleResult& r) {
  absl::StatusOr<Snapshot> next = ApplyDecisions(s, Policy{}, r);
  EXPECT_THAT(next, IsOk());
  return next.ok() ? *next : s;
}

TEST(InvariantChecks, NodeCapacityCatchesAnOverfullNode) {
  const Snapshot s = Cluster();
  ScheduleResult r;
  r.bindings.push_back({"wait", "wait-0", "n1", false, {}});  // n1 already holds 4 of 4
  EXPECT_THAT(CheckNodeCapacity(s, Applied(s, r)), StatusIs(absl::StatusCode::kFailedPrecondition));
  r.evictions.push_back({"run", "run-0", "n1", EvictionReason::kFairShareReclaim, "wait", ""});
  EXPECT_THAT(CheckNodeCapacity(s, Applied(s, r)), IsOk());
}

TEST(InvariantChecks, QueueLimitsCatchAParentOverItsLimit) {
  const Snapshot s = Cluster();  // dept holds 5 of its limit 5
  ScheduleResult r;
  r.bindings.push_back({"wait", "wait-0", "n2", false, {}});
  EXPECT_THAT(CheckQueueLimits(s, Applied(s, r)), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(InvariantChecks, GangsCatchAPartlyPlacedGroup) {
  const Snapshot s = Cluster();
  ScheduleResult r;
  r.bindings.push_back({"wait", "wait-0", "n2", false, {}});
  EXPECT_THAT(CheckGangs(Applied(s, r), r), StatusIs(absl::StatusCode::kFailedPrecondition));
  r.bindings.push_back({"wait", "wait-1", "n2", false, {}});
  EXPECT_THAT(CheckGangs(Applied(s, r), r), IsOk());
}

TEST(InvariantChecks, BindingsCatchAnUntoleratedTaint) {
  ScheduleResult r;
  r.bindings.push_back({"wait", "wait-0", "n2", false, {}});
  EXPECT_THAT(CheckBindings(Cluster(), r), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(InvariantChecks, NonPreemptibleCatchesAnEvictedHighPriorityGroup) {
  ScheduleResult r;
  r.evictions.push_back({"vip", "vip-0", "n2", EvictionReason::kFairShareReclaim, "wait", ""});
  EXPECT_THAT(CheckNonPreemptibleKept(Cluster(), r, FairnessModel::kKai),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(CheckNonPreemptibleKept(Cluster(), r, FairnessModel::kKueue), IsOk());
}

TEST(InvariantChecks, MinRuntimeCatchesAReclaimedYoungGang) {
  const Snapshot s = Cluster();  // "run" started at 900, team protects 600 s: until 1500
  ScheduleResult r;
  for (const char* pod : {"run-0", "run-1"}) {
    r.evictions.push_back({"run", pod, "n1", EvictionReason::kFairShareReclaim, "wait", ""});
  }
  EXPECT_THAT(CheckMinRuntime(s, Applied(s, r), r),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  for (Eviction& e : r.evictions) e.reason = EvictionReason::kPriorityPreemption;
  EXPECT_THAT(CheckMinRuntime(s, Applied(s, r), r), IsOk());  // no preempt min-runtime set
}

TEST(InvariantChecks, PreemptorsMustBeBound) {
  ScheduleResult r;
  r.evictions.push_back({"run", "run-0", "n1", EvictionReason::kFairShareReclaim, "wait", ""});
  EXPECT_THAT(CheckPreemptorsBound(r), StatusIs(absl::StatusCode::kFailedPrecondition));
  r.bindings.push_back({"wait", "wait-0", "n1", true, {}});
  EXPECT_THAT(CheckPreemptorsBound(r), IsOk());
}

TEST(InvariantChecks, PingPongCatchesAReversal) {
  ScheduleResult first, second;
  first.evictions.push_back({"run", "run-0", "n1", EvictionReason::kFairShareReclaim, "wait", ""});
  second.evictions.push_back(
      {"wait", "wait-0", "n1", EvictionReason::kFairShareReclaim, "run", ""});
  EXPECT_THAT(CheckNoPingPong(first, second), StatusIs(absl::StatusCode::kFailedPrecondition));
  second.evictions[0].reason = EvictionReason::kConsolidation;  // a move is not a reversal
  EXPECT_THAT(CheckNoPingPong(first, second), IsOk());
}

TEST(InvariantChecks, KueueLimitsCatchAnOverfullRoot) {
  Snapshot s = SnapshotBuilder()
                   .Queue("cohort")
                   .Queue("cq", "cohort")
                   .Deserved({{"cpu", 4}})
                   .Group("a", "cq")
                   .Admitted(10)
                   .Pods(1, {{"cpu", 3}})
                   .Group("b", "cq")
                   .Admitted(10)
                   .Pods(1, {{"cpu", 2}})
                   .Build();
  EXPECT_THAT(CheckKueueLimits(s), StatusIs(absl::StatusCode::kFailedPrecondition));
  s.pod_groups[1].admitted = false;
  EXPECT_THAT(CheckKueueLimits(s), IsOk());
}

TEST(InvariantChecks, KueueEvictionsCatchAPartialWorkload) {
  const Snapshot s = SnapshotBuilder()
                         .Queue("cq")
                         .Deserved({{"cpu", 4}})
                         .Group("a", "cq")
                         .Admitted(10)
                         .Pods(2, {{"cpu", 1}})
                         .Group("b", "cq")
                         .Pods(1, {{"cpu", 4}})
                         .Build();
  ScheduleResult r;
  r.evictions.push_back({"a", "a-0", "", EvictionReason::kKueueInClusterQueue, "b", ""});
  EXPECT_THAT(CheckKueueEvictionsWhole(s, r), StatusIs(absl::StatusCode::kFailedPrecondition));
  r.evictions.push_back({"a", "a-1", "", EvictionReason::kKueueInClusterQueue, "b", ""});
  EXPECT_THAT(CheckKueueEvictionsWhole(s, r), IsOk());
}

TEST(InvariantChecks, DiffResultsTellsNegativeZeroFromZero) {
  ScheduleResult a, b;
  a.queues.push_back({});
  b.queues.push_back({});
  a.queues[0].fair_share["cpu"] = 0.0;
  b.queues[0].fair_share["cpu"] = -0.0;
  EXPECT_NE(DiffResults(a, b), "");
  b.queues[0].fair_share["cpu"] = 0.0;
  EXPECT_EQ(DiffResults(a, b), "");
}

// A suite's case count from the environment: a whole positive decimal number is taken, anything
// else (unset, empty, zero, negative, trailing junk, past int) leaves `make test`'s count.
TEST(CasesFromEnvironmentTest, TakesOnlyAWholePositiveNumber) {
  constexpr const char* kVariable = "ARBITER_CASES_FROM_ENVIRONMENT_TEST";
  unsetenv(kVariable);
  EXPECT_EQ(CasesFromEnvironment(kVariable, 300), 300);
  const std::vector<std::pair<const char*, int>> cases = {
      {"6000", 6000},      {"1", 1},
      {"", 300},           {"0", 300},
      {"-5", 300},         {"12abc", 300},
      {"abc", 300},        {"2147483647", 2147483647},
      {"2147483648", 300}, {"99999999999999999999", 300}};
  for (const auto& [value, expected] : cases) {
    setenv(kVariable, value, 1);
    EXPECT_EQ(CasesFromEnvironment(kVariable, 300), expected) << "value \"" << value << "\"";
  }
  unsetenv(kVariable);
}

}  // namespace
}  // namespace arbiter::testing
