// The loop shared by CONSOLIDATE, RECLAIM and PREEMPT (SEMANTICS.md §4.9-4.11): candidates in
// §4.3 order, a pre-check, the victim search of §4.8, and the pending outcome of a failure.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/kai/session.h"
#include "core/kai/solver.h"
#include "core/kai/unit.h"

namespace arbiter::kai {

struct EvictionAction {
  std::string_view name;  // "consolidate", "reclaim", "preempt": prefixes pending outcomes
  // Which ready groups with a unit are candidates.
  std::function<bool(int group)> candidate;
  // Checked when the candidate comes up: nullopt to go on, else why it is skipped (appended to
  // an earlier pending reason, if any).
  std::function<std::optional<std::string>(int group, const Unit& unit)> precheck;
  // The solver's options for one preemptor.
  std::function<SolverOptions(int group)> options;
  // When set, the victims' eligibility does not depend on the preemptor: one victim order is
  // built per state and shared by the candidates (rebuilt after every placed unit).
  std::function<bool(int group)> shared_eligible;
};

// Runs the action until no candidate is left. A candidate whose unit is placed competes again
// while it has PENDING pods; its victims stop being candidates. A candidate whose unit needs no
// victim leaves untouched (placing it is ALLOCATE's job). A failed candidate leaves, with
// "; <name>: <outcome>" appended to its pending reason (or, without one, the placement reason of
// §4.5 on the current state).
void RunEvictionAction(Session& session, const EvictionAction& action);

// The placement reason for `unit` on the current state, as ALLOCATE would record it (quota first).
PendingReason ExplainUnitFailure(Session& session, int group, const Unit& unit);

}  // namespace arbiter::kai
