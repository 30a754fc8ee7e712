// Kueue fair sharing (SEMANTICS.md §5): the model's entry points.
//
// Guide to core/kueue/, in reading order:
//   flavor_cells.h            §5.8.1 flavor-resources: the cells every quota and usage is kept in
//   quota_tree.h              §5.2 subtree and local quota, usage bubbling, avail, pot, Fits
//   dominant_resource_share.h §5.3 DRS, weight 0, CompareDRS, "DRS with w" (§5.8.4 flavors)
//   workload.h                §5.1 a PodGroup as a Kueue workload (usage, pod sets, times, flags)
//   flavor_assignment.h       §5.8.5-§5.8.6 a flavor per pod set and resource group
//   nomination.h              §5.4 step 3: Fit, Preempt (with §5.5 targets) or NoFit
//   preemption_candidates.h   §5.5 steps 1-2: which workloads may be targets, in which order
//   preemption_order.h        §5.5 step 4: the ClusterQueue that gives the next target
//   fair_preemption.h         §5.5 the search: strategies, passes, all or nothing, fill-back
//   tournament.h              §5.4 step 4: the admission order of one root tree, incremental
//   admission.h               §5.4 rounds and the processing steps of each entry
//   pending_reasons.h         §6 sentences (codes: core/pending_reasons.h)
//   queue_shares.h            §6 the queue list of both answers
// kueue_shares.cc and kueue_schedule.cc implement the two functions below.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "core/cancel_poll.h"
#include "core/cycle_hooks.h"
#include "core/model.h"
#include "core/validated_snapshot.h"

namespace arbiter::kueue {

// The response's queue list for a validated request (§5.3, §6 KUEUE): weighted_share,
// dominant_resource, borrowing, allocated (bubbled Use of the admitted groups) and requested
// (allocated + the subtree's pending requests) per queue, name order; fair_share empty.
// O(groups · |R| + queues · |R|). When `poll` (may be null) reports the call cancelled, the
// result is incomplete: the caller checks poll->cancelled() and discards it.
std::vector<QueueShare> ComputeKueueShares(const ValidatedSnapshot& request,
                                           CancelPoll* poll = nullptr);

// Admission rounds and fair-sharing preemption (§5.4, §5.5) on a validated request, answered
// per §6: queues after the call's decisions, admissions and pending by pod_group, one eviction
// per pod by (pod_group, pod), no bindings. Calls hooks.phase_done with "fair_share",
// "admission" and "respond"; Cancelled when hooks.cancelled() says so before a phase or, asked
// every few milliseconds of work (core/cancel_poll.h), inside one. Deterministic; thread-safe (no
// shared state).
absl::StatusOr<ScheduleResult> ScheduleKueue(const ValidatedSnapshot& request,
                                             const CycleHooks& hooks);

}  // namespace arbiter::kueue
