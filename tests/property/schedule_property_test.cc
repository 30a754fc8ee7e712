// Scheduling-cycle properties over generated KAI requests (issue 3; SEMANTICS.md §4, §6, §0.5).
// Each case is scheduled once, its decisions applied (tests/support/apply_decisions.h), and the
// invariants checked on the result.
#include <vector>

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

constexpr int kCases = 300;

// A third of the cases allocate only, a third use spread placement (§4.5).
void VaryPolicy(uint64_t index, Policy& policy) {
  generator::Rng rng(index * 104729 + 7);
  switch (rng.Below(3)) {
    case 0:
      policy.actions = {Action::kAllocate};
      break;
    case 1:
      policy.placement = Placement::kSpread;
      break;
    default:
      break;
  }
}

const std::vector<PropertyRun>& Runs() {
  static const std::vector<PropertyRun>* runs =
      new std::vector<PropertyRun>(RunPropertyCases(kCases, GeneratorModel::kKai, VaryPolicy,
                                                    /*second_call=*/false));
  return *runs;
}

TEST(ScheduleProperty, DecisionsApplyCleanly) {
  for (const PropertyRun& run : Runs()) {
    ASSERT_THAT(run.first, IsOk()) << run.description;
    ASSERT_THAT(run.applied, IsOk()) << run.description;
  }
}

// §4.5: a node never holds more than its allocatable once the decisions are applied (pipelined
// bindings included, their evictions done), unless it already did.
TEST(ScheduleProperty, NoNodeOverAllocatable) {
  for (const PropertyRun& run : Runs()) {
    if (!run.applied.ok()) continue;
    const absl::Status status = CheckNodeCapacity(run.request.snapshot, *run.applied);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
}

// §4.4: no queue is over its limit at any level.
TEST(ScheduleProperty, NoQueueOverLimitAtAnyLevel) {
  for (const PropertyRun& run : Runs()) {
    if (!run.applied.ok()) continue;
    const absl::Status status = CheckQueueLimits(run.request.snapshot, *run.applied);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
}

// §4.2, §6: a unit's bindings are all present or none, so no gang is partly placed.
TEST(ScheduleProperty, NoGangPartlyPlaced) {
  for (const PropertyRun& run : Runs()) {
    if (!run.applied.ok()) continue;
    const absl::Status status = CheckGangs(*run.applied, *run.first);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
}

// §6: a pod appears at most once in bindings; §4.5: only on a node it may use.
TEST(ScheduleProperty, NoPodBoundTwiceAndOnlyToFeasibleNodes) {
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok()) continue;
    const absl::Status status = CheckBindings(run.request.snapshot, *run.first);
    EXPECT_THAT(status, IsOk()) << run.description;
  }
}

// §0.5: the same request gives the same answer, whatever the order of its repeated fields.
TEST(ScheduleProperty, SameRequestGivesSameAnswerInAnyInputOrder) {
  int index = 0;
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok() || index++ % 2 != 0) continue;  // every other case keeps this quick
    auto again = Schedule(run.request.snapshot, run.request.policy);
    auto permuted = Schedule(Permuted(run.request.snapshot, run.index), run.request.policy);
    ASSERT_THAT(again, IsOk());
    ASSERT_THAT(permuted, IsOk()) << run.description;
    EXPECT_EQ(DiffResults(*run.first, *again), "") << run.description;
    EXPECT_EQ(DiffResults(*run.first, *permuted), "") << run.description << " (permuted input)";
  }
}

// The generated clusters are busy: the properties above are not checked on empty answers.
TEST(ScheduleProperty, GeneratedCasesBindAndLeavePending) {
  size_t bindings = 0, pending = 0;
  for (const PropertyRun& run : Runs()) {
    if (!run.first.ok()) continue;
    bindings += run.first->bindings.size();
    pending += run.first->pending.size();
  }
  EXPECT_GT(bindings, 0u);
  EXPECT_GT(pending, 0u);
}

}  // namespace
}  // namespace arbiter::testing
