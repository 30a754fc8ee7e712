// Eviction properties over generated KAI requests (issue 4; SEMANTICS.md §4.7–4.11, §0.7).
// Every case runs the default actions (allocate, consolidate, reclaim, preempt); a third of
// the cases generate pending groups that can run only by reclaim, and the multiplier varies.
#include <vector>

#include "clients/generator/random.h"
#include "core/api/arbiter.h"
#include "gtest/gtest.h"
#include "tests/property/property_runs.h"
#include "tests/property/property_support.h"

namespace arbiter::testing {
namespace {

using generator::GeneratorModel;

// The ping-pong property runs over at least 1,000 generated snapshots (issue 4).
constexpr int kCases = 1000;

void VaryPolicy(uint64_t index, Policy& policy) {
  generator::Rng rng(index * 15485863 + 3);
  policy.actions.clear();  // the default: allocate, consolidate, reclaim, preempt
  const uint64_t pick = rng.Below(4);
  if (pick == 1) policy.reclaimer_utilization_multiplier = 1.5;
  if (pick == 2) policy.consolidating_reclaim = false;
}

const std::vector<PropertyRun>& Runs() {
  static const std::vector<PropertyRun>* runs =
      new std::vector<PropertyRun>(RunPropertyCases(kCases, GeneratorModel::kKai, VaryPolicy));
  return *runs;
}

TEST(EvictionProperty, DecisionsApplyCleanly) {
  for (const PropertyRun& run : Runs()) {
    ASSERT_TRUE(run.first.ok()) << run.description << ": " << run.first.status();
    ASSERT_TRUE(run.applied.ok()) << run.description << ": " << run.applied.status();
    ASSERT_TRUE(run.second.ok()) << run.description << ": " << run.second.status();
  }
}

// §0.7: a non-preemptible group is never a victim, in any action.
TEST(EvictionProperty, NoNonPreemptiblePodEvicted) {
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok()) continue;
    const absl::Status status =
        CheckNonPreemptibleKept(run.request.snapshot, *run.first, FairnessModel::kKai);
    EXPECT_TRUE(status.ok()) << run.description << ": " << status;
  }
}

// §4.7: a group within its min-runtime is not evicted below its gang by reclaim or preempt.
TEST(EvictionProperty, NoMinRuntimeProtectedPodEvicted) {
  for (const PropertyRun& run : Runs()) {
    if (!run.applied.ok()) continue;
    const absl::Status status = CheckMinRuntime(run.request.snapshot, *run.applied, *run.first);
    EXPECT_TRUE(status.ok()) << run.description << ": " << status;
  }
}

// §4.8: every eviction makes room for a preemptor whose unit is bound in the same response.
TEST(EvictionProperty, EveryEvictionsPreemptorIsBound) {
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok()) continue;
    const absl::Status status = CheckPreemptorsBound(*run.first);
    EXPECT_TRUE(status.ok()) << run.description << ": " << status;
  }
}

// §4.5, §4.8: after the evictions are done, pipelined bindings leave no node over capacity, no
// queue over its limit and no gang partly placed.
TEST(EvictionProperty, CapacityLimitsAndGangsHoldAfterPipelinedBindings) {
  for (const PropertyRun& run : Runs()) {
    if (!run.applied.ok()) continue;
    absl::Status status = CheckNodeCapacity(run.request.snapshot, *run.applied);
    EXPECT_TRUE(status.ok()) << run.description << ": " << status;
    status = CheckQueueLimits(run.request.snapshot, *run.applied);
    EXPECT_TRUE(status.ok()) << run.description << ": " << status;
    status = CheckGangs(*run.applied, *run.first);
    EXPECT_TRUE(status.ok()) << run.description << ": " << status;
    status = CheckBindings(run.request.snapshot, *run.first);
    EXPECT_TRUE(status.ok()) << run.description << ": " << status;
  }
}

// §4.10: no group evicted to make room for P in one call evicts P in the next (the saturation
// check's purpose).
TEST(EvictionProperty, NoPingPongOverThousandSnapshots) {
  int checked = 0;
  for (const PropertyRun& run : Runs()) {
    if (!run.second.ok()) continue;
    ++checked;
    const absl::Status status = CheckNoPingPong(*run.first, *run.second);
    EXPECT_TRUE(status.ok()) << run.description << ": " << status;
  }
  EXPECT_GE(checked, 1000);
}

}  // namespace
}  // namespace arbiter::testing
