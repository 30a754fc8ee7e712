#include "core/kai/consolidate.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/echoed_name.h"
#include "core/kai/eviction_action.h"
#include "core/quantity_format.h"

namespace arbiter::kai {
namespace {

constexpr int kDefaultMaxPreemptees = 16;

// Σ over schedulable nodes of idle + releasing, per resource of R, in node name order. A resource
// outside R_n has 0 free on every node, so its total is 0.
std::vector<double> TotalFree(const Session& session) {
  const Cluster& cluster = session.cluster();
  std::vector<double> total(cluster.num_resources(), 0.0);
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    if (cluster.node(n).node->unschedulable) continue;
    for (int k = 0; k < cluster.num_node_resources(); ++k) {
      total[cluster.node_resource(k)] += session.state().free(n, k);
    }
  }
  return total;
}

}  // namespace

void Consolidate(Session& session) {
  const int max_preemptees =
      session.policy().max_consolidation_preemptees.value_or(kDefaultMaxPreemptees);
  if (max_preemptees == 0) return;  // disabled
  const Cluster& cluster = session.cluster();
  EvictionAction action;
  action.name = "consolidate";
  action.candidate = [&cluster](int g) { return cluster.group(g).preemptible; };
  // Skipped when the cluster as a whole lacks some resource for the unit: moving pods cannot help.
  action.precheck = [&session, &cluster](int, const Unit& unit) -> std::optional<std::string> {
    // A sum over every node per candidate. Cancelled: the solver stops at once.
    if (session.poll().Tick(cluster.num_nodes())) return std::nullopt;
    const std::vector<double> total = TotalFree(session);
    for (int r = 0; r < cluster.num_resources(); ++r) {
      if (total[r] < unit.requests[r]) {
        return absl::StrCat("the cluster has ", FormatQuantity(total[r]), " ",
                            CappedName(cluster.resources().name(r)), " free in all, below the ",
                            FormatQuantity(unit.requests[r]), " requested");
      }
    }
    return std::nullopt;
  };
  action.shared_eligible = [](int) { return true; };  // any queue; P itself has no RUNNING pod
  action.options = [max_preemptees](int) {
    SolverOptions options;
    options.reason = EvictionReason::kConsolidation;
    options.max_victim_groups = max_preemptees;
    options.eligible = [](int) { return true; };  // any queue; min-runtime does not apply
    options.validate = [](const Solver&, Attempt& attempt) {
      for (bool moved : attempt.moved) {
        if (!moved) return false;  // nobody may lose allocation
      }
      return true;
    };
    return options;
  };
  RunEvictionAction(session, action);
}

}  // namespace arbiter::kai
