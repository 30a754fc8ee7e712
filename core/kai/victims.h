// Victims of CONSOLIDATE, RECLAIM and PREEMPT (SEMANTICS.md §4.7): who may be evicted, in which
// units, and in which order.
//
// Eligible: a preemptible group with at least one RUNNING pod, no pod bound or moved in this
// response, and passing the action's filter (which also applies min-runtime). Eviction unit: one
// pod, the last RUNNING pod in pod order, while the group would keep more than g active pods
// (elastic shrink); otherwise all its remaining RUNNING pods (the whole gang).
// Order: drawn top-down through the queue tree with every §4.3 comparison reversed (the queue
// that would be served last gives first), each queue's allocation reduced by what was already
// drawn from its subtree; within a leaf, reversed job order. An elastic victim re-enters after a
// draw while it has RUNNING pods left.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/kai/queue_order.h"
#include "core/kai/session.h"

namespace arbiter::kai {

struct EvictionUnit {
  int group = -1;
  std::vector<int> pods;  // RUNNING pods, pod order
};

// min-runtime (§4.7): start(G) is the earliest start_time among G's RUNNING pods that have one;
// G is protected for `duration` iff start(G) exists and now < start(G) + duration.
bool Protected(const Session& session, int group, const std::optional<Duration>& duration);
// The preempt min-runtime of a victim leaf, walking up while unset (nullopt: none set).
std::optional<Duration> PreemptMinRuntime(const Session& session, int leaf);
// The reclaim min-runtime for a reclaimer in `reclaimer_leaf` and a victim in `victim_leaf`: the
// value of the child of their lowest common ancestor on the victim's side, walking up while unset.
std::optional<Duration> ReclaimMinRuntime(const Session& session, int reclaimer_leaf,
                                          int victim_leaf);

// A fresh victim order over the groups `eligible` accepts (on top of the generic rules), with the
// pods of `drawn_already` counted as drawn. Each call to Next draws the next eviction unit.
// O(queues with victims · R) per draw.
class VictimOrder {
 public:
  VictimOrder(Session& session, const QueueChain& chain, std::function<bool(int group)> eligible,
              const std::vector<EvictionUnit>& drawn_already);

  // The next eviction unit, or false when no victim is left.
  bool Next(EvictionUnit* unit);

 private:
  int RemainingRunning(int group) const;
  void UnitOf(int group, EvictionUnit* unit) const;
  // The victim a queue's subtree gives next, or group -1.
  int BestVictim(int queue, std::vector<double>* unit_requests);

  Session& session_;
  const QueueChain& chain_;
  std::vector<std::vector<int>> by_leaf_;  // eligible groups per leaf
  std::vector<int> victims_in_subtree_;   // per queue
  std::vector<int> drawn_pods_;           // per group: RUNNING pods drawn so far
  std::vector<bool> pod_drawn_;
  std::vector<double> drawn_;             // per queue × R: requests drawn from the subtree
};

}  // namespace arbiter::kai
