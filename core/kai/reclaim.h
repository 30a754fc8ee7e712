// The RECLAIM action (SEMANTICS.md §4.10): a group whose leaf stays within its fair share with
// the unit may evict groups of other leaves, by fair-share reclaim (the victim's side, where the
// two paths diverge, is above its allocatable share) or quota reclaim (the reclaimer's side stays
// within deserved while the victim's is above it), under the saturation guard.
#pragma once

#include "core/kai/session.h"
#include "core/kai/solver.h"

namespace arbiter::kai {

void Reclaim(Session& session);

// The validator of §4.10 on `attempt`'s evicted units, with allocations as they stood at the
// start of the attempt (`solver`): sets each unit's reason and message, and returns false when
// a unit fails both strategies, the saturation guard fails, or a non-preemptible reclaimer would
// leave deserved.
bool ValidateReclaim(const Session& session, const Solver& solver, Attempt& attempt);

// Whether ValidateReclaim rejects every attempt of `preemptor` with victims `victims` (S) that
// evicts at least the units `open` does not mark (EvictionAction::RejectsEveryTryEvicting): true
// when one of them fails both strategies. Sets no reason or message.
bool ReclaimRejectsEveryTryEvicting(const Session& session, const Solver& solver, int preemptor,
                                    const std::vector<double>& unit_requests,
                                    const std::vector<EvictionUnit>& victims,
                                    const std::vector<bool>& open);

}  // namespace arbiter::kai
