// Helpers shared by the Kueue unit tests: run the model on a snapshot and read its answer.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/kueue/kueue.h"
#include "core/kueue/quota_tree.h"
#include "core/model.h"
#include "core/queue_tree.h"
#include "core/resources.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter::kueue::testing {

using ::arbiter::testing::SnapshotBuilder;

inline Policy KueuePolicy(std::vector<KueuePreemptionStrategy> strategies = {}) {
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  policy.kueue_preemption_strategies = std::move(strategies);
  return policy;
}

inline ScheduleResult RunKueue(const Snapshot& snapshot, const Policy& policy = KueuePolicy()) {
  absl::StatusOr<ScheduleResult> result = ScheduleKueue(snapshot, policy, CycleHooks{});
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : ScheduleResult{};
}

inline const QueueShare* FindQueue(const std::vector<QueueShare>& queues,
                                   const std::string& name) {
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

// A snapshot with its queue tree, resource set and quota tree (usage from the admitted groups),
// kept together because the trees point into the snapshot.
struct BuiltTree {
  Snapshot snapshot;
  QueueTree queues;
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
  built->queues = QueueTree::Build(built->snapshot);
  built->resources = ResourceSet::Collect(built->snapshot);
  built->tree = QuotaTree::Build(built->queues, built->resources);
  std::vector<double> leaf(static_cast<size_t>(built->tree.size()) *
                               built->tree.resource_count(),
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

}  // namespace arbiter::kueue::testing
