// ScheduleKueue (core/kueue/kueue.h) over a whole cycle: its answer, hooks and determinism,
// and the user stories of KEP-1714.

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/generator/generator.h"
#include "core/kueue/kueue.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using ::arbiter::testing::IsOk;
using ::arbiter::testing::StatusIs;

using testing::Allocated;
using testing::Evicted;
using testing::FindQueue;
using testing::KueuePolicy;
using testing::RunKueue;
using testing::SnapshotBuilder;

// =================================================================================================
// ScheduleKueue's answer (SEMANTICS.md §6 KUEUE), its hooks, and determinism (§0.5).

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
  ASSERT_THAT(testing::ScheduleKueueWithHooks(TwoPodVictim(), KueuePolicy(), hooks), IsOk());
  EXPECT_EQ(phases, (std::vector<std::string>{"fair_share", "admission", "respond"}));

  for (int allowed : {0, 1, 2, 3}) {
    int calls = 0;
    CycleHooks cancelling;
    cancelling.cancelled = [&calls, allowed] { return calls++ >= allowed; };
    const absl::StatusOr<ScheduleResult> r =
        testing::ScheduleKueueWithHooks(TwoPodVictim(), KueuePolicy(), cancelling);
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kCancelled)) << allowed;
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

// =================================================================================================
// The user stories of KEP-1714 (the seed of SEMANTICS.md §5), run through ScheduleKueue from an
// empty cluster: the admitted usage the rounds reach is the fair division the story asks for.

constexpr char kGpu[] = "nvidia.com/gpu";

// Adds `count` one-GPU workloads to `queue`, named "<queue>-NNN", all created at once; admitted
// (at time 0) when `admitted`.
void OneGpuWorkloads(SnapshotBuilder& b, const std::string& queue, int count, bool admitted,
                     int first = 0) {
  for (int i = first; i < first + count; ++i) {
    char name[64];
    snprintf(name, sizeof(name), "%s-%03d", queue.c_str(), i);
    b.Group(name, queue).Pod({{kGpu, 1}});
    if (admitted) b.Admitted(0);
  }
}

// §5.3 check, KEP story 3: CS lends 300 GPUs; C1 and C2 split them 150/150; inside C1 the
// weight-3 queue 1C gets three times what 1A and 1B get (30/30/90); 2A alone gets C2's 150.
// KEP story 1: TeamE and TeamW each hold 10 guaranteed cpus and share the company pool of 100.
// TeamE took everything while TeamW was away; when TeamW submits, TeamE's least important
// workloads are preempted until both have the same extra space: 50 each on top of their 10.
TEST(KueueStoriesTest, Story1ReturningTeamGetsAnEqualShareOfThePool) {
  SnapshotBuilder b;
  b.Queue("company").Deserved({{"cpu", 100}});
  b.Queue("teamE", "company").Deserved({{"cpu", 10}});
  b.KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny);
  b.Queue("teamW", "company").Deserved({{"cpu", 10}});
  b.KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny);
  for (int i = 0; i <= 10; ++i) {
    b.Group("e-" + std::to_string(100 + i), "teamE").Priority(i).Pod({{"cpu", 10}}).Admitted(0);
  }
  for (int i = 0; i < 10; ++i) b.Group("w-" + std::to_string(100 + i), "teamW").Pod({{"cpu", 10}});
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(Allocated(result.queues, "teamE", "cpu"), 60);
  EXPECT_EQ(Allocated(result.queues, "teamW", "cpu"), 60);
  std::map<std::string, EvictionReason> expected;
  for (int i = 0; i < 5; ++i) {  // the five lowest priorities
    expected["e-" + std::to_string(100 + i)] = EvictionReason::kKueueInCohortFairSharing;
  }
  EXPECT_EQ(Evicted(result), expected);
}

// KEP story 2, first example: 1A's unused quota goes to its own department first. 1B's request
// stays within D1's quota, so it is admitted before 2A's, although 2A's is older and of higher
// priority; the other department's entry is left waiting.
TEST(KueueStoriesTest, Story2FreeQuotaStaysInTheDepartmentThatNeedsIt) {
  SnapshotBuilder b;
  b.Queue("company").Queue("D1", "company").Queue("D2", "company");
  for (const char* queue : {"1A", "1B", "1C"}) b.Queue(queue, "D1").Deserved({{"cpu", 10}});
  for (const char* queue : {"2A", "2B", "2C"}) b.Queue(queue, "D2").Deserved({{"cpu", 10}});
  for (const char* queue : {"1B", "1C", "2A", "2B", "2C"}) {
    b.Group(std::string(queue) + "-run", queue).Pod({{"cpu", 10}}).Admitted(0);
  }
  b.Group("1B-next", "1B").Priority(0).Created(5).Pod({{"cpu", 10}});
  b.Group("1C-next", "1C").Priority(0).Created(6).Pod({{"cpu", 10}});
  b.Group("2A-next", "2A").Priority(100).Created(0).Pod({{"cpu", 10}});
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(testing::Admitted(result), (std::set<std::string>{"1B-next"}));
  EXPECT_EQ(testing::PendingReasons(result).at("2A-next"), "no-preemption-candidates");
}

// KEP story 2, second example: D1 needs none of 1A's 30 unused cpus (1C's only request is too
// big ever to fit), so D2's teams share them equally: 2A had taken all 30, and 2B and 2C reclaim
// until each of the three borrows 10.
TEST(KueueStoriesTest, Story2UnneededQuotaIsSharedEquallyByTheOtherDepartment) {
  SnapshotBuilder b;
  b.Queue("company").Queue("D1", "company").Queue("D2", "company");
  b.Queue("1A", "D1").Deserved({{"cpu", 30}});
  b.Queue("1B", "D1").Deserved({{"cpu", 10}});
  b.Queue("1C", "D1").Deserved({{"cpu", 10}});
  b.Queue("2A", "D2").Deserved({{"cpu", 10}});
  for (const char* queue : {"2B", "2C"}) {
    b.Queue(queue, "D2").Deserved({{"cpu", 10}});
    b.KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny);
  }
  auto fives = [&b](const std::string& queue, int count, bool admitted) {
    for (int i = 0; i < count; ++i) {
      b.Group(queue + (admitted ? "-run-" : "-new-") + std::to_string(i), queue).Pod({{"cpu", 5}});
      if (admitted) b.Admitted(0);
    }
  };
  fives("1B", 2, true);
  fives("1C", 2, true);
  fives("2A", 8, true);
  fives("2B", 2, true);
  fives("2C", 2, true);
  fives("2B", 4, false);
  fives("2C", 4, false);
  b.Group("1C-huge", "1C").Pod({{"cpu", 100}});
  const ScheduleResult result = RunKueue(b.Build());
  EXPECT_EQ(Allocated(result.queues, "2A", "cpu"), 20);
  EXPECT_EQ(Allocated(result.queues, "2B", "cpu"), 20);
  EXPECT_EQ(Allocated(result.queues, "2C", "cpu"), 20);
  EXPECT_EQ(testing::PendingReasons(result).at("1C-huge"), "exceeds-max-quota");
  for (const auto& [group, reason] : Evicted(result)) {
    EXPECT_EQ(group.rfind("2A-run-", 0), 0u) << group;
  }
}

// Builds story 3's tree: org holds CS (one queue with 300 GPUs), C1 {1A, 1B, 1C weight 3} and
// C2 {2A}; the teams have no quota of their own and may reclaim from anyone.
SnapshotBuilder Story3Tree() {
  SnapshotBuilder b;
  b.Queue("org");
  b.Queue("CS", "org").Queue("cs-cq", "CS").Deserved({{kGpu, 300}});
  b.Queue("C1", "org");
  b.Queue("1A", "C1").Deserved({{kGpu, 0}});
  b.KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny);
  b.Queue("1B", "C1").Deserved({{kGpu, 0}});
  b.KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny);
  b.Queue("1C", "C1").Deserved({{kGpu, 0}}).FairSharingWeight(3);
  b.KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny);
  b.Queue("C2", "org");
  b.Queue("2A", "C2").Deserved({{kGpu, 0}});
  b.KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny);
  return b;
}

void ExpectStory3Division(const ScheduleResult& result) {
  EXPECT_EQ(Allocated(result.queues, "C1", kGpu), 150);
  EXPECT_EQ(Allocated(result.queues, "C2", kGpu), 150);
  EXPECT_EQ(Allocated(result.queues, "1A", kGpu), 30);
  EXPECT_EQ(Allocated(result.queues, "1B", kGpu), 30);
  EXPECT_EQ(Allocated(result.queues, "1C", kGpu), 90);
  EXPECT_EQ(Allocated(result.queues, "2A", kGpu), 150);
}

// §5.3 check, KEP story 3: C1 and C2 split CS's 300 GPUs 150/150; inside C1 the weight-3 queue
// 1C ends with three times what 1A and 1B keep (30/30/90); 2A alone gets C2's 150. C1's queues
// hold the whole pool at the start (1A 120, 1B 120, 1C 60) and 1C and 2A have long backlogs.
// Workloads admitted in a call are never preempted in it, so the division is reached by
// preempting 1A and 1B (and none of 1C: with weight 3 its share stays the lowest) while 1C and 2A
// are admitted.
TEST(KueueStoriesTest, Story3WeightedHierarchicalDivisionOfALentPool) {
  SnapshotBuilder b = Story3Tree();
  OneGpuWorkloads(b, "1A", 120, true);
  OneGpuWorkloads(b, "1B", 120, true);
  OneGpuWorkloads(b, "1C", 60, true);
  OneGpuWorkloads(b, "1C", 100, false, 60);
  OneGpuWorkloads(b, "2A", 200, false);
  const ScheduleResult result = RunKueue(b.Build());
  ExpectStory3Division(result);
  // Every victim was admitted before the call: 1A, 1B, or 1C's first 60.
  for (const auto& [group, reason] : Evicted(result)) {
    EXPECT_EQ(reason, EvictionReason::kKueueInCohortFairSharing) << group;
    EXPECT_TRUE(group.rfind("1A-", 0) == 0 || group.rfind("1B-", 0) == 0 ||
                (group.rfind("1C-0", 0) == 0 && group < "1C-060"))
        << group;
  }
}

// The same division when 1C already holds its 90: the weight keeps 1C out of the victims (with
// weight 1 its 90 would be the largest share in C1) while 2A takes 75 from each of 1A and 1B.
TEST(KueueStoriesTest, Story3WeightShieldsTheHeavierQueueFromPreemption) {
  SnapshotBuilder b = Story3Tree();
  OneGpuWorkloads(b, "1A", 105, true);
  OneGpuWorkloads(b, "1B", 105, true);
  OneGpuWorkloads(b, "1C", 90, true);
  OneGpuWorkloads(b, "2A", 200, false);
  const ScheduleResult result = RunKueue(b.Build());
  ExpectStory3Division(result);
  int from_1c = 0;
  for (const auto& [group, reason] : Evicted(result)) from_1c += group.rfind("1C-", 0) == 0;
  EXPECT_EQ(from_1c, 0);
}

}  // namespace
}  // namespace arbiter::kueue
