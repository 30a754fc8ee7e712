#include "tests/property/property_support.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/generator/kueue_quota.h"
#include "clients/generator/random.h"
#include "clients/simulator/apply_decisions.h"
#include "core/api/arbiter.h"
#include "tests/property/property_runs.h"

namespace arbiter::testing {
namespace {

using ::arbiter::simulator::ApplyDecisions;

using generator::GeneratorModel;
using generator::GeneratorOptions;
using generator::Rng;

// Exact equality that tells -0.0 from 0.0 and treats NaN as equal to itself (an answer must be
// byte-identical, whatever it holds).
bool SameDouble(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

std::string DiffMaps(const ResourceMap& a, const ResourceMap& b) {
  if (a.size() != b.size()) return absl::StrCat("sizes ", a.size(), " vs ", b.size());
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first) return absl::StrCat("keys ", ia->first, " vs ", ib->first);
    if (!SameDouble(ia->second, ib->second)) {
      return absl::StrCat(ia->first, ": ", ia->second, " vs ", ib->second);
    }
  }
  return "";
}

template <typename T, typename Diff>
std::string DiffLists(const char* what, const std::vector<T>& a, const std::vector<T>& b,
                      Diff diff) {
  if (a.size() != b.size()) return absl::StrCat(what, ": ", a.size(), " vs ", b.size(), " items");
  for (size_t i = 0; i < a.size(); ++i) {
    std::string d = diff(a[i], b[i]);
    if (!d.empty()) return absl::StrCat(what, "[", i, "]: ", d);
  }
  return "";
}

std::string DiffShare(const QueueShare& a, const QueueShare& b) {
  if (a.queue != b.queue) return absl::StrCat("queue ", a.queue, " vs ", b.queue);
  std::string d;
  if (!(d = DiffMaps(a.deserved, b.deserved)).empty()) return a.queue + " deserved " + d;
  if (!(d = DiffMaps(a.fair_share, b.fair_share)).empty()) return a.queue + " fair_share " + d;
  if (!(d = DiffMaps(a.allocated, b.allocated)).empty()) return a.queue + " allocated " + d;
  if (!(d = DiffMaps(a.requested, b.requested)).empty()) return a.queue + " requested " + d;
  if (!SameDouble(a.saturation, b.saturation)) return a.queue + " saturation";
  if (!SameDouble(a.weighted_share, b.weighted_share)) return a.queue + " weighted_share";
  if (a.dominant_resource != b.dominant_resource) return a.queue + " dominant_resource";
  if (a.borrowing != b.borrowing) return a.queue + " borrowing";
  return DiffLists("flavor_resources", a.flavor_resources, b.flavor_resources,
                   [&a](const FlavorResourceShare& x, const FlavorResourceShare& y) {
                     if (x.flavor != y.flavor || x.resource != y.resource ||
                         !SameDouble(x.nominal, y.nominal) ||
                         !SameDouble(x.subtree_quota, y.subtree_quota) ||
                         !SameDouble(x.usage, y.usage) || !SameDouble(x.borrowed, y.borrowed)) {
                       return absl::StrCat(a.queue, " ", x.flavor, "/", x.resource);
                     }
                     return std::string();
                   });
}

using PodKey = std::pair<std::string, std::string>;

std::map<std::string, const PodGroup*> GroupsByName(const Snapshot& s) {
  std::map<std::string, const PodGroup*> groups;
  for (const PodGroup& g : s.pod_groups) groups[g.name] = &g;
  return groups;
}

std::map<std::string, const Queue*> QueuesByName(const Snapshot& s) {
  std::map<std::string, const Queue*> queues;
  for (const Queue& q : s.queues) queues[q.name] = &q;
  return queues;
}

// Per node: Σ requests of the pods that hold it (RUNNING and RELEASING).
std::map<std::string, ResourceMap> NodeUse(const Snapshot& s) {
  std::map<std::string, ResourceMap> use;
  for (const PodGroup& g : s.pod_groups) {
    for (const Pod& p : g.pods) {
      const PodPhase phase = EffectivePhase(p);
      if (phase != PodPhase::kRunning && phase != PodPhase::kReleasing) continue;
      for (const auto& [r, v] : p.requests) use[p.node_name][r] += v;
    }
  }
  return use;
}

// Per queue: Σ requests of RUNNING pods over its subtree.
std::map<std::string, ResourceMap> QueueAllocated(const Snapshot& s) {
  const auto queues = QueuesByName(s);
  std::map<std::string, ResourceMap> allocated;
  for (const PodGroup& g : s.pod_groups) {
    for (const Pod& p : g.pods) {
      if (EffectivePhase(p) != PodPhase::kRunning) continue;
      for (std::string q = g.queue; !q.empty(); q = queues.at(q)->parent) {
        for (const auto& [r, v] : p.requests) allocated[q][r] += v;
      }
    }
  }
  return allocated;
}

double Get(const ResourceMap& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

bool Tolerated(const std::vector<Toleration>& tolerations, const Taint& taint) {
  for (const Toleration& t : tolerations) {
    if (!t.effect.empty() && t.effect != taint.effect) continue;
    if (t.op == "Exists") {
      if (t.key.empty() || t.key == taint.key) return true;
    } else if (t.key == taint.key && t.value == taint.value) {
      return true;
    }
  }
  return false;
}

int GangSize(const PodGroup& g) { return std::max(g.min_member, 1); }

int RunningPods(const PodGroup& g) {
  int n = 0;
  for (const Pod& p : g.pods) n += EffectivePhase(p) == PodPhase::kRunning;
  return n;
}

// The min runtime that applies: the first of `queue` and its ancestors that sets it.
std::optional<Duration> InheritedRuntime(const std::map<std::string, const Queue*>& queues,
                                         std::string queue, bool reclaim) {
  for (; !queue.empty(); queue = queues.at(queue)->parent) {
    const Queue& q = *queues.at(queue);
    const std::optional<Duration>& d = reclaim ? q.reclaim_min_runtime : q.preempt_min_runtime;
    if (d.has_value()) return d;
  }
  return std::nullopt;
}

std::vector<std::string> PathToRoot(const std::map<std::string, const Queue*>& queues,
                                    std::string queue) {
  std::vector<std::string> path;
  for (; !queue.empty(); queue = queues.at(queue)->parent) path.push_back(queue);
  return path;
}

}  // namespace

int CasesFromEnvironment(const char* variable, int fallback) {
  const char* env = std::getenv(variable);
  if (env == nullptr || *env == '\0') return fallback;
  // Whole decimal numbers only: strtol reports what atoi would leave undefined (overflow).
  char* end = nullptr;
  errno = 0;
  const long cases = std::strtol(env, &end, 10);
  if (errno != 0 || *end != '\0' || cases <= 0 || cases > std::numeric_limits<int>::max()) {
    return fallback;
  }
  return static_cast<int>(cases);
}

GeneratorOptions PropertyCaseOptions(uint64_t index, GeneratorModel model) {
  Rng rng(0x5eed0000ULL + index * 0x9e3779b97f4a7c15ULL);
  GeneratorOptions o;
  o.model = model;
  o.seed = index + 1;
  o.extra_resources = static_cast<int>(rng.Below(3));
  o.pending_fraction = rng.Real(0.05, 0.5);
  if (model == GeneratorModel::kKueue) {
    o.queues = static_cast<int>(rng.Between(2, 30));
    o.cohorts = static_cast<int>(rng.Between(0, 8));
    o.depth = static_cast<int>(rng.Between(2, 3));
    o.pods = static_cast<int>(rng.Between(10, 200));
    o.nodes = 0;
  } else {
    o.nodes = static_cast<int>(rng.Between(4, 40));
    o.queues = static_cast<int>(rng.Between(2, 25));
    o.depth = static_cast<int>(rng.Between(1, 4));
    o.pods = static_cast<int>(rng.Between(10, 300));
    o.reclaim_groups = rng.Chance(0.3) ? static_cast<int>(rng.Between(1, 6)) : 0;
  }
  return o;
}

GeneratorOptions FlavoredPropertyCaseOptions(uint64_t index) {
  GeneratorOptions o = PropertyCaseOptions(index, GeneratorModel::kKueue);
  o.flavors = 1 + static_cast<int>(index % 3);
  return o;
}

std::string DescribeCase(uint64_t index, const GeneratorOptions& o) {
  return absl::StrCat(
      "case ", index, ": model=", o.model == GeneratorModel::kKueue ? "kueue" : "kai",
      " seed=", o.seed, " nodes=", o.nodes, " queues=", o.queues, " cohorts=", o.cohorts,
      " depth=", o.depth, " pods=", o.pods, " pending_fraction=", o.pending_fraction,
      " resources=", o.extra_resources, " reclaim_groups=", o.reclaim_groups,
      o.flavors > 0 ? absl::StrCat(" flavors=", o.flavors) : "");
}

Snapshot Permuted(const Snapshot& snapshot, uint64_t seed) {
  Rng rng(seed);
  Snapshot s = snapshot;
  rng.Shuffle(s.queues);
  rng.Shuffle(s.nodes);
  for (Node& n : s.nodes) rng.Shuffle(n.taints);
  rng.Shuffle(s.pod_groups);
  for (PodGroup& g : s.pod_groups) {
    rng.Shuffle(g.pods);
    for (Pod& p : g.pods) rng.Shuffle(p.tolerations);
  }
  rng.Shuffle(s.usage);
  // Kueue resource flavors (§0.5): every repeated field but ResourceGroup.flavors, whose order is
  // significant.
  rng.Shuffle(s.resource_flavors);
  for (ResourceFlavor& f : s.resource_flavors) {
    rng.Shuffle(f.node_taints);
    rng.Shuffle(f.tolerations);
  }
  for (Queue& q : s.queues) {
    rng.Shuffle(q.resource_groups);
    for (ResourceGroup& g : q.resource_groups) rng.Shuffle(g.covered_resources);
  }
  for (PodGroup& g : s.pod_groups) rng.Shuffle(g.flavors);
  return s;
}

std::string DiffQueueShares(const std::vector<QueueShare>& a, const std::vector<QueueShare>& b) {
  return DiffLists("queues", a, b, DiffShare);
}

std::string DiffResults(const ScheduleResult& a, const ScheduleResult& b) {
  std::string d = DiffQueueShares(a.queues, b.queues);
  if (!d.empty()) return d;
  d = DiffLists("bindings", a.bindings, b.bindings, [](const Binding& x, const Binding& y) {
    if (x.pod_group != y.pod_group || x.pod != y.pod || x.node != y.node ||
        x.after_evictions != y.after_evictions || x.gpu_groups != y.gpu_groups) {
      return absl::StrCat(x.pod_group, "/", x.pod, "->", x.node, "[",
                          absl::StrJoin(x.gpu_groups, ","), "] vs ", y.pod_group, "/", y.pod, "->",
                          y.node, "[", absl::StrJoin(y.gpu_groups, ","), "]");
    }
    return std::string();
  });
  if (!d.empty()) return d;
  d = DiffLists("evictions", a.evictions, b.evictions, [](const Eviction& x, const Eviction& y) {
    if (x.pod_group != y.pod_group || x.pod != y.pod || x.node != y.node || x.reason != y.reason ||
        x.preemptor_pod_group != y.preemptor_pod_group || x.message != y.message) {
      return absl::StrCat(x.pod_group, "/", x.pod, " (", x.message, ") vs ", y.pod_group, "/",
                          y.pod, " (", y.message, ")");
    }
    return std::string();
  });
  if (!d.empty()) return d;
  d = DiffLists("admissions", a.admissions, b.admissions,
                [](const Admission& x, const Admission& y) {
                  if (x.pod_group != y.pod_group || x.queue != y.queue ||
                      x.after_evictions != y.after_evictions) {
                    return absl::StrCat(x.pod_group, " vs ", y.pod_group);
                  }
                  return DiffLists("pod_sets", x.pod_sets, y.pod_sets,
                                   [&x](const PodSetFlavors& p, const PodSetFlavors& q) {
                                     if (p.pod_set != q.pod_set || p.flavors != q.flavors) {
                                       return absl::StrCat(x.pod_group, " ", p.pod_set);
                                     }
                                     return std::string();
                                   });
                });
  if (!d.empty()) return d;
  return DiffLists(
      "pending", a.pending, b.pending, [](const PendingPodGroup& x, const PendingPodGroup& y) {
        if (x.pod_group != y.pod_group || x.reason != y.reason || x.message != y.message) {
          return absl::StrCat(x.pod_group, " ", x.reason, " (", x.message, ") vs ", y.pod_group,
                              " ", y.reason, " (", y.message, ")");
        }
        return std::string();
      });
}

bool IsPreemptible(const PodGroup& group, FairnessModel model) {
  if (group.preemptibility == Preemptibility::kNonPreemptible) return false;
  if (group.preemptibility == Preemptibility::kPreemptible) return true;
  return model == FairnessModel::kKueue || group.priority < 100;
}

absl::Status CheckNodeCapacity(const Snapshot& before, const Snapshot& after) {
  const auto use_before = NodeUse(before);
  const auto use_after = NodeUse(after);
  for (const Node& node : after.nodes) {
    auto it = use_after.find(node.name);
    if (it == use_after.end()) continue;
    for (const auto& [r, used] : it->second) {
      const double allocatable = Get(node.allocatable, r);
      if (used <= allocatable) continue;
      auto prior = use_before.find(node.name);
      const double was = prior == use_before.end() ? 0 : Get(prior->second, r);
      if (used <= was) continue;
      return absl::FailedPreconditionError(absl::StrCat("node ", node.name, " holds ", used, " ", r,
                                                        " of ", allocatable, " (was ", was, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckQueueLimits(const Snapshot& before, const Snapshot& after) {
  const auto was = QueueAllocated(before);
  const auto now = QueueAllocated(after);
  for (const Queue& q : after.queues) {
    auto it = now.find(q.name);
    if (it == now.end()) continue;
    for (const auto& [r, limit] : q.limit) {
      if (limit == -1) continue;
      const double allocated = Get(it->second, r);
      if (allocated <= limit) continue;
      auto prior = was.find(q.name);
      const double before_amount = prior == was.end() ? 0 : Get(prior->second, r);
      if (allocated <= before_amount) continue;
      return absl::FailedPreconditionError(
          absl::StrCat("queue ", q.name, " holds ", allocated, " ", r, " above its limit ", limit));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGangs(const Snapshot& after, const ScheduleResult& result) {
  std::set<std::string> touched;
  for (const Binding& b : result.bindings) touched.insert(b.pod_group);
  for (const Eviction& e : result.evictions) touched.insert(e.pod_group);
  const auto groups = GroupsByName(after);
  for (const std::string& name : touched) {
    auto it = groups.find(name);
    if (it == groups.end()) continue;  // ApplyDecisions already rejects unknown groups
    const int running = RunningPods(*it->second);
    if (running != 0 && running < GangSize(*it->second)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "group ", name, " runs ", running, " pods, gang size ", GangSize(*it->second)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBindings(const Snapshot& before, const ScheduleResult& result) {
  std::map<PodKey, const Pod*> pods;
  for (const PodGroup& g : before.pod_groups) {
    for (const Pod& p : g.pods) pods[{g.name, p.name}] = &p;
  }
  std::map<std::string, const Node*> nodes;
  for (const Node& n : before.nodes) nodes[n.name] = &n;
  std::set<PodKey> seen;
  for (const Binding& b : result.bindings) {
    const PodKey key{b.pod_group, b.pod};
    if (!seen.insert(key).second) {
      return absl::FailedPreconditionError(absl::StrCat(b.pod_group, "/", b.pod, " bound twice"));
    }
    auto pod = pods.find(key);
    auto node = nodes.find(b.node);
    if (pod == pods.end() || node == nodes.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("binding of unknown pod or node ", b.pod_group, "/", b.pod, "->", b.node));
    }
    const Node& n = *node->second;
    if (n.unschedulable) {
      return absl::FailedPreconditionError(
          absl::StrCat(b.pod_group, "/", b.pod, " bound to unschedulable ", n.name));
    }
    for (const auto& [key_name, value] : pod->second->node_selector) {
      auto label = n.labels.find(key_name);
      if (label == n.labels.end() || label->second != value) {
        return absl::FailedPreconditionError(absl::StrCat(
            b.pod_group, "/", b.pod, " bound to ", n.name, " against its selector ", key_name));
      }
    }
    for (const Taint& t : n.taints) {
      if (t.effect == "PreferNoSchedule" || Tolerated(pod->second->tolerations, t)) continue;
      return absl::FailedPreconditionError(
          absl::StrCat(b.pod_group, "/", b.pod, " bound to ", n.name, " despite taint ", t.key));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNonPreemptibleKept(const Snapshot& before, const ScheduleResult& result,
                                     FairnessModel model) {
  const auto groups = GroupsByName(before);
  for (const Eviction& e : result.evictions) {
    auto it = groups.find(e.pod_group);
    if (it != groups.end() && !IsPreemptible(*it->second, model)) {
      return absl::FailedPreconditionError(
          absl::StrCat("non-preemptible ", e.pod_group, "/", e.pod, " evicted"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckMinRuntime(const Snapshot& before, const Snapshot& after,
                             const ScheduleResult& result) {
  const auto groups = GroupsByName(before);
  const auto groups_after = GroupsByName(after);
  const auto queues = QueuesByName(before);
  const Timestamp now = before.now.value_or(Timestamp{});
  std::set<std::string> checked;
  for (const Eviction& e : result.evictions) {
    const bool reclaim =
        e.reason == EvictionReason::kFairShareReclaim || e.reason == EvictionReason::kQuotaReclaim;
    const bool preempt = e.reason == EvictionReason::kPriorityPreemption;
    if (!reclaim && !preempt) continue;
    if (!checked.insert(e.pod_group).second) continue;
    auto victim = groups.find(e.pod_group);
    auto preemptor = groups.find(e.preemptor_pod_group);
    if (victim == groups.end()) continue;
    const PodGroup& v = *victim->second;
    // start(G): the earliest start_time among G's RUNNING pods that have one.
    std::optional<Timestamp> start;
    for (const Pod& p : v.pods) {
      if (EffectivePhase(p) != PodPhase::kRunning || !p.start_time.has_value()) continue;
      if (!start.has_value() || *p.start_time < *start) start = p.start_time;
    }
    if (!start.has_value()) continue;
    std::string from = v.queue;
    if (reclaim) {
      if (preemptor == groups.end()) continue;  // CheckPreemptorsBound reports it
      // The victim side's child of the lowest common ancestor (the root when there is none).
      const std::vector<std::string> mine = PathToRoot(queues, preemptor->second->queue);
      const std::vector<std::string> theirs = PathToRoot(queues, v.queue);
      const std::set<std::string> on_mine(mine.begin(), mine.end());
      from = theirs.back();
      for (size_t i = 0; i < theirs.size(); ++i) {
        if (on_mine.count(theirs[i])) {
          from = i > 0 ? theirs[i - 1] : theirs[0];
          break;
        }
      }
    }
    const std::optional<Duration> d = InheritedRuntime(queues, from, reclaim);
    if (!d.has_value() || (d->seconds == 0 && d->nanos == 0)) continue;
    if (!(now < AddDuration(*start, *d))) continue;  // protection over
    const int running_after = RunningPods(*groups_after.at(v.name));
    if (running_after < GangSize(v)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "group ", v.name, " protected by min-runtime (queue ", from, ", ", d->seconds,
          " s) left with ", running_after, " running pods of gang ", GangSize(v)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPreemptorsBound(const ScheduleResult& result) {
  std::set<std::string> bound;
  for (const Binding& b : result.bindings) bound.insert(b.pod_group);
  for (const Eviction& e : result.evictions) {
    if (e.preemptor_pod_group.empty() || bound.count(e.preemptor_pod_group) == 0) {
      return absl::FailedPreconditionError(absl::StrCat("eviction of ", e.pod_group, "/", e.pod,
                                                        " for \"", e.preemptor_pod_group,
                                                        "\", which has no binding"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckKueueLimits(const Snapshot& after) {
  generator::KueueQuotaTree tree = generator::KueueQuotaTree::Build(after);
  for (const PodGroup& g : after.pod_groups) {
    if (!g.admitted) continue;
    const int cq = tree.Find(g.queue);
    tree.Add(cq, generator::KueueCharge(after.queues[cq], g));
  }
  return tree.CheckWithinLimits();
}

absl::Status CheckKueueEvictionsWhole(const Snapshot& before, const ScheduleResult& result) {
  const auto groups = GroupsByName(before);
  std::map<std::string, std::set<std::string>> evicted;
  for (const Eviction& e : result.evictions) {
    evicted[e.pod_group].insert(e.pod);
    auto preemptor = groups.find(e.preemptor_pod_group);
    if (preemptor == groups.end() || preemptor->second->admitted) {
      return absl::FailedPreconditionError(absl::StrCat("eviction of ", e.pod_group, " for \"",
                                                        e.preemptor_pod_group,
                                                        "\", which is not a pending workload"));
    }
  }
  for (const auto& [name, pods] : evicted) {
    const PodGroup& g = *groups.at(name);
    if (pods.size() != g.pods.size()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "workload ", name, " evicted with ", pods.size(), " of its ", g.pods.size(), " pods"));
    }
  }
  for (const Admission& a : result.admissions) {
    if (evicted.count(a.pod_group)) {
      return absl::FailedPreconditionError(
          absl::StrCat("workload ", a.pod_group, " both admitted and evicted"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckKueueDecisionPlaces(const Snapshot& before, const ScheduleResult& result) {
  const auto groups = GroupsByName(before);
  std::map<std::string, int> places;
  std::set<std::string> evicted;
  for (const Admission& a : result.admissions) {
    auto it = groups.find(a.pod_group);
    if (it == groups.end() || it->second->admitted) {
      return absl::FailedPreconditionError(
          absl::StrCat("admission of ", a.pod_group, ", which is not a pending workload"));
    }
    if (a.queue != it->second->queue) {
      return absl::FailedPreconditionError(absl::StrCat(
          "workload ", a.pod_group, " of queue ", it->second->queue, " admitted into ", a.queue));
    }
    ++places[a.pod_group];
  }
  for (const Eviction& e : result.evictions) {
    auto it = groups.find(e.pod_group);
    if (it == groups.end() || !it->second->admitted) {
      return absl::FailedPreconditionError(
          absl::StrCat("eviction of ", e.pod_group, ", which is not an admitted workload"));
    }
    if (evicted.insert(e.pod_group).second) ++places[e.pod_group];
  }
  for (const PendingPodGroup& p : result.pending) ++places[p.pod_group];
  for (const auto& [name, group] : groups) {
    const int expected = group->admitted ? static_cast<int>(evicted.count(name)) : 1;
    if (places[name] != expected) {
      return absl::FailedPreconditionError(absl::StrCat(group->admitted ? "admitted" : "pending",
                                                        " workload ", name, " is in ", places[name],
                                                        " places of the answer, not ", expected));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckKueuePreemptorsServed(const ScheduleResult& result) {
  std::map<std::string, bool> admitted;  // name -> after_evictions
  for (const Admission& a : result.admissions) admitted[a.pod_group] = a.after_evictions;
  std::set<std::string> pending;
  for (const PendingPodGroup& p : result.pending) pending.insert(p.pod_group);
  for (const Eviction& e : result.evictions) {
    auto it = admitted.find(e.preemptor_pod_group);
    if (it != admitted.end() ? !it->second : pending.count(e.preemptor_pod_group) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "eviction of ", e.pod_group, " for ", e.preemptor_pod_group, ", which is ",
          it != admitted.end() ? "admitted without evictions" : "neither admitted nor pending"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::pair<std::string, std::string>> EvictionPairs(const ScheduleResult& result) {
  std::set<std::pair<std::string, std::string>> pairs;
  for (const Eviction& e : result.evictions) {
    if (e.reason == EvictionReason::kConsolidation) continue;
    pairs.insert({e.pod_group, e.preemptor_pod_group});
  }
  return {pairs.begin(), pairs.end()};
}

absl::Status CheckNoPingPong(const ScheduleResult& first, const ScheduleResult& second,
                             PingPongExcuse excuse) {
  // (victim, preemptor) -> the first such eviction of the first call.
  std::map<std::pair<std::string, std::string>, const Eviction*> earlier;
  for (const Eviction& e : first.evictions) {
    if (e.reason == EvictionReason::kConsolidation) continue;
    earlier.emplace(std::make_pair(e.pod_group, e.preemptor_pod_group), &e);
  }
  for (const Eviction& e : second.evictions) {
    if (e.reason == EvictionReason::kConsolidation) continue;
    auto it = earlier.find({e.preemptor_pod_group, e.pod_group});
    if (it == earlier.end()) continue;
    if (excuse != nullptr && excuse(*it->second, e)) continue;
    return absl::FailedPreconditionError(
        absl::StrCat(e.preemptor_pod_group, " was evicted for ", e.pod_group, " (reason ",
                     static_cast<int>(it->second->reason), ") and now evicts it back (reason ",
                     static_cast<int>(e.reason), ")"));
  }
  return absl::OkStatus();
}

std::vector<PropertyRun> RunPropertyCases(int count, GeneratorModel model,
                                          void (*adjust)(uint64_t index, Policy& policy),
                                          bool second_call) {
  return model == GeneratorModel::kKueue
             ? RunPropertyCases(
                   count, [](uint64_t i) { return PropertyCaseOptions(i, GeneratorModel::kKueue); },
                   adjust, second_call)
             : RunPropertyCases(
                   count, [](uint64_t i) { return PropertyCaseOptions(i, GeneratorModel::kKai); },
                   adjust, second_call);
}

std::vector<PropertyRun> RunPropertyCases(int count, GeneratorOptions (*options_of)(uint64_t index),
                                          void (*adjust)(uint64_t index, Policy& policy),
                                          bool second_call) {
  std::vector<PropertyRun> runs;
  runs.reserve(count);
  for (int i = 0; i < count; ++i) {
    PropertyRun run;
    run.index = static_cast<uint64_t>(i);
    const GeneratorOptions options = options_of(run.index);
    run.description = DescribeCase(run.index, options);
    run.request = generator::Generate(options);
    if (adjust != nullptr) adjust(run.index, run.request.policy);
    run.first = Schedule(run.request.snapshot, run.request.policy);
    if (run.first.ok()) {
      run.applied = ApplyDecisions(run.request.snapshot, run.request.policy, *run.first);
    } else {
      run.applied = run.first.status();
    }
    if (!second_call) {
      run.second = absl::FailedPreconditionError("no second call was asked for");
    } else if (run.applied.ok()) {
      run.second = Schedule(*run.applied, run.request.policy);
    } else {
      run.second = run.applied.status();
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace arbiter::testing
