// Why a pod group stays pending (SEMANTICS.md §6): a stable code (core/pending_reasons.h, the list
// both models share) and a sentence a person can act on. Messages are pure functions of the
// decision; numbers are written in shortest round-trip form (core/quantity_format.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/kai/cluster.h"
#include "core/kai/feasibility.h"
#include "core/kai/node_index.h"
#include "core/kai/placement.h"
#include "core/kai/quota_check.h"
#include "core/kai/unit.h"
#include "core/kai/working_state.h"
#include "core/pending_reasons.h"

namespace arbiter::kai {

struct PendingReason {
  std::string code;
  std::string message;
};

// gang-incomplete: fewer than g pods that are not RELEASING.
PendingReason GangIncompleteReason(const Cluster& cluster, int group);
// not-attempted: no listed action recorded a reason.
PendingReason NotAttemptedReason();
// queue-over-limit / non-preemptible-over-quota, naming the queue, resource and amounts.
PendingReason QuotaReason(const Cluster& cluster, const QuotaBreach& breach);

// Why `unit` could not be placed, on the state before any of its pods were placed (the caller
// rolls back first); `placed` is how many of its pods were placed before the first failure.
//   no-node-matches-selector: some pod has no feasible node at all;
//   insufficient-resources: some pod fits no feasible node even alone, even pipelined;
//   gang-does-not-fit: each pod fits alone but the unit does not fit as a whole.
// Each test runs over the unit's pods in pod order and the first pod that fails it is named.
// O(unit · placement + feasible classes · R).
PendingReason ExplainPlacementFailure(const Cluster& cluster, Feasibility& feasibility,
                                      const NodeIndex& index, Placer& placer, const Unit& unit,
                                      int placed);

// The reason recorded so far for every group (the last one wins, §6).
class PendingReasons {
 public:
  explicit PendingReasons(int groups) : reasons_(groups) {}

  // Replaces G's reason.
  void Record(int group, PendingReason reason);
  // A failed CONSOLIDATE/RECLAIM/PREEMPT attempt: keeps an earlier reason and appends
  // "; <action>: <outcome>" to its message, or, with no earlier reason, records `fallback`.
  void RecordOutcome(int group, std::string_view action, std::string_view outcome,
                     PendingReason fallback);
  // Appends "; <action>: <outcome>" to G's reason when it has one; records nothing otherwise.
  void AppendOutcome(int group, std::string_view action, std::string_view outcome);
  // G's reason, or nullptr when none was recorded.
  const PendingReason* Get(int group) const {
    return reasons_[group].code.empty() ? nullptr : &reasons_[group];
  }

 private:
  std::vector<PendingReason> reasons_;
};

}  // namespace arbiter::kai
