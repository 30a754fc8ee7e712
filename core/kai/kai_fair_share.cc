#include "core/kai/kai_fair_share.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/cancel_poll.h"

namespace arbiter::kai {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Resource names in the order first met while reading the snapshot. Maps tend to repeat the
// same keys in the same order, so the name after the previous key is tried first.
class ResourceInterner {
 public:
  int Intern(const std::string& name, int& hint) {
    const int n = static_cast<int>(names_.size());
    if (hint < n && *names_[hint] == name) return hint++;
    int id = -1;
    if (n <= kLinearLimit) {
      for (int i = 0; i < n; ++i) {
        if (*names_[i] == name) {
          id = i;
          break;
        }
      }
    } else {
      auto it = index_.find(name);
      if (it != index_.end()) id = it->second;
    }
    if (id < 0) {
      id = n;
      names_.push_back(&name);
      if (n + 1 == kLinearLimit + 1) {
        for (int i = 0; i <= n; ++i) index_.emplace(*names_[i], i);
      } else if (n + 1 > kLinearLimit + 1) {
        index_.emplace(name, id);
      }
    }
    hint = id + 1;
    return id;
  }

  int size() const { return static_cast<int>(names_.size()); }

  // The names sorted bytewise, and each first-met id's position among them.
  ResourceSet Sorted(std::vector<int>& position) const {
    std::vector<int> order(names_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return *names_[a] < *names_[b]; });
    position.assign(names_.size(), 0);
    std::vector<std::string> sorted;
    sorted.reserve(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      position[order[i]] = static_cast<int>(i);
      sorted.push_back(*names_[order[i]]);
    }
    return ResourceSet::FromSortedNames(std::move(sorted));
  }

 private:
  static constexpr int kLinearLimit = 16;
  std::vector<const std::string*> names_;              // point at map keys of the snapshot
  absl::flat_hash_map<absl::string_view, int> index_;  // filled past kLinearLimit names
};

// One value of a map in the snapshot: its owner (a queue, pod or node by input index), the
// resource's first-met id, and the value.
struct MapEntry {
  int owner;
  int id;
  double value;
};

void ReadMap(const ResourceMap& map, int owner, ResourceInterner& interner,
             std::vector<MapEntry>* out) {
  int hint = 0;
  for (const auto& [name, value] : map) {
    const int id = interner.Intern(name, hint);
    if (out != nullptr) out->push_back(MapEntry{owner, id, value});
  }
}

// Everything the division reads from the snapshot's maps, gathered in one pass so that each
// map is walked once: R is the union of the keys (§0.1).
struct SnapshotMaps {
  std::vector<MapEntry> capacity;
  std::vector<MapEntry> allocatable;  // owner = node
  std::vector<MapEntry> deserved;     // owner = queue (input index)
  std::vector<MapEntry> limit;
  std::vector<MapEntry> weight;
  std::vector<MapEntry> requests;   // owner = pod, numbered through the groups in input order
  std::vector<size_t> pod_entries;  // per pod, its first entry in `requests`; then the end
  std::vector<size_t> group_pods;   // per group, its first pod number
  std::vector<int> position;        // first-met id -> index in R
};

SnapshotMaps ReadMaps(const Snapshot& snapshot, ResourceSet& resources, CancelPoll& poll) {
  SnapshotMaps maps;
  ResourceInterner interner;
  ReadMap(snapshot.capacity, -1, interner, &maps.capacity);
  for (size_t i = 0; i < snapshot.nodes.size(); ++i) {
    ReadMap(snapshot.nodes[i].allocatable, static_cast<int>(i), interner, &maps.allocatable);
  }
  maps.group_pods.reserve(snapshot.pod_groups.size());
  size_t pod_count = 0;
  for (const PodGroup& group : snapshot.pod_groups) pod_count += group.pods.size();
  maps.pod_entries.reserve(pod_count + 1);
  int pod = 0;
  for (const PodGroup& group : snapshot.pod_groups) {
    // Cancelled: R and the maps stay incomplete; the caller discards the division.
    if (poll.Tick(1 + static_cast<int64_t>(group.pods.size()))) break;
    maps.group_pods.push_back(static_cast<size_t>(pod));
    for (const Pod& p : group.pods) {
      maps.pod_entries.push_back(maps.requests.size());
      ReadMap(p.requests, pod++, interner, &maps.requests);
    }
  }
  maps.pod_entries.push_back(maps.requests.size());
  maps.deserved.reserve(snapshot.queues.size());
  maps.weight.reserve(snapshot.queues.size());
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    const Queue& queue = snapshot.queues[i];
    const int owner = static_cast<int>(i);
    ReadMap(queue.deserved, owner, interner, &maps.deserved);
    ReadMap(queue.limit, owner, interner, &maps.limit);
    ReadMap(queue.over_quota_weight, owner, interner, &maps.weight);
    ReadMap(queue.borrowing_limit, owner, interner, nullptr);
    ReadMap(queue.lending_limit, owner, interner, nullptr);
  }
  resources = interner.Sorted(maps.position);
  return maps;
}

// T_r of §2.1: Snapshot.capacity[r] where present, else Σ allocatable[r] over schedulable nodes
// in name order (each resource summed on its own, independent of the input order).
std::vector<double> TopLevelTotal(const Snapshot& snapshot, const SnapshotMaps& maps, int n) {
  std::vector<double> total(n, 0.0);
  std::vector<char> given(n, 0);
  for (const MapEntry& e : maps.capacity) {
    total[maps.position[e.id]] = e.value;
    given[maps.position[e.id]] = 1;
  }
  std::vector<int> nodes;
  nodes.reserve(snapshot.nodes.size());
  for (size_t i = 0; i < snapshot.nodes.size(); ++i) {
    if (!snapshot.nodes[i].unschedulable) nodes.push_back(static_cast<int>(i));
  }
  std::sort(nodes.begin(), nodes.end(),
            [&](int a, int b) { return snapshot.nodes[a].name < snapshot.nodes[b].name; });
  // Entries are grouped by node in input order: find each node's range once.
  std::vector<size_t> first(snapshot.nodes.size() + 1, maps.allocatable.size());
  for (size_t k = maps.allocatable.size(); k-- > 0;) first[maps.allocatable[k].owner] = k;
  for (size_t i = snapshot.nodes.size(); i-- > 0;) first[i] = std::min(first[i], first[i + 1]);
  for (int node : nodes) {
    for (size_t k = first[node]; k < first[node + 1]; ++k) {
      const int r = maps.position[maps.allocatable[k].id];
      if (!given[r]) total[r] += maps.allocatable[k].value;
    }
  }
  return total;
}

// Writes each entry's value into its queue's vector.
void Scatter(const std::vector<MapEntry>& entries, const std::vector<int>& tree_index,
             const std::vector<int>& position, std::vector<double> QueueAmounts::*field,
             std::vector<QueueAmounts>& queues) {
  for (const MapEntry& e : entries) (queues[tree_index[e.owner]].*field)[position[e.id]] = e.value;
}

void AddPod(const SnapshotMaps& maps, size_t pod, std::vector<double>& into) {
  for (size_t k = maps.pod_entries[pod]; k < maps.pod_entries[pod + 1]; ++k) {
    into[maps.position[maps.requests[k].id]] += maps.requests[k].value;
  }
}

// §0.7 amounts: each leaf sums its pods in (pod group, pod) name order; each parent sums its
// children in name order.
void ComputeQueueAmounts(const Snapshot& snapshot, const SnapshotMaps& maps, KaiFairShare& shares,
                         CancelPoll& poll) {
  const int n = shares.resources.size();
  // Groups in (leaf, name) order.
  struct LeafGroup {
    int leaf;
    int group;
  };
  std::vector<LeafGroup> groups;
  groups.reserve(snapshot.pod_groups.size());
  for (size_t g = 0; g < snapshot.pod_groups.size(); ++g) {
    int leaf = shares.tree.Find(snapshot.pod_groups[g].queue);
    if (leaf >= 0) groups.push_back({leaf, static_cast<int>(g)});  // always, after validation
  }
  std::sort(groups.begin(), groups.end(), [&](const LeafGroup& a, const LeafGroup& b) {
    if (a.leaf != b.leaf) return a.leaf < b.leaf;
    return snapshot.pod_groups[a.group].name < snapshot.pod_groups[b.group].name;
  });
  std::vector<int> pods;
  for (const LeafGroup& entry : groups) {
    const PodGroup& group = snapshot.pod_groups[entry.group];
    if (poll.Tick(1 + static_cast<int64_t>(group.pods.size()))) return;
    QueueAmounts& amounts = shares.queues[entry.leaf];
    const bool preemptible = IsPreemptibleUnderKai(group);
    pods.resize(group.pods.size());
    for (size_t i = 0; i < pods.size(); ++i) pods[i] = static_cast<int>(i);
    auto by_name = [&](int a, int b) { return group.pods[a].name < group.pods[b].name; };
    if (!std::is_sorted(pods.begin(), pods.end(), by_name)) {
      std::sort(pods.begin(), pods.end(), by_name);
    }
    for (int i : pods) {
      const size_t pod = maps.group_pods[entry.group] + static_cast<size_t>(i);
      switch (EffectivePhase(group.pods[i])) {
        case PodPhase::kPending:
          AddPod(maps, pod, amounts.requested);
          break;
        case PodPhase::kRunning:
          AddPod(maps, pod, amounts.requested);
          AddPod(maps, pod, amounts.allocated);
          if (!preemptible) AddPod(maps, pod, amounts.allocated_np);
          break;
        default:  // RELEASING counts in neither (§0.7)
          break;
      }
    }
  }
  const std::vector<int>& order = shares.tree.top_down();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::vector<int>& children = shares.tree.children(*it);
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

// Divides one resource among one set of siblings (§2.2), reusing its buffers across calls.
class LevelDivider {
 public:
  LevelDivider(const KaiFairShare& shares, const std::vector<std::vector<double>>& usage_share,
               double k, CancelPoll& poll)
      : shares_(shares), usage_share_(usage_share), k_(k), poll_(poll) {}

  // `siblings` in name order; `groups` the same queues as runs of equal priority, highest
  // priority first, name order within a run (`group_ends[i]` ends run i). Writes fs_q,r.
  void Divide(const std::vector<int>& siblings, const std::vector<int>& groups,
              const std::vector<int>& group_ends, int r, double total,
              std::vector<QueueAmounts>& queues) {
    const size_t n = siblings.size();
    // Cancelled: fair shares stay partial; the caller discards the division.
    if (poll_.Tick(static_cast<int64_t>(n))) return;
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
      OrderByFraction(groups);
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
  // Sorts order_ into the remainder order of §2.2: fraction descending, fractions within
  // FractionsTie of each other being equal, then creation time, then name. A comparator with a
  // tolerance is not a strict weak order, so the fractions are sorted exactly first; then each
  // run of fractions that tie with the run's largest is one tie, ordered by the tie-break.
  void OrderByFraction(const std::vector<int>& groups) {
    std::sort(order_.begin(), order_.end(), [&](size_t x, size_t y) {
      if (fraction_[x] != fraction_[y]) return fraction_[x] > fraction_[y];
      return x < y;
    });
    const auto older = [&](size_t x, size_t y) {
      const Queue& qx = shares_.tree.queue(groups[x]);
      const Queue& qy = shares_.tree.queue(groups[y]);
      const Timestamp tx = qx.creation_time.value_or(Timestamp{});
      const Timestamp ty = qy.creation_time.value_or(Timestamp{});
      if (tx != ty) return tx < ty;
      return qx.name < qy.name;
    };
    for (size_t run = 0; run < order_.size();) {
      size_t end = run + 1;
      while (end < order_.size() && FractionsTie(fraction_[order_[run]], fraction_[order_[end]])) {
        ++end;
      }
      std::sort(order_.begin() + static_cast<std::ptrdiff_t>(run),
                order_.begin() + static_cast<std::ptrdiff_t>(end), older);
      run = end;
    }
  }

  // rounds(G, left) of §2.2 over groups[begin, end).
  double Rounds(const std::vector<int>& groups, size_t begin, size_t end, int r, double left,
                std::vector<QueueAmounts>& queues) {
    while (true) {
      // Nothing left to divide: every share would floor to 0 (guards against a sum that
      // rounding took a hair below 0).
      if (left <= 0) return left;
      // Each round satisfies at least one queue, so a level of n siblings may take n rounds of
      // n queues each.
      if (poll_.Tick(static_cast<int64_t>(end - begin))) return left;
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
        // The ratio first, then the product, as KAI computes it: C·P/ΣP can differ by an ulp
        // and move the floor below (§2.2).
        const double share = amount * (portion_[j] / portion_sum);
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
  CancelPoll& poll_;
  // Indexed by position in the priority-ordered sibling list.
  std::vector<double> requestable_;
  std::vector<double> fraction_;
  std::vector<char> has_fraction_;
  std::vector<size_t> active_;
  std::vector<double> portion_;
  std::vector<size_t> order_;
};

// U_q,r of §3: usage[q][r] / usage_capacity[r]; 0 without capacity or without a QueueUsage.
std::vector<std::vector<double>> UsageShares(const Snapshot& snapshot, const KaiFairShare& shares) {
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
  auto higher_priority = [&](int a, int b) {
    return shares.tree.queue(a).priority > shares.tree.queue(b).priority;
  };
  if (!std::is_sorted(groups.begin(), groups.end(), higher_priority)) {
    std::stable_sort(groups.begin(), groups.end(), higher_priority);
  }
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

bool FractionsTie(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

double Saturation(double allocated, double fair_share) {
  if (fair_share == 0) return allocated > 0 ? kInfinity : 0.0;
  return allocated / fair_share;
}

KaiFairShare ComputeKaiFairShare(const Snapshot& snapshot, const Policy& policy, CancelPoll* poll) {
  CancelPoll never;
  CancelPoll& cancel = poll != nullptr ? *poll : never;
  KaiFairShare shares;
  const SnapshotMaps maps = ReadMaps(snapshot, shares.resources, cancel);
  if (cancel.cancelled()) return shares;
  shares.tree = QueueTree::Build(snapshot);
  const int n = shares.resources.size();
  shares.total = TopLevelTotal(snapshot, maps, n);

  // Input index of each queue -> its index in the tree (name order).
  std::vector<int> tree_index(snapshot.queues.size());
  shares.queues.resize(shares.tree.size());
  for (int q = 0; q < shares.tree.size(); ++q) {
    if (cancel.Tick()) return shares;
    tree_index[&shares.tree.queue(q) - snapshot.queues.data()] = q;
    QueueAmounts& a = shares.queues[q];
    a.deserved.assign(n, 0.0);
    a.limit.assign(n, -1.0);
    a.over_quota_weight.assign(n, 1.0);
    a.requested.assign(n, 0.0);
    a.allocated.assign(n, 0.0);
    a.allocated_np.assign(n, 0.0);
    a.fair_share.assign(n, 0.0);
  }
  Scatter(maps.deserved, tree_index, maps.position, &QueueAmounts::deserved, shares.queues);
  Scatter(maps.limit, tree_index, maps.position, &QueueAmounts::limit, shares.queues);
  Scatter(maps.weight, tree_index, maps.position, &QueueAmounts::over_quota_weight, shares.queues);
  ComputeQueueAmounts(snapshot, maps, shares, cancel);
  if (cancel.cancelled()) return shares;

  const double k = policy.k_value > 0 ? policy.k_value : 0.0;
  std::vector<std::vector<double>> usage_share;
  if (k > 0) usage_share = UsageShares(snapshot, shares);
  LevelDivider divider(shares, usage_share, k, cancel);
  std::vector<int> groups;
  std::vector<int> ends;
  // Top level divides T; then every parent, top down, divides its own fair share.
  DivideSiblings(shares.tree.roots(), shares.total, divider, groups, ends, shares);
  for (int q : shares.tree.top_down()) {
    if (cancel.cancelled()) return shares;
    if (shares.tree.is_leaf(q)) continue;
    const std::vector<double> parent_share = shares.queues[q].fair_share;
    DivideSiblings(shares.tree.children(q), parent_share, divider, groups, ends, shares);
  }
  if (cancel.cancelled()) return shares;

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
