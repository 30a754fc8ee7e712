#include "tests/support/snapshot_builder.h"

namespace arbiter::testing {

SnapshotBuilder& SnapshotBuilder::Now(int64_t seconds) {
  snapshot_.now = Seconds(seconds);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Capacity(ResourceMap capacity) {
  snapshot_.capacity = std::move(capacity);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::UsageCapacity(ResourceMap usage_capacity) {
  snapshot_.usage_capacity = std::move(usage_capacity);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Usage(const std::string& queue, ResourceMap usage) {
  snapshot_.usage.push_back(QueueUsage{queue, std::move(usage)});
  return *this;
}

SnapshotBuilder& SnapshotBuilder::Node(const std::string& name, ResourceMap allocatable) {
  arbiter::Node node;
  node.name = name;
  node.allocatable = std::move(allocatable);
  snapshot_.nodes.push_back(std::move(node));
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Label(const std::string& key, const std::string& value) {
  last_node().labels[key] = value;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Taint(const std::string& key, const std::string& value,
                                        const std::string& effect) {
  last_node().taints.push_back(arbiter::Taint{key, value, effect});
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Unschedulable() {
  last_node().unschedulable = true;
  return *this;
}

SnapshotBuilder& SnapshotBuilder::DeviceMemory(double memory) {
  last_node().gpu_device_memory = memory;
  return *this;
}

SnapshotBuilder& SnapshotBuilder::Queue(const std::string& name, const std::string& parent) {
  arbiter::Queue queue;
  queue.name = name;
  queue.parent = parent;
  snapshot_.queues.push_back(std::move(queue));
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Deserved(ResourceMap deserved) {
  last_queue().deserved = std::move(deserved);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Limit(ResourceMap limit) {
  last_queue().limit = std::move(limit);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Weight(ResourceMap over_quota_weight) {
  last_queue().over_quota_weight = std::move(over_quota_weight);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::QueuePriority(int32_t priority) {
  last_queue().priority = priority;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::QueueCreated(int64_t seconds) {
  last_queue().creation_time = Seconds(seconds);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::BorrowingLimit(ResourceMap limit) {
  last_queue().borrowing_limit = std::move(limit);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::LendingLimit(ResourceMap limit) {
  last_queue().lending_limit = std::move(limit);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::FairSharingWeight(double weight) {
  last_queue().fair_sharing_weight = weight;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::ReclaimMinRuntime(int64_t seconds) {
  last_queue().reclaim_min_runtime = Duration{seconds, 0};
  return *this;
}
SnapshotBuilder& SnapshotBuilder::PreemptMinRuntime(int64_t seconds) {
  last_queue().preempt_min_runtime = Duration{seconds, 0};
  return *this;
}
SnapshotBuilder& SnapshotBuilder::KueuePolicy(WithinClusterQueue within,
                                              ReclaimWithinCohort reclaim) {
  last_queue().kueue_preemption = KueuePreemption{within, reclaim};
  return *this;
}

SnapshotBuilder& SnapshotBuilder::Group(const std::string& name, const std::string& queue) {
  PodGroup group;
  group.name = name;
  group.queue = queue;
  snapshot_.pod_groups.push_back(std::move(group));
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Priority(int32_t priority) {
  last_group().priority = priority;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Preemptible(Preemptibility preemptibility) {
  last_group().preemptibility = preemptibility;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::MinMember(int32_t min_member) {
  last_group().min_member = min_member;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::OnePodPerNode() {
  last_group().one_pod_per_node = true;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Created(int64_t seconds) {
  last_group().creation_time = Seconds(seconds);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Admitted(int64_t admission_seconds) {
  last_group().admitted = true;
  last_group().admission_time = Seconds(admission_seconds);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Pod(ResourceMap requests, const std::string& node, PodPhase phase,
                                      const std::string& name) {
  PodGroup& group = last_group();
  arbiter::Pod pod;
  pod.name = name.empty() ? group.name + "-" + std::to_string(group.pods.size()) : name;
  pod.requests = std::move(requests);
  pod.node_name = node;
  pod.phase = phase;
  group.pods.push_back(std::move(pod));
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Pods(int count, ResourceMap requests) {
  for (int i = 0; i < count; ++i) Pod(requests);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::RunningPods(int count, ResourceMap requests,
                                              const std::string& node) {
  for (int i = 0; i < count; ++i) Pod(requests, node, PodPhase::kRunning);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Started(int64_t seconds) {
  last_pod().start_time = Seconds(seconds);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Selector(const std::string& key, const std::string& value) {
  last_pod().node_selector[key] = value;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Flavor(const std::string& name) {
  snapshot_.resource_flavors.push_back(ResourceFlavor{name, {}, {}, {}});
  return *this;
}
SnapshotBuilder& SnapshotBuilder::FlavorLabel(const std::string& key, const std::string& value) {
  snapshot_.resource_flavors.back().node_labels[key] = value;
  return *this;
}
SnapshotBuilder& SnapshotBuilder::FlavorTaint(const std::string& key, const std::string& value,
                                              const std::string& effect) {
  snapshot_.resource_flavors.back().node_taints.push_back(arbiter::Taint{key, value, effect});
  return *this;
}
SnapshotBuilder& SnapshotBuilder::FlavorToleration(const std::string& key, const std::string& op,
                                                   const std::string& value,
                                                   const std::string& effect) {
  snapshot_.resource_flavors.back().tolerations.push_back(Toleration{key, op, value, effect});
  return *this;
}
SnapshotBuilder& SnapshotBuilder::ResourceGroup(std::vector<std::string> resources) {
  last_queue().resource_groups.push_back(arbiter::ResourceGroup{std::move(resources), {}});
  return *this;
}
SnapshotBuilder& SnapshotBuilder::FlavorQuota(const std::string& flavor, ResourceMap nominal,
                                              ResourceMap borrowing_limit,
                                              ResourceMap lending_limit) {
  FlavorQuotas quotas;
  quotas.flavor = flavor;
  for (const auto& [resource, amount] : nominal) {
    FlavorResourceQuota& quota = quotas.resources[resource];
    quota.nominal = amount;
    if (auto it = borrowing_limit.find(resource); it != borrowing_limit.end()) {
      quota.borrowing_limit = it->second;
    }
    if (auto it = lending_limit.find(resource); it != lending_limit.end()) {
      quota.lending_limit = it->second;
    }
  }
  last_queue().resource_groups.back().flavors.push_back(std::move(quotas));
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Fungibility(WhenCanBorrow borrow, WhenCanPreempt preempt,
                                              FlavorPreference preference) {
  last_queue().flavor_fungibility = FlavorFungibility{borrow, preempt, preference};
  return *this;
}
SnapshotBuilder& SnapshotBuilder::PodSet(const std::string& pod_set) {
  last_pod().pod_set = pod_set;
  return *this;
}

SnapshotBuilder& SnapshotBuilder::GpuFraction(double fraction) {
  last_pod().gpu_fraction = fraction;
  return *this;
}

SnapshotBuilder& SnapshotBuilder::GpuMemory(double memory) {
  last_pod().gpu_memory = memory;
  return *this;
}

SnapshotBuilder& SnapshotBuilder::GpuDevices(int32_t devices) {
  last_pod().gpu_fraction_devices = devices;
  return *this;
}

SnapshotBuilder& SnapshotBuilder::GpuGroups(std::vector<std::string> keys) {
  last_pod().gpu_groups = std::move(keys);
  return *this;
}
SnapshotBuilder& SnapshotBuilder::AssignedFlavor(const std::string& pod_set,
                                                 const std::string& resource,
                                                 const std::string& flavor) {
  for (PodSetFlavors& entry : last_group().flavors) {
    if (entry.pod_set == pod_set) {
      entry.flavors[resource] = flavor;
      return *this;
    }
  }
  PodSetFlavors entry;
  entry.pod_set = pod_set;
  entry.flavors[resource] = flavor;
  last_group().flavors.push_back(std::move(entry));
  return *this;
}
SnapshotBuilder& SnapshotBuilder::Tolerate(const std::string& key, const std::string& op,
                                           const std::string& value, const std::string& effect) {
  last_pod().tolerations.push_back(Toleration{key, op, value, effect});
  return *this;
}

}  // namespace arbiter::testing
