// The checks of SEMANTICS.md §1, in its order. Within each group of checks the list is walked in
// input order and every check of that group runs on one element before the next element, so the
// first offence (and hence the message) depends only on the request.
#include "core/validation.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/cancel_poll.h"
#include "core/echoed_name.h"
#include "core/quantity_format.h"
#include "core/resource_interner.h"
#include "core/status_macros.h"

namespace arbiter {
namespace {

// google.protobuf.Timestamp's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
constexpr int64_t kMinTimestampSeconds = -62135596800;
constexpr int64_t kMaxTimestampSeconds = 253402300799;
constexpr int32_t kMaxNanos = 999999999;
// google.protobuf.Duration's range: ±10,000 years.
constexpr int64_t kMaxDurationSeconds = 315576000000;
// Kueue's API bound on fairSharing.weight: 0, or above this.
constexpr double kMinPositiveFairSharingWeight = 1e-9;

// A value in a message: NaN and the infinities by name, every other value as the decisions
// write quantities (FormatQuantity: the shortest form that reads back as the same double, §0.5).
std::string Number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return FormatQuantity(value);
}

std::string Key(std::string_view key) { return absl::StrCat("[", QuotedName(key), "]"); }

absl::Status Invalid(absl::string_view path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
}

// ---- Rule 1: enums and policy ----

template <typename Enum>
bool InRange(Enum value, int32_t max) {
  const int32_t raw = static_cast<int32_t>(value);
  return raw >= 0 && raw <= max;
}

template <typename Enum>
absl::Status EnumError(absl::string_view path, Enum value) {
  return Invalid(path, absl::StrCat("unknown enum value ", static_cast<int32_t>(value)));
}

// Every enum field of the request, policy first, then the snapshot in field order.
absl::Status CheckEnums(const Snapshot& snapshot, const Policy& policy) {
  if (!InRange(policy.fairness_model, 2)) {
    return EnumError("policy.fairness_model", policy.fairness_model);
  }
  if (!InRange(policy.placement, 2)) return EnumError("policy.placement", policy.placement);
  for (size_t i = 0; i < policy.actions.size(); ++i) {
    if (!InRange(policy.actions[i], 4)) {
      return EnumError(absl::StrCat("policy.actions[", i, "]"), policy.actions[i]);
    }
  }
  for (size_t i = 0; i < policy.kueue_preemption_strategies.size(); ++i) {
    if (!InRange(policy.kueue_preemption_strategies[i], 2)) {
      return EnumError(absl::StrCat("policy.kueue_preemption_strategies[", i, "]"),
                       policy.kueue_preemption_strategies[i]);
    }
  }
  if (!InRange(policy.gpu_device_placement, 2)) {
    return EnumError("policy.gpu_device_placement", policy.gpu_device_placement);
  }
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    const KueuePreemption& kp = snapshot.queues[i].kueue_preemption;
    if (!InRange(kp.within_cluster_queue, 3)) {
      return EnumError(
          absl::StrCat("snapshot.queues[", i, "].kueue_preemption.within_cluster_queue"),
          kp.within_cluster_queue);
    }
    if (!InRange(kp.reclaim_within_cohort, 3)) {
      return EnumError(
          absl::StrCat("snapshot.queues[", i, "].kueue_preemption.reclaim_within_cohort"),
          kp.reclaim_within_cohort);
    }
    const FlavorFungibility& ff = snapshot.queues[i].flavor_fungibility;
    if (!InRange(ff.when_can_borrow, 2)) {
      return EnumError(absl::StrCat("snapshot.queues[", i, "].flavor_fungibility.when_can_borrow"),
                       ff.when_can_borrow);
    }
    if (!InRange(ff.when_can_preempt, 2)) {
      return EnumError(absl::StrCat("snapshot.queues[", i, "].flavor_fungibility.when_can_preempt"),
                       ff.when_can_preempt);
    }
    if (!InRange(ff.preference, 2)) {
      return EnumError(absl::StrCat("snapshot.queues[", i, "].flavor_fungibility.preference"),
                       ff.preference);
    }
  }
  for (size_t i = 0; i < snapshot.pod_groups.size(); ++i) {
    const PodGroup& group = snapshot.pod_groups[i];
    if (!InRange(group.preemptibility, 2)) {
      return EnumError(absl::StrCat("snapshot.pod_groups[", i, "].preemptibility"),
                       group.preemptibility);
    }
    for (size_t j = 0; j < group.pods.size(); ++j) {
      if (!InRange(group.pods[j].phase, 3)) {
        return EnumError(absl::StrCat("snapshot.pod_groups[", i, "].pods[", j, "].phase"),
                         group.pods[j].phase);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPolicy(const Policy& policy) {
  for (size_t i = 0; i < policy.actions.size(); ++i) {
    const std::string path = absl::StrCat("policy.actions[", i, "]");
    if (policy.actions[i] == Action::kUnspecified) {
      return Invalid(path, "ACTION_UNSPECIFIED is not an action");
    }
    for (size_t j = 0; j < i; ++j) {
      if (policy.actions[j] == policy.actions[i]) {
        return Invalid(path, absl::StrCat("duplicate action (also policy.actions[", j, "])"));
      }
    }
  }
  const auto& strategies = policy.kueue_preemption_strategies;
  const bool strategies_ok =
      strategies.empty() ||
      (strategies.size() == 1 && strategies[0] != KueuePreemptionStrategy::kUnspecified) ||
      (strategies.size() == 2 &&
       strategies[0] == KueuePreemptionStrategy::kLessThanOrEqualToFinalShare &&
       strategies[1] == KueuePreemptionStrategy::kLessThanInitialShare);
  if (!strategies_ok) {
    return Invalid("policy.kueue_preemption_strategies",
                   "must be empty, [LESS_THAN_OR_EQUAL_TO_FINAL_SHARE], "
                   "[LESS_THAN_INITIAL_SHARE], or these two in this order");
  }
  if (!std::isfinite(policy.k_value) || policy.k_value < 0) {
    return Invalid("policy.k_value",
                   absl::StrCat("must be finite and not negative, got ", Number(policy.k_value)));
  }
  const double m = policy.reclaimer_utilization_multiplier;
  if (!std::isfinite(m) || m < 0 || (m > 0 && m < 1)) {
    return Invalid("policy.reclaimer_utilization_multiplier",
                   absl::StrCat("must be 0 (= 1) or a finite value >= 1, got ", Number(m)));
  }
  const std::optional<int32_t>& max_preemptees = policy.max_consolidation_preemptees;
  if (max_preemptees.has_value() && *max_preemptees < -1) {
    return Invalid(
        "policy.max_consolidation_preemptees",
        absl::StrCat("must be -1 (unlimited) or more, got ", *policy.max_consolidation_preemptees));
  }
  return absl::OkStatus();
}

// ---- Shared value checks ----

bool TimestampInRange(const std::optional<Timestamp>& t) {
  return !t.has_value() ||
         (t->seconds >= kMinTimestampSeconds && t->seconds <= kMaxTimestampSeconds &&
          t->nanos >= 0 && t->nanos <= kMaxNanos);
}

// `path_fn()` is called only on an offence, so valid requests build no strings.
template <typename PathFn>
absl::Status CheckTimestamp(const PathFn& path_fn, const std::optional<Timestamp>& t) {
  if (TimestampInRange(t)) return absl::OkStatus();
  return Invalid(path_fn(), absl::StrCat("outside the Timestamp range (seconds ", t->seconds,
                                         ", nanos ", t->nanos, ")"));
}

template <typename PathFn>
absl::Status CheckDuration(const PathFn& path_fn, const std::optional<Duration>& d) {
  if (!d.has_value()) return absl::OkStatus();
  if (d->seconds < 0 || d->nanos < 0) {
    return Invalid(path_fn(), absl::StrCat("negative duration (seconds ", d->seconds, ", nanos ",
                                           d->nanos, ")"));
  }
  if (d->seconds > kMaxDurationSeconds || d->nanos > kMaxNanos) {
    return Invalid(path_fn(), absl::StrCat("outside the Duration range (seconds ", d->seconds,
                                           ", nanos ", d->nanos, ")"));
  }
  return absl::OkStatus();
}

// Every value finite and >= 0 (capacities, requests, usage); `path_fn()` names the map.
template <typename PathFn>
absl::Status CheckAmounts(const PathFn& path_fn, const ResourceMap& map) {
  for (const auto& [name, value] : map) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return Invalid(absl::StrCat(path_fn(), Key(name)),
                     absl::StrCat("must be finite and not negative, got ", Number(value)));
    }
  }
  return absl::OkStatus();
}

bool IsPositive(const std::optional<Duration>& d) {
  return d.has_value() && (d->seconds > 0 || (d->seconds == 0 && d->nanos > 0));
}

bool IsTaintEffect(absl::string_view effect) {
  return effect == "NoSchedule" || effect == "PreferNoSchedule" || effect == "NoExecute";
}

// A node's or a resource flavor's taint; `at(field)` is the path of one of its fields.
template <typename PathFn>
absl::Status CheckTaint(const PathFn& at, const Taint& taint) {
  if (taint.key.empty()) return Invalid(at("key"), "empty key");
  if (!IsTaintEffect(taint.effect)) {
    return Invalid(at("effect"), absl::StrCat("unknown effect ", QuotedName(taint.effect),
                                              " (NoSchedule, PreferNoSchedule or NoExecute)"));
  }
  return absl::OkStatus();
}

// A pod's or a resource flavor's toleration; `at(field)` is the path of one of its fields.
template <typename PathFn>
absl::Status CheckToleration(const PathFn& at, const Toleration& toleration) {
  if (toleration.op != "" && toleration.op != "Equal" && toleration.op != "Exists") {
    return Invalid(at("operator"), absl::StrCat("unknown operator ", QuotedName(toleration.op),
                                                " (Equal or Exists)"));
  }
  if (toleration.op == "Exists" && !toleration.value.empty()) {
    return Invalid(at("value"), "must be empty with operator Exists");
  }
  if (!toleration.effect.empty() && !IsTaintEffect(toleration.effect)) {
    return Invalid(at("effect"),
                   absl::StrCat("unknown effect ", QuotedName(toleration.effect),
                                " (empty, NoSchedule, PreferNoSchedule or NoExecute)"));
  }
  return absl::OkStatus();
}

// ---- Sums (issue 11) ----

// Running totals per resource of one kind of quantity, added in input order. Every value is
// already known finite and not negative, so a total only grows; the first value that takes it
// past kMaxQuantitySum is the offence.
class QuantitySums {
 public:
  // Names are interned in `names`, which may be shared by several sums.
  QuantitySums(const char* what, ResourceInterner& names) : what_(what), names_(names) {}

  // Adds every entry of `map`; `path_fn()` names the map (called only on an offence). Each
  // entry's name id is appended to `ids` when it is not null.
  template <typename PathFn>
  absl::Status Add(const PathFn& path_fn, const ResourceMap& map,
                   std::vector<int32_t>* ids = nullptr) {
    int hint = 0;
    for (const auto& [name, value] : map) {
      const int id = names_.Intern(name, hint);
      if (ids != nullptr) ids->push_back(id);
      if (!Grow(id, value)) return Invalid(absl::StrCat(path_fn(), Key(name)), Offence(name));
    }
    return absl::OkStatus();
  }

  // Adds the nominal quota of every resource of one flavor (FlavorQuotas.resources), by
  // resource name; `path_fn()` names the map.
  template <typename PathFn>
  absl::Status AddNominals(const PathFn& path_fn, const SortedMap<FlavorResourceQuota>& quotas) {
    int hint = 0;
    for (const auto& [name, quota] : quotas) {
      if (!Grow(names_.Intern(name, hint), quota.nominal)) {
        return Invalid(absl::StrCat(path_fn(), Key(name), ".nominal"), Offence(name));
      }
    }
    return absl::OkStatus();
  }

 private:
  // Adds `value` to the total of resource `id`; false when that takes it past the bound.
  bool Grow(int id, double value) {
    if (id >= static_cast<int>(totals_.size())) totals_.resize(id + 1, 0);
    double& total = totals_[id];
    total += value;
    return total <= kMaxQuantitySum;
  }

  std::string Offence(const std::string& name) const {
    return absl::StrCat("the ", what_, " ", QuotedName(name), " sum to more than ",
                        Number(kMaxQuantitySum));
  }

  const char* what_;
  ResourceInterner& names_;     // names point into the snapshot
  std::vector<double> totals_;  // by id of names_
};

// ---- Rule 1a: resource flavors (§5.8) ----

absl::Status CheckResourceFlavors(const std::vector<ResourceFlavor>& flavors, CancelPoll& poll) {
  if (flavors.empty()) return absl::OkStatus();
  absl::flat_hash_map<absl::string_view, int> by_name;
  by_name.reserve(flavors.size());
  for (size_t i = 0; i < flavors.size(); ++i) {
    if (poll.Tick()) return poll.status();
    const ResourceFlavor& flavor = flavors[i];
    auto at = [i](const char* field) {
      return absl::StrCat("snapshot.resource_flavors[", i, "].", field);
    };
    if (flavor.name.empty()) return Invalid(at("name"), "empty name");
    auto [it, inserted] = by_name.emplace(flavor.name, static_cast<int>(i));
    if (!inserted) {
      return Invalid(at("name"),
                     absl::StrCat("duplicate resource flavor ", QuotedName(flavor.name),
                                  " (also snapshot.resource_flavors[", it->second, "])"));
    }
    // Keys are in bytewise order: an empty key comes first.
    if (!flavor.node_labels.empty() && flavor.node_labels.begin()->first.empty()) {
      return Invalid(absl::StrCat(at("node_labels"), Key("")), "empty key");
    }
    for (size_t t = 0; t < flavor.node_taints.size(); ++t) {
      RETURN_IF_ERROR(CheckTaint(
          [&](const char* field) {
            return absl::StrCat("snapshot.resource_flavors[", i, "].node_taints[", t, "].", field);
          },
          flavor.node_taints[t]));
    }
    for (size_t t = 0; t < flavor.tolerations.size(); ++t) {
      RETURN_IF_ERROR(CheckToleration(
          [&](const char* field) {
            return absl::StrCat("snapshot.resource_flavors[", i, "].tolerations[", t, "].", field);
          },
          flavor.tolerations[t]));
    }
  }
  return absl::OkStatus();
}

// ---- Rule 2: queues ----

// Every queue name hashed once, every parent looked up once.
struct QueueIndex {
  absl::flat_hash_map<absl::string_view, int> by_name;  // first queue with each name
  std::vector<int> first_named;                         // by input index: first queue so named
  std::vector<int> parent;         // by input index: -1 at the top level or when unknown
  std::vector<char> on_cycle;      // by input index
  std::vector<char> has_children;  // by input index of the first name
};

QueueIndex IndexQueues(const std::vector<Queue>& queues) {
  QueueIndex index;
  const int n = static_cast<int>(queues.size());
  index.by_name.reserve(queues.size());
  index.first_named.resize(n);
  for (int i = 0; i < n; ++i)
    index.first_named[i] = index.by_name.emplace(queues[i].name, i).first->second;
  // Each queue's parent by input index (-1: top level or unknown); then mark the queues that
  // lie on a cycle of parent links, visiting every queue once.
  std::vector<int>& parent = index.parent;
  parent.assign(n, -1);
  index.has_children.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    if (queues[i].parent.empty()) continue;
    auto it = index.by_name.find(queues[i].parent);
    if (it == index.by_name.end()) continue;
    parent[i] = it->second;
    index.has_children[it->second] = 1;
  }
  enum : char { kUnvisited, kOnPath, kDone };
  std::vector<char> state(n, kUnvisited);
  index.on_cycle.assign(n, 0);
  std::vector<int> path;
  for (int start = 0; start < n; ++start) {
    path.clear();
    int q = start;
    while (q >= 0 && state[q] == kUnvisited) {
      state[q] = kOnPath;
      path.push_back(q);
      q = parent[q];
    }
    if (q >= 0 && state[q] == kOnPath) {
      // The path from q's position to its end is a cycle.
      bool in_cycle = false;
      for (int p : path) {
        if (p == q) in_cycle = true;
        if (in_cycle) index.on_cycle[p] = 1;
      }
    }
    for (int p : path) state[p] = kDone;
  }
  return index;
}

// NaN/±∞ in any quota map, then negatives other than -1 in the four -1 maps, then negative
// over-quota weights (§1 rule 2, in its order).
absl::Status CheckQuotaMaps(size_t i, const Queue& queue) {
  struct NamedMap {
    const char* field;
    const ResourceMap* map;
    bool allows_minus_one;
  };
  const NamedMap maps[] = {
      {"deserved", &queue.deserved, true},
      {"limit", &queue.limit, true},
      {"over_quota_weight", &queue.over_quota_weight, false},
      {"borrowing_limit", &queue.borrowing_limit, true},
      {"lending_limit", &queue.lending_limit, true},
  };
  // One pass finds nearly every queue clean; only one with an offence is walked in the rule's
  // order below, so that the message names its first offence.
  bool clean = true;
  for (const NamedMap& m : maps) {
    for (const auto& [name, value] : *m.map) {
      clean &= std::isfinite(value) && (value >= 0 || (m.allows_minus_one && value == -1));
    }
  }
  if (clean) return absl::OkStatus();
  auto path = [&](const char* field, const std::string& key) {
    return absl::StrCat("snapshot.queues[", i, "].", field, Key(key));
  };
  for (const NamedMap& m : maps) {
    for (const auto& [name, value] : *m.map) {
      if (!std::isfinite(value)) {
        return Invalid(path(m.field, name), absl::StrCat("must be finite, got ", Number(value)));
      }
    }
  }
  for (const NamedMap& m : maps) {
    if (!m.allows_minus_one) continue;
    for (const auto& [name, value] : *m.map) {
      if (value < 0 && value != -1) {
        return Invalid(path(m.field, name),
                       absl::StrCat("negative value other than -1 (unlimited): ", Number(value)));
      }
    }
  }
  for (const auto& [name, value] : queue.over_quota_weight) {
    if (value < 0) {
      return Invalid(path("over_quota_weight", name),
                     absl::StrCat("must not be negative, got ", Number(value)));
    }
  }
  return absl::OkStatus();
}

// Field paths of queue i's resource groups (§5.8).
std::string GroupPath(size_t i, size_t g) {
  return absl::StrCat("snapshot.queues[", i, "].resource_groups[", g, "]");
}
std::string CoveredPath(size_t i, size_t g, size_t k) {
  return absl::StrCat(GroupPath(i, g), ".covered_resources[", k, "]");
}
std::string FlavorPath(size_t i, size_t g, size_t f) {
  return absl::StrCat(GroupPath(i, g), ".flavors[", f, "]");
}

// Each covered resource's first place in a queue's groups, as (group, index).
using CoveredPlaces = absl::flat_hash_map<absl::string_view, std::pair<int, int>>;

// Quotas come either per flavor or in the legacy maps, and a group covers a resource and lists a
// flavor.
absl::Status CheckResourceGroupShape(size_t i, const Queue& queue) {
  const std::pair<const char*, const ResourceMap*> legacy[] = {
      {"deserved", &queue.deserved},
      {"borrowing_limit", &queue.borrowing_limit},
      {"lending_limit", &queue.lending_limit},
  };
  for (const auto& [field, map] : legacy) {
    if (map->empty()) continue;
    return Invalid(absl::StrCat("snapshot.queues[", i, "].", field, Key(map->begin()->first)),
                   "set on a queue with resource_groups (a queue gives its quotas either per "
                   "flavor or in the legacy maps)");
  }
  const std::vector<ResourceGroup>& groups = queue.resource_groups;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].covered_resources.empty()) {
      return Invalid(absl::StrCat(GroupPath(i, g), ".covered_resources"),
                     "empty (a resource group covers at least one resource)");
    }
    if (groups[g].flavors.empty()) {
      return Invalid(absl::StrCat(GroupPath(i, g), ".flavors"),
                     "empty (a resource group lists at least one flavor)");
    }
  }
  return absl::OkStatus();
}

// Covered resources: none empty or repeated in a group, none covered by two groups. A resource
// met again in the same group is a duplicate; met in a later group, it is covered twice, which is
// reported only once every group has been checked for empty and duplicate names. Fills `covered`.
absl::Status CheckCoveredResources(size_t i, const std::vector<ResourceGroup>& groups,
                                   CoveredPlaces* covered) {
  std::string covered_twice;  // the first such offence, as a whole message
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<std::string>& resources = groups[g].covered_resources;
    for (size_t k = 0; k < resources.size(); ++k) {
      if (resources[k].empty()) return Invalid(CoveredPath(i, g, k), "empty resource name");
      const auto [it, inserted] = covered->emplace(
          resources[k], std::pair<int, int>(static_cast<int>(g), static_cast<int>(k)));
      if (inserted) continue;
      const auto [first_group, first_index] = it->second;
      if (first_group == static_cast<int>(g)) {
        return Invalid(CoveredPath(i, g, k),
                       absl::StrCat("duplicate resource ", QuotedName(resources[k]), " (also ",
                                    CoveredPath(i, g, first_index), ")"));
      }
      if (covered_twice.empty()) {
        covered_twice = absl::StrCat(CoveredPath(i, g, k), ": resource ", QuotedName(resources[k]),
                                     " is covered by two resource groups (also ",
                                     CoveredPath(i, first_group, first_index), ")");
      }
    }
  }
  if (!covered_twice.empty()) return absl::InvalidArgumentError(covered_twice);
  return absl::OkStatus();
}

// Flavor names: none empty, then none listed twice in the queue.
absl::Status CheckFlavorNames(size_t i, const std::vector<ResourceGroup>& groups) {
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t f = 0; f < groups[g].flavors.size(); ++f) {
      if (groups[g].flavors[f].flavor.empty()) {
        return Invalid(absl::StrCat(FlavorPath(i, g, f), ".flavor"),
                       "empty flavor name (\"\" is the implicit flavor)");
      }
    }
  }
  absl::flat_hash_map<absl::string_view, std::pair<int, int>> listed;  // flavor: first place
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t f = 0; f < groups[g].flavors.size(); ++f) {
      const std::string& flavor = groups[g].flavors[f].flavor;
      const auto [it, inserted] =
          listed.emplace(flavor, std::pair<int, int>(static_cast<int>(g), static_cast<int>(f)));
      if (!inserted) {
        return Invalid(absl::StrCat(FlavorPath(i, g, f), ".flavor"),
                       absl::StrCat("duplicate flavor ", QuotedName(flavor), " (also ",
                                    FlavorPath(i, it->second.first, it->second.second), ")"));
      }
    }
  }
  return absl::OkStatus();
}

// Each flavor's quotas name exactly the group's covered resources: first a key the group does
// not cover (in key order), then a covered resource without a key (in list order).
absl::Status CheckFlavorQuotaKeys(size_t i, const std::vector<ResourceGroup>& groups,
                                  const CoveredPlaces& covered) {
  for (size_t g = 0; g < groups.size(); ++g) {
    const ResourceGroup& group = groups[g];
    for (size_t f = 0; f < group.flavors.size(); ++f) {
      const SortedMap<FlavorResourceQuota>& quotas = group.flavors[f].resources;
      for (const auto& entry : quotas) {
        const auto it = covered.find(entry.first);
        if (it == covered.end() || it->second.first != static_cast<int>(g)) {
          return Invalid(
              absl::StrCat(FlavorPath(i, g, f), ".resources", Key(entry.first)),
              absl::StrCat("resource ", QuotedName(entry.first), " is not covered by the group (",
                           GroupPath(i, g), ".covered_resources)"));
        }
      }
      if (quotas.size() == group.covered_resources.size()) continue;
      for (size_t k = 0; k < group.covered_resources.size(); ++k) {
        if (!quotas.contains(group.covered_resources[k])) {
          return Invalid(
              absl::StrCat(FlavorPath(i, g, f), ".resources"),
              absl::StrCat("no quota for covered resource ", QuotedName(group.covered_resources[k]),
                           " (", CoveredPath(i, g, k), ")"));
        }
      }
    }
  }
  return absl::OkStatus();
}

// Every nominal finite and not negative, then every limit finite and not negative but -1.
absl::Status CheckFlavorQuotaValues(size_t i, const std::vector<ResourceGroup>& groups) {
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t f = 0; f < groups[g].flavors.size(); ++f) {
      for (const auto& [name, quota] : groups[g].flavors[f].resources) {
        if (!(quota.nominal >= 0) || !std::isfinite(quota.nominal)) {
          return Invalid(
              absl::StrCat(FlavorPath(i, g, f), ".resources", Key(name), ".nominal"),
              absl::StrCat("must be finite and not negative, got ", Number(quota.nominal)));
        }
      }
    }
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t f = 0; f < groups[g].flavors.size(); ++f) {
      for (const auto& [name, quota] : groups[g].flavors[f].resources) {
        const std::pair<const char*, const std::optional<double>*> limits[] = {
            {".borrowing_limit", &quota.borrowing_limit},
            {".lending_limit", &quota.lending_limit},
        };
        for (const auto& [field, limit] : limits) {
          if (!limit->has_value()) continue;
          const double value = **limit;
          if (!std::isfinite(value)) {
            return Invalid(absl::StrCat(FlavorPath(i, g, f), ".resources", Key(name), field),
                           absl::StrCat("must be finite, got ", Number(value)));
          }
          if (value < 0 && value != -1) {
            return Invalid(
                absl::StrCat(FlavorPath(i, g, f), ".resources", Key(name), field),
                absl::StrCat("negative value other than -1 (unlimited): ", Number(value)));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

// §5.8: a flavored queue's resource groups, each check over the groups and flavors in input
// order before the next check (§1 rule 2, in its order).
absl::Status CheckResourceGroups(size_t i, const Queue& queue) {
  const std::vector<ResourceGroup>& groups = queue.resource_groups;
  if (groups.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(CheckResourceGroupShape(i, queue));
  CoveredPlaces covered;
  RETURN_IF_ERROR(CheckCoveredResources(i, groups, &covered));
  RETURN_IF_ERROR(CheckFlavorNames(i, groups));
  RETURN_IF_ERROR(CheckFlavorQuotaKeys(i, groups, covered));
  return CheckFlavorQuotaValues(i, groups);
}

// Kueue's webhook rule: a preference only orders flavors when the search goes on past a flavor
// that needs borrowing and past one that needs preemption. Checked on every queue.
absl::Status CheckFlavorFungibility(size_t i, const FlavorFungibility& fungibility) {
  if (fungibility.preference == FlavorPreference::kUnspecified) return absl::OkStatus();
  const char* field = nullptr;
  const char* value = nullptr;
  if (fungibility.when_can_borrow != WhenCanBorrow::kTryNextFlavor) {
    field = "when_can_borrow";
    value = fungibility.when_can_borrow == WhenCanBorrow::kUnspecified
                ? "MAY_STOP_SEARCH (by default)"
                : "MAY_STOP_SEARCH";
  } else if (fungibility.when_can_preempt == WhenCanPreempt::kMayStopSearch) {
    field = "when_can_preempt";
    value = "MAY_STOP_SEARCH";
  } else {
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("snapshot.queues[", i, "].flavor_fungibility.preference"),
                 absl::StrCat("set while ", field, " is ", value,
                              "; a preference needs when_can_borrow and when_can_preempt both "
                              "TRY_NEXT_FLAVOR"));
}

// Under KUEUE, a cohort's subtree quota sums its children's: the nominal quotas of all queues.
absl::Status CheckKueueQuotaSums(const Snapshot& snapshot, ResourceInterner& names,
                                 CancelPoll& poll) {
  QuantitySums sums("nominal quotas (deserved) of all queues for", names);
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    if (poll.Tick()) return poll.status();
    RETURN_IF_ERROR(sums.Add([i] { return absl::StrCat("snapshot.queues[", i, "].deserved"); },
                             snapshot.queues[i].deserved));
  }
  // §5.8: a flavor's nominal quotas too. A resource's lendable amount sums all its flavors
  // (§5.8.4), so the totals are per resource name, over the flavors and the legacy maps alike.
  // Their names are interned apart: R's cells are the model's to name.
  bool flavored = false;
  for (const Queue& queue : snapshot.queues) flavored |= !queue.resource_groups.empty();
  if (!flavored) return absl::OkStatus();
  ResourceInterner flavored_names;
  QuantitySums flavored_sums("nominal quotas of all queues and flavors for", flavored_names);
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    if (poll.Tick()) return poll.status();
    const Queue& queue = snapshot.queues[i];
    RETURN_IF_ERROR(flavored_sums.Add(
        [i] { return absl::StrCat("snapshot.queues[", i, "].deserved"); }, queue.deserved));
    for (size_t g = 0; g < queue.resource_groups.size(); ++g) {
      const std::vector<FlavorQuotas>& flavors = queue.resource_groups[g].flavors;
      for (size_t f = 0; f < flavors.size(); ++f) {
        RETURN_IF_ERROR(flavored_sums.AddNominals(
            [i, g, f] {
              return absl::StrCat("snapshot.queues[", i, "].resource_groups[", g, "].flavors[", f,
                                  "].resources");
            },
            flavors[f].resources));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckQueues(const Snapshot& snapshot, const Policy& policy, const QueueIndex& index,
                         ResourceInterner& names, CancelPoll& poll) {
  const bool kueue = policy.fairness_model == FairnessModel::kKueue;
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    if (poll.Tick()) return poll.status();
    const Queue& queue = snapshot.queues[i];
    auto at = [i](const char* field) { return absl::StrCat("snapshot.queues[", i, "].", field); };
    if (queue.name.empty()) return Invalid(at("name"), "empty name");
    const int first = index.first_named[i];
    if (first != static_cast<int>(i)) {
      return Invalid(at("name"), absl::StrCat("duplicate queue ", QuotedName(queue.name),
                                              " (also snapshot.queues[", first, "])"));
    }
    if (!queue.parent.empty() && index.parent[i] < 0) {
      return Invalid(at("parent"), absl::StrCat("unknown queue ", QuotedName(queue.parent)));
    }
    if (index.on_cycle[i]) {
      return Invalid(at("parent"),
                     queue.parent == queue.name
                         ? absl::StrCat("queue ", QuotedName(queue.name), " is its own parent")
                         : absl::StrCat("parent cycle through queue ", QuotedName(queue.name)));
    }
    RETURN_IF_ERROR(CheckQuotaMaps(i, queue));
    if (queue.fair_sharing_weight.has_value()) {
      const double w = *queue.fair_sharing_weight;
      if (!std::isfinite(w) || w < 0 || (w > 0 && w <= kMinPositiveFairSharingWeight)) {
        return Invalid(at("fair_sharing_weight"),
                       absl::StrCat("must be 0 or a finite value above 1e-9, got ", Number(w)));
      }
    }
    RETURN_IF_ERROR(
        CheckDuration([&] { return at("reclaim_min_runtime"); }, queue.reclaim_min_runtime));
    RETURN_IF_ERROR(
        CheckDuration([&] { return at("preempt_min_runtime"); }, queue.preempt_min_runtime));
    RETURN_IF_ERROR(CheckTimestamp([&] { return at("creation_time"); }, queue.creation_time));
    if (kueue) {
      for (const auto& [name, value] : queue.deserved) {
        if (value == -1) {
          return Invalid(absl::StrCat(at("deserved"), Key(name)),
                         "-1 is not allowed under FAIRNESS_MODEL_KUEUE (a nominal quota is "
                         "finite)");
        }
      }
    }
    RETURN_IF_ERROR(CheckResourceGroups(i, queue));
    RETURN_IF_ERROR(CheckFlavorFungibility(i, queue.flavor_fungibility));
  }
  if (kueue) RETURN_IF_ERROR(CheckKueueQuotaSums(snapshot, names, poll));
  return absl::OkStatus();
}

// The caller's bound on the tree's depth: the first queue in input order that lies deeper. Every
// parent exists and there is no cycle. O(queues), without recursion.
absl::Status CheckQueueDepth(const std::vector<int>& parent, const RequestBounds& bounds) {
  const int n = static_cast<int>(parent.size());
  if (n <= bounds.max_queue_depth) return absl::OkStatus();
  std::vector<int64_t> depth(n, 0);  // 0 = not known yet
  std::vector<int> walk;
  for (int i = 0; i < n; ++i) {
    int at = i;
    while (at >= 0 && depth[at] == 0) {
      walk.push_back(at);
      at = parent[at];
    }
    int64_t base = at < 0 ? 0 : depth[at];
    while (!walk.empty()) {
      depth[walk.back()] = ++base;
      walk.pop_back();
    }
    if (depth[i] > bounds.max_queue_depth) {
      return Invalid(absl::StrCat("snapshot.queues[", i, "]"),
                     absl::StrCat("the queue tree is ", depth[i], " levels deep here; at most ",
                                  bounds.max_queue_depth, " levels are accepted",
                                  bounds.max_queue_depth_name.empty()
                                      ? ""
                                      : absl::StrCat(" (", bounds.max_queue_depth_name, ")")));
    }
  }
  return absl::OkStatus();
}

// ---- Rule 3: nodes ----

// ---- GPU sharing (§4.13.6) ----

// 2^53: above it a double no longer holds every integer, and device units are exact integers.
constexpr double kMaxGpuUnits = 9007199254740992.0;

bool IsUnitCount(double value, double min) {
  return std::isfinite(value) && value >= min && value <= kMaxGpuUnits &&
         value == std::floor(value);
}

absl::Status CheckGpuDeviceMemory(const std::string& path, double memory) {
  if (IsUnitCount(memory, 0)) return absl::OkStatus();
  return Invalid(path, absl::StrCat("must be a whole number in [0, 2^53] (0 = unknown), got ",
                                    Number(memory)));
}

// §0.6: the Kueue model refuses the first sharing field a pod sets.
template <typename AtField>
absl::Status RefuseSharingUnderKueue(const AtField& at_field, const Pod& pod) {
  const char* field = pod.gpu_fraction                ? "gpu_fraction"
                      : pod.gpu_memory                ? "gpu_memory"
                      : pod.gpu_fraction_devices != 0 ? "gpu_fraction_devices"
                      : !pod.gpu_groups.empty()       ? "gpu_groups"
                                                      : nullptr;
  if (field == nullptr) return absl::OkStatus();
  return Invalid(at_field(field), "GPU sharing is read by the KAI model only");
}

template <typename AtField>
absl::Status CheckSharingAmounts(const AtField& at_field, const Pod& pod,
                                 const RequestBounds& bounds) {
  if (pod.gpu_fraction && !(*pod.gpu_fraction > 0 && *pod.gpu_fraction < 1)) {
    return Invalid(
        at_field("gpu_fraction"),
        absl::StrCat("must be a positive number smaller than 1, got ", Number(*pod.gpu_fraction)));
  }
  if (pod.gpu_memory && !IsUnitCount(*pod.gpu_memory, 1)) {
    return Invalid(at_field("gpu_memory"), absl::StrCat("must be a whole number in [1, 2^53], got ",
                                                        Number(*pod.gpu_memory)));
  }
  if (pod.gpu_fraction && pod.gpu_memory) {
    return Invalid(at_field("gpu_memory"), "set together with gpu_fraction; a pod asks for one");
  }
  if (pod.gpu_fraction_devices < 0) {
    return Invalid(at_field("gpu_fraction_devices"),
                   absl::StrCat("must not be negative, got ", pod.gpu_fraction_devices));
  }
  if (pod.gpu_fraction_devices > bounds.max_gpu_devices_per_pod) {
    return Invalid(
        at_field("gpu_fraction_devices"),
        absl::StrCat(pod.gpu_fraction_devices, " devices; at most ", bounds.max_gpu_devices_per_pod,
                     " are accepted",
                     bounds.max_gpu_devices_per_pod_name.empty()
                         ? ""
                         : absl::StrCat(" (", bounds.max_gpu_devices_per_pod_name, ")")));
  }
  if (pod.gpu_fraction_devices > 0 && !Shares(pod)) {
    return Invalid(at_field("gpu_fraction_devices"),
                   "set on a pod that does not share a GPU (set gpu_fraction or gpu_memory)");
  }
  if (!Shares(pod)) return absl::OkStatus();
  const auto gpu = pod.requests.find(kGpuResource);
  if (gpu != pod.requests.end() && gpu->second > 0) {
    // The path names the map key, as every other requests check does (§1).
    return Invalid(absl::StrCat(at_field("requests"), Key(kGpuResource)),
                   absl::StrCat("must be absent or 0 on a pod that shares a GPU (gpu_fraction or "
                                "gpu_memory sets its share), got ",
                                Number(gpu->second)));
  }
  return absl::OkStatus();
}

template <typename AtField>
absl::Status CheckGpuGroups(const AtField& at_field, const Pod& pod, PodPhase phase) {
  if (pod.gpu_groups.empty() && (!Shares(pod) || phase == PodPhase::kPending)) {
    return absl::OkStatus();
  }
  if (!Shares(pod))
    return Invalid(at_field("gpu_groups"), "set on a pod that does not share a GPU");
  if (phase == PodPhase::kPending) return Invalid(at_field("gpu_groups"), "set on a PENDING pod");
  const size_t devices = pod.gpu_fraction_devices == 0 ? 1 : pod.gpu_fraction_devices;
  if (pod.gpu_groups.size() != devices) {
    return Invalid(at_field("gpu_groups"), absl::StrCat("has ", pod.gpu_groups.size(),
                                                        " keys; a RUNNING or RELEASING pod "
                                                        "that shares lists one per device, ",
                                                        devices));
  }
  for (size_t k = 0; k < pod.gpu_groups.size(); ++k) {
    if (pod.gpu_groups[k].empty()) {
      return Invalid(absl::StrCat(at_field("gpu_groups"), "[", k, "]"), "empty device key");
    }
    for (size_t e = 0; e < k; ++e) {
      if (pod.gpu_groups[e] == pod.gpu_groups[k]) {
        return Invalid(absl::StrCat(at_field("gpu_groups"), "[", k, "]"),
                       absl::StrCat("duplicate device key ", QuotedName(pod.gpu_groups[k]),
                                    " (also gpu_groups[", e, "])"));
      }
    }
  }
  return absl::OkStatus();
}

// §4.13.6 for one pod, after its other checks; `node` is its node's input index (-1: none).
absl::Status CheckPodSharing(size_t i, size_t j, const Pod& pod, const Snapshot& snapshot,
                             bool kueue, int node, const RequestBounds& bounds) {
  const auto at_field = [i, j](const char* field) {
    return absl::StrCat("snapshot.pod_groups[", i, "].pods[", j, "].", field);
  };
  if (kueue) return RefuseSharingUnderKueue(at_field, pod);
  RETURN_IF_ERROR(CheckSharingAmounts(at_field, pod, bounds));
  const PodPhase phase = EffectivePhase(pod);
  RETURN_IF_ERROR(CheckGpuGroups(at_field, pod, phase));
  if (pod.gpu_memory && phase != PodPhase::kPending && node >= 0 &&
      snapshot.nodes[node].gpu_device_memory == 0) {
    return Invalid(at_field("gpu_memory"),
                   absl::StrCat("the pod runs on node ", QuotedName(snapshot.nodes[node].name),
                                ", whose gpu_device_memory is 0 (unknown)"));
  }
  return absl::OkStatus();
}

absl::Status CheckNodes(const Snapshot& snapshot,
                        absl::flat_hash_map<absl::string_view, int>& nodes_by_name,
                        RequestIndex& index, CancelPoll& poll) {
  nodes_by_name.reserve(snapshot.nodes.size());
  // The capacity of the cluster sums the nodes; every node's amounts enter the per-node
  // arithmetic (free = allocatable - used - releasing), unschedulable ones included. Summed in
  // the same walk; an overflow is reported only once no node has an offence of its own (the
  // sum check comes last in the rule), and it is the same first one in input order.
  QuantitySums sums("allocatable amounts of all nodes for", index.resources);
  absl::Status sum_error;
  for (size_t i = 0; i < snapshot.nodes.size(); ++i) {
    if (poll.Tick()) return poll.status();
    const Node& node = snapshot.nodes[i];
    auto at = [i](const char* field) { return absl::StrCat("snapshot.nodes[", i, "].", field); };
    if (node.name.empty()) return Invalid(at("name"), "empty name");
    auto [it, inserted] = nodes_by_name.emplace(node.name, static_cast<int>(i));
    if (!inserted) {
      return Invalid(at("name"), absl::StrCat("duplicate node ", QuotedName(node.name),
                                              " (also snapshot.nodes[", it->second, "])"));
    }
    RETURN_IF_ERROR(CheckAmounts([&] { return at("allocatable"); }, node.allocatable));
    for (size_t t = 0; t < node.taints.size(); ++t) {
      RETURN_IF_ERROR(CheckTaint(
          [&](const char* field) {
            return absl::StrCat("snapshot.nodes[", i, "].taints[", t, "].", field);
          },
          node.taints[t]));
    }
    RETURN_IF_ERROR(CheckGpuDeviceMemory(at("gpu_device_memory"), node.gpu_device_memory));
    if (sum_error.ok()) {
      sum_error = sums.Add([i] { return absl::StrCat("snapshot.nodes[", i, "].allocatable"); },
                           node.allocatable, &index.allocatable_ids);
    }
  }
  return sum_error;
}

// ---- Rule 4: pod groups ----

// Checks pod j of group i, except its name; `node` becomes its node's input index (-1: none).
absl::Status CheckPod(size_t i, size_t j, const Pod& pod,
                      const absl::flat_hash_map<absl::string_view, int>& nodes_by_name, int& node) {
  auto at = [i, j](const char* field) {
    return absl::StrCat("snapshot.pod_groups[", i, "].pods[", j, "].", field);
  };
  RETURN_IF_ERROR(CheckAmounts([&] { return at("requests"); }, pod.requests));
  const bool on_node = !pod.node_name.empty();
  if ((pod.phase == PodPhase::kRunning || pod.phase == PodPhase::kReleasing) && !on_node) {
    return Invalid(at("node_name"), pod.phase == PodPhase::kRunning
                                        ? "required for a RUNNING pod"
                                        : "required for a RELEASING pod");
  }
  if (pod.phase == PodPhase::kPending && on_node) {
    return Invalid(at("node_name"), "must be empty for a PENDING pod");
  }
  node = -1;
  if (on_node) {
    const auto found = nodes_by_name.find(pod.node_name);
    if (found == nodes_by_name.end()) {
      return Invalid(at("node_name"), absl::StrCat("unknown node ", QuotedName(pod.node_name)));
    }
    node = found->second;
  }
  for (size_t t = 0; t < pod.tolerations.size(); ++t) {
    RETURN_IF_ERROR(CheckToleration(
        [&](const char* field) {
          return absl::StrCat("snapshot.pod_groups[", i, "].pods[", j, "].tolerations[", t, "].",
                              field);
        },
        pod.tolerations[t]));
  }
  return CheckTimestamp([&] { return at("start_time"); }, pod.start_time);
}

// The index of an earlier pod of `pods` named like pods[j], or -1.
int EarlierPodNamed(const std::vector<Pod>& pods, size_t j,
                    absl::flat_hash_map<absl::string_view, int>& seen) {
  constexpr size_t kPairwiseLimit = 16;  // small groups: compare pairwise, no hashing
  if (pods.size() <= kPairwiseLimit) {
    // The names of a group's pods mostly differ only at their ends: compare the last byte
    // before the whole name.
    const std::string& name = pods[j].name;
    for (size_t k = 0; k < j; ++k) {
      const std::string& other = pods[k].name;
      if (other.size() == name.size() && (name.empty() || other.back() == name.back()) &&
          other == name) {
        return static_cast<int>(k);
      }
    }
    return -1;
  }
  auto [it, inserted] = seen.emplace(pods[j].name, static_cast<int>(j));
  return inserted ? -1 : it->second;
}

// The resources `queue` covers, sorted, for each queue that pod groups have asked about so far.
class CoveredResources {
 public:
  explicit CoveredResources(const std::vector<Queue>& queues) : queues_(queues) {}

  const std::vector<std::string_view>& Of(int queue) {
    auto [it, inserted] = by_queue_.try_emplace(queue);
    if (inserted) {
      for (const ResourceGroup& group : queues_[queue].resource_groups) {
        it->second.insert(it->second.end(), group.covered_resources.begin(),
                          group.covered_resources.end());
      }
      std::sort(it->second.begin(), it->second.end());
    }
    return it->second;
  }

 private:
  const std::vector<Queue>& queues_;
  absl::flat_hash_map<int, std::vector<std::string_view>> by_queue_;
};

// An admitted group's usage of a covered resource is charged to its flavor (§5.8.3): every
// (pod set, resource) with a positive request of a resource in `covered_names` (sorted) needs
// one, checked in (pod set, resource) order. `by_pod_set` orders the group's entries by pod set.
absl::Status CheckAdmittedFlavors(size_t i, const PodGroup& group, const Queue& queue,
                                  const std::vector<std::string_view>& covered_names,
                                  const std::vector<int>& by_pod_set) {
  const std::vector<PodSetFlavors>& entries = group.flavors;
  auto entry_path = [i](size_t k) {
    return absl::StrCat("snapshot.pod_groups[", i, "].flavors[", k, "]");
  };
  std::vector<std::pair<std::string_view, std::string_view>> requested;  // (pod set, resource)
  for (const Pod& pod : group.pods) {
    for (const auto& [resource, amount] : pod.requests) {
      if (amount > 0 && std::binary_search(covered_names.begin(), covered_names.end(),
                                           std::string_view(resource))) {
        requested.emplace_back(pod.pod_set, resource);
      }
    }
  }
  std::sort(requested.begin(), requested.end());
  requested.erase(std::unique(requested.begin(), requested.end()), requested.end());
  for (const auto& [pod_set, resource] : requested) {
    const auto entry =
        std::lower_bound(by_pod_set.begin(), by_pod_set.end(), pod_set,
                         [&](int k, std::string_view name) { return entries[k].pod_set < name; });
    if (entry == by_pod_set.end() || entries[*entry].pod_set != pod_set) {
      return Invalid(
          absl::StrCat("snapshot.pod_groups[", i, "].flavors"),
          absl::StrCat("no entry for pod set ", QuotedName(pod_set), ", which requests resource ",
                       QuotedName(resource), " (queue ", QuotedName(queue.name),
                       " covers it, and the group is admitted)"));
    }
    if (!entries[*entry].flavors.contains(resource)) {
      return Invalid(absl::StrCat(entry_path(*entry), ".flavors"),
                     absl::StrCat("no flavor for resource ", QuotedName(resource), " of pod set ",
                                  QuotedName(pod_set), " (queue ", QuotedName(queue.name),
                                  " covers it, and the group is admitted)"));
    }
  }
  return absl::OkStatus();
}

// §5.8: the flavors of pod group i, after all its pods' checks, each check over the entries in
// input order before the next check (§1 rule 4, in its order). `queue` is the group's queue, at
// input index `queue_index`.
absl::Status CheckPodGroupFlavors(size_t i, const PodGroup& group, const Queue& queue,
                                  int queue_index, CoveredResources& covered) {
  const std::vector<PodSetFlavors>& entries = group.flavors;
  const bool charged = group.admitted && !queue.resource_groups.empty();
  if (entries.empty() && !charged) return absl::OkStatus();
  auto entry_path = [i](size_t k) {
    return absl::StrCat("snapshot.pod_groups[", i, "].flavors[", k, "]");
  };
  // The entries by (pod set, input index): a duplicate follows its first entry.
  std::vector<int> by_pod_set(entries.size());
  for (size_t k = 0; k < entries.size(); ++k) by_pod_set[k] = static_cast<int>(k);
  std::sort(by_pod_set.begin(), by_pod_set.end(), [&](int a, int b) {
    return entries[a].pod_set != entries[b].pod_set ? entries[a].pod_set < entries[b].pod_set
                                                    : a < b;
  });
  int duplicate = -1;  // the first duplicate entry in input order
  int original = -1;   // its first entry
  for (size_t n = 1; n < by_pod_set.size(); ++n) {
    const int k = by_pod_set[n];
    const int before = by_pod_set[n - 1];
    if (entries[k].pod_set == entries[before].pod_set && (duplicate < 0 || k < duplicate)) {
      duplicate = k;
      original = before;
    }
  }
  if (duplicate >= 0) {
    return Invalid(absl::StrCat(entry_path(duplicate), ".pod_set"),
                   absl::StrCat("duplicate pod set ", QuotedName(entries[duplicate].pod_set),
                                " (also ", entry_path(original), ")"));
  }
  // The group's pod sets, in name order.
  std::vector<std::string_view> pod_sets;
  pod_sets.reserve(group.pods.size());
  for (const Pod& pod : group.pods) pod_sets.push_back(pod.pod_set);
  std::sort(pod_sets.begin(), pod_sets.end());
  pod_sets.erase(std::unique(pod_sets.begin(), pod_sets.end()), pod_sets.end());
  for (size_t k = 0; k < entries.size(); ++k) {
    if (!std::binary_search(pod_sets.begin(), pod_sets.end(),
                            std::string_view(entries[k].pod_set))) {
      return Invalid(
          absl::StrCat(entry_path(k), ".pod_set"),
          absl::StrCat("no pod of the group is in pod set ", QuotedName(entries[k].pod_set)));
    }
  }
  for (size_t k = 0; k < entries.size(); ++k) {
    for (const auto& [resource, flavor] : entries[k].flavors) {
      if (flavor.empty()) {
        return Invalid(absl::StrCat(entry_path(k), ".flavors", Key(resource)), "empty flavor name");
      }
    }
  }
  if (!charged) return absl::OkStatus();
  return CheckAdmittedFlavors(i, group, queue, covered.Of(queue_index), by_pod_set);
}

absl::Status CheckPodGroups(const Snapshot& snapshot, bool kueue, const QueueIndex& queues,
                            const absl::flat_hash_map<absl::string_view, int>& nodes_by_name,
                            const RequestBounds& bounds, RequestIndex& index, CancelPoll& poll) {
  size_t pod_count = 0;
  for (const PodGroup& group : snapshot.pod_groups) pod_count += group.pods.size();
  index.group_queue.reserve(snapshot.pod_groups.size());
  index.pod_node.reserve(pod_count);
  // Requests are summed per pod group (its unit, its Kueue usage), per node, per queue and up
  // the tree, and into the response's requested amounts: all bounded by their sum over all pods.
  // Summed in the same walk; an overflow is reported only once no pod group has an offence of
  // its own (the sum check comes last in the rule), and it is the same first one in input order.
  QuantitySums sums("requests of all pods for", index.resources);
  absl::Status sum_error;
  absl::flat_hash_map<absl::string_view, int> groups_by_name;
  groups_by_name.reserve(snapshot.pod_groups.size());
  absl::flat_hash_map<absl::string_view, int> pods_by_name;
  CoveredResources covered(snapshot.queues);
  for (size_t i = 0; i < snapshot.pod_groups.size(); ++i) {
    const PodGroup& group = snapshot.pod_groups[i];
    if (poll.Tick(1 + static_cast<int64_t>(group.pods.size()))) return poll.status();
    auto at = [i](const char* field) {
      return absl::StrCat("snapshot.pod_groups[", i, "].", field);
    };
    if (group.name.empty()) return Invalid(at("name"), "empty name");
    auto [it, inserted] = groups_by_name.emplace(group.name, static_cast<int>(i));
    if (!inserted) {
      return Invalid(at("name"), absl::StrCat("duplicate pod group ", QuotedName(group.name),
                                              " (also snapshot.pod_groups[", it->second, "])"));
    }
    if (group.queue.empty()) return Invalid(at("queue"), "empty queue");
    auto queue = queues.by_name.find(group.queue);
    if (queue == queues.by_name.end()) {
      return Invalid(at("queue"), absl::StrCat("unknown queue ", QuotedName(group.queue)));
    }
    if (queues.has_children[queue->second]) {
      return Invalid(at("queue"),
                     absl::StrCat("queue ", QuotedName(group.queue),
                                  " is not a leaf (pod groups live only in leaf queues)"));
    }
    index.group_queue.push_back(queue->second);
    if (group.min_member < 0) {
      return Invalid(at("min_member"),
                     absl::StrCat("must not be negative, got ", group.min_member));
    }
    RETURN_IF_ERROR(CheckTimestamp([&] { return at("creation_time"); }, group.creation_time));
    RETURN_IF_ERROR(CheckTimestamp([&] { return at("admission_time"); }, group.admission_time));
    pods_by_name.clear();
    for (size_t j = 0; j < group.pods.size(); ++j) {
      const Pod& pod = group.pods[j];
      auto pod_at = [i, j](const char* field) {
        return absl::StrCat("snapshot.pod_groups[", i, "].pods[", j, "].", field);
      };
      if (pod.name.empty()) return Invalid(pod_at("name"), "empty name");
      const int earlier = EarlierPodNamed(group.pods, j, pods_by_name);
      if (earlier >= 0) {
        return Invalid(pod_at("name"),
                       absl::StrCat("duplicate pod ", QuotedName(pod.name),
                                    " (also snapshot.pod_groups[", i, "].pods[", earlier, "])"));
      }
      int node = -1;
      RETURN_IF_ERROR(CheckPod(i, j, pod, nodes_by_name, node));
      RETURN_IF_ERROR(CheckPodSharing(i, j, pod, snapshot, kueue, node, bounds));
      if (Shares(pod)) ++index.sharing_pods;
      index.pod_node.push_back(node);
      if (sum_error.ok()) {
        sum_error = sums.Add(
            [i, j] { return absl::StrCat("snapshot.pod_groups[", i, "].pods[", j, "].requests"); },
            pod.requests, &index.request_ids);
      }
    }
    RETURN_IF_ERROR(
        CheckPodGroupFlavors(i, group, snapshot.queues[queue->second], queue->second, covered));
  }
  return sum_error;
}

// ---- Rule 5: usage ----

absl::Status CheckUsage(const Snapshot& snapshot, const QueueIndex& queues,
                        std::vector<int>& usage_queue) {
  std::vector<int> seen(snapshot.queues.size(), -1);  // by queue: its usage entry
  usage_queue.reserve(snapshot.usage.size());
  for (size_t i = 0; i < snapshot.usage.size(); ++i) {
    const QueueUsage& usage = snapshot.usage[i];
    auto at = [i](const char* field) { return absl::StrCat("snapshot.usage[", i, "].", field); };
    const auto queue = queues.by_name.find(usage.queue);
    if (queue == queues.by_name.end()) {
      return Invalid(at("queue"), absl::StrCat("unknown queue ", QuotedName(usage.queue)));
    }
    if (seen[queue->second] >= 0) {
      return Invalid(at("queue"),
                     absl::StrCat("duplicate usage for queue ", QuotedName(usage.queue),
                                  " (also snapshot.usage[", seen[queue->second], "])"));
    }
    seen[queue->second] = static_cast<int>(i);
    usage_queue.push_back(queue->second);
    RETURN_IF_ERROR(CheckAmounts([&] { return at("usage"); }, usage.usage));
  }
  RETURN_IF_ERROR(
      CheckAmounts([] { return std::string("snapshot.usage_capacity"); }, snapshot.usage_capacity));
  return CheckAmounts([] { return std::string("snapshot.capacity"); }, snapshot.capacity);
}

// ---- Rule 6: Schedule under KAI ----

absl::Status CheckNowForMinRuntimes(const Snapshot& snapshot) {
  if (snapshot.now.has_value()) return absl::OkStatus();
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    const Queue& queue = snapshot.queues[i];
    const char* field = IsPositive(queue.reclaim_min_runtime)   ? "reclaim_min_runtime"
                        : IsPositive(queue.preempt_min_runtime) ? "preempt_min_runtime"
                                                                : nullptr;
    if (field != nullptr) {
      return Invalid("snapshot.now",
                     absl::StrCat("unset while snapshot.queues[", i, "].", field, " is positive"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRequest(const Snapshot& snapshot, const Policy& policy, RequestKind kind,
                             CancelPoll* poll, const RequestBounds& bounds, RequestIndex* index) {
  CancelPoll never;
  CancelPoll& cancel = poll != nullptr ? *poll : never;
  RequestIndex local;
  RequestIndex& learned = index != nullptr ? *index : local;
  // 1. Policy, with every enum of the request.
  RETURN_IF_ERROR(CheckEnums(snapshot, policy));
  RETURN_IF_ERROR(CheckPolicy(policy));
  // 1a. Resource flavors (§5.8).
  RETURN_IF_ERROR(CheckResourceFlavors(snapshot.resource_flavors, cancel));
  // 2. Queues (Snapshot.now is checked first: the request's own timestamp).
  RETURN_IF_ERROR(CheckTimestamp([] { return std::string("snapshot.now"); }, snapshot.now));
  QueueIndex queues = IndexQueues(snapshot.queues);
  RETURN_IF_ERROR(CheckQueues(snapshot, policy, queues, learned.resources, cancel));
  RETURN_IF_ERROR(CheckQueueDepth(queues.parent, bounds));
  // 3. Nodes.
  absl::flat_hash_map<absl::string_view, int> nodes_by_name;
  RETURN_IF_ERROR(CheckNodes(snapshot, nodes_by_name, learned, cancel));
  // 4. Pod groups.
  RETURN_IF_ERROR(CheckPodGroups(snapshot, policy.fairness_model == FairnessModel::kKueue, queues,
                                 nodes_by_name, bounds, learned, cancel));
  // 5. Usage.
  RETURN_IF_ERROR(CheckUsage(snapshot, queues, learned.usage_queue));
  // 6. Schedule under KAI.
  if (kind == RequestKind::kSchedule && policy.fairness_model != FairnessModel::kKueue) {
    RETURN_IF_ERROR(CheckNowForMinRuntimes(snapshot));
  }
  learned.queue_parent = std::move(queues.parent);
  return absl::OkStatus();
}

}  // namespace arbiter
