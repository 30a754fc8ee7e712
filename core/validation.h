// Every check on request data, in one pass (SEMANTICS.md §1).
#pragma once

#include "absl/status/status.h"
#include "core/cancel_poll.h"
#include "core/model.h"

namespace arbiter {

enum class RequestKind { kFairShares, kSchedule };

// OK, or InvalidArgument whose message starts with the field path of the first offence in the
// order of SEMANTICS.md §1 (input order within a list), e.g.
// `snapshot.queues[3].parent: unknown queue "team-x"`. Paths use the proto field names
// ("snapshot.pod_groups[2].pods[0].requests[\"cpu\"]", "policy.actions[1]").
// Deterministic: the same input gives the same message. Thread-safe; O(size of the snapshot).
// Cancelled (poll->status()) when `poll` (may be null) reports the call cancelled first.
absl::Status ValidateRequest(const Snapshot& snapshot, const Policy& policy, RequestKind kind,
                             CancelPoll* poll = nullptr);

}  // namespace arbiter
