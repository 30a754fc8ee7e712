// Properties of the Kueue model on generated Kueue-shaped snapshots (issue 5): no queue or cohort
// beyond its limits at any level, preemption target sets all or nothing, no ping-pong between
// two calls, and decisions only where they may be made. (Determinism: kueue_schedule_test.)
#include <map>
#include <set>
#include <string>
#include <utility>

#include "core/kueue/fair_preemption.h"
#include "core/kueue/kueue.h"
#include "core/kueue/nomination.h"
#include "core/kueue/queue_shares.h"
#include "core/kueue/workload.h"
#include "gtest/gtest.h"
#include "tests/unit/kueue/kueue_generator.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using testing::BuildTree;
using testing::KueuePolicy;
using testing::RunKueue;

struct Generated {
  Snapshot snapshot;
  Policy policy;
};

std::vector<Generated> Cases() {
  std::vector<Generated> cases;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    testing::KueueShape shape;
    shape.divisions = 2 + seed % 3;
    shape.teams = 4 + seed % 5;
    shape.cluster_queues = 15 + 3 * seed;
    shape.admitted = 200 + 40 * seed;
    shape.pending = 60 + 5 * seed;
    shape.seed = seed;
    std::vector<KueuePreemptionStrategy> strategies;
    if (seed % 3 == 1) strategies = {KueuePreemptionStrategy::kLessThanOrEqualToFinalShare};
    if (seed % 3 == 2) strategies = {KueuePreemptionStrategy::kLessThanInitialShare};
    cases.push_back(Generated{testing::GenerateKueueSnapshot(shape), KueuePolicy(strategies)});
  }
  return cases;
}

// The snapshot after applying an answer: admitted groups hold quota (admitted at `now`),
// evicted ones are pending again.
Snapshot Apply(const Snapshot& snapshot, const ScheduleResult& result) {
  std::set<std::string> admitted, evicted;
  for (const Admission& a : result.admissions) admitted.insert(a.pod_group);
  for (const Eviction& e : result.evictions) evicted.insert(e.pod_group);
  Snapshot next = snapshot;
  for (PodGroup& group : next.pod_groups) {
    if (admitted.count(group.name)) {
      group.admitted = true;
      group.admission_time = next.now;
      for (Pod& pod : group.pods) pod.phase = PodPhase::kUnspecified;
    }
    if (evicted.count(group.name)) {
      group.admitted = false;
      group.admission_time.reset();
      for (Pod& pod : group.pods) {
        pod.node_name.clear();
        pod.phase = PodPhase::kUnspecified;
      }
    }
  }
  return next;
}

// §5.2: what each node stores in its parent stays within its borrowing limit, and the root
// within its quota, after the call's decisions. (The generated start respects them too.)
TEST(KueuePropertiesTest, NoQueueOrCohortExceedsItsLimitsAtAnyLevel) {
  for (const Generated& c : Cases()) {
    const ScheduleResult result = RunKueue(c.snapshot, c.policy);
    auto after = BuildTree(Apply(c.snapshot, result));
    const QuotaTree& tree = after->tree;
    for (int n = 0; n < tree.size(); ++n) {
      for (int r = 0; r < tree.resource_count(); ++r) {
        const double use = tree.usage(n, r);
        const double local = tree.local_quota(n, r);
        if (tree.parent(n) < 0) {
          EXPECT_LE(use, tree.subtree_quota(n, r)) << tree.name(n);
        } else if (tree.has_borrowing_limit(n, r)) {
          EXPECT_LE(std::max(0.0, use - local),
                    tree.subtree_quota(n, r) - local + tree.borrowing_limit(n, r))
              << tree.name(n) << " " << tree.resources().name(r);
        }
      }
    }
  }
}

// §5.5 step 8: a preemption search answers a complete target set or nothing. For every pending
// workload of the generated trees, nominated as a head: when it gets targets, evicting all of
// them makes it fit; and the search leaves the tree exactly as it found it.
TEST(KueuePropertiesTest, PreemptionTargetSetsAreAllOrNothing) {
  int with_targets = 0;
  for (const Generated& c : Cases()) {
    auto built = BuildTree(c.snapshot);
    QuotaTree& tree = built->tree;
    const std::vector<Workload> workloads = CollectWorkloads(*built->request);
    std::vector<char> available(workloads.size(), 0);
    for (size_t i = 0; i < workloads.size(); ++i) available[i] = workloads[i].admitted;
    CandidateIndex index = CandidateIndex::Build(workloads, built->queues, tree.resource_count());
    index.RefreshSums(workloads, available, {});
    auto buffers = MakeSearchBuffers(tree);
    PreemptionContext context;
    context.tree = &tree;
    context.workloads = &workloads;
    context.index = &index;
    context.available = &available;
    context.strategies = ResolveStrategies(c.policy);
    context.buffers = buffers.get();
    std::vector<double> before;
    for (int n = 0; n < tree.size(); ++n) {
      for (int r = 0; r < tree.resource_count(); ++r) before.push_back(tree.usage(n, r));
    }
    for (size_t i = 0; i < workloads.size(); ++i) {
      if (workloads[i].admitted || !workloads[i].has_pods) continue;
      const Nomination nomination = Nominate(context, static_cast<int>(i));
      std::vector<double> after;
      for (int n = 0; n < tree.size(); ++n) {
        for (int r = 0; r < tree.resource_count(); ++r) after.push_back(tree.usage(n, r));
      }
      ASSERT_EQ(after, before) << workloads[i].name();
      if (nomination.mode != NominationMode::kPreempt || nomination.targets.empty()) continue;
      ++with_targets;
      const size_t mark = tree.Mark();
      for (const PreemptionTarget& t : nomination.targets) {
        EXPECT_TRUE(available[t.workload]);
        tree.RemoveUsage(workloads[t.workload].cq, workloads[t.workload].usage);
      }
      EXPECT_TRUE(tree.Fits(workloads[i].cq, workloads[i].usage)) << workloads[i].name();
      tree.Rollback(mark);
    }
  }
  EXPECT_GT(with_targets, 0);
}

// §5.4 step 5.7: every eviction makes room for a group that was pending at the start of the
// call; the group is admitted after the evictions, or, when an entry ordered before it in the
// next round took the released quota first, still pending.
TEST(KueuePropertiesTest, EveryEvictionServesAPendingPreemptor) {
  int evictions = 0;
  for (const Generated& c : Cases()) {
    const ScheduleResult result = RunKueue(c.snapshot, c.policy);
    std::map<std::string, bool> admitted;
    for (const Admission& a : result.admissions) admitted[a.pod_group] = a.after_evictions;
    std::set<std::string> pending;
    for (const PendingPodGroup& p : result.pending) pending.insert(p.pod_group);
    for (const Eviction& e : result.evictions) {
      ++evictions;
      if (admitted.count(e.preemptor_pod_group)) {
        EXPECT_TRUE(admitted.at(e.preemptor_pod_group)) << e.preemptor_pod_group;
      } else {
        EXPECT_EQ(pending.count(e.preemptor_pod_group), 1u) << e.preemptor_pod_group;
      }
    }
  }
  EXPECT_GT(evictions, 0);  // the generated cases do preempt
}

// §5.4, §0.7: only pending groups are admitted, only admitted preemptible groups are evicted,
// never both, and every group not admitted at the end is either evicted or pending.
TEST(KueuePropertiesTest, DecisionsOnlyWhereTheyMayBeMade) {
  for (const Generated& c : Cases()) {
    const ScheduleResult result = RunKueue(c.snapshot, c.policy);
    std::map<std::string, const PodGroup*> groups;
    for (const PodGroup& g : c.snapshot.pod_groups) groups[g.name] = &g;
    std::set<std::string> admitted, evicted, pending;
    for (const Admission& a : result.admissions) {
      EXPECT_FALSE(groups.at(a.pod_group)->admitted) << a.pod_group;
      EXPECT_EQ(a.queue, groups.at(a.pod_group)->queue);
      admitted.insert(a.pod_group);
    }
    for (const Eviction& e : result.evictions) {
      const PodGroup& g = *groups.at(e.pod_group);
      EXPECT_TRUE(g.admitted) << e.pod_group;
      EXPECT_NE(g.preemptibility, Preemptibility::kNonPreemptible) << e.pod_group;
      evicted.insert(e.pod_group);
    }
    for (const PendingPodGroup& p : result.pending) pending.insert(p.pod_group);
    for (const auto& [name, group] : groups) {
      const int places = admitted.count(name) + evicted.count(name) + pending.count(name);
      EXPECT_EQ(places, group->admitted ? static_cast<int>(evicted.count(name)) : 1) << name;
    }
  }
}

// Issue 5, as Kueue proves for its strategies: apply the decisions and call again; no workload
// evicted for P in the first call evicts P in the second.
TEST(KueuePropertiesTest, NoPingPongBetweenCalls) {
  int second_call_evictions = 0;
  for (const Generated& c : Cases()) {
    const ScheduleResult first = RunKueue(c.snapshot, c.policy);
    std::set<std::pair<std::string, std::string>> first_pairs;  // (victim, preemptor)
    for (const Eviction& e : first.evictions) {
      first_pairs.emplace(e.pod_group, e.preemptor_pod_group);
    }
    const ScheduleResult second = RunKueue(Apply(c.snapshot, first), c.policy);
    for (const Eviction& e : second.evictions) {
      ++second_call_evictions;
      EXPECT_EQ(first_pairs.count({e.preemptor_pod_group, e.pod_group}), 0u)
          << e.pod_group << " evicted by " << e.preemptor_pod_group;
    }
  }
  EXPECT_GT(second_call_evictions, 0);  // the second calls do preempt
}

}  // namespace
}  // namespace arbiter::kueue
