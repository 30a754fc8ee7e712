// ScheduleKueue (SEMANTICS.md §5.4, §5.5, §6 KUEUE): admission rounds and fair-sharing
// preemption in one call, answered as admissions, per-pod evictions and pending reasons.
#include <algorithm>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/kueue/admission.h"
#include "core/kueue/kueue.h"
#include "core/kueue/queue_shares.h"
#include "core/status_macros.h"

namespace arbiter::kueue {
namespace {

// Admission.pod_sets (§5.8.9): each pod set's flavor per requested resource, pod sets by name.
std::vector<PodSetFlavors> PodSetsOf(const QuotaTree& tree, const Workload& w,
                                     const PodSetCells& assigned) {
  const PodSetCells implicit = w.flavored ? PodSetCells{} : ImplicitCells(w);
  const PodSetCells& cells = w.flavored ? assigned : implicit;
  std::vector<PodSetFlavors> out;
  out.reserve(w.pod_sets.size());
  for (size_t s = 0; s < w.pod_sets.size() && s < cells.size(); ++s) {
    PodSetFlavors& flavors = out.emplace_back();
    flavors.pod_set = std::string(w.pod_sets[s].name);
    for (const int cell : cells[s]) {
      flavors.flavors.emplace(tree.resources().name(tree.cells().resource(cell)),
                              tree.cells().flavor(cell));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<ScheduleResult> ScheduleKueue(const ValidatedSnapshot& request,
                                             const CycleHooks& hooks) {
  RETURN_IF_ERROR(hooks.CheckCancelled("fair_share"));
  CancelPoll poll(&hooks.cancelled);
  poll.set_phase("fair_share");
  QuotaTree tree = QuotaTree::Build(request, &poll);
  if (poll.cancelled()) return poll.status();
  std::vector<Workload> workloads = CollectWorkloads(request, tree);
  hooks.PhaseDone("fair_share");

  RETURN_IF_ERROR(hooks.CheckCancelled("admission"));
  ASSIGN_OR_RETURN(AdmissionOutcome outcome,
                   RunAdmission(tree, workloads, ResolveStrategies(request.policy()), hooks));
  hooks.PhaseDone("admission");

  RETURN_IF_ERROR(hooks.CheckCancelled("respond"));
  ScheduleResult result;
  result.queues = BuildQueueShares(tree, workloads, outcome.holds_quota);
  for (const AdmissionDecision& decision : outcome.admissions) {
    const Workload& w = workloads[decision.workload];
    Admission& admission = result.admissions.emplace_back();
    admission.pod_group = w.name();
    admission.queue = w.group->queue;
    admission.after_evictions = decision.after_evictions;
    if (tree.cells().flavored_request()) admission.pod_sets = PodSetsOf(tree, w, decision.cells);
  }
  std::vector<const Pod*> pods;
  for (const EvictionDecision& decision : outcome.evictions) {
    const Workload& w = workloads[decision.workload];
    pods.clear();
    for (const Pod& pod : w.group->pods) pods.push_back(&pod);
    std::sort(pods.begin(), pods.end(),
              [](const Pod* a, const Pod* b) { return a->name < b->name; });
    for (const Pod* pod : pods) {
      Eviction eviction;
      eviction.pod_group = w.name();
      eviction.pod = pod->name;
      eviction.node = pod->node_name;
      eviction.reason = decision.reason;
      eviction.preemptor_pod_group = workloads[decision.preemptor].name();
      eviction.message = decision.message;
      result.evictions.push_back(std::move(eviction));
    }
  }
  for (PendingDecision& decision : outcome.pending) {
    result.pending.push_back(PendingPodGroup{workloads[decision.workload].name(),
                                             std::move(decision.reason),
                                             std::move(decision.message)});
  }
  hooks.PhaseDone("respond");
  return result;
}

}  // namespace arbiter::kueue
