#include "core/kai/consolidate.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/echoed_name.h"
#include "core/kai/eviction_action.h"
#include "core/kai/eviction_loop.h"
#include "core/kai/gpu_devices.h"
#include "core/quantity_format.h"

namespace arbiter::kai {
namespace {

constexpr int kDefaultMaxPreemptees = 16;

// Σ over schedulable nodes of idle + releasing, per resource of R, in node name order. A resource
// outside R_n has 0 free on every node, so its total is 0. For nvidia.com/gpu, each node adds its
// bracket of §4.13.5: the pool, then the free shares of its active devices.
std::vector<double> TotalFree(const Session& session) {
  const Cluster& cluster = session.cluster();
  std::vector<double> total(cluster.num_resources(), 0.0);
  const bool devices = cluster.any_sharing();
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    if (cluster.node(n).node->unschedulable) continue;
    for (int k = 0; k < cluster.num_node_resources(); ++k) {
      double bracket = session.state().free(n, k);
      if (devices && k == cluster.node_gpu()) bracket += DeviceRoom(session.state(), n);
      total[cluster.node_resource(k)] += bracket;
    }
  }
  return total;
}

// unitReq of the §4.9 test: the unit's requests, with a pod that shares counted by its units on
// the feasible node where they are the smallest share (§4.13.5).
std::vector<double> SkipTestRequests(Session& session, const Unit& unit) {
  const Cluster& cluster = session.cluster();
  std::vector<double> requests = unit.requests;
  const int gpu = cluster.gpu();
  if (gpu < 0 || std::none_of(unit.pods.begin(), unit.pods.end(),
                              [&](int pod) { return cluster.pod(pod).shares(); })) {
    return requests;
  }
  Feasibility& feasibility = session.feasibility();
  double sum = 0;
  for (int pod : unit.pods) {
    if (!cluster.pod(pod).shares()) {
      sum += cluster.requests(pod)[gpu];
      continue;
    }
    std::vector<int> nodes;
    for (const auto& feasible : feasibility.FeasibleClasses(feasibility.pod_signature(pod))) {
      const std::vector<int>& members = feasibility.class_nodes(feasible.node_class);
      nodes.insert(nodes.end(), members.begin(), members.end());
    }
    sum += SkipTestGpu(cluster, pod, nodes);
  }
  requests[gpu] = sum;
  return requests;
}

// §4.9: a pending preemptible group may move preemptible running pods of any queue, at most
// `max_preemptees` victim groups, so long as every victim is re-placed: nobody loses allocation.
class ConsolidateAction final : public EvictionAction {
 public:
  ConsolidateAction(Session& session, int max_preemptees)
      : session_(session), max_preemptees_(max_preemptees) {}

  std::string_view name() const override { return "consolidate"; }
  bool IsCandidate(int group) const override { return session_.cluster().group(group).preemptible; }
  // Skipped when the cluster as a whole lacks some resource for the unit: moving pods cannot help.
  std::optional<std::string> Precheck(int group, const Unit& unit) const override;

  EvictionReason reason() const override { return EvictionReason::kConsolidation; }
  int max_victim_groups() const override { return max_preemptees_; }
  // Any queue; min-runtime does not apply.
  bool MayEvict(int /*preemptor*/, int /*victim*/) const override { return true; }
  // MayEvict ignores the preemptor (P itself has no RUNNING pod): one order serves them all.
  bool SharesVictimOrder() const override { return true; }
  bool Validate(const Solver& /*solver*/, Attempt& attempt) const override {
    for (bool moved : attempt.moved) {
      if (!moved) return false;  // nobody may lose allocation
    }
    return true;
  }
  // Any evicted unit is one too many, whatever else the try does.
  bool RejectsEveryTryEvicting(const Solver& /*solver*/, int /*preemptor*/,
                               const std::vector<double>& /*unit_requests*/,
                               const std::vector<EvictionUnit>& /*victims*/,
                               const std::vector<bool>& open) const override {
    return std::find(open.begin(), open.end(), false) != open.end();
  }

 private:
  Session& session_;
  int max_preemptees_;
  // TotalFree at node clock total_clock_ (WorkingState::node_clock), once known.
  mutable bool total_known_ = false;
  mutable uint64_t total_clock_ = 0;
  mutable std::vector<double> total_;
};

std::optional<std::string> ConsolidateAction::Precheck(int /*group*/, const Unit& unit) const {
  const Cluster& cluster = session_.cluster();
  // A sum over every node per candidate. Cancelled: the solver stops at once.
  if (session_.poll().Tick(cluster.num_nodes())) return std::nullopt;
  // The sum changes only when some node's amounts do: it is kept while the node clock stands.
  const uint64_t clock = session_.state().node_clock();
  if (!total_known_ || total_clock_ != clock) {
    total_ = TotalFree(session_);
    total_known_ = true;
    total_clock_ = clock;
  }
  const std::vector<double>& total = total_;
  const std::vector<double> requests = SkipTestRequests(session_, unit);
  for (int r = 0; r < cluster.num_resources(); ++r) {
    if (total[r] < requests[r]) {
      return absl::StrCat("the cluster has ", FormatQuantity(total[r]), " ",
                          CappedName(cluster.resources().name(r)), " free in all, below the ",
                          FormatQuantity(requests[r]), " requested");
    }
  }
  return std::nullopt;
}

}  // namespace

void Consolidate(Session& session) {
  const int max_preemptees =
      session.policy().max_consolidation_preemptees.value_or(kDefaultMaxPreemptees);
  if (max_preemptees == 0) return;  // disabled
  RunEvictionAction(session, ConsolidateAction(session, max_preemptees));
}

}  // namespace arbiter::kai
