#include "core/kai/kai_fair_share.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace arbiter::kai {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The phase a pod counts as (§0.2: UNSPECIFIED is RUNNING with a node, else PENDING).
PodPhase EffectivePhase(const Pod& pod) {
  if (pod.phase != PodPhase::kUnspecified) return pod.phase;
  return pod.node_name.empty() ? PodPhase::kPending : PodPhase::kRunning;
}

// §0.7: KAI's rule for an UNSPECIFIED preemptibility.
bool IsPreemptible(const PodGroup& group) {
  switch (group.preemptibility) {
    case Preemptibility::kPreemptible:
      return true;
    case Preemptibility::kNonPreemptible:
      return false;
    default:
      return group.priority < 100;
  }
}

void AddRequests(const ResourceSet& resources, const ResourceMap& requests,
                 std::vector<double>& into) {
  for (const auto& [name, value] : requests) {
    int r = resources.Find(name);
    if (r >= 0) into[r] += value;
  }
}

// T_r of §2.1: Snapshot.capacity[r] where present, else Σ allocatable[r] over schedulable nodes
// (node order is the input order; each resource is summed on its own).
std::vector<double> TopLevelTotal(const Snapshot& snapshot, const ResourceSet& resources) {
  const int n = resources.size();
  std::vector<double> total(n, 0.0);
  std::vector<bool> given(n, false);
  for (const auto& [name, value] : snapshot.capacity) {
    int r = resources.Find(name);
    total[r] = value;
    given[r] = true;
  }
  // Nodes summed in name order so the total does not depend on the input order (§0.5).
  std::vector<const Node*> nodes;
  nodes.reserve(snapshot.nodes.size());
  for (const Node& node : snapshot.nodes) {
    if (!node.unschedulable) nodes.push_back(&node);
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const Node* a, const Node* b) { return a->name < b->name; });
  for (const Node* node : nodes) {
    for (const auto& [name, value] : node->allocatable) {
      int r = resources.Find(name);
      if (!given[r]) total[r] += value;
    }
  }
  return total;
}

// §0.7 amounts: each leaf sums its pods in (pod group, pod) name order; each parent sums its
// children in name order.
void ComputeQueueAmounts(const Snapshot& snapshot, KaiFairShare& shares) {
  const int n = shares.resources.size();
  for (QueueAmounts& amounts : shares.queues) {
    amounts.requested.assign(n, 0.0);
    amounts.allocated.assign(n, 0.0);
    amounts.allocated_np.assign(n, 0.0);
  }
  std::vector<const PodGroup*> groups;
  groups.reserve(snapshot.pod_groups.size());
  for (const PodGroup& group : snapshot.pod_groups) groups.push_back(&group);
  std::sort(groups.begin(), groups.end(),
            [](const PodGroup* a, const PodGroup* b) { return a->name < b->name; });
  std::vector<const Pod*> pods;
  for (const PodGroup* group : groups) {
    int leaf = shares.tree.Find(group->queue);
    if (leaf < 0) continue;  // unreachable after validation
    QueueAmounts& amounts = shares.queues[leaf];
    const bool preemptible = IsPreemptible(*group);
    pods.clear();
    for (const Pod& pod : group->pods) pods.push_back(&pod);
    std::sort(pods.begin(), pods.end(),
              [](const Pod* a, const Pod* b) { return a->name < b->name; });
    for (const Pod* pod : pods) {
      switch (EffectivePhase(*pod)) {
        case PodPhase::kPending:
          AddRequests(shares.resources, pod->requests, amounts.requested);
          break;
        case PodPhase::kRunning:
          AddRequests(shares.resources, pod->requests, amounts.requested);
          AddRequests(shares.resources, pod->requests, amounts.allocated);
          if (!preemptible) AddRequests(shares.resources, pod->requests, amounts.allocated_np);
          break;
        default:  // RELEASING counts in neither (§0.7)
          break;
      }
    }
  }
  const std::vector<int>& order = shares.tree.top_down();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::vector<int>& children = shares.tree.children(*it);
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

// Divides one resource among one set of siblings (§2.2), reusing its buffers across calls.
class LevelDivider {
 public:
  LevelDivider(const KaiFairShare& shares, const std::vector<std::vector<double>>& usage_share,
               double k)
      : shares_(shares), usage_share_(usage_share), k_(k) {}

  // `siblings` in name order; `groups` the same queues as runs of equal priority, highest
  // priority first, name order within a run (`group_ends[i]` ends run i). Writes fs_q,r.
  void Divide(const std::vector<int>& siblings, const std::vector<int>& groups,
              const std::vector<int>& group_ends, int r, double total,
              std::vector<QueueAmounts>& queues) {
    const size_t n = siblings.size();
    requestable_.resize(n);
    fraction_.resize(n);
    has_fraction_.assign(n, false);
    // Per-queue state below is indexed by the position in `groups`.
    double left = total;
    // Deserved phase, in name order.
    for (int q : siblings) {
      QueueAmounts& a = queues[q];
      const double limit = a.limit[r];
      const double request = a.requested[r];
      const double requestable = limit == -1 ? request : std::min(limit, request);
      const double deserved = a.deserved[r] == -1 ? total : a.deserved[r];
      const double fs = std::min(deserved, requestable);
      a.fair_share[r] = fs;
      left -= fs;
    }
    if (left <= 0) return;
    for (size_t i = 0; i < n; ++i) {
      const QueueAmounts& a = queues[groups[i]];
      const double limit = a.limit[r];
      const double request = a.requested[r];
      requestable_[i] = limit == -1 ? request : std::min(limit, request);
    }
    // Over-quota rounds, every priority group in turn.
    size_t begin = 0;
    for (int end : group_ends) {
      left = Rounds(groups, begin, static_cast<size_t>(end), r, left, queues);
      begin = static_cast<size_t>(end);
    }
    // Remainder phase, same group order: at most one unit per queue with a fraction, capped by
    // what the queue can still take (the deviation from KAI in §2.2).
    begin = 0;
    for (int end : group_ends) {
      order_.clear();
      for (size_t i = begin; i < static_cast<size_t>(end); ++i) {
        if (has_fraction_[i]) order_.push_back(i);
      }
      std::sort(order_.begin(), order_.end(), [&](size_t x, size_t y) {
        if (fraction_[x] != fraction_[y]) return fraction_[x] > fraction_[y];
        const Queue& qx = shares_.tree.queue(groups[x]);
        const Queue& qy = shares_.tree.queue(groups[y]);
        const Timestamp tx = qx.creation_time.value_or(Timestamp{});
        const Timestamp ty = qy.creation_time.value_or(Timestamp{});
        if (tx != ty) return tx < ty;
        return qx.name < qy.name;
      });
      for (size_t i : order_) {
        if (left <= 0) return;
        double& fs = queues[groups[i]].fair_share[r];
        const double x = std::min(std::min(1.0, left), requestable_[i] - fs);
        if (x > 0) {
          fs += x;
          left -= x;
        }
      }
      begin = static_cast<size_t>(end);
    }
  }

 private:
  // rounds(G, left) of §2.2 over groups[begin, end).
  double Rounds(const std::vector<int>& groups, size_t begin, size_t end, int r, double left,
                std::vector<QueueAmounts>& queues) {
    while (true) {
      // Nothing left to divide: every share would floor to 0 (guards against a sum that
      // rounding took a hair below 0).
      if (left <= 0) return left;
      active_.clear();
      double weight_sum = 0;
      for (size_t i = begin; i < end; ++i) {
        if (requestable_[i] - queues[groups[i]].fair_share[r] > 0) {
          active_.push_back(i);
          weight_sum += queues[groups[i]].over_quota_weight[r];
        }
      }
      if (weight_sum == 0) return left;
      portion_.resize(active_.size());
      double portion_sum = 0;
      for (size_t j = 0; j < active_.size(); ++j) {
        const int q = groups[active_[j]];
        const double normalised = queues[q].over_quota_weight[r] / weight_sum;
        const double usage = k_ > 0 ? usage_share_[q][r] : 0.0;
        portion_[j] = std::max(0.0, normalised + k_ * (normalised - usage));
        portion_sum += portion_[j];
      }
      if (portion_sum == 0) return left;
      const double amount = left;
      bool again = false;
      for (size_t j = 0; j < active_.size(); ++j) {
        const size_t i = active_[j];
        QueueAmounts& a = queues[groups[i]];
        if (!(a.over_quota_weight[r] > 0)) continue;
        const double share = amount * portion_[j] / portion_sum;
        const double need = requestable_[i] - a.fair_share[r];
        if (need <= share) {
          a.fair_share[r] += need;
          left -= need;
          has_fraction_[i] = false;
          again = again || need < share;
        } else {
          const double whole = std::floor(share);
          a.fair_share[r] += whole;
          left -= whole;
          if (share - whole > 0) {
            fraction_[i] = share - whole;
            has_fraction_[i] = true;
          }
        }
      }
      if (!again || left == 0) return left;
    }
  }

  const KaiFairShare& shares_;
  const std::vector<std::vector<double>>& usage_share_;
  const double k_;
  // Indexed by position in the priority-ordered sibling list.
  std::vector<double> requestable_;
  std::vector<double> fraction_;
  std::vector<bool> has_fraction_;
  std::vector<size_t> active_;
  std::vector<double> portion_;
  std::vector<size_t> order_;
};

// U_q,r of §3: usage[q][r] / usage_capacity[r]; 0 without capacity or without a QueueUsage.
std::vector<std::vector<double>> UsageShares(const Snapshot& snapshot,
                                             const KaiFairShare& shares) {
  const int n = shares.resources.size();
  std::vector<std::vector<double>> result(shares.tree.size(), std::vector<double>(n, 0.0));
  std::vector<double> capacity = shares.resources.Dense(snapshot.usage_capacity, 0.0);
  for (const QueueUsage& usage : snapshot.usage) {
    int q = shares.tree.Find(usage.queue);
    if (q < 0) continue;  // unreachable after validation
    for (const auto& [name, value] : usage.usage) {
      int r = shares.resources.Find(name);
      if (r < 0 || capacity[r] == 0) continue;
      result[q][r] = value / capacity[r];
    }
  }
  return result;
}

void DivideSiblings(const std::vector<int>& siblings, const std::vector<double>& total,
                    LevelDivider& divider, std::vector<int>& groups, std::vector<int>& ends,
                    KaiFairShare& shares) {
  if (siblings.empty()) return;
  groups = siblings;
  // Priority groups, highest first; the stable sort keeps name order within a group.
  std::stable_sort(groups.begin(), groups.end(), [&](int a, int b) {
    return shares.tree.queue(a).priority > shares.tree.queue(b).priority;
  });
  ends.clear();
  for (size_t i = 1; i <= groups.size(); ++i) {
    if (i == groups.size() ||
        shares.tree.queue(groups[i]).priority != shares.tree.queue(groups[i - 1]).priority) {
      ends.push_back(static_cast<int>(i));
    }
  }
  for (int r = 0; r < shares.resources.size(); ++r) {
    divider.Divide(siblings, groups, ends, r, total[r], shares.queues);
  }
}

double WithoutNegativeZero(double value) { return value == 0 ? 0.0 : value; }

ResourceMap ToResponseMap(const ResourceSet& resources, const std::vector<double>& values) {
  ResourceMap map;
  for (int r = 0; r < resources.size(); ++r) {
    map.emplace_hint(map.end(), resources.name(r), WithoutNegativeZero(values[r]));
  }
  return map;
}

}  // namespace

double Saturation(double allocated, double fair_share) {
  if (fair_share == 0) return allocated > 0 ? kInfinity : 0.0;
  return allocated / fair_share;
}

KaiFairShare ComputeKaiFairShare(const Snapshot& snapshot, const Policy& policy) {
  KaiFairShare shares;
  shares.resources = ResourceSet::Collect(snapshot);
  shares.tree = QueueTree::Build(snapshot);
  shares.total = TopLevelTotal(snapshot, shares.resources);
  const int n = shares.resources.size();

  shares.queues.resize(shares.tree.size());
  for (int q = 0; q < shares.tree.size(); ++q) {
    const Queue& queue = shares.tree.queue(q);
    QueueAmounts& a = shares.queues[q];
    a.deserved = shares.resources.Dense(queue.deserved, 0.0);
    a.limit = shares.resources.Dense(queue.limit, -1.0);
    a.over_quota_weight = shares.resources.Dense(queue.over_quota_weight, 1.0);
    a.fair_share.assign(n, 0.0);
  }
  ComputeQueueAmounts(snapshot, shares);

  const double k = policy.k_value > 0 ? policy.k_value : 0.0;
  std::vector<std::vector<double>> usage_share;
  if (k > 0) usage_share = UsageShares(snapshot, shares);
  LevelDivider divider(shares, usage_share, k);
  std::vector<int> groups;
  std::vector<int> ends;
  // Top level divides T; then every parent, top down, divides its own fair share.
  DivideSiblings(shares.tree.roots(), shares.total, divider, groups, ends, shares);
  for (int q : shares.tree.top_down()) {
    if (shares.tree.is_leaf(q)) continue;
    const std::vector<double> parent_share = shares.queues[q].fair_share;
    DivideSiblings(shares.tree.children(q), parent_share, divider, groups, ends, shares);
  }

  for (QueueAmounts& a : shares.queues) {
    a.allocatable_share.resize(n);
    for (int r = 0; r < n; ++r) {
      const double limit = a.limit[r] == -1 ? kInfinity : a.limit[r];
      a.allocatable_share[r] =
          a.deserved[r] == -1 ? limit : std::min(std::max(a.deserved[r], a.fair_share[r]), limit);
    }
  }
  return shares;
}

std::vector<QueueShare> ToQueueShares(const KaiFairShare& shares) {
  std::vector<QueueShare> result;
  result.reserve(shares.tree.size());
  for (int q = 0; q < shares.tree.size(); ++q) {
    const QueueAmounts& a = shares.queues[q];
    QueueShare share;
    share.queue = shares.tree.queue(q).name;
    for (const auto& [name, value] : shares.tree.queue(q).deserved) {
      share.deserved.emplace_hint(share.deserved.end(), name, WithoutNegativeZero(value));
    }
    share.fair_share = ToResponseMap(shares.resources, a.fair_share);
    share.allocated = ToResponseMap(shares.resources, a.allocated);
    share.requested = ToResponseMap(shares.resources, a.requested);
    double saturation = 0;
    for (int r = 0; r < shares.resources.size(); ++r) {
      saturation = std::max(saturation, Saturation(a.allocated[r], a.fair_share[r]));
    }
    share.saturation = WithoutNegativeZero(saturation);
    result.push_back(std::move(share));
  }
  return result;
}

}  // namespace arbiter::kai
