// The entry points of core/api/arbiter.h on whole calls: cancellation inside a phase, and
// inputs that must not cost more than their size (deep queue trees, long names, many resources).

#include "core/api/arbiter.h"

#include <malloc.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/echoed_name.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/small_stack.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"

namespace arbiter {
namespace {

using ::arbiter::testing::IsOk;
using ::arbiter::testing::StatusIs;

using ::arbiter::testing::RunOnSmallStack;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// =================================================================================================
// Issue 11: a cancelled call stops inside the phase that is running, not at its end. Each case
// gives one long loop enough work that CycleHooks::cancelled is asked while it runs, and makes
// the hook say yes from a chosen question on; the call must come back Cancelled, naming that
// phase, without finishing it and without asking again. No case measures time: progress is
// read from the hook's questions and the phases reported done.

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
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
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
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
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
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
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
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
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
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
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
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
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
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
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
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kCancelled));
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
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(polled, IsOk());
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

// =================================================================================================
// Issue 11: the depth of the queue tree is the caller's to choose, so no code path may recurse
// once per level. Each case runs a whole call (validation, fair shares, every action or the
// admission rounds) on a chain of 200,000 queues, on a thread with a 1 MiB stack.

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
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(Evicted(*result), ElementsAre("low/low-0", "low/low-1"));
  EXPECT_THAT(Bound(*result), ElementsAre("high-0@n1", "high-1@n1"));
  EXPECT_EQ(result->queues.size(), static_cast<size_t>(depth) + 1);
  absl::StatusOr<FairShareResult> shares = ComputeFairShares(snapshot, KaiPolicy());
  ASSERT_THAT(shares, IsOk());
  EXPECT_EQ(QueueList(*shares).front().fair_share.at("cpu"), 4000);
}

void ExpectKueueChainAnswer(int depth) {
  const Snapshot snapshot = KueueChain(depth);
  absl::StatusOr<ScheduleResult> result = Schedule(snapshot, KueuePolicy());
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(Evicted(*result), ElementsAre("near-1/near-1-0"));
  ASSERT_EQ(result->admissions.size(), 1u);
  EXPECT_EQ(result->admissions[0].pod_group, "deep-1");
  absl::StatusOr<FairShareResult> shares = ComputeFairShares(snapshot, KueuePolicy());
  ASSERT_THAT(shares, IsOk());
  EXPECT_EQ(QueueList(*shares).size(), static_cast<size_t>(depth) + 2);
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

// =================================================================================================
// Issue 11: the sentences of an answer echo names capped (core/echoed_name.h), so a request
// whose names are 100 KB long gets messages of a few hundred bytes, not one copy of each name
// per pending group.

std::string LongName(char c) { return std::string(100 * 1024, c); }

TEST(LongNamesTest, KaiPendingReasonCapsTheQueueAndResourceNames) {
  const std::string queue = LongName('q');
  const std::string resource = LongName('r');
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;
  policy.actions = {Action::kAllocate};
  absl::StatusOr<ScheduleResult> result = Schedule(SnapshotBuilder()
                                                       .Node("n", {{resource, 10}})
                                                       .Queue(queue)
                                                       .Deserved({{resource, -1}})
                                                       .Limit({{resource, 1}})
                                                       .Group("g", queue)
                                                       .Pod({{resource, 2}})
                                                       .Build(),
                                                   policy);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->pending.size(), 1u);
  EXPECT_EQ(result->pending[0].reason, "queue-over-limit");
  EXPECT_LT(result->pending[0].message.size(), 1024u);
  EXPECT_THAT(result->pending[0].message,
              HasSubstr("queue " + std::string(kMaxEchoedNameBytes, 'q') + "... would exceed"));
}

TEST(LongNamesTest, KueuePendingReasonCapsTheClusterQueueName) {
  const std::string queue = LongName('c');
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  absl::StatusOr<ScheduleResult> result = Schedule(SnapshotBuilder()
                                                       .Queue(queue)
                                                       .Deserved({{"cpu", 1}})
                                                       .Group("w", queue)
                                                       .Pod({{"gpu", 1}})
                                                       .Build(),
                                                   policy);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->pending.size(), 1u);
  EXPECT_EQ(result->pending[0].reason, "resource-not-covered");
  EXPECT_LT(result->pending[0].message.size(), 1024u);
  EXPECT_EQ(result->pending[0].message,
            "cluster queue " + std::string(kMaxEchoedNameBytes, 'c') + "... has no quota for gpu");
}

TEST(LongNamesTest, EvictionMessageCapsThePreemptorName) {
  const std::string preemptor = LongName('p');
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;
  policy.actions = {Action::kPreempt};
  absl::StatusOr<ScheduleResult> result = Schedule(SnapshotBuilder()
                                                       .Node("n", {{"cpu", 1000}})
                                                       .Queue("q")
                                                       .Deserved({{"cpu", -1}})
                                                       .Group("low", "q")
                                                       .Priority(10)
                                                       .RunningPods(1, {{"cpu", 1000}}, "n")
                                                       .Group(preemptor, "q")
                                                       .Priority(200)
                                                       .Pod({{"cpu", 1000}})
                                                       .Build(),
                                                   policy);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->evictions.size(), 1u);
  EXPECT_LT(result->evictions[0].message.size(), 1024u);
  EXPECT_THAT(result->evictions[0].message,
              HasSubstr("preempted for " + std::string(kMaxEchoedNameBytes, 'p') + "...: "));
  EXPECT_EQ(result->evictions[0].preemptor_pod_group, preemptor);  // identifiers stay whole
}

// =================================================================================================
// Issue 11: one pod that requests 20,000 distinct resource names, on 250 nodes. Node-level
// amounts span only the resources some node has or some pod on a node uses (core/kai/cluster.h),
// so the call needs a few MiB instead of 700 MiB, and answers as before: the pod fits nowhere.

// Heap bytes in use, mmapped blocks (the large vectors) included.
size_t BytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

TEST(ManyResourcesTest, TwentyThousandRequestedResourcesCostNothingPerNode) {
  SnapshotBuilder builder;
  builder.Queue("q").Deserved({{"cpu", -1}});
  for (int i = 0; i < 250; ++i) builder.Node(absl::StrCat("n", i), {{"cpu", 1000}});
  ResourceMap requests{{"cpu", 100}};
  for (int r = 0; r < 20000; ++r) requests[absl::StrCat("example.com/r", r)] = 1;
  builder.Group("exotic", "q").Pod(requests).Group("plain", "q").Pod({{"cpu", 100}});
  const Snapshot snapshot = builder.Build();
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;

  // The hook is asked between phases and inside them (core/cancel_poll.h): sample the heap there.
  const size_t baseline = BytesInUse();
  size_t peak = baseline;
  CycleHooks hooks;
  hooks.cancelled = [&peak] {
    peak = std::max(peak, BytesInUse());
    return false;
  };
  absl::StatusOr<ScheduleResult> result = Schedule(snapshot, policy, hooks);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->bindings.size(), 1u);
  EXPECT_EQ(result->bindings[0].pod_group, "plain");
  ASSERT_EQ(result->pending.size(), 1u);
  EXPECT_EQ(result->pending[0].reason, "insufficient-resources");
  EXPECT_THAT(result->pending[0].message,
              HasSubstr("needs 1 example.com/r0 on one node; the largest free is 0 (node n0)"));
  EXPECT_LT(peak - baseline, size_t{64} << 20);  // 250 nodes × 20,001 resources: about 700 MiB
}

}  // namespace
}  // namespace arbiter
