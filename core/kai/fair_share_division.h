// The division of §2.2, with the time-aware weights of §3: each level of the queue tree divides
// what its parent received among its children, resource by resource (deserved first, then
// weighted over-quota rounds by priority group, then the remainder).
#pragma once

#include "core/cancel_poll.h"
#include "core/kai/fair_share_rows.h"
#include "core/validated_snapshot.h"

namespace arbiter::kai {

// Writes every queue's fair_share into `shares`, whose total and per-queue deserved, limit,
// over_quota_weight and requested are already filled. The top level divides shares.total; every
// parent, top down, divides its own fair share. When `poll` reports the call cancelled, the
// division stops early and the shares are incomplete: the caller checks poll.cancelled().
void DivideFairShares(const ValidatedSnapshot& request, KaiFairShare& shares, CancelPoll& poll);

// §2.2: whether two fractions of the remainder order are equal: their difference is at most
// 1e-9 · max(1, |a|, |b|), so that floating-point noise never decides an order that the
// creation-time and name tie-break is meant to decide.
bool FractionsTie(double a, double b);

}  // namespace arbiter::kai
