// The Kueue test kit: run the model on a snapshot and read its answer, and the few calls into
// the model's internals (quota tree, workloads, admission rounds, nomination) that the unit and
// property tests make, funnelled here so that a change of the internal signatures is adapted in
// one place.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/kueue/admission.h"
#include "core/kueue/fair_preemption.h"
#include "core/kueue/kueue.h"
#include "core/kueue/nomination.h"
#include "core/kueue/queue_shares.h"
#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"
#include "core/model.h"
#include "core/queue_tree.h"
#include "core/resources.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"
#include "tests/support/validated.h"

namespace arbiter::kueue::testing {

using ::arbiter::testing::MustValidate;
using ::arbiter::testing::SnapshotBuilder;

inline Policy KueuePolicy(std::vector<KueuePreemptionStrategy> strategies = {}) {
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  policy.kueue_preemption_strategies = std::move(strategies);
  return policy;
}

// One cycle of the Kueue model, with the caller's hooks.
inline absl::StatusOr<ScheduleResult> ScheduleKueueWithHooks(const Snapshot& snapshot,
                                                             const Policy& policy,
                                                             const CycleHooks& hooks) {
  return ScheduleKueue(MustValidate(snapshot, policy), hooks);
}

inline ScheduleResult RunKueue(const Snapshot& snapshot, const Policy& policy = KueuePolicy()) {
  absl::StatusOr<ScheduleResult> result = ScheduleKueueWithHooks(snapshot, policy, CycleHooks{});
  EXPECT_THAT(result, ::arbiter::testing::IsOk());
  return result.ok() ? *result : ScheduleResult{};
}

inline const QueueShare* FindQueue(const std::vector<QueueShare>& queues, const std::string& name) {
  for (const QueueShare& q : queues) {
    if (q.queue == name) return &q;
  }
  ADD_FAILURE() << "no queue " << name;
  return nullptr;
}

// allocated[resource] of `queue` in the answer (bubbled Use for a cohort).
inline double Allocated(const std::vector<QueueShare>& queues, const std::string& queue,
                        const std::string& resource) {
  const QueueShare* q = FindQueue(queues, queue);
  if (q == nullptr) return -1;
  auto it = q->allocated.find(resource);
  return it == q->allocated.end() ? 0 : it->second;
}

inline std::set<std::string> Admitted(const ScheduleResult& result) {
  std::set<std::string> names;
  for (const Admission& a : result.admissions) names.insert(a.pod_group);
  return names;
}

// Evicted groups, each with its reason (checked equal over the group's pods).
inline std::map<std::string, EvictionReason> Evicted(const ScheduleResult& result) {
  std::map<std::string, EvictionReason> groups;
  for (const Eviction& e : result.evictions) {
    auto [it, inserted] = groups.emplace(e.pod_group, e.reason);
    if (!inserted) {
      EXPECT_EQ(it->second, e.reason) << e.pod_group;
    }
  }
  return groups;
}

inline std::map<std::string, std::string> PendingReasons(const ScheduleResult& result) {
  std::map<std::string, std::string> reasons;
  for (const PendingPodGroup& p : result.pending) reasons[p.pod_group] = p.reason;
  return reasons;
}

inline const PendingPodGroup* FindPending(const ScheduleResult& result, const std::string& group) {
  for (const PendingPodGroup& p : result.pending) {
    if (p.pod_group == group) return &p;
  }
  return nullptr;
}

// A snapshot with its validated request, queue tree, resource set and quota tree (usage from the
// admitted groups), kept together because the trees point into the snapshot and the request.
struct BuiltTree {
  Snapshot snapshot;
  std::optional<ValidatedSnapshot> request;
  QueueTree queues;  // copies of the request's, for the tests' convenience
  ResourceSet resources;
  QuotaTree tree;

  int q(const std::string& name) const {
    const int index = queues.Find(name);
    EXPECT_GE(index, 0) << name;
    return index;
  }
  int r(const std::string& name) const {
    const int index = resources.Find(name);
    EXPECT_GE(index, 0) << name;
    return index;
  }
  // A Usage of one resource.
  Usage Of(const std::string& resource, double amount) const {
    return Usage{ResourceAmount{r(resource), amount}};
  }
};

inline std::unique_ptr<BuiltTree> BuildTree(Snapshot snapshot) {
  auto built = std::make_unique<BuiltTree>();
  built->snapshot = std::move(snapshot);
  built->request.emplace(MustValidate(built->snapshot, KueuePolicy()));
  built->queues = built->request->tree();
  built->resources = built->request->resources();
  built->tree = QuotaTree::Build(*built->request);
  if (built->tree.cells().flavored_request()) {
    // Charged at each admission's flavors (§5.8.3), as the model charges them.
    const std::vector<Workload> workloads = CollectWorkloads(*built->request, built->tree);
    std::vector<char> holds(workloads.size(), 0);
    for (size_t i = 0; i < workloads.size(); ++i) holds[i] = workloads[i].admitted;
    built->tree.SetLeafUsage(
        LeafUsage(workloads, holds, built->tree.size(), built->tree.resource_count()));
    return built;
  }
  std::vector<double> leaf(static_cast<size_t>(built->tree.size()) * built->tree.resource_count(),
                           0.0);
  for (const PodGroup& group : built->snapshot.pod_groups) {
    if (!group.admitted) continue;
    const int cq = built->queues.Find(group.queue);
    for (const Pod& pod : group.pods) {
      for (const auto& [name, value] : pod.requests) {
        leaf[static_cast<size_t>(cq) * built->tree.resource_count() +
             built->resources.Find(name)] += value;
      }
    }
  }
  built->tree.SetLeafUsage(leaf);
  return built;
}

// The decisions after at most `max_rounds` admission rounds (0: until quiet), by group name.
struct RoundsResult {
  std::map<std::string, bool> admitted;  // name -> after_evictions
  std::map<std::string, EvictionReason> evicted;
  std::map<std::string, std::string> preemptor;  // victim -> the group it made room for
  std::map<std::string, std::string> reason;     // pending group -> reason code
  std::map<std::string, std::string> message;    // pending group -> sentence
  int rounds = 0;
};

inline RoundsResult RunRounds(const Snapshot& snapshot, int max_rounds,
                              const Policy& policy = KueuePolicy()) {
  auto built = BuildTree(snapshot);
  std::vector<Workload> workloads = CollectWorkloads(*built->request, built->tree);
  absl::StatusOr<AdmissionOutcome> outcome =
      RunAdmission(built->tree, workloads, ResolveStrategies(policy), CycleHooks{}, max_rounds);
  EXPECT_THAT(outcome, ::arbiter::testing::IsOk());
  RoundsResult result;
  if (!outcome.ok()) return result;
  result.rounds = outcome->rounds;
  for (const AdmissionDecision& a : outcome->admissions) {
    result.admitted[workloads[a.workload].name()] = a.after_evictions;
  }
  for (const EvictionDecision& e : outcome->evictions) {
    result.evicted[workloads[e.workload].name()] = e.reason;
    result.preemptor[workloads[e.workload].name()] = workloads[e.preemptor].name();
  }
  for (const PendingDecision& p : outcome->pending) {
    result.reason[workloads[p.workload].name()] = p.reason;
    result.message[workloads[p.workload].name()] = p.message;
  }
  return result;
}

// §5.2 on the model's own quota tree for `snapshot` (usage from its admitted groups): the root
// within its quota, and what every other node stores in its parent beyond its local quota within
// its borrowing limit, per flavor-resource (cell) in a flavored request. OK, or the first node and
// flavor-resource beyond.
inline absl::Status CheckQuotaTreeWithinLimits(const Snapshot& snapshot) {
  const std::unique_ptr<BuiltTree> built = BuildTree(snapshot);
  const QuotaTree& tree = built->tree;
  for (int n = 0; n < tree.size(); ++n) {
    for (int r = 0; r < tree.resource_count(); ++r) {
      const double use = tree.usage(n, r);
      const double local = tree.local_quota(n, r);
      const std::string where = absl::StrCat(tree.name(n), " ", tree.CellName(r));
      if (tree.parent(n) < 0) {
        if (use > tree.subtree_quota(n, r)) {
          return absl::FailedPreconditionError(
              absl::StrCat(where, ": root uses ", use, " of its quota ", tree.subtree_quota(n, r)));
        }
      } else if (tree.has_borrowing_limit(n, r) &&
                 std::max(0.0, use - local) >
                     tree.subtree_quota(n, r) - local + tree.borrowing_limit(n, r)) {
        return absl::FailedPreconditionError(absl::StrCat(
            where, ": uses ", use, " beyond its borrowing limit ", tree.borrowing_limit(n, r)));
      }
    }
  }
  return absl::OkStatus();
}

// What a preemption search or a nomination reads, on the starting state of `built`: its workloads,
// the admitted ones available as targets, their candidate index and the search buffers. Keeps
// pointers into itself: not copyable.
struct SearchSetup {
  SearchSetup(BuiltTree& built, const Policy& policy)
      : workloads(CollectWorkloads(*built.request, built.tree)) {
    available.assign(workloads.size(), 0);
    for (size_t i = 0; i < workloads.size(); ++i) available[i] = workloads[i].admitted;
    index = CandidateIndex::Build(workloads, built.queues, built.tree.resource_count());
    index.RefreshSums(workloads, available, {});
    buffers = MakeSearchBuffers(built.tree);
    context.tree = &built.tree;
    context.workloads = &workloads;
    context.index = &index;
    context.available = &available;
    context.strategies = ResolveStrategies(policy);
    context.buffers = buffers.get();
  }
  SearchSetup(const SearchSetup&) = delete;
  SearchSetup& operator=(const SearchSetup&) = delete;

  std::vector<Workload> workloads;
  std::vector<char> available;
  CandidateIndex index;
  std::shared_ptr<SearchBuffers> buffers;
  PreemptionContext context;
};

// §5.5 step 8 on every pending workload of `snapshot`, each nominated as a head against the
// starting state: a preemption search answers a complete target set or nothing (evicting all
// the targets makes the workload fit, and every target is admitted), and leaves the quota tree
// exactly as it found it. The number of workloads that got targets, or the first failure.
inline absl::StatusOr<int> CheckTargetSetsAllOrNothing(const Snapshot& snapshot,
                                                       const Policy& policy) {
  const std::unique_ptr<BuiltTree> built = BuildTree(snapshot);
  QuotaTree& tree = built->tree;
  const SearchSetup setup(*built, policy);
  const std::vector<Workload>& workloads = setup.workloads;
  const std::vector<char>& available = setup.available;
  const PreemptionContext& context = setup.context;
  auto usage = [&tree] {
    std::vector<double> all;
    for (int n = 0; n < tree.size(); ++n) {
      for (int r = 0; r < tree.resource_count(); ++r) all.push_back(tree.usage(n, r));
    }
    return all;
  };
  const std::vector<double> before = usage();
  int with_targets = 0;
  for (size_t i = 0; i < workloads.size(); ++i) {
    const Workload& w = workloads[i];
    if (w.admitted || !w.has_pods) continue;
    const Nomination nomination = Nominate(context, static_cast<int>(i));
    if (usage() != before) {
      return absl::FailedPreconditionError(
          absl::StrCat("nominating ", w.name(), " left the quota tree changed"));
    }
    if (nomination.mode != NominationMode::kPreempt || nomination.targets.empty()) continue;
    ++with_targets;
    const size_t mark = tree.Mark();
    for (const PreemptionTarget& t : nomination.targets) {
      if (!available[t.workload]) {
        return absl::FailedPreconditionError(absl::StrCat(
            w.name(), " targets ", workloads[t.workload].name(), ", which is not admitted"));
      }
      tree.RemoveUsage(workloads[t.workload].cq, workloads[t.workload].usage);
    }
    const bool fits = tree.Fits(w.cq, w.usage);
    tree.Rollback(mark);
    if (!fits) {
      return absl::FailedPreconditionError(absl::StrCat(
          w.name(), " does not fit after evicting its ", nomination.targets.size(), " targets"));
    }
  }
  return with_targets;
}

inline std::set<std::string> Keys(const std::map<std::string, bool>& map) {
  std::set<std::string> keys;
  for (const auto& [key, value] : map) keys.insert(key);
  return keys;
}

}  // namespace arbiter::kueue::testing
