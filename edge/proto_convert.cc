#include "edge/proto_convert.h"

#include <cstdint>
#include <string>
#include <utility>

#include "google/protobuf/duration.pb.h"
#include "google/protobuf/map.h"
#include "google/protobuf/timestamp.pb.h"

namespace arbiter::edge {
namespace {

namespace pb = ::google::protobuf;

// -0.0 is written as 0 (SEMANTICS.md §0.5); every other value, NaN and infinities included, is
// passed through unchanged.
double Canonical(double value) { return value == 0 ? 0.0 : value; }

template <typename Value>
SortedMap<Value> FromProtoMap(const pb::Map<std::string, Value>& proto) {
  return SortedMap<Value>(proto.begin(), proto.end());
}

void ToProtoMap(const ResourceMap& map, pb::Map<std::string, double>* proto) {
  for (const auto& [key, value] : map) (*proto)[key] = Canonical(value);
}

void ToProtoMap(const LabelMap& map, pb::Map<std::string, std::string>* proto) {
  for (const auto& [key, value] : map) (*proto)[key] = value;
}

void ToProto(const Timestamp& time, pb::Timestamp* proto) {
  proto->set_seconds(time.seconds);
  proto->set_nanos(time.nanos);
}

void ToProto(const Duration& duration, pb::Duration* proto) {
  proto->set_seconds(duration.seconds);
  proto->set_nanos(duration.nanos);
}

// An enum as the raw integer the caller sent, so that validation can reject it with its path.
template <typename CoreEnum, typename ProtoEnum>
CoreEnum RawEnum(ProtoEnum value) {
  return static_cast<CoreEnum>(static_cast<int32_t>(value));
}

template <typename ProtoEnum, typename CoreEnum>
ProtoEnum ProtoRawEnum(CoreEnum value) {
  return static_cast<ProtoEnum>(static_cast<int32_t>(value));
}

// ---- Snapshot pieces ----

void ToProto(const Taint& taint, v1::Taint* proto) {
  proto->set_key(taint.key);
  proto->set_value(taint.value);
  proto->set_effect(taint.effect);
}

void ToProto(const Toleration& toleration, v1::Toleration* proto) {
  proto->set_key(toleration.key);
  proto->set_operator_(toleration.op);
  proto->set_value(toleration.value);
  proto->set_effect(toleration.effect);
}

void ToProto(const PodSetFlavors& flavors, v1::PodSetFlavors* proto) {
  proto->set_pod_set(flavors.pod_set);
  ToProtoMap(flavors.flavors, proto->mutable_flavors());
}

void ToProto(const ResourceGroup& group, v1::ResourceGroup* proto) {
  for (const std::string& resource : group.covered_resources)
    proto->add_covered_resources(resource);
  for (const FlavorQuotas& flavor : group.flavors) {
    v1::FlavorQuotas* out = proto->add_flavors();
    out->set_flavor(flavor.flavor);
    for (const auto& [resource, quota] : flavor.resources) {
      v1::FlavorResourceQuota& entry = (*out->mutable_resources())[resource];
      entry.set_nominal(Canonical(quota.nominal));
      if (quota.borrowing_limit) entry.set_borrowing_limit(Canonical(*quota.borrowing_limit));
      if (quota.lending_limit) entry.set_lending_limit(Canonical(*quota.lending_limit));
    }
  }
}

v1::ResourceFlavor ToProto(const ResourceFlavor& flavor) {
  v1::ResourceFlavor proto;
  proto.set_name(flavor.name);
  ToProtoMap(flavor.node_labels, proto.mutable_node_labels());
  for (const Taint& taint : flavor.node_taints) ToProto(taint, proto.add_node_taints());
  for (const Toleration& toleration : flavor.tolerations) {
    ToProto(toleration, proto.add_tolerations());
  }
  return proto;
}

v1::Queue ToProto(const Queue& queue) {
  v1::Queue proto;
  proto.set_name(queue.name);
  proto.set_parent(queue.parent);
  ToProtoMap(queue.deserved, proto.mutable_deserved());
  ToProtoMap(queue.limit, proto.mutable_limit());
  ToProtoMap(queue.over_quota_weight, proto.mutable_over_quota_weight());
  proto.set_priority(queue.priority);
  if (queue.creation_time) ToProto(*queue.creation_time, proto.mutable_creation_time());
  ToProtoMap(queue.borrowing_limit, proto.mutable_borrowing_limit());
  ToProtoMap(queue.lending_limit, proto.mutable_lending_limit());
  if (queue.fair_sharing_weight) {
    proto.set_fair_sharing_weight(Canonical(*queue.fair_sharing_weight));
  }
  if (queue.reclaim_min_runtime) {
    ToProto(*queue.reclaim_min_runtime, proto.mutable_reclaim_min_runtime());
  }
  if (queue.preempt_min_runtime) {
    ToProto(*queue.preempt_min_runtime, proto.mutable_preempt_min_runtime());
  }
  const KueuePreemption& preemption = queue.kueue_preemption;
  if (preemption.within_cluster_queue != WithinClusterQueue::kUnspecified ||
      preemption.reclaim_within_cohort != ReclaimWithinCohort::kUnspecified) {
    v1::KueuePreemption* out = proto.mutable_kueue_preemption();
    out->set_within_cluster_queue(
        ProtoRawEnum<v1::KueuePreemption::WithinClusterQueue>(preemption.within_cluster_queue));
    out->set_reclaim_within_cohort(
        ProtoRawEnum<v1::KueuePreemption::ReclaimWithinCohort>(preemption.reclaim_within_cohort));
  }
  for (const ResourceGroup& group : queue.resource_groups) {
    ToProto(group, proto.add_resource_groups());
  }
  const FlavorFungibility& fungibility = queue.flavor_fungibility;
  if (fungibility.when_can_borrow != WhenCanBorrow::kUnspecified ||
      fungibility.when_can_preempt != WhenCanPreempt::kUnspecified ||
      fungibility.preference != FlavorPreference::kUnspecified) {
    v1::FlavorFungibility* out = proto.mutable_flavor_fungibility();
    out->set_when_can_borrow(
        ProtoRawEnum<v1::FlavorFungibility::WhenCanBorrow>(fungibility.when_can_borrow));
    out->set_when_can_preempt(
        ProtoRawEnum<v1::FlavorFungibility::WhenCanPreempt>(fungibility.when_can_preempt));
    out->set_preference(ProtoRawEnum<v1::FlavorFungibility::Preference>(fungibility.preference));
  }
  return proto;
}

v1::Node ToProto(const Node& node) {
  v1::Node proto;
  proto.set_name(node.name);
  ToProtoMap(node.allocatable, proto.mutable_allocatable());
  ToProtoMap(node.labels, proto.mutable_labels());
  for (const Taint& taint : node.taints) ToProto(taint, proto.add_taints());
  proto.set_unschedulable(node.unschedulable);
  proto.set_gpu_device_memory(Canonical(node.gpu_device_memory));
  return proto;
}

void ToProto(const Pod& pod, v1::Pod* proto) {
  proto->set_name(pod.name);
  ToProtoMap(pod.requests, proto->mutable_requests());
  proto->set_node_name(pod.node_name);
  proto->set_phase(ProtoRawEnum<v1::PodPhase>(pod.phase));
  if (pod.start_time) ToProto(*pod.start_time, proto->mutable_start_time());
  ToProtoMap(pod.node_selector, proto->mutable_node_selector());
  for (const Toleration& toleration : pod.tolerations) {
    ToProto(toleration, proto->add_tolerations());
  }
  proto->set_pod_set(pod.pod_set);
  if (pod.gpu_fraction) proto->set_gpu_fraction(*pod.gpu_fraction);
  if (pod.gpu_memory) proto->set_gpu_memory(*pod.gpu_memory);
  proto->set_gpu_fraction_devices(pod.gpu_fraction_devices);
  for (const std::string& key : pod.gpu_groups) proto->add_gpu_groups(key);
}

void ToProto(const PodGroup& group, v1::PodGroup* proto) {
  proto->set_name(group.name);
  proto->set_queue(group.queue);
  proto->set_priority(group.priority);
  proto->set_preemptibility(ProtoRawEnum<v1::Preemptibility>(group.preemptibility));
  proto->set_min_member(group.min_member);
  if (group.creation_time) ToProto(*group.creation_time, proto->mutable_creation_time());
  proto->mutable_pods()->Reserve(static_cast<int>(group.pods.size()));
  for (const Pod& pod : group.pods) ToProto(pod, proto->add_pods());
  proto->set_admitted(group.admitted);
  if (group.admission_time) ToProto(*group.admission_time, proto->mutable_admission_time());
  proto->set_one_pod_per_node(group.one_pod_per_node);
  for (const PodSetFlavors& flavors : group.flavors) ToProto(flavors, proto->add_flavors());
}

// ---- Answer pieces ----

void ShareToProto(QueueShare&& share, v1::QueueShare* proto) {
  proto->set_queue(std::move(share.queue));
  ToProtoMap(share.deserved, proto->mutable_deserved());
  ToProtoMap(share.fair_share, proto->mutable_fair_share());
  ToProtoMap(share.allocated, proto->mutable_allocated());
  ToProtoMap(share.requested, proto->mutable_requested());
  proto->set_saturation(Canonical(share.saturation));
  proto->set_weighted_share(Canonical(share.weighted_share));
  proto->set_dominant_resource(std::move(share.dominant_resource));
  proto->set_borrowing(share.borrowing);
  proto->mutable_flavor_resources()->Reserve(static_cast<int>(share.flavor_resources.size()));
  for (FlavorResourceShare& row : share.flavor_resources) {
    v1::FlavorResourceShare* out = proto->add_flavor_resources();
    out->set_flavor(std::move(row.flavor));
    out->set_resource(std::move(row.resource));
    out->set_nominal(Canonical(row.nominal));
    out->set_subtree_quota(Canonical(row.subtree_quota));
    out->set_usage(Canonical(row.usage));
    out->set_borrowed(Canonical(row.borrowed));
  }
}

QueueShare FromProto(const v1::QueueShare& proto) {
  QueueShare share;
  share.queue = proto.queue();
  share.deserved = FromProtoMap(proto.deserved());
  share.fair_share = FromProtoMap(proto.fair_share());
  share.allocated = FromProtoMap(proto.allocated());
  share.requested = FromProtoMap(proto.requested());
  share.saturation = proto.saturation();
  share.weighted_share = proto.weighted_share();
  share.dominant_resource = proto.dominant_resource();
  share.borrowing = proto.borrowing();
  for (const v1::FlavorResourceShare& row : proto.flavor_resources()) {
    share.flavor_resources.push_back({row.flavor(), row.resource(), row.nominal(),
                                      row.subtree_quota(), row.usage(), row.borrowed()});
  }
  return share;
}

void SharesToProto(std::vector<QueueShare>&& shares, pb::RepeatedPtrField<v1::QueueShare>* proto) {
  proto->Reserve(static_cast<int>(shares.size()));
  for (QueueShare& share : shares) ShareToProto(std::move(share), proto->Add());
}

// Each row written straight into its message: no QueueShare in between.
void RowsToProto(const QueueShareRows& rows, pb::RepeatedPtrField<v1::QueueShare>* proto) {
  proto->Reserve(rows.size());
  const int columns = rows.columns();
  for (int row = 0; row < rows.size(); ++row) {
    v1::QueueShare* share = proto->Add();
    share->set_queue(std::string(rows.name(row)));
    const auto [begin, end] = rows.deserved_run(row);
    pb::Map<std::string, double>& deserved = *share->mutable_deserved();
    for (uint32_t i = begin; i < end; ++i) {
      deserved[rows.resources[rows.deserved[i].first]] = Canonical(rows.deserved[i].second);
    }
    const size_t first = static_cast<size_t>(row) * columns;
    pb::Map<std::string, double>& fair_share = *share->mutable_fair_share();
    pb::Map<std::string, double>& allocated = *share->mutable_allocated();
    pb::Map<std::string, double>& requested = *share->mutable_requested();
    for (int r = 0; r < columns; ++r) {
      fair_share[rows.resources[r]] = Canonical(rows.fair_share[first + r]);
      allocated[rows.resources[r]] = Canonical(rows.allocated[first + r]);
      requested[rows.resources[r]] = Canonical(rows.requested[first + r]);
    }
    share->set_saturation(Canonical(rows.saturation[row]));
  }
}

std::vector<QueueShare> FromProtoShares(const pb::RepeatedPtrField<v1::QueueShare>& proto) {
  std::vector<QueueShare> shares;
  shares.reserve(proto.size());
  for (const v1::QueueShare& share : proto) shares.push_back(FromProto(share));
  return shares;
}

}  // namespace

// ---- Requests: core -> proto ----

v1::Snapshot ToProto(const Snapshot& snapshot) {
  v1::Snapshot proto;
  if (snapshot.now) ToProto(*snapshot.now, proto.mutable_now());
  proto.mutable_queues()->Reserve(static_cast<int>(snapshot.queues.size()));
  for (const Queue& queue : snapshot.queues) *proto.add_queues() = ToProto(queue);
  proto.mutable_nodes()->Reserve(static_cast<int>(snapshot.nodes.size()));
  for (const Node& node : snapshot.nodes) *proto.add_nodes() = ToProto(node);
  proto.mutable_pod_groups()->Reserve(static_cast<int>(snapshot.pod_groups.size()));
  for (const PodGroup& group : snapshot.pod_groups) ToProto(group, proto.add_pod_groups());
  for (const QueueUsage& usage : snapshot.usage) {
    v1::QueueUsage* out = proto.add_usage();
    out->set_queue(usage.queue);
    ToProtoMap(usage.usage, out->mutable_usage());
  }
  ToProtoMap(snapshot.usage_capacity, proto.mutable_usage_capacity());
  ToProtoMap(snapshot.capacity, proto.mutable_capacity());
  for (const ResourceFlavor& flavor : snapshot.resource_flavors) {
    *proto.add_resource_flavors() = ToProto(flavor);
  }
  return proto;
}

v1::Policy ToProto(const Policy& policy) {
  v1::Policy proto;
  proto.set_fairness_model(ProtoRawEnum<v1::FairnessModel>(policy.fairness_model));
  proto.set_k_value(Canonical(policy.k_value));
  proto.set_reclaimer_utilization_multiplier(Canonical(policy.reclaimer_utilization_multiplier));
  proto.set_placement(ProtoRawEnum<v1::Placement>(policy.placement));
  for (Action action : policy.actions) proto.add_actions(ProtoRawEnum<v1::Action>(action));
  for (KueuePreemptionStrategy strategy : policy.kueue_preemption_strategies) {
    proto.add_kueue_preemption_strategies(ProtoRawEnum<v1::KueuePreemptionStrategy>(strategy));
  }
  if (policy.consolidating_reclaim) proto.set_consolidating_reclaim(*policy.consolidating_reclaim);
  if (policy.max_consolidation_preemptees) {
    proto.set_max_consolidation_preemptees(*policy.max_consolidation_preemptees);
  }
  proto.set_gpu_device_placement(ProtoRawEnum<v1::Placement>(policy.gpu_device_placement));
  return proto;
}

// ---- Answers ----

void ToProto(FairShareResult result, v1::FairShareResponse* proto) {
  if (result.rows.size() > 0) {
    RowsToProto(result.rows, proto->mutable_queues());
    return;
  }
  SharesToProto(std::move(result.queues), proto->mutable_queues());
}

void ToProto(ScheduleResult result, v1::ScheduleResponse* proto) {
  SharesToProto(std::move(result.queues), proto->mutable_queues());
  proto->mutable_bindings()->Reserve(static_cast<int>(result.bindings.size()));
  for (Binding& binding : result.bindings) {
    v1::Binding* out = proto->add_bindings();
    out->set_pod_group(std::move(binding.pod_group));
    out->set_pod(std::move(binding.pod));
    out->set_node(std::move(binding.node));
    out->set_after_evictions(binding.after_evictions);
    for (std::string& key : binding.gpu_groups) out->add_gpu_groups(std::move(key));
  }
  proto->mutable_evictions()->Reserve(static_cast<int>(result.evictions.size()));
  for (Eviction& eviction : result.evictions) {
    v1::Eviction* out = proto->add_evictions();
    out->set_pod_group(std::move(eviction.pod_group));
    out->set_pod(std::move(eviction.pod));
    out->set_node(std::move(eviction.node));
    out->set_reason(ProtoRawEnum<v1::EvictionReason>(eviction.reason));
    out->set_preemptor_pod_group(std::move(eviction.preemptor_pod_group));
    out->set_message(std::move(eviction.message));
  }
  proto->mutable_admissions()->Reserve(static_cast<int>(result.admissions.size()));
  for (Admission& admission : result.admissions) {
    v1::Admission* out = proto->add_admissions();
    out->set_pod_group(std::move(admission.pod_group));
    out->set_queue(std::move(admission.queue));
    out->set_after_evictions(admission.after_evictions);
    for (const PodSetFlavors& flavors : admission.pod_sets) ToProto(flavors, out->add_pod_sets());
  }
  proto->mutable_pending()->Reserve(static_cast<int>(result.pending.size()));
  for (PendingPodGroup& pending : result.pending) {
    v1::PendingPodGroup* out = proto->add_pending();
    out->set_pod_group(std::move(pending.pod_group));
    out->set_reason(std::move(pending.reason));
    out->set_message(std::move(pending.message));
  }
}

ScheduleResult FromProto(const v1::ScheduleResponse& proto) {
  ScheduleResult result;
  result.queues = FromProtoShares(proto.queues());
  result.bindings.reserve(proto.bindings_size());
  for (const v1::Binding& binding : proto.bindings()) {
    result.bindings.push_back(
        {binding.pod_group(), binding.pod(), binding.node(), binding.after_evictions(),
         std::vector<std::string>(binding.gpu_groups().begin(), binding.gpu_groups().end())});
  }
  result.evictions.reserve(proto.evictions_size());
  for (const v1::Eviction& eviction : proto.evictions()) {
    result.evictions.push_back({eviction.pod_group(), eviction.pod(), eviction.node(),
                                RawEnum<EvictionReason>(eviction.reason()),
                                eviction.preemptor_pod_group(), eviction.message()});
  }
  for (const v1::Admission& admission : proto.admissions()) {
    Admission& out = result.admissions.emplace_back();
    out.pod_group = admission.pod_group();
    out.queue = admission.queue();
    out.after_evictions = admission.after_evictions();
    for (const v1::PodSetFlavors& flavors : admission.pod_sets()) {
      out.pod_sets.push_back({flavors.pod_set(), FromProtoMap(flavors.flavors())});
    }
  }
  for (const v1::PendingPodGroup& pending : proto.pending()) {
    result.pending.push_back({pending.pod_group(), pending.reason(), pending.message()});
  }
  return result;
}

}  // namespace arbiter::edge
