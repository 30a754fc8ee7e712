// Nomination of a head workload (SEMANTICS.md §5.4 step 3): does it fit in its ClusterQueue now,
// could preemption make room (and with which targets, §5.5), or can it never fit this way.
#pragma once

#include <string>
#include <vector>

#include "core/kueue/fair_preemption.h"
#include "core/kueue/flavor_assignment.h"

namespace arbiter::kueue {

enum class NominationMode { kFit, kPreempt, kNoFit };

struct Nomination {
  NominationMode mode = NominationMode::kNoFit;
  // Cells whose request exceeds Available(cq) (Preempt), ascending.
  std::vector<int> contested;
  // Preempt: the §5.5 targets, empty when no target set works.
  std::vector<PreemptionTarget> targets;
  // NoFit, or Preempt without targets: the pending reason code and its sentence.
  std::string reason;
  std::string message;
  // A flavored queue's workload (§5.8.7), Fit or Preempt: the usage its flavor assignment gives
  // (the workload's usage from now on), each pod set's cells, and the flavors to pin a
  // re-nomination to.
  bool assigned = false;
  Usage usage;
  PodSetCells cells;
  FlavorPin pin;
};

// Nominates `workload` on context.tree as it is (the tree is restored before returning). A
// flavored queue's workload has its flavors assigned first (§5.8.7 step 1), restricted to `pin`
// when given (a re-nomination, step 3).
Nomination Nominate(const PreemptionContext& context, int workload, const FlavorPin* pin = nullptr);

// §5.4 step 3: walking up from cq with the need reduced by each node's LA, the first node that
// could hold `amount` of r without borrowing is not the root (reclaiming inside the tree helps).
bool MayReclaimInHierarchy(const QuotaTree& tree, int cq, int r, double amount);

}  // namespace arbiter::kueue
