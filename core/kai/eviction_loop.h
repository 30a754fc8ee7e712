// The loop shared by CONSOLIDATE, RECLAIM and PREEMPT (SEMANTICS.md §4.9-4.11): candidates in
// §4.3 order, a pre-check, the victim search of §4.8 (solver.h), and the pending outcome of a
// failure. The action's own rules come in through EvictionAction (eviction_action.h).
#pragma once

#include "core/kai/eviction_action.h"
#include "core/kai/pending_reasons.h"
#include "core/kai/session.h"
#include "core/kai/unit.h"

namespace arbiter::kai {

// Runs `action` until no candidate is left. A candidate whose unit is placed competes again
// while it has PENDING pods; its victims stop being candidates. A candidate whose unit needs no
// victim leaves untouched (placing it is ALLOCATE's job). A failed candidate leaves, with
// "; <name>: <outcome>" appended to its pending reason (or, without one, the placement reason of
// §4.5 on the current state).
void RunEvictionAction(Session& session, const EvictionAction& action);

// The placement reason for `unit` on the current state, as ALLOCATE would record it (quota first).
PendingReason ExplainUnitFailure(Session& session, int group, const Unit& unit);

}  // namespace arbiter::kai
