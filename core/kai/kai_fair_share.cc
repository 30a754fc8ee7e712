#include "core/kai/kai_fair_share.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/cancel_poll.h"
#include "core/kai/fair_share_division.h"
#include "core/validated_snapshot.h"

namespace arbiter::kai {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// T_r of §2.1: Snapshot.capacity[r] where present, else Σ allocatable[r] over schedulable nodes
// in name order (each resource summed on its own, independent of the input order).
std::vector<double> TopLevelTotal(const ValidatedSnapshot& request) {
  const int n = request.resources().size();
  std::vector<double> total(n, 0.0);
  std::vector<char> given(n, 0);
  for (const Amount& a : request.capacity()) {
    total[a.resource] = a.value;
    given[a.resource] = 1;
  }
  const std::vector<Node>& nodes = request.snapshot().nodes;
  for (int node : request.nodes_by_name()) {
    if (nodes[node].unschedulable) continue;
    for (const Amount& a : request.allocatable(node)) {
      if (!given[a.resource]) total[a.resource] += a.value;
    }
  }
  return total;
}

void Scatter(Amounts amounts, Row into) {
  for (const Amount& a : amounts) into[a.resource] = a.value;
}

void AddPod(Amounts requests, Row into) {
  for (const Amount& a : requests) into[a.resource] += a.value;
}

// §0.7 amounts: each leaf sums its pods in (pod group, pod) name order; each parent sums its
// children in name order.
void ComputeQueueAmounts(const ValidatedSnapshot& request, KaiFairShare& shares, CancelPoll& poll) {
  const Snapshot& snapshot = request.snapshot();
  const QueueTree& tree = request.tree();
  const int n = request.resources().size();
  // Groups in (leaf, name) order: the name order, bucketed by leaf.
  std::vector<int> first(tree.size() + 1, 0);
  for (int g : request.groups_by_name()) ++first[request.group_queue(g) + 1];
  for (int q = 0; q < tree.size(); ++q) first[q + 1] += first[q];
  std::vector<int> groups(request.groups_by_name().size());
  for (int g : request.groups_by_name()) groups[first[request.group_queue(g)]++] = g;
  for (int g : groups) {
    const PodGroup& group = snapshot.pod_groups[g];
    if (poll.Tick(1 + static_cast<int64_t>(group.pods.size()))) return;
    QueueAmounts& amounts = shares.queues[request.group_queue(g)];
    const bool preemptible = IsPreemptibleUnderKai(group);
    const int first_pod = request.first_pod(g);
    const int end_pod = request.first_pod(g + 1);
    for (int k = first_pod; k < end_pod; ++k) {
      const int pod = first_pod + request.pods_by_name()[k];
      const Amounts requests = request.requests(pod);
      switch (request.pod_phase(pod)) {
        case PodPhase::kPending:
          AddPod(requests, amounts.requested);
          break;
        case PodPhase::kRunning:
          AddPod(requests, amounts.requested);
          AddPod(requests, amounts.allocated);
          if (!preemptible) AddPod(requests, amounts.allocated_np);
          break;
        default:  // RELEASING counts in neither (§0.7)
          break;
      }
    }
  }
  const std::vector<int>& order = tree.top_down();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::vector<int>& children = tree.children(*it);
    if (poll.Tick(1 + static_cast<int64_t>(children.size()))) return;
    if (children.empty()) continue;
    QueueAmounts& parent = shares.queues[*it];
    for (int child : children) {
      const QueueAmounts& c = shares.queues[child];
      for (int r = 0; r < n; ++r) {
        parent.requested[r] += c.requested[r];
        parent.allocated[r] += c.allocated[r];
        parent.allocated_np[r] += c.allocated_np[r];
      }
    }
  }
}

}  // namespace

double Saturation(double allocated, double fair_share) {
  if (fair_share == 0) return allocated > 0 ? kInfinity : 0.0;
  return allocated / fair_share;
}

KaiFairShare ComputeKaiFairShare(const ValidatedSnapshot& request, CancelPoll* poll) {
  CancelPoll never;
  CancelPoll& cancel = poll != nullptr ? *poll : never;
  KaiFairShare shares;
  shares.request = &request;
  const int n = request.resources().size();
  shares.total = TopLevelTotal(request);
  const int queue_count = request.tree().size();
  shares.queues.resize(queue_count);
  constexpr int kRows = 8;
  shares.rows.assign(static_cast<size_t>(queue_count) * kRows * n, 0.0);
  // Every row is laid out before the first poll, so a cancelled division leaves no row unset.
  for (int q = 0; q < queue_count; ++q) {
    QueueAmounts& a = shares.queues[q];
    double* at = shares.rows.data() + static_cast<size_t>(q) * kRows * n;
    for (Row* row : {&a.deserved, &a.limit, &a.over_quota_weight, &a.requested, &a.allocated,
                     &a.allocated_np, &a.fair_share, &a.allocatable_share}) {
      *row = Row(at, n);
      at += n;
    }
  }
  for (int q = 0; q < queue_count; ++q) {
    if (cancel.Tick()) return shares;
    QueueAmounts& a = shares.queues[q];
    std::fill(a.limit.begin(), a.limit.end(), -1.0);
    std::fill(a.over_quota_weight.begin(), a.over_quota_weight.end(), 1.0);
    Scatter(request.deserved(q), a.deserved);
    Scatter(request.limit(q), a.limit);
    Scatter(request.over_quota_weight(q), a.over_quota_weight);
  }
  ComputeQueueAmounts(request, shares, cancel);
  if (cancel.cancelled()) return shares;

  DivideFairShares(request, shares, cancel);
  if (cancel.cancelled()) return shares;

  for (QueueAmounts& a : shares.queues) {
    for (int r = 0; r < n; ++r) {
      const double limit = a.limit[r] == -1 ? kInfinity : a.limit[r];
      a.allocatable_share[r] =
          a.deserved[r] == -1 ? limit : std::min(std::max(a.deserved[r], a.fair_share[r]), limit);
    }
  }
  return shares;
}

}  // namespace arbiter::kai
