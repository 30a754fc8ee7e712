// PREEMPT (core/kai/preempt.cc, SEMANTICS.md §4.7, §4.8, §4.11): a table of named cases, one
// cycle each with the evictions, bindings and pending groups it must give, then the work the
// solver does for a gang PREEMPT cannot help (issue 11).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/named_cases.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::CaseName;
using ::arbiter::testing::EvictionCase;
using ::arbiter::testing::ExpectDecisions;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::IsOk;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Decisions = std::vector<std::string>;

Policy AllocatePreempt() { return PolicyWith({Action::kAllocate, Action::kPreempt}); }

std::vector<EvictionCase> PreemptCases() {
  std::vector<EvictionCase> cases;

  // §4.4 inside §4.8's try: the preemptor's queue is at its limit; one victim pod does not bring
  // it low enough, two do. The solver may skip the first set only because its limit check would
  // fail with every candidate evicted; the second set must still be tried and taken.
  cases.push_back(
      {"VictimsUnderTheLimitedQueueLiftItsLimit",
       SnapshotBuilder()
           .Node("n1", Gpu(8))
           .Queue("team")
           .Deserved(Gpu(4))
           .Limit(Gpu(4))
           .Group("low", "team")
           .Priority(10)
           .RunningPods(4, Gpu(1), "n1")
           .Group("high", "team")
           .Priority(50)
           .Pods(1, Gpu(2))
           .Build(),
       AllocatePreempt(),
       Decisions{"low-2@n1 PRIORITY_PREEMPTION for high", "low-3@n1 PRIORITY_PREEMPTION for high"},
       Decisions{"high-0@n1+"}, Decisions{}});

  // §4.11: a higher priority evicts a lower one of its own queue.
  cases.push_back({"HigherPriorityJobEvictsLowerPriorityInTheSameQueue",
                   SnapshotBuilder()
                       .Node("n1", Gpu(4))
                       .Queue("team")
                       .Deserved(Gpu(4))
                       .Group("low", "team")
                       .Priority(10)
                       .RunningPods(2, Gpu(2), "n1")
                       .Group("high", "team")
                       .Priority(50)
                       .Pods(1, Gpu(2))
                       .Build(),
                   AllocatePreempt(), Decisions{"low-1@n1 PRIORITY_PREEMPTION for high"},
                   Decisions{"high-0@n1+"}, std::nullopt,
                   "preempted for high: priority 50 over 10 in queue team"});

  // §4.11: an equal priority is not preempted...
  cases.push_back({"EqualPriorityIsNotPreempted",
                   SnapshotBuilder()
                       .Node("n1", Gpu(4))
                       .Queue("team")
                       .Group("a", "team")
                       .Priority(10)
                       .RunningPods(2, Gpu(2), "n1")
                       .Group("b", "team")
                       .Priority(10)
                       .Pods(1, Gpu(2))
                       .Build(),
                   PolicyWith({Action::kPreempt}), Decisions{}});

  // ... nor are other queues, whatever their priority...
  cases.push_back({"OtherQueuesAreNotPreempted",
                   SnapshotBuilder()
                       .Node("n1", Gpu(4))
                       .Queue("team-a")
                       .Queue("team-b")
                       .Group("low", "team-b")
                       .Priority(1)
                       .RunningPods(2, Gpu(2), "n1")
                       .Group("high", "team-a")
                       .Priority(50)
                       .Pods(1, Gpu(2))
                       .Build(),
                   PolicyWith({Action::kPreempt}), Decisions{}});

  // ... nor a gang protected by the queue's preempt min-runtime (§4.7).
  cases.push_back({"PreemptMinRuntimeProtects",
                   SnapshotBuilder()
                       .Now(100)
                       .Node("n1", Gpu(4))
                       .Queue("team")
                       .PreemptMinRuntime(300)
                       .Group("low", "team")
                       .Priority(10)
                       .MinMember(2)
                       .RunningPods(2, Gpu(2), "n1")
                       .Started(0)
                       .Group("high", "team")
                       .Priority(50)
                       .Pods(1, Gpu(2))
                       .Build(),
                   PolicyWith({Action::kPreempt}), Decisions{}});
  return cases;
}

// Issue 32: the pending reason says that preempt min-runtime is what protects the victims, and
// until when (started at 0, protected for 300 s).
TEST(Preempt, MinRuntimeReasonSaysUntilWhen) {
  Snapshot s = SnapshotBuilder()
                   .Now(100)
                   .Node("n1", Gpu(4))
                   .Queue("team")
                   .PreemptMinRuntime(300)
                   .Group("low", "team")
                   .Priority(10)
                   .MinMember(2)
                   .RunningPods(2, Gpu(2), "n1")
                   .Started(0)
                   .Group("high", "team")
                   .Priority(50)
                   .Pods(1, Gpu(2))
                   .Build();
  ScheduleResult result =
      ::arbiter::testing::RunCycle(s, PolicyWith({Action::kAllocate, Action::kPreempt}));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(::arbiter::testing::PendingMessage(result, "high"),
              HasSubstr("; preempt: the victims that would let it fit are protected by "
                        "preempt_min_runtime until 1970-01-01T00:05:00Z"));
}

// §0 and §4.7: a group with more than g non-RELEASING pods is elastic while only g run, so a
// protected one is a victim that a scenario must leave g active pods: "small" is drawn first and
// taken by every try on n1, so "high" stays pending; once small's min-runtime is over it goes.
TEST(Preempt, MinRuntimeElasticWithOnlyItsGangRunningIsAVictimThatMustKeepIt) {
  auto snapshot = [](int64_t small_started) {
    SnapshotBuilder b;
    b.Now(1000).Node("n1", Gpu(2)).Queue("team").PreemptMinRuntime(600);
    return ::arbiter::testing::SmallAndWideOnN1(b, "team", small_started)
        .Group("high", "team")
        .Priority(50)
        .Pods(1, Gpu(1))
        .Build();
  };
  const Policy policy = PolicyWith({Action::kAllocate, Action::kPreempt});
  EXPECT_THAT(::arbiter::testing::RunCycle(snapshot(900), policy).evictions, IsEmpty());
  ScheduleResult result = ::arbiter::testing::RunCycle(snapshot(0), policy);
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(result.evictions[0].pod, "small-0");
}

// §4.7: start(G) is the earliest start among G's RUNNING pods. low's RELEASING pod started at 0,
// its RUNNING pod at 90: with a preempt min-runtime of 50 at time 100, low is protected until 140
// and stays; counting the RELEASING pod's start would leave it unprotected and evicted.
TEST(Preempt, MinRuntimeStartsAtTheEarliestRunningPodNotAReleasingOne) {
  SnapshotBuilder builder;
  builder.Now(100)
      .Node("n1", Gpu(4))
      .Queue("team")
      .PreemptMinRuntime(50)
      .Group("low", "team")
      .Priority(10)
      .MinMember(1)
      .Pod(Gpu(2), "n1", PodPhase::kReleasing)
      .Started(0)
      .Pod(Gpu(2), "n1", PodPhase::kRunning)
      .Started(90)
      .Group("high", "team")
      .Priority(50)
      .Pods(1, Gpu(4));
  ScheduleResult protected_result = ::arbiter::testing::RunCycle(
      builder.Build(), PolicyWith({Action::kAllocate, Action::kPreempt}));
  EXPECT_THAT(protected_result.evictions, IsEmpty());

  // Once the running pod is older than the min-runtime, the same preemption goes ahead.
  builder.snapshot().pod_groups[0].pods[1].start_time = Timestamp{40, 0};
  ScheduleResult result = ::arbiter::testing::RunCycle(
      builder.Build(), PolicyWith({Action::kAllocate, Action::kPreempt}));
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(result.evictions[0].pod, "low-1");
}

class PreemptDecisions : public ::testing::TestWithParam<EvictionCase> {};

TEST_P(PreemptDecisions, AreTheExpectedOnes) { ExpectDecisions(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Preempt, PreemptDecisions, ::testing::ValuesIn(PreemptCases()),
                         CaseName());

// The work a call does, read from the cancellation hook: it is asked once per CancelPoll::kInterval
// units of work (core/cancel_poll.h), so the count of questions measures work without a clock.
int QuestionsAsked(const Snapshot& snapshot, const Policy& policy, ScheduleResult* result) {
  int asked = 0;
  CycleHooks hooks;
  hooks.cancelled = [&asked] {
    ++asked;
    return false;
  };
  absl::StatusOr<ScheduleResult> answer =
      ::arbiter::testing::ScheduleKaiWithHooks(snapshot, policy, hooks);
  EXPECT_THAT(answer, IsOk());
  if (answer.ok()) *result = *std::move(answer);
  return asked;
}

Snapshot GangOnEmptyNodes(int nodes, int pods) {
  SnapshotBuilder builder;
  builder.Queue("q").Deserved({{"cpu", -1}});
  for (int i = 0; i < nodes; ++i) builder.Node(absl::StrCat("n", i), {{"cpu", 1000}});
  builder.Group("gang", "q").Priority(300).MinMember(pods).Pods(pods, {{"cpu", 1000}});
  return builder.Build();
}

// Issue 11: with nothing to evict, the solver tried the gang part by part (1, 2, ..., 1,501
// pods), about 1.1 million placements. The parts that place with no victim are tried once,
// whole: a few thousand placements, a handful of questions to the hook.
TEST(Preempt, GangThatFitsButForItsLastPodIsNotTriedPartByPart) {
  ScheduleResult result;
  const int asked =
      QuestionsAsked(GangOnEmptyNodes(1500, 1501), PolicyWith({Action::kPreempt}), &result);
  EXPECT_THAT(Pending(result), ElementsAre("gang:gang-does-not-fit"));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_LT(asked, 100);  // part by part: more than 1,000
}

TEST(Preempt, GangThatFitsWithoutVictimsIsNotTriedPartByPart) {
  ScheduleResult result;
  const int asked =
      QuestionsAsked(GangOnEmptyNodes(1500, 1500), PolicyWith({Action::kPreempt}), &result);
  // PREEMPT leaves a unit that needs no victim to ALLOCATE, which is not listed.
  EXPECT_THAT(Pending(result), ElementsAre("gang:not-attempted"));
  EXPECT_THAT(result.bindings, IsEmpty());
  EXPECT_LT(asked, 100);
}

}  // namespace
}  // namespace arbiter::kai
