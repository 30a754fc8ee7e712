// The KAI scheduling cycle (SEMANTICS.md §4): allocate, consolidate, reclaim, preempt.
#pragma once

#include "absl/status/statusor.h"
#include "core/api/arbiter.h"
#include "core/model.h"

namespace arbiter::kai {

// Runs Policy.actions (default allocate, consolidate, reclaim, preempt) on a validated snapshot
// and returns the response of §6. Cancelled when hooks.cancelled() says so between phases.
absl::StatusOr<ScheduleResult> ScheduleKai(const Snapshot& snapshot, const Policy& policy,
                                           const CycleHooks& hooks);

}  // namespace arbiter::kai
