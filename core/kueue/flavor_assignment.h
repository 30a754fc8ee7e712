// Flavor assignment (SEMANTICS.md §5.8.5, §5.8.6): for a pending workload of a flavored
// ClusterQueue, a flavor for every (pod set, requested resource), tried in each resource group's
// flavor order, each classified by how its quota would be reached (fit, reclaim, preempt, no
// candidates, or not at all) and at which borrowing level, with the queue's flavor fungibility
// deciding when to stop and which attempt is best. The result is the workload's usage per cell,
// the cells it contests (not a fit) and the nomination's mode.
#pragma once

#include <string>
#include <vector>

#include "core/kueue/fair_preemption.h"
#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"

namespace arbiter::kueue {

// The flavor of each (pod set, resource group) of a nomination, as an index into the group's
// flavors (-1: the pod set requests nothing of the group): [pod set][group].
using FlavorPin = std::vector<std::vector<int>>;

// The cell of every requested resource of every pod set: [pod set][i] is the cell of
// pod_sets[s].request[i].
using PodSetCells = std::vector<std::vector<int>>;

struct FlavorAssignment {
  enum class Mode { kFit, kPreempt, kNoFit };
  Mode mode = Mode::kNoFit;
  std::string reason;  // NoFit: the pending reason code, and its sentence
  std::string message;
  Usage usage;                 // per cell, Σ over pod sets (name order); Fit and Preempt
  std::vector<int> contested;  // the cells not assigned as a fit, ascending
  PodSetCells cells;
  FlavorPin pin;
};

// assign(w, T, pin) of §5.8.6 for `workload` (a flavored queue's), on context.tree as it is (left
// as it was). `pin` (may be null) restricts each (pod set, group) to the flavor of an earlier
// nomination. The preemption oracle runs the §5.5 search per contested cell; its targets are
// discarded.
FlavorAssignment AssignFlavors(const PreemptionContext& context, const Workload& workload,
                               const FlavorPin* pin);

// The implicit group's cells for a legacy queue's workload: every requested resource of every pod
// set at the implicit flavor (cell r is resource r).
PodSetCells ImplicitCells(const Workload& workload);

}  // namespace arbiter::kueue
