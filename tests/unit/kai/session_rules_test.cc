// The working-state rules of SEMANTICS.md §4.1 (pipelined claims, restored victims) and the
// decision rules pinned by comparing the cycle with KAI's code (§4.3's candidate condition, §4.1
// over §4.8). Each test names the rule it holds in place.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/kai_schedule.h"
#include "core/kai/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/validated.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::Bindings;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::Pending;
using ::arbiter::testing::PolicyWith;
using ::arbiter::testing::RunCycle;
using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// "pod@node for preemptor" per eviction.
std::vector<std::string> Evictions(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Eviction& e : result.evictions) {
    out.push_back(absl::StrCat(e.pod, "@", e.node, " for ", e.preemptor_pod_group));
  }
  return out;
}

// ---- §4.1: a pod bound with after_evictions claims releasing capacity first ----

// One node's statements, on a fixture of two 2-GPU nodes: "v" runs 1 GPU on n1.
struct TwoNodes {
  Snapshot snapshot = SnapshotBuilder()
                          .Node("n1", Gpu(2))
                          .Node("n2", Gpu(2))
                          .Queue("team")
                          .Group("v", "team")
                          .RunningPods(1, Gpu(1), "n1")
                          .Group("job", "team")
                          .MinMember(2)
                          .Pods(2, Gpu(1))
                          .Build();
  const ValidatedSnapshot request = testing::MustValidate(snapshot, Policy{});
  KaiFairShare shares = ComputeKaiFairShare(request);
  Session session{shares};
  const Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  int gpu = cluster.NodeSpaceOf(cluster.resources().Find("nvidia.com/gpu"));
  int Group(const std::string& name) const {
    for (int g = 0; g < cluster.num_groups(); ++g) {
      if (cluster.group_name(g) == name) return g;
    }
    return -1;
  }
};

// The pod would fit now on n1's idle GPU, but it is bound with after_evictions: it takes the GPU
// that v releases, and the idle GPU stays idle for the next pod. (Regression: it took the idle
// GPU, left the releasing one unclaimed, and the next pod lost the fits-now band on n1.)
TEST(PipelinedClaim, APipelinedPodThatFitsNowTakesReleasingCapacityFirst) {
  TwoNodes f;
  f.state.Evict(f.cluster.group(f.Group("v")).first_pod);
  ASSERT_EQ(f.state.idle(0, f.gpu), 1);
  ASSERT_EQ(f.state.releasing(0, f.gpu), 1);
  const int job = f.Group("job");
  f.state.Bind(f.state.pending_pod(job, 0), 0, /*after_evictions=*/true);
  EXPECT_EQ(f.state.idle(0, f.gpu), 1);
  EXPECT_EQ(f.state.releasing(0, f.gpu), 0);
  EXPECT_TRUE(f.session.placer().Choose(f.state.pending_pod(job, 0)).fits_now);
}

// A pod bound now and then pipelined with its gang (§4.5) is accounted as KAI re-pipelines it
// on its node: it gives back its idle capacity and claims the releasing capacity first.
TEST(PipelinedClaim, APodPipelinedWithItsGangTakesReleasingCapacityFirst) {
  TwoNodes f;
  f.state.Evict(f.cluster.group(f.Group("v")).first_pod);
  const int job = f.Group("job");
  const int pod = f.state.pending_pod(job, 0);
  f.state.Bind(pod, 0, /*after_evictions=*/false);
  ASSERT_EQ(f.state.idle(0, f.gpu), 0);
  f.state.MarkPipelined(pod);
  EXPECT_TRUE(f.state.after_evictions(pod));
  EXPECT_EQ(f.state.idle(0, f.gpu), 1);
  EXPECT_EQ(f.state.releasing(0, f.gpu), 0);
}

// A moved victim claims releasing capacity first too.
TEST(PipelinedClaim, AMovedVictimTakesReleasingCapacityFirst) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(2))
                   .Node("n2", Gpu(2))
                   .Queue("team")
                   .Group("a", "team")
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("b", "team")
                   .RunningPods(1, Gpu(1), "n2")
                   .Build();
  const ValidatedSnapshot request = testing::MustValidate(s, Policy{});
  KaiFairShare shares = ComputeKaiFairShare(request);
  Session session{shares};
  const Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  const int gpu = cluster.NodeSpaceOf(cluster.resources().Find("nvidia.com/gpu"));
  state.Evict(cluster.group(0).first_pod);  // a leaves n1
  state.Evict(cluster.group(1).first_pod);  // b leaves n2: 1 idle, 1 releasing there
  state.Relocate(cluster.group(0).first_pod, 1);
  EXPECT_EQ(state.idle(1, gpu), 1);
  EXPECT_EQ(state.releasing(1, gpu), 0);
}

// The cycle end to end (PREEMPT, spread): "low" must go for "high" to pass its queue's limit.
// high's first pod fits now on n1 but is pipelined, so it takes the GPU low releases; its second
// pod then fits now on n1 as well. (Regression: the second pod went to n2.)
TEST(PipelinedClaim, TheNextPodOfTheUnitKeepsTheFitsNowBand) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(2))
                   .Node("n2", Gpu(2))
                   .Queue("team")
                   .Limit(Gpu(2))
                   .Queue("other")
                   .Group("low", "team")
                   .Priority(10)
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("held", "other")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .RunningPods(1, Gpu(1), "n2")
                   .Group("high", "team")
                   .Priority(50)
                   .MinMember(2)
                   .Pods(2, Gpu(1))
                   .Build();
  ScheduleResult result =
      RunCycle(s, PolicyWith({Action::kAllocate, Action::kPreempt}, Placement::kSpread));
  EXPECT_THAT(Bindings(result), ElementsAre("high-0@n1+", "high-1@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("low-0@n1 for high"));
}

// ALLOCATE's whole-gang pipelining, end to end (spread): "gang" binds its first pod now on n1 and
// its second, pipelined, on n2; the whole gang is then pipelined, so its first pod claims what n1
// releases and leaves n1's idle GPU to "next", which is bound now. (Regression: the first pod
// kept n1's idle GPU and "next" was pipelined onto the releasing one.)
TEST(PipelinedClaim, AGangPipelinedAsAWholeLeavesIdleCapacityToTheNextJob) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(2))
                   .Node("n2", Gpu(1))
                   .Queue("team")
                   .Group("leaving", "team")
                   .Pod(Gpu(1), "n1", PodPhase::kReleasing)
                   .Pod(Gpu(1), "n2", PodPhase::kReleasing)
                   .Group("gang", "team")
                   .Created(1)
                   .MinMember(2)
                   .Pods(2, Gpu(1))
                   .Group("next", "team")
                   .Created(2)
                   .Pods(1, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate}, Placement::kSpread));
  EXPECT_THAT(Bindings(result), ElementsAre("gang-0@n1+", "gang-1@n2+", "next-0@n1"));
}

// ---- §4.1: a victim re-placed on its own node is restored ----

// "high" needs 2 GPUs of n1: the victim search draws v1 (not enough alone), then v2, and tries
// both. high takes v2's GPUs; v1 is re-placed on n1, its own node, so it is restored: RUNNING
// there, not in the answer, and a victim again. "later" then preempts it. (Regression: v1 stayed
// "moved" in the working state, was never a victim again, and "later" stayed pending.)
TEST(RestoredVictim, AVictimReplacedOnItsOwnNodeIsRestoredAndCanBeEvictedLater) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(3))
                   .Queue("team")
                   .Group("v1", "team")
                   .Priority(0)
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("v2", "team")
                   .Priority(1)
                   .RunningPods(1, Gpu(2), "n1")
                   .Group("high", "team")
                   .Priority(10)
                   .Created(10)
                   .Pods(1, Gpu(2))
                   .Group("later", "team")
                   .Priority(10)
                   .Created(20)
                   .Pods(1, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kPreempt}));
  EXPECT_THAT(Bindings(result), ElementsAre("high-0@n1+", "later-0@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("v1-0@n1 for later", "v2-0@n1 for high"));
  EXPECT_THAT(result.pending, IsEmpty());
}

// The restore in the working state: the pod is RUNNING again on its node, counted for its queue,
// and its node's releasing capacity no longer holds its requests.
TEST(RestoredVictim, RestoreUndoesTheEviction) {
  TwoNodes f;
  const int v = f.Group("v");
  const int pod = f.cluster.group(v).first_pod;
  const int team = f.cluster.tree().Find("team");
  const int gpu = f.cluster.resources().Find("nvidia.com/gpu");
  f.state.Evict(pod);
  f.state.Restore(pod);
  EXPECT_EQ(f.state.pod_state(pod), PodState::kRunning);
  EXPECT_EQ(f.state.running(v), 1);
  EXPECT_EQ(f.state.evicted(v), 0);
  EXPECT_EQ(f.state.moved(v), 0);
  EXPECT_EQ(f.state.allocated(team)[gpu], 1);
  EXPECT_EQ(f.state.idle(0, f.gpu), 1);
  EXPECT_EQ(f.state.releasing(0, f.gpu), 0);
}

// A pipelined claim on the releasing capacity the victim's eviction made takes the shortfall
// from idle once the victim is restored, so the node's free capacity stays exact.
TEST(RestoredVictim, AClaimOnTheVictimsReleasingCapacityMovesToIdle) {
  TwoNodes f;
  const int pod = f.cluster.group(f.Group("v")).first_pod;
  f.state.Evict(pod);
  const int job = f.Group("job");
  f.state.Bind(f.state.pending_pod(job, 0), 0, /*after_evictions=*/true);  // claims v's GPU
  f.state.Restore(pod);
  EXPECT_EQ(f.state.idle(0, f.gpu), 0);
  EXPECT_EQ(f.state.releasing(0, f.gpu), 0);
  EXPECT_EQ(f.state.free(0, f.gpu), 0);
}

// ---- Pinned decision rules ----

// §4.3, pinned: an action's own condition on candidates is checked when the job comes up. Until
// then the job is its queue's job in the comparisons (KAI pops it, then skips it). team-a's best
// job "big" cannot reclaim (2 GPUs above its fair share of 1) but still stands for team-a, which
// is then not starved, so team-b's "b" comes first and reclaims the one evictable GPU; team-a's
// "small" comes after and finds no victim. Filtering "big" out beforehand would let team-a (the
// older queue, starved with "small") go first instead.
TEST(PinnedRules, AnActionsCandidateConditionIsCheckedWhenTheJobComesUp) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(2))
                   .Queue("team-a")
                   .QueueCreated(1)
                   .Deserved(Gpu(1))
                   .Queue("team-b")
                   .QueueCreated(2)
                   .Deserved(Gpu(1))
                   .Queue("team-c")
                   .QueueCreated(3)
                   .Deserved(Gpu(0))
                   .Group("held", "team-c")
                   .Preemptible(Preemptibility::kNonPreemptible)
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("v", "team-c")
                   .RunningPods(1, Gpu(1), "n1")
                   .Group("big", "team-a")
                   .Priority(10)
                   .Pods(1, Gpu(2))
                   .Group("small", "team-a")
                   .Priority(5)
                   .Pods(1, Gpu(1))
                   .Group("b", "team-b")
                   .Pods(1, Gpu(1))
                   .Build();
  ScheduleResult result = RunCycle(s, PolicyWith({Action::kAllocate, Action::kReclaim}));
  EXPECT_THAT(Bindings(result), ElementsAre("b-0@n1+"));
  EXPECT_THAT(Evictions(result), ElementsAre("v-0@n1 for b"));
  EXPECT_THAT(Pending(result),
              ElementsAre("big:insufficient-resources", "small:insufficient-resources"));
}

// §4.1 over §4.8, pinned: without ALLOCATE in the call, an eviction action never places a unit
// that needs no victim, even one that fits only on capacity this response's evictions release.
// job-1 reclaims the gang; job-2 would fit on what the gang releases, and stays pending.
TEST(PinnedRules, WithoutAllocateAUnitThatNeedsNoVictimStaysPending) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(4))
                   .Group("gang", "team-b")
                   .MinMember(4)
                   .RunningPods(4, Gpu(2), "n1")
                   .Group("job-1", "team-a")
                   .Pods(1, Gpu(2))
                   .Group("job-2", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  const std::vector<std::vector<Action>> lists = {{Action::kReclaim},
                                                  {Action::kReclaim, Action::kPreempt},
                                                  {Action::kReclaim, Action::kConsolidate}};
  for (const std::vector<Action>& actions : lists) {
    SCOPED_TRACE(actions.size());
    ScheduleResult result = RunCycle(s, PolicyWith(actions));
    EXPECT_THAT(Bindings(result), ElementsAre("job-1-0@n1+"));
    EXPECT_EQ(result.evictions.size(), 4u);
    EXPECT_THAT(Pending(result), ElementsAre("job-2:not-attempted"));
  }
}

// ---- The victim search's counters (CycleHooks::phase_counters) ----

// Every eviction action reports its counters once, before its phase ends; ALLOCATE does not.
// One reclaimer, placed after drawing the gang that holds the node.
TEST(SearchCounters, EachEvictionActionReportsWhatItsSearchDid) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", Gpu(8))
                   .Queue("team-a")
                   .Deserved(Gpu(4))
                   .Queue("team-b")
                   .Deserved(Gpu(4))
                   .Group("gang", "team-b")
                   .MinMember(4)
                   .RunningPods(4, Gpu(2), "n1")
                   .Group("job", "team-a")
                   .Pods(1, Gpu(2))
                   .Build();
  std::map<std::string, std::map<std::string, int64_t>> reported;
  std::vector<std::string> order;
  CycleHooks hooks;
  hooks.phase_counters = [&](std::string_view phase,
                             const std::vector<std::pair<std::string_view, int64_t>>& counters) {
    order.emplace_back(phase);
    for (const auto& [name, value] : counters)
      reported[std::string(phase)][std::string(name)] = value;
  };
  hooks.phase_done = [&](std::string_view phase) { order.push_back("done " + std::string(phase)); };
  absl::StatusOr<ScheduleResult> result = ScheduleKai(
      testing::MustValidate(s, PolicyWith({Action::kAllocate, Action::kReclaim, Action::kPreempt})),
      hooks);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(order, ElementsAre("done fair_share", "done allocate", "reclaim", "done reclaim",
                                 "preempt", "done preempt", "done respond"));
  EXPECT_EQ(reported["reclaim"]["candidates"], 1);
  EXPECT_EQ(reported["reclaim"]["placed"], 1);
  EXPECT_EQ(reported["reclaim"]["failed"], 0);
  EXPECT_EQ(reported["reclaim"]["victims_drawn"], 1);  // the whole gang is one eviction unit
  EXPECT_GE(reported["reclaim"]["tries"], 2);          // without victims, then with the gang
  EXPECT_EQ(reported["preempt"]["candidates"], 0);
  EXPECT_EQ(reported["preempt"].size(), 8u);
}

}  // namespace
}  // namespace arbiter::kai
