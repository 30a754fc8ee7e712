// Kueue fair sharing (SEMANTICS.md §5): the model's entry points.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "core/api/arbiter.h"
#include "core/model.h"

namespace arbiter::kueue {

// The response's queue list for a validated snapshot (§5.3, §6 KUEUE): weighted_share,
// dominant_resource, borrowing, allocated and requested per queue, name order.
std::vector<QueueShare> ComputeKueueShares(const Snapshot& snapshot);

// Admission rounds and fair-sharing preemption (§5.4, §5.5) on a validated snapshot.
// Cancelled when hooks.cancelled() says so between rounds.
absl::StatusOr<ScheduleResult> ScheduleKueue(const Snapshot& snapshot, const Policy& policy,
                                             const CycleHooks& hooks);

}  // namespace arbiter::kueue
