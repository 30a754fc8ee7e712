// The core's entry points: start here. Both validate the request (core/validation.h) and then
// dispatch on Policy.fairness_model to the KAI (core/kai/) or Kueue (core/kueue/) model.
//
// Pure functions of their arguments: no clock, no I/O, no global state; safe to call from any
// number of threads at once. Equal arguments give equal results (SEMANTICS.md §0.5).
#pragma once

#include "absl/status/statusor.h"
#include "core/cycle_hooks.h"
#include "core/model.h"
#include "core/validation.h"

namespace arbiter {

// Fair shares of every queue (SEMANTICS.md §2, §3, §5.3, §6).
// InvalidArgument with a field path for bad input or a request beyond `bounds`; Cancelled when
// hooks.cancelled said so.
absl::StatusOr<FairShareResult> ComputeFairShares(const Snapshot& snapshot, const Policy& policy,
                                                  const CycleHooks& hooks = {},
                                                  const RequestBounds& bounds = {});

// One scheduling cycle (SEMANTICS.md §4 for KAI, §5.4 for Kueue, §6 for the answer).
// InvalidArgument with a field path for bad input or a request beyond `bounds`; Cancelled when
// hooks.cancelled said so.
absl::StatusOr<ScheduleResult> Schedule(const Snapshot& snapshot, const Policy& policy,
                                        const CycleHooks& hooks = {},
                                        const RequestBounds& bounds = {});

}  // namespace arbiter
