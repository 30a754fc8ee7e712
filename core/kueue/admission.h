// Admission rounds (SEMANTICS.md §5.4): Kueue cycles repeated within one call until a round
// admits, evicts and sets aside nothing. Each round nominates one head per ClusterQueue, orders
// the entries by the fair-sharing tournament and processes them in that order: admit, claim
// preemption targets, defer, reserve, or leave pending with a reason.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cycle_hooks.h"
#include "core/kueue/flavor_assignment.h"
#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"
#include "core/model.h"

namespace arbiter::kueue {

struct AdmissionDecision {
  int workload = -1;
  bool after_evictions = false;  // it waited for evictions made in this call
  PodSetCells cells;             // a flavored queue's workload: each pod set's assigned cells
};

struct EvictionDecision {
  int workload = -1;
  int preemptor = -1;
  EvictionReason reason = EvictionReason::kUnspecified;
  std::string message;
};

struct PendingDecision {
  int workload = -1;
  std::string reason;
  std::string message;
};

struct AdmissionOutcome {
  std::vector<AdmissionDecision> admissions;  // workload (= name) order
  std::vector<EvictionDecision> evictions;    // workload order
  std::vector<PendingDecision> pending;       // workload order
  std::vector<char> holds_quota;              // per workload, at the end of the call
  int rounds = 0;
};

// Runs the rounds on `tree` (quotas of the snapshot; its usage is rebuilt every round and, on
// return, describes the end of the call). A flavored queue's workload takes the usage of its
// latest nomination's flavor assignment into `workloads` (§5.8.7). `strategies` are the resolved
// Policy strategies. Cancelled when hooks.cancelled() says so between rounds, or inside one: it is
// asked every few milliseconds of work (core/cancel_poll.h) while heads are nominated, preemption
// targets searched and entries processed. `max_rounds` > 0 stops after that many rounds (for tests
// that look at a round's transient reasons); 0 runs until quiet.
absl::StatusOr<AdmissionOutcome> RunAdmission(
    QuotaTree& tree, std::vector<Workload>& workloads,
    const std::vector<KueuePreemptionStrategy>& strategies, const CycleHooks& hooks,
    int max_rounds = 0);

}  // namespace arbiter::kueue
