#include "core/kueue/nomination.h"

#include "absl/strings/str_cat.h"
#include "core/echoed_name.h"
#include "core/kueue/pending_reasons.h"

namespace arbiter::kueue {

bool MayReclaimInHierarchy(const QuotaTree& tree, int cq, int r, double amount) {
  double need = amount;
  for (int node = cq; node >= 0; node = tree.parent(node)) {
    if (tree.usage(node, r) + need <= tree.subtree_quota(node, r)) return tree.parent(node) >= 0;
    need -= tree.LocalAvailable(node, r);
  }
  return false;
}

namespace {

// §5.8.7 step 1: the flavor assignment decides the mode; a Preempt has its targets searched over
// the assignment's usage and contested cells.
Nomination NominateFlavored(const PreemptionContext& context, const Workload& w,
                            const FlavorPin* pin) {
  FlavorAssignment assignment = AssignFlavors(context, w, pin);
  Nomination nomination;
  if (assignment.mode == FlavorAssignment::Mode::kNoFit) {
    nomination.mode = NominationMode::kNoFit;
    nomination.reason = std::move(assignment.reason);
    nomination.message = std::move(assignment.message);
    return nomination;
  }
  nomination.assigned = true;
  nomination.usage = std::move(assignment.usage);
  nomination.cells = std::move(assignment.cells);
  nomination.pin = std::move(assignment.pin);
  if (assignment.mode == FlavorAssignment::Mode::kFit) {
    nomination.mode = NominationMode::kFit;
    return nomination;
  }
  nomination.mode = NominationMode::kPreempt;
  nomination.contested = std::move(assignment.contested);
  Workload preemptor = w;
  preemptor.usage = nomination.usage;
  nomination.targets = FindFairSharingTargets(context, preemptor, nomination.contested);
  if (nomination.targets.empty()) {
    const int cell = nomination.contested.front();
    nomination.reason = kNoPreemptionCandidates;
    nomination.message =
        absl::StrCat(ShortfallMessage(*context.tree, w.cq, cell, preemptor.Amount(cell)),
                     ", and no workload can be preempted to make room");
  }
  return nomination;
}

}  // namespace

Nomination Nominate(const PreemptionContext& context, int workload, const FlavorPin* pin) {
  const QuotaTree& tree = *context.tree;
  const Workload& w = (*context.workloads)[workload];
  if (w.flavored) return NominateFlavored(context, w, pin);
  const int cq = w.cq;
  const ReclaimWithinCohort reclaim =
      tree.queues().queue(cq).kueue_preemption.reclaim_within_cohort;
  const bool may_reclaim_while_borrowing =
      reclaim != ReclaimWithinCohort::kUnspecified && reclaim != ReclaimWithinCohort::kNever;
  Nomination nomination;
  for (const ResourceAmount& request : w.usage) {
    const int r = request.resource;
    const std::string resource = tree.CellName(r);
    if (!tree.covers(cq, r)) {
      nomination.mode = NominationMode::kNoFit;
      nomination.reason = kResourceNotCovered;
      nomination.message = absl::StrCat(NodeLabel(tree, cq), " has no quota for ", resource);
      return nomination;
    }
    const double potential = tree.PotentialAvailable(cq, r);
    if (request.amount > potential) {
      nomination.mode = NominationMode::kNoFit;
      nomination.reason = kExceedsMaxQuota;
      nomination.message =
          absl::StrCat(NodeLabel(tree, cq), " can reach at most ", FormatQuantity(potential), " ",
                       resource, ", the workload requests ", FormatQuantity(request.amount));
      return nomination;
    }
    if (request.amount <= tree.Available(cq, r)) continue;
    if (request.amount <= tree.nominal(cq, r) || may_reclaim_while_borrowing ||
        MayReclaimInHierarchy(tree, cq, r, request.amount)) {
      nomination.contested.push_back(r);
      continue;
    }
    nomination.mode = NominationMode::kNoFit;
    nomination.reason = kInsufficientQuota;
    nomination.message = ShortfallMessage(tree, cq, r, request.amount);
    return nomination;
  }
  if (nomination.contested.empty()) {
    nomination.mode = NominationMode::kFit;
    return nomination;
  }
  nomination.mode = NominationMode::kPreempt;
  nomination.targets = FindFairSharingTargets(context, workload, nomination.contested);
  if (nomination.targets.empty()) {
    const int r = nomination.contested.front();
    nomination.reason = kNoPreemptionCandidates;
    nomination.message = absl::StrCat(ShortfallMessage(tree, cq, r, w.Amount(r)),
                                      ", and no workload can be preempted to make room");
  }
  return nomination;
}

}  // namespace arbiter::kueue
