// Eviction properties over generated KAI requests (issue 4; SEMANTICS.md §4.7–4.11, §0.7).
// Every case runs the default actions (allocate, consolidate, reclaim, preempt); a third of
// the cases generate pending groups that can run only by reclaim, and the multiplier varies.
#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/generator/random.h"
#include "core/api/arbiter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property/property_runs.h"
#include "tests/property/property_support.h"
#include "tests/support/status_matchers.h"

namespace arbiter::testing {
namespace {

using generator::GeneratorModel;

// The safety properties run over 300 generated snapshots, the ping-pong property over 1,000
// (issue 4), each scheduled twice. Each safety property also asserts how many cases exercised it
// (with the generator of today: 213 of 300 evict while a non-preemptible group runs, 160 evict by
// reclaim or preemption with a min-runtime set, 215 evict, 215 bind after evictions), with a
// floor of about half that. Each TEST is its own process under ctest, so each computes
// only the runs it needs.
constexpr int kCases = 300;
constexpr int kPingPongCases = 1000;

void VaryPolicy(uint64_t index, Policy& policy) {
  generator::Rng rng(index * 15485863 + 3);
  policy.actions.clear();  // the default: allocate, consolidate, reclaim, preempt
  const uint64_t pick = rng.Below(4);
  if (pick == 1) policy.reclaimer_utilization_multiplier = 1.5;
  if (pick == 2) policy.consolidating_reclaim = false;
}

const std::vector<PropertyRun>& Runs() {
  static const std::vector<PropertyRun>* runs = new std::vector<PropertyRun>(
      RunPropertyCases(kCases, GeneratorModel::kKai, VaryPolicy, /*second_call=*/false));
  return *runs;
}

const std::vector<PropertyRun>& PingPongRuns() {
  static const std::vector<PropertyRun>* runs = new std::vector<PropertyRun>(
      RunPropertyCases(kPingPongCases, GeneratorModel::kKai, VaryPolicy));
  return *runs;
}

// The cases whose first answer evicts for one of `reasons`, and whose snapshot also satisfies
// `also` (the other precondition of the property under test). Each safety property asserts a
// floor on its count, so that a generator or a policy change that stops the evictions cannot
// leave the property checking nothing.
int CasesExercised(const std::vector<EvictionReason>& reasons,
                   bool (*also)(const PropertyRun& run)) {
  int cases = 0;
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok()) continue;
    const bool evicts = std::any_of(
        run.first->evictions.begin(), run.first->evictions.end(), [&](const Eviction& e) {
          return std::find(reasons.begin(), reasons.end(), e.reason) != reasons.end();
        });
    if (evicts && also(run)) ++cases;
  }
  return cases;
}

const std::vector<EvictionReason> kEveryReason = {
    EvictionReason::kFairShareReclaim, EvictionReason::kQuotaReclaim,
    EvictionReason::kPriorityPreemption, EvictionReason::kConsolidation};

bool Always(const PropertyRun& /*run*/) { return true; }

bool HasRunningNonPreemptibleGroup(const PropertyRun& run) {
  for (const PodGroup& group : run.request.snapshot.pod_groups) {
    if (IsPreemptible(group, FairnessModel::kKai)) continue;
    for (const Pod& pod : group.pods) {
      if (!pod.node_name.empty()) return true;
    }
  }
  return false;
}

bool HasMinRuntimeQueue(const PropertyRun& run) {
  for (const Queue& queue : run.request.snapshot.queues) {
    if (queue.reclaim_min_runtime.has_value() || queue.preempt_min_runtime.has_value()) {
      return true;
    }
  }
  return false;
}

bool HasBindingAfterEvictions(const PropertyRun& run) {
  return std::any_of(run.first->bindings.begin(), run.first->bindings.end(),
                     [](const Binding& b) { return b.after_evictions; });
}

TEST(EvictionProperty, DecisionsApplyCleanly) {
  for (const PropertyRun& run : Runs()) {
    ASSERT_THAT(run.first, IsOk()) << run.description;
    ASSERT_THAT(run.applied, IsOk()) << run.description;
  }
}

// §0.7: a non-preemptible group is never a victim, in any action.
TEST(EvictionProperty, NoNonPreemptiblePodEvicted) {
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok()) continue;
    const absl::Status status =
        CheckNonPreemptibleKept(run.request.snapshot, *run.first, FairnessModel::kKai);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
  const int exercised = CasesExercised(kEveryReason, HasRunningNonPreemptibleGroup);
  EXPECT_GE(exercised, kCases / 3) << "only " << exercised << " of " << kCases
                                   << " cases evict while a non-preemptible group runs";
}

// §4.7: a group within its min-runtime is not evicted below its gang by reclaim or preempt.
TEST(EvictionProperty, NoMinRuntimeProtectedPodEvicted) {
  for (const PropertyRun& run : Runs()) {
    if (!run.applied.ok()) continue;
    const absl::Status status = CheckMinRuntime(run.request.snapshot, *run.applied, *run.first);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
  const int exercised =
      CasesExercised({EvictionReason::kFairShareReclaim, EvictionReason::kQuotaReclaim,
                      EvictionReason::kPriorityPreemption},
                     HasMinRuntimeQueue);
  EXPECT_GE(exercised, kCases / 4) << "only " << exercised << " of " << kCases
                                   << " cases evict by reclaim or preemption under a min-runtime";
}

// §6: bindings (moved pods among them) and evictions are listed by (pod_group, pod), each pod
// once. The KAI answer lists them by pod index, which is this order only because the cluster lays
// pods out by pod group name, then pod name; this checks it on answers that bind, move and evict.
TEST(EvictionProperty, BindingsAndEvictionsAreInPodOrder) {
  auto in_order = [](const auto& list) {
    for (size_t k = 1; k < list.size(); ++k) {
      const auto& a = list[k - 1];
      const auto& b = list[k];
      if (!(a.pod_group < b.pod_group || (a.pod_group == b.pod_group && a.pod < b.pod))) {
        return false;
      }
    }
    return true;
  };
  int moving = 0;  // answers with a moved pod among their bindings
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok()) continue;
    EXPECT_TRUE(in_order(run.first->bindings)) << run.description;
    EXPECT_TRUE(in_order(run.first->evictions)) << run.description;
    moving +=
        std::any_of(run.first->evictions.begin(), run.first->evictions.end(),
                    [](const Eviction& e) { return e.reason == EvictionReason::kConsolidation; });
  }
  EXPECT_GE(moving, 1) << "no answer moved a pod";
}

// §4.8: every eviction makes room for a preemptor whose unit is bound in the same response.
TEST(EvictionProperty, EveryEvictionsPreemptorIsBound) {
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok()) continue;
    const absl::Status status = CheckPreemptorsBound(*run.first);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
  const int exercised = CasesExercised(kEveryReason, Always);
  EXPECT_GE(exercised, kCases / 3) << "only " << exercised << " of " << kCases << " cases evict";
}

// §4.5, §4.8: after the evictions are done, pipelined bindings leave no node over capacity, no
// queue over its limit and no gang partly placed.
TEST(EvictionProperty, CapacityLimitsAndGangsHoldAfterPipelinedBindings) {
  for (const PropertyRun& run : Runs()) {
    if (!run.applied.ok()) continue;
    absl::Status status = CheckNodeCapacity(run.request.snapshot, *run.applied);
    EXPECT_THAT(status, IsOk()) << run.description;
    status = CheckQueueLimits(run.request.snapshot, *run.applied);
    EXPECT_THAT(status, IsOk()) << run.description;
    status = CheckGangs(*run.applied, *run.first);
    EXPECT_THAT(status, IsOk()) << run.description;
    status = CheckBindings(run.request.snapshot, *run.first);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
  const int exercised = CasesExercised(kEveryReason, HasBindingAfterEvictions);
  EXPECT_GE(exercised, kCases / 3)
      << "only " << exercised << " of " << kCases << " cases bind after evictions";
}

// §4.10: no group evicted to make room for P in one call evicts P in the next (the saturation
// check's purpose).
TEST(EvictionProperty, NoPingPongOverThousandSnapshots) {
  int checked = 0;
  std::map<EvictionReason, int> reasons;
  for (const PropertyRun& run : PingPongRuns()) {
    ASSERT_THAT(run.second, IsOk()) << run.description;
    ++checked;
    for (const Eviction& e : run.first->evictions) ++reasons[e.reason];
    const absl::Status status = CheckNoPingPong(*run.first, *run.second);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
  EXPECT_GE(checked, 1000);
  // The generated cases do evict, by reclaim and by preemption: the property is not vacuous.
  EXPECT_GT(reasons[EvictionReason::kFairShareReclaim] + reasons[EvictionReason::kQuotaReclaim], 0);
  EXPECT_GT(reasons[EvictionReason::kPriorityPreemption], 0);
  for (const auto& [reason, count] : reasons) {
    ::testing::Test::RecordProperty(absl::StrCat("evictions_reason_", static_cast<int>(reason)),
                                    count);
  }
}

}  // namespace
}  // namespace arbiter::testing
