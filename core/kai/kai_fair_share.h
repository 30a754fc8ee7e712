// KAI hierarchical fair share (SEMANTICS.md §2) with time-aware fairness (§3): reads the per-queue
// amounts of §0.7 that the scheduling cycle starts from, then has fair_share_division.h divide.
// The amounts themselves (Row, QueueAmounts, KaiFairShare) are in fair_share_rows.h.
#pragma once

#include "core/cancel_poll.h"
#include "core/kai/fair_share_rows.h"
#include "core/validated_snapshot.h"

namespace arbiter::kai {

// Computes the division of a validated request, which must outlive the result. O(queues · resources
// · rounds). When `poll` (may be null) reports the call cancelled, the division stops early and the
// result is incomplete: the caller checks poll->cancelled() and discards it.
KaiFairShare ComputeKaiFairShare(const ValidatedSnapshot& request, CancelPoll* poll = nullptr);

// sat(a, f) of §2.3: +inf if f == 0 < a; 0 if a == f == 0; else a / f.
double Saturation(double allocated, double fair_share);

}  // namespace arbiter::kai
