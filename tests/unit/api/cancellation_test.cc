// Issue 11: a cancelled call stops inside the phase that is running, not at its end. Each case
// gives one long loop enough work that CycleHooks::cancelled is asked while it runs, and makes
// the hook say yes from a chosen question on; the call must come back Cancelled, naming that
// phase, without finishing it and without asking again. No case measures time: progress is
// read from the hook's questions and the phases reported done.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/api/arbiter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter {
namespace {

using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Arms once phase `armed_by` is reported done; from then on says "cancelled" from its
// `flip_at`-th question on. The questions before arming are the between-phase checks and
// in-phase polls of earlier phases.
class Canceller {
 public:
  Canceller(std::string armed_by, int flip_at)
      : armed_by_(std::move(armed_by)), flip_at_(flip_at) {}

  CycleHooks Hooks() {
    CycleHooks hooks;
    hooks.cancelled = [this] {
      if (!armed_) return false;
      return ++asked_after_arming_ >= flip_at_;
    };
    hooks.phase_done = [this](std::string_view phase) {
      phases_.emplace_back(phase);
      if (phase == armed_by_) armed_ = true;
    };
    return hooks;
  }
  int asked_after_arming() const { return asked_after_arming_; }
  const std::vector<std::string>& phases() const { return phases_; }

 private:
  std::string armed_by_;
  int flip_at_;
  bool armed_ = false;
  int asked_after_arming_ = 0;
  std::vector<std::string> phases_;
};

Policy KaiWith(std::vector<Action> actions) {
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;
  policy.actions = std::move(actions);
  return policy;
}

Policy Kueue() {
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  return policy;
}

std::string Name(const char* prefix, int i) { return absl::StrFormat("%s%05d", prefix, i); }

// After "validate": 1 = the check before "fair_share", 2 = the first poll inside it.
TEST(CancellationTest, KaiFairShareStopsInsideTheDivision) {
  SnapshotBuilder builder;
  builder.Node("n", {{"cpu", 1e6}});
  for (int i = 0; i < 5000; ++i) builder.Queue(Name("q", i)).Deserved({{"cpu", 10}});
  const Snapshot snapshot = builder.Build();
  Canceller canceller("validate", 2);
  absl::StatusOr<FairShareResult> result =
      ComputeFairShares(snapshot, KaiWith({}), canceller.Hooks());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("in phase fair_share"));
  EXPECT_THAT(canceller.phases(), ElementsAre("validate"));
  EXPECT_EQ(canceller.asked_after_arming(), 2);
}

// After "fair_share": 1 = the check before "allocate", 2 = the first poll inside it.
TEST(CancellationTest, AllocateStopsBetweenJobs) {
  SnapshotBuilder builder;
  builder.Node("n", {{"cpu", 1e6}}).Queue("q").Deserved({{"cpu", -1}});
  for (int i = 0; i < 3000; ++i) builder.Group(Name("g", i), "q").Pod({{"cpu", 1}});
  Canceller canceller("fair_share", 2);
  absl::StatusOr<ScheduleResult> result =
      Schedule(builder.Build(), KaiWith({Action::kAllocate}), canceller.Hooks());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("in phase allocate"));
  EXPECT_THAT(canceller.phases(), ElementsAre("validate", "fair_share"));
  EXPECT_EQ(canceller.asked_after_arming(), 2);
}

// One preemptor, so the action's own loop barely counts: the questions come from the victim
// search, which draws one victim per part of a 600-pod gang.
TEST(CancellationTest, PreemptStopsInsideTheVictimSearch) {
  constexpr int kNodes = 600;
  SnapshotBuilder builder;
  builder.Queue("q").Deserved({{"cpu", -1}});
  for (int i = 0; i < kNodes; ++i) {
    builder.Node(Name("n", i), {{"cpu", 1000}})
        .Group(Name("low", i), "q")
        .Priority(10)
        .RunningPods(1, {{"cpu", 1000}}, Name("n", i));
  }
  builder.Group("gang", "q").Priority(200).MinMember(kNodes).Pods(kNodes, {{"cpu", 1000}});
  Canceller canceller("fair_share", 2);
  absl::StatusOr<ScheduleResult> result =
      Schedule(builder.Build(), KaiWith({Action::kPreempt}), canceller.Hooks());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("in phase preempt"));
  EXPECT_THAT(canceller.phases(), ElementsAre("validate", "fair_share"));
  EXPECT_EQ(canceller.asked_after_arming(), 2);
}

// Every candidate is turned away by the pre-check (its queue is at its fair share): a long loop
// over candidates with no search at all.
TEST(CancellationTest, ReclaimStopsBetweenCandidates) {
  SnapshotBuilder builder;
  builder.Node("n", {{"cpu", 1000}}).Queue("q").Deserved({{"cpu", 0}});
  builder.Group("running", "q").RunningPods(1, {{"cpu", 1000}}, "n");
  for (int i = 0; i < 3000; ++i) builder.Group(Name("g", i), "q").Pod({{"cpu", 1000}});
  Canceller canceller("fair_share", 2);
  absl::StatusOr<ScheduleResult> result =
      Schedule(builder.Build(), KaiWith({Action::kReclaim}), canceller.Hooks());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("in phase reclaim"));
  EXPECT_THAT(canceller.phases(), ElementsAre("validate", "fair_share"));
  EXPECT_EQ(canceller.asked_after_arming(), 2);
}

// Each candidate's pre-check sums the free capacity of every node.
TEST(CancellationTest, ConsolidateStopsBetweenCandidates) {
  SnapshotBuilder builder;
  builder.Queue("q").Deserved({{"cpu", -1}});
  for (int i = 0; i < 200; ++i) builder.Node(Name("n", i), {{"cpu", 1000}});
  for (int i = 0; i < 200; ++i) {
    builder.Group(Name("g", i), "q").Priority(10).Pod({{"cpu", 5000}});
  }
  Canceller canceller("fair_share", 2);
  absl::StatusOr<ScheduleResult> result =
      Schedule(builder.Build(), KaiWith({Action::kConsolidate}), canceller.Hooks());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("in phase consolidate"));
  EXPECT_THAT(canceller.phases(), ElementsAre("validate", "fair_share"));
  EXPECT_EQ(canceller.asked_after_arming(), 2);
}

// After "fair_share": 1 = the check before "admission", 2 = the check before round 1, 3 = the
// first poll inside round 1 (nominating 3,000 heads).
TEST(CancellationTest, KueueAdmissionStopsInsideARound) {
  SnapshotBuilder builder;
  builder.Queue("root").Deserved({{"cpu", 1e6}});
  for (int i = 0; i < 3000; ++i) {
    builder.Queue(Name("cq", i), "root").Deserved({{"cpu", 1}});
    builder.Group(Name("w", i), Name("cq", i)).Pod({{"cpu", 1}});
  }
  Canceller canceller("fair_share", 3);
  absl::StatusOr<ScheduleResult> result = Schedule(builder.Build(), Kueue(), canceller.Hooks());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("in phase admission in round 1"));
  EXPECT_THAT(canceller.phases(), ElementsAre("validate", "fair_share"));
  EXPECT_EQ(canceller.asked_after_arming(), 3);
}

// One head, whose fair-sharing search evicts 3,000 small workloads one at a time before the
// head fits: the questions come from the search.
TEST(CancellationTest, KueueFairPreemptionStopsInsideTheSearch) {
  SnapshotBuilder builder;
  builder.Queue("root")
      .Queue("x", "root")
      .Deserved({{"cpu", 3000}})
      .KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny)
      .Queue("y", "root")
      .Deserved({{"cpu", 0}});
  for (int i = 0; i < 3000; ++i) builder.Group(Name("y-", i), "y").Admitted(0).Pod({{"cpu", 1}});
  builder.Group("head", "x").Pod({{"cpu", 3000}});
  Canceller canceller("fair_share", 3);
  absl::StatusOr<ScheduleResult> result = Schedule(builder.Build(), Kueue(), canceller.Hooks());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("in phase admission in round 1"));
  EXPECT_THAT(canceller.phases(), ElementsAre("validate", "fair_share"));
  EXPECT_EQ(canceller.asked_after_arming(), 3);
}

// The quota tree of 5,000 queues is built inside "fair_share".
TEST(CancellationTest, KueueQuotaTreeStopsWhileBuilding) {
  SnapshotBuilder builder;
  builder.Queue("root").Deserved({{"cpu", 1}});
  for (int i = 0; i < 5000; ++i) builder.Queue(Name("cq", i), "root").Deserved({{"cpu", 1}});
  Canceller canceller("validate", 2);
  absl::StatusOr<FairShareResult> result =
      ComputeFairShares(builder.Build(), Kueue(), canceller.Hooks());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("in phase fair_share"));
  EXPECT_THAT(canceller.phases(), ElementsAre("validate"));
  EXPECT_EQ(canceller.asked_after_arming(), 2);
}

// The same requests, never cancelled, give the same answer with a hook as without: the polls
// only read the hook.
TEST(CancellationTest, AHookThatNeverCancelsChangesNothing) {
  SnapshotBuilder builder;
  builder.Queue("q").Deserved({{"cpu", -1}});
  for (int i = 0; i < 50; ++i) {
    builder.Node(Name("n", i), {{"cpu", 1000}})
        .Group(Name("low", i), "q")
        .Priority(10)
        .RunningPods(1, {{"cpu", 1000}}, Name("n", i));
  }
  builder.Group("gang", "q").Priority(200).MinMember(20).Pods(20, {{"cpu", 1000}});
  const Snapshot snapshot = builder.Build();
  int asked = 0;
  CycleHooks hooks;
  hooks.cancelled = [&asked] {
    ++asked;
    return false;
  };
  absl::StatusOr<ScheduleResult> plain = Schedule(snapshot, KaiWith({}));
  absl::StatusOr<ScheduleResult> polled = Schedule(snapshot, KaiWith({}), hooks);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(polled.ok());
  EXPECT_GT(asked, 0);
  EXPECT_EQ(plain->evictions.size(), 20u);
  ASSERT_EQ(plain->bindings.size(), polled->bindings.size());
  for (size_t i = 0; i < plain->bindings.size(); ++i) {
    EXPECT_EQ(plain->bindings[i].pod, polled->bindings[i].pod);
    EXPECT_EQ(plain->bindings[i].node, polled->bindings[i].node);
  }
  ASSERT_EQ(plain->evictions.size(), polled->evictions.size());
  for (size_t i = 0; i < plain->evictions.size(); ++i) {
    EXPECT_EQ(plain->evictions[i].pod, polled->evictions[i].pod);
    EXPECT_EQ(plain->evictions[i].message, polled->evictions[i].message);
  }
}

}  // namespace
}  // namespace arbiter
