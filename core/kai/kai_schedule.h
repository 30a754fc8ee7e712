// The KAI scheduling cycle (SEMANTICS.md §4): allocate, consolidate, reclaim, preempt.
//
// A guide to the files, in the order data flows through a call:
//   kai_fair_share.h   the division of §2, computed once at the start (queues' fair shares).
//   session.h          everything a cycle works on, built once per call:
//     cluster.h          the snapshot interned: dense indices, resource vectors over R;
//     feasibility.h      node classes and pod signatures: which nodes a pod may use at all;
//     node_index.h       per class, nodes ordered by placement score (capacity_tree.h);
//     working_state.h    used / releasing / idle per node, allocations per queue, with
//                        statements (checkpoint, rollback, commit) for trying decisions.
//   queue_order.h      §4.3: which job goes next (queue chain, job order), kept incrementally;
//   unit.h             §4.2: the pods a job tries to place next;
//   quota_check.h      §4.4: limit and non-preemptible quota up the tree;
//   placement.h        §4.5: the node a pod takes, and placing a unit;
//   allocate.h         §4.6: ALLOCATE;
//   victims.h          §4.7: eligible victims, eviction units, the victim order;
//   eviction_action.h  the rules an eviction action states: CONSOLIDATE (consolidate.h),
//                      RECLAIM (reclaim.h, with the validator of §4.10), PREEMPT (preempt.h);
//   solver.h           §4.8: the victim search shared by the three eviction actions;
//   eviction_loop.h    the loop the three actions share, over the solver;
//   pending_reasons.h  §6: why a group stays pending;
//   response.h         §6: the decisions as a response.
#pragma once

#include "absl/status/statusor.h"
#include "core/cycle_hooks.h"
#include "core/model.h"
#include "core/validated_snapshot.h"

namespace arbiter::kai {

// Runs Policy.actions (default allocate, consolidate, reclaim, preempt) on a validated request
// and returns the response of §6: `queues` is the fair share at the start of the call, bindings
// and evictions are sorted by (pod_group, pod), pending by pod_group. Reports the phases
// "fair_share" (which includes building the session), each action's name and "respond" to
// hooks.phase_done; returns absl::CancelledError when hooks.cancelled() says so before a phase or,
// asked every few milliseconds of work (core/cancel_poll.h), inside one.
// Thread-safe (no shared state); deterministic (§0.5).
absl::StatusOr<ScheduleResult> ScheduleKai(const ValidatedSnapshot& request,
                                           const CycleHooks& hooks);

}  // namespace arbiter::kai
