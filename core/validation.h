// Every check on request data, in one pass (SEMANTICS.md §1).
#pragma once

#include "absl/status/status.h"
#include "core/cancel_poll.h"
#include "core/model.h"

namespace arbiter {

enum class RequestKind { kFairShares, kSchedule };

// The most that the quantities of one kind may sum to, per resource (issue 11): the requests of
// all pods, the allocatable amounts of all nodes, and under KUEUE the nominal quotas (deserved)
// of all queues. Every other sum the core forms (per group, node, queue or cohort, requested =
// allocated + pending, free once victims are gone) is at most a few of these totals, and the
// largest product (×1000 in dominant shares) stays finite too, so no amount in an answer is
// +Inf or NaN. A request past it is refused with the path of the value that crossed it, the
// maps walked in input order.
inline constexpr double kMaxQuantitySum = 1e300;

// OK, or InvalidArgument whose message starts with the field path of the first offence in the
// order of SEMANTICS.md §1 (input order within a list), each rule's sum check (kMaxQuantitySum)
// last in its rule, e.g.
// `snapshot.queues[3].parent: unknown queue "team-x"`. Paths use the proto field names
// ("snapshot.pod_groups[2].pods[0].requests[\"cpu\"]", "policy.actions[1]"). Names and keys
// from the request are echoed escaped and capped (core/echoed_name.h), so a message stays short.
// Deterministic: the same input gives the same message. Thread-safe; O(size of the snapshot).
// Cancelled (poll->status()) when `poll` (may be null) reports the call cancelled first.
absl::Status ValidateRequest(const Snapshot& snapshot, const Policy& policy, RequestKind kind,
                             CancelPoll* poll = nullptr);

}  // namespace arbiter
