// ScheduleKueue's answer (SEMANTICS.md §6 KUEUE), its hooks, and determinism (§0.5).
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/generator/generator.h"
#include "core/kueue/kueue.h"
#include "gtest/gtest.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using testing::FindQueue;
using testing::KueuePolicy;
using testing::RunKueue;
using testing::SnapshotBuilder;

// Every field of the answer, doubles in full precision, in answer order.
std::string Serialize(const ScheduleResult& r) {
  std::string out;
  auto map = [&out](const ResourceMap& m) {
    for (const auto& [k, v] : m) absl::StrAppend(&out, k, "=", absl::StrFormat("%.17g", v), ",");
    out += ";";
  };
  for (const QueueShare& q : r.queues) {
    absl::StrAppend(&out, "Q ", q.queue, " ", absl::StrFormat("%.17g", q.weighted_share), " ",
                    q.dominant_resource, " ", q.borrowing, " ");
    map(q.deserved);
    map(q.fair_share);
    map(q.allocated);
    map(q.requested);
    out += "\n";
  }
  for (const Admission& a : r.admissions) {
    absl::StrAppend(&out, "A ", a.pod_group, " ", a.queue, " ", a.after_evictions, "\n");
  }
  for (const Eviction& e : r.evictions) {
    absl::StrAppend(&out, "E ", e.pod_group, " ", e.pod, " ", e.node, " ",
                    static_cast<int>(e.reason), " ", e.preemptor_pod_group, " ", e.message, "\n");
  }
  for (const PendingPodGroup& p : r.pending) {
    absl::StrAppend(&out, "P ", p.pod_group, " ", p.reason, " ", p.message, "\n");
  }
  EXPECT_TRUE(r.bindings.empty());  // §5.1: the Kueue model never places pods
  return out;
}

// A victim with a running and a pending pod; w in the same queue preempts it.
Snapshot TwoPodVictim() {
  SnapshotBuilder b;
  b.Node("n1", {{"cpu", 8}});
  b.Queue("q")
      .Deserved({{"cpu", 4}})
      .KueuePolicy(WithinClusterQueue::kLowerPriority, ReclaimWithinCohort::kNever);
  b.Group("victim", "q").Priority(0).Admitted(0);
  b.Pod({{"cpu", 1}}, "n1", PodPhase::kRunning, "p-b");
  b.Pod({{"cpu", 1}}, "", PodPhase::kPending, "p-a");
  b.Group("stay", "q").Priority(9).Pod({{"cpu", 2}}, "n1").Admitted(0);
  b.Group("w", "q").Priority(5).Pod({{"cpu", 2}});
  b.Group("later", "q").Priority(1).Pod({{"cpu", 3}});
  return b.Build();
}

// §6: one eviction per pod, the node set where the pod has one, ordered by (pod_group, pod),
// every entry with the reason, the preemptor and the sentence.
TEST(KueueScheduleTest, EvictionsListEveryPodOfTheWorkload) {
  const ScheduleResult r = RunKueue(TwoPodVictim());
  ASSERT_EQ(r.evictions.size(), 2u);
  EXPECT_EQ(r.evictions[0].pod, "p-a");
  EXPECT_EQ(r.evictions[0].node, "");
  EXPECT_EQ(r.evictions[1].pod, "p-b");
  EXPECT_EQ(r.evictions[1].node, "n1");
  for (const Eviction& e : r.evictions) {
    EXPECT_EQ(e.pod_group, "victim");
    EXPECT_EQ(e.reason, EvictionReason::kKueueInClusterQueue);
    EXPECT_EQ(e.preemptor_pod_group, "w");
    EXPECT_EQ(e.message, "preempted within cluster queue q for w (priority 0 against 5)");
  }
  ASSERT_EQ(r.admissions.size(), 1u);
  EXPECT_EQ(r.admissions[0].pod_group, "w");
  EXPECT_EQ(r.admissions[0].queue, "q");
  EXPECT_TRUE(r.admissions[0].after_evictions);
}

// §6 KUEUE: the queue list describes the tree after the call: allocated is what is held at the
// end (stay 2 + w 2), requested adds every group that holds nothing, the evicted victim
// included (it is pending again), and later (3).
TEST(KueueScheduleTest, QueuesDescribeTheTreeAfterTheCall) {
  const ScheduleResult r = RunKueue(TwoPodVictim());
  const QueueShare* q = FindQueue(r.queues, "q");
  EXPECT_EQ(q->allocated, (ResourceMap{{"cpu", 4}}));
  EXPECT_EQ(q->requested, (ResourceMap{{"cpu", 9}}));
  EXPECT_TRUE(q->fair_share.empty());
  EXPECT_EQ(q->deserved, (ResourceMap{{"cpu", 4}}));
}

// §6: admissions and pending are ordered by pod_group; evicted groups are not pending.
TEST(KueueScheduleTest, AnswerListsAreOrderedByGroupName) {
  SnapshotBuilder b;
  b.Queue("root").Deserved({{"cpu", 6}});
  for (const char* queue : {"qc", "qa", "qb"}) b.Queue(queue, "root").Deserved({{"cpu", 0}});
  b.Group("z-job", "qa").Pod({{"cpu", 2}});
  b.Group("m-job", "qb").Pod({{"cpu", 2}});
  b.Group("a-job", "qc").Pod({{"cpu", 2}});
  b.Group("y-big", "qa").Created(9).Pod({{"cpu", 7}});
  b.Group("b-big", "qb").Created(9).Pod({{"cpu", 7}});
  const ScheduleResult r = RunKueue(b.Build());
  ASSERT_EQ(r.admissions.size(), 3u);
  EXPECT_EQ(r.admissions[0].pod_group, "a-job");
  EXPECT_EQ(r.admissions[1].pod_group, "m-job");
  EXPECT_EQ(r.admissions[2].pod_group, "z-job");
  ASSERT_EQ(r.pending.size(), 2u);
  EXPECT_EQ(r.pending[0].pod_group, "b-big");
  EXPECT_EQ(r.pending[1].pod_group, "y-big");
  EXPECT_EQ(r.pending[0].reason, "exceeds-max-quota");
  for (const PendingPodGroup& p : RunKueue(TwoPodVictim()).pending) {
    EXPECT_NE(p.pod_group, "victim");
  }
}

// The core's hooks: phases reported in order; cancellation before any phase and between rounds
// returns CANCELLED.
TEST(KueueScheduleTest, HooksReportPhasesAndCancelBetweenRounds) {
  std::vector<std::string> phases;
  CycleHooks hooks;
  hooks.phase_done = [&phases](std::string_view phase) { phases.emplace_back(phase); };
  ASSERT_TRUE(ScheduleKueue(TwoPodVictim(), KueuePolicy(), hooks).ok());
  EXPECT_EQ(phases, (std::vector<std::string>{"fair_share", "admission", "respond"}));

  for (int allowed : {0, 1, 2, 3}) {
    int calls = 0;
    CycleHooks cancelling;
    cancelling.cancelled = [&calls, allowed] { return calls++ >= allowed; };
    const absl::StatusOr<ScheduleResult> r =
        ScheduleKueue(TwoPodVictim(), KueuePolicy(), cancelling);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << allowed;
  }
}

// §0.5: the answer does not depend on the order of queues, groups or pods in the request, and
// equal requests give identical answers.
TEST(KueueScheduleTest, AnswerIsDeterministicAndOrderIndependent) {
  generator::GeneratorOptions options;
  options.model = generator::GeneratorModel::kKueue;
  options.queues = 40;
  options.cohorts = 10;
  options.depth = 3;
  options.pods = 720;
  options.pending_fraction = 1.0 / 6.0;
  options.extra_resources = 1;
  options.seed = 11;
  const Snapshot snapshot = generator::Generate(options).snapshot;
  const std::string reference = Serialize(RunKueue(snapshot));
  EXPECT_EQ(Serialize(RunKueue(snapshot)), reference);
  std::mt19937 rng(5);
  for (int round = 0; round < 3; ++round) {
    Snapshot shuffled = snapshot;
    std::shuffle(shuffled.queues.begin(), shuffled.queues.end(), rng);
    std::shuffle(shuffled.pod_groups.begin(), shuffled.pod_groups.end(), rng);
    for (PodGroup& group : shuffled.pod_groups) {
      std::shuffle(group.pods.begin(), group.pods.end(), rng);
    }
    EXPECT_EQ(Serialize(RunKueue(shuffled)), reference) << round;
  }
  EXPECT_NE(reference.find("\nE "), std::string::npos);  // the case does preempt
}

// An empty snapshot answers nothing.
TEST(KueueScheduleTest, EmptySnapshotAnswersNothing) {
  const ScheduleResult r = RunKueue(Snapshot{});
  EXPECT_TRUE(r.queues.empty());
  EXPECT_TRUE(r.admissions.empty());
  EXPECT_TRUE(r.evictions.empty());
  EXPECT_TRUE(r.pending.empty());
}

}  // namespace
}  // namespace arbiter::kueue
