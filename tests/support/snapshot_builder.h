// Small fluent builders for test snapshots:
//
//   Snapshot s = SnapshotBuilder()
//       .Node("n1", {{"cpu", 8000}})
//       .Queue("dept").Queue("team-a", "dept").Deserved({{"cpu", 4000}})
//       .Group("job-1", "team-a").Pods(2, {{"cpu", 1000}})
//       .Build();
//
// Each call on a queue, group or pod modifies the one added last of its kind.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace arbiter::testing {

inline Timestamp Seconds(int64_t s) { return Timestamp{s, 0}; }

class SnapshotBuilder {
 public:
  SnapshotBuilder& Now(int64_t seconds);
  SnapshotBuilder& Capacity(ResourceMap capacity);
  SnapshotBuilder& UsageCapacity(ResourceMap usage_capacity);
  SnapshotBuilder& Usage(const std::string& queue, ResourceMap usage);

  // Nodes.
  SnapshotBuilder& Node(const std::string& name, ResourceMap allocatable);
  SnapshotBuilder& Label(const std::string& key, const std::string& value);
  SnapshotBuilder& Taint(const std::string& key, const std::string& value,
                         const std::string& effect);
  SnapshotBuilder& Unschedulable();
  SnapshotBuilder& DeviceMemory(double memory);  // gpu_device_memory of the last node (§4.13)

  // Queues.
  SnapshotBuilder& Queue(const std::string& name, const std::string& parent = "");
  SnapshotBuilder& Deserved(ResourceMap deserved);
  SnapshotBuilder& Limit(ResourceMap limit);
  SnapshotBuilder& Weight(ResourceMap over_quota_weight);
  SnapshotBuilder& QueuePriority(int32_t priority);
  SnapshotBuilder& QueueCreated(int64_t seconds);
  SnapshotBuilder& BorrowingLimit(ResourceMap limit);
  SnapshotBuilder& LendingLimit(ResourceMap limit);
  SnapshotBuilder& FairSharingWeight(double weight);
  SnapshotBuilder& ReclaimMinRuntime(int64_t seconds);
  SnapshotBuilder& PreemptMinRuntime(int64_t seconds);
  SnapshotBuilder& KueuePolicy(WithinClusterQueue within, ReclaimWithinCohort reclaim);

  // Kueue resource flavors (SEMANTICS §5.8).
  // Declares a ResourceFlavor; the next three modify the one declared last.
  SnapshotBuilder& Flavor(const std::string& name);
  SnapshotBuilder& FlavorLabel(const std::string& key, const std::string& value);
  SnapshotBuilder& FlavorTaint(const std::string& key, const std::string& value,
                               const std::string& effect);
  SnapshotBuilder& FlavorToleration(const std::string& key, const std::string& op,
                                    const std::string& value, const std::string& effect);
  // Adds a resource group covering `resources` to the last queue.
  SnapshotBuilder& ResourceGroup(std::vector<std::string> resources);
  // Adds a flavor to the last resource group: a nominal quota per covered resource, and the
  // limits of those that have one (absent = no limit).
  SnapshotBuilder& FlavorQuota(const std::string& flavor, ResourceMap nominal,
                               ResourceMap borrowing_limit = {}, ResourceMap lending_limit = {});
  SnapshotBuilder& Fungibility(WhenCanBorrow borrow, WhenCanPreempt preempt,
                               FlavorPreference preference = FlavorPreference::kUnspecified);

  // Pod groups and pods.
  SnapshotBuilder& Group(const std::string& name, const std::string& queue);
  SnapshotBuilder& Priority(int32_t priority);
  SnapshotBuilder& Preemptible(Preemptibility preemptibility);
  SnapshotBuilder& MinMember(int32_t min_member);
  SnapshotBuilder& OnePodPerNode();
  SnapshotBuilder& Created(int64_t seconds);
  SnapshotBuilder& Admitted(int64_t admission_seconds);
  // Adds one pod, named "<group>-<n>" with n counting from 0 within the group unless named.
  SnapshotBuilder& Pod(ResourceMap requests, const std::string& node = "",
                       PodPhase phase = PodPhase::kUnspecified, const std::string& name = "");
  // Adds `count` pending pods with equal requests.
  SnapshotBuilder& Pods(int count, ResourceMap requests);
  // Adds `count` running pods with equal requests on `node`.
  SnapshotBuilder& RunningPods(int count, ResourceMap requests, const std::string& node);
  SnapshotBuilder& Started(int64_t seconds);  // start_time of the last pod
  SnapshotBuilder& Selector(const std::string& key, const std::string& value);
  SnapshotBuilder& Tolerate(const std::string& key, const std::string& op, const std::string& value,
                            const std::string& effect);
  SnapshotBuilder& PodSet(const std::string& pod_set);  // of the last pod
  // GPU sharing (§4.13), of the last pod.
  SnapshotBuilder& GpuFraction(double fraction);
  SnapshotBuilder& GpuMemory(double memory);
  SnapshotBuilder& GpuDevices(int32_t devices);
  SnapshotBuilder& GpuGroups(std::vector<std::string> keys);
  // An admitted group's flavor of `resource` in `pod_set` (PodGroup.flavors).
  SnapshotBuilder& AssignedFlavor(const std::string& pod_set, const std::string& resource,
                                  const std::string& flavor);

  Snapshot Build() const { return snapshot_; }
  Snapshot& snapshot() { return snapshot_; }

 private:
  arbiter::Queue& last_queue() { return snapshot_.queues.back(); }
  PodGroup& last_group() { return snapshot_.pod_groups.back(); }
  arbiter::Pod& last_pod() { return snapshot_.pod_groups.back().pods.back(); }
  arbiter::Node& last_node() { return snapshot_.nodes.back(); }

  Snapshot snapshot_;
};

}  // namespace arbiter::testing
