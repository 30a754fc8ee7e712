#include "edge/proto_convert.h"

#include <cstdint>
#include <string>
#include <utility>

#include "google/protobuf/duration.pb.h"
#include "google/protobuf/map.h"
#include "google/protobuf/timestamp.pb.h"

namespace arbiter::server {
namespace {

namespace pb = ::google::protobuf;

// -0.0 is written as 0 (SEMANTICS.md §0.5); every other value, NaN and infinities included, is
// passed through unchanged.
double Canonical(double value) { return value == 0 ? 0.0 : value; }

template <typename Value>
std::map<std::string, Value> FromProtoMap(const pb::Map<std::string, Value>& proto) {
  return std::map<std::string, Value>(proto.begin(), proto.end());
}

void ToProtoMap(const ResourceMap& map, pb::Map<std::string, double>* proto) {
  for (const auto& [key, value] : map) (*proto)[key] = Canonical(value);
}

void ToProtoMap(const LabelMap& map, pb::Map<std::string, std::string>* proto) {
  for (const auto& [key, value] : map) (*proto)[key] = value;
}

Timestamp FromProto(const pb::Timestamp& proto) { return {proto.seconds(), proto.nanos()}; }

Duration FromProto(const pb::Duration& proto) { return {proto.seconds(), proto.nanos()}; }

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

Queue FromProto(const v1::Queue& proto) {
  Queue queue;
  queue.name = proto.name();
  queue.parent = proto.parent();
  queue.deserved = FromProtoMap(proto.deserved());
  queue.limit = FromProtoMap(proto.limit());
  queue.over_quota_weight = FromProtoMap(proto.over_quota_weight());
  queue.priority = proto.priority();
  if (proto.has_creation_time()) queue.creation_time = FromProto(proto.creation_time());
  queue.borrowing_limit = FromProtoMap(proto.borrowing_limit());
  queue.lending_limit = FromProtoMap(proto.lending_limit());
  if (proto.has_fair_sharing_weight()) queue.fair_sharing_weight = proto.fair_sharing_weight();
  if (proto.has_reclaim_min_runtime()) {
    queue.reclaim_min_runtime = FromProto(proto.reclaim_min_runtime());
  }
  if (proto.has_preempt_min_runtime()) {
    queue.preempt_min_runtime = FromProto(proto.preempt_min_runtime());
  }
  queue.kueue_preemption.within_cluster_queue =
      RawEnum<WithinClusterQueue>(proto.kueue_preemption().within_cluster_queue());
  queue.kueue_preemption.reclaim_within_cohort =
      RawEnum<ReclaimWithinCohort>(proto.kueue_preemption().reclaim_within_cohort());
  return queue;
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
  return proto;
}

Node FromProto(const v1::Node& proto) {
  Node node;
  node.name = proto.name();
  node.allocatable = FromProtoMap(proto.allocatable());
  node.labels = FromProtoMap(proto.labels());
  node.taints.reserve(proto.taints_size());
  for (const v1::Taint& taint : proto.taints()) {
    node.taints.push_back({taint.key(), taint.value(), taint.effect()});
  }
  node.unschedulable = proto.unschedulable();
  return node;
}

v1::Node ToProto(const Node& node) {
  v1::Node proto;
  proto.set_name(node.name);
  ToProtoMap(node.allocatable, proto.mutable_allocatable());
  ToProtoMap(node.labels, proto.mutable_labels());
  for (const Taint& taint : node.taints) {
    v1::Taint* out = proto.add_taints();
    out->set_key(taint.key);
    out->set_value(taint.value);
    out->set_effect(taint.effect);
  }
  proto.set_unschedulable(node.unschedulable);
  return proto;
}

Pod FromProto(const v1::Pod& proto) {
  Pod pod;
  pod.name = proto.name();
  pod.requests = FromProtoMap(proto.requests());
  pod.node_name = proto.node_name();
  pod.phase = RawEnum<PodPhase>(proto.phase());
  if (proto.has_start_time()) pod.start_time = FromProto(proto.start_time());
  pod.node_selector = FromProtoMap(proto.node_selector());
  pod.tolerations.reserve(proto.tolerations_size());
  for (const v1::Toleration& toleration : proto.tolerations()) {
    pod.tolerations.push_back(
        {toleration.key(), toleration.operator_(), toleration.value(), toleration.effect()});
  }
  return pod;
}

void ToProto(const Pod& pod, v1::Pod* proto) {
  proto->set_name(pod.name);
  ToProtoMap(pod.requests, proto->mutable_requests());
  proto->set_node_name(pod.node_name);
  proto->set_phase(ProtoRawEnum<v1::PodPhase>(pod.phase));
  if (pod.start_time) ToProto(*pod.start_time, proto->mutable_start_time());
  ToProtoMap(pod.node_selector, proto->mutable_node_selector());
  for (const Toleration& toleration : pod.tolerations) {
    v1::Toleration* out = proto->add_tolerations();
    out->set_key(toleration.key);
    out->set_operator_(toleration.op);
    out->set_value(toleration.value);
    out->set_effect(toleration.effect);
  }
}

PodGroup FromProto(const v1::PodGroup& proto) {
  PodGroup group;
  group.name = proto.name();
  group.queue = proto.queue();
  group.priority = proto.priority();
  group.preemptibility = RawEnum<Preemptibility>(proto.preemptibility());
  group.min_member = proto.min_member();
  if (proto.has_creation_time()) group.creation_time = FromProto(proto.creation_time());
  group.pods.reserve(proto.pods_size());
  for (const v1::Pod& pod : proto.pods()) group.pods.push_back(FromProto(pod));
  group.admitted = proto.admitted();
  if (proto.has_admission_time()) group.admission_time = FromProto(proto.admission_time());
  group.one_pod_per_node = proto.one_pod_per_node();
  return group;
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
}

// ---- Answer pieces ----

void ToProto(const QueueShare& share, v1::QueueShare* proto) {
  proto->set_queue(share.queue);
  ToProtoMap(share.deserved, proto->mutable_deserved());
  ToProtoMap(share.fair_share, proto->mutable_fair_share());
  ToProtoMap(share.allocated, proto->mutable_allocated());
  ToProtoMap(share.requested, proto->mutable_requested());
  proto->set_saturation(Canonical(share.saturation));
  proto->set_weighted_share(Canonical(share.weighted_share));
  proto->set_dominant_resource(share.dominant_resource);
  proto->set_borrowing(share.borrowing);
}

void MoveToProto(QueueShare&& share, v1::QueueShare* proto) {
  proto->set_queue(std::move(share.queue));
  ToProtoMap(share.deserved, proto->mutable_deserved());
  ToProtoMap(share.fair_share, proto->mutable_fair_share());
  ToProtoMap(share.allocated, proto->mutable_allocated());
  ToProtoMap(share.requested, proto->mutable_requested());
  proto->set_saturation(Canonical(share.saturation));
  proto->set_weighted_share(Canonical(share.weighted_share));
  proto->set_dominant_resource(std::move(share.dominant_resource));
  proto->set_borrowing(share.borrowing);
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
  return share;
}

void ToProtoShares(const std::vector<QueueShare>& shares,
                   pb::RepeatedPtrField<v1::QueueShare>* proto) {
  proto->Reserve(static_cast<int>(shares.size()));
  for (const QueueShare& share : shares) ToProto(share, proto->Add());
}

void MoveToProtoShares(std::vector<QueueShare>&& shares,
                       pb::RepeatedPtrField<v1::QueueShare>* proto) {
  proto->Reserve(static_cast<int>(shares.size()));
  for (QueueShare& share : shares) MoveToProto(std::move(share), proto->Add());
}

std::vector<QueueShare> FromProtoShares(const pb::RepeatedPtrField<v1::QueueShare>& proto) {
  std::vector<QueueShare> shares;
  shares.reserve(proto.size());
  for (const v1::QueueShare& share : proto) shares.push_back(FromProto(share));
  return shares;
}

}  // namespace

// ---- Requests ----

Snapshot FromProto(const v1::Snapshot& proto) {
  Snapshot snapshot;
  if (proto.has_now()) snapshot.now = FromProto(proto.now());
  snapshot.queues.reserve(proto.queues_size());
  for (const v1::Queue& queue : proto.queues()) snapshot.queues.push_back(FromProto(queue));
  snapshot.nodes.reserve(proto.nodes_size());
  for (const v1::Node& node : proto.nodes()) snapshot.nodes.push_back(FromProto(node));
  snapshot.pod_groups.reserve(proto.pod_groups_size());
  for (const v1::PodGroup& group : proto.pod_groups()) {
    snapshot.pod_groups.push_back(FromProto(group));
  }
  snapshot.usage.reserve(proto.usage_size());
  for (const v1::QueueUsage& usage : proto.usage()) {
    snapshot.usage.push_back({usage.queue(), FromProtoMap(usage.usage())});
  }
  snapshot.usage_capacity = FromProtoMap(proto.usage_capacity());
  snapshot.capacity = FromProtoMap(proto.capacity());
  return snapshot;
}

Policy FromProto(const v1::Policy& proto) {
  Policy policy;
  policy.fairness_model = RawEnum<FairnessModel>(proto.fairness_model());
  policy.k_value = proto.k_value();
  policy.reclaimer_utilization_multiplier = proto.reclaimer_utilization_multiplier();
  policy.placement = RawEnum<Placement>(proto.placement());
  policy.actions.reserve(proto.actions_size());
  for (int action : proto.actions()) policy.actions.push_back(static_cast<Action>(action));
  policy.kueue_preemption_strategies.reserve(proto.kueue_preemption_strategies_size());
  for (int strategy : proto.kueue_preemption_strategies()) {
    policy.kueue_preemption_strategies.push_back(static_cast<KueuePreemptionStrategy>(strategy));
  }
  if (proto.has_consolidating_reclaim()) {
    policy.consolidating_reclaim = proto.consolidating_reclaim();
  }
  if (proto.has_max_consolidation_preemptees()) {
    policy.max_consolidation_preemptees = proto.max_consolidation_preemptees();
  }
  return policy;
}

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
  return proto;
}

// ---- Answers ----

v1::FairShareResponse ToProto(const FairShareResult& result) {
  v1::FairShareResponse proto;
  ToProtoShares(result.queues, proto.mutable_queues());
  return proto;
}

v1::ScheduleResponse ToProto(const ScheduleResult& result) {
  v1::ScheduleResponse proto;
  ToProtoShares(result.queues, proto.mutable_queues());
  proto.mutable_bindings()->Reserve(static_cast<int>(result.bindings.size()));
  for (const Binding& binding : result.bindings) {
    v1::Binding* out = proto.add_bindings();
    out->set_pod_group(binding.pod_group);
    out->set_pod(binding.pod);
    out->set_node(binding.node);
    out->set_after_evictions(binding.after_evictions);
  }
  proto.mutable_evictions()->Reserve(static_cast<int>(result.evictions.size()));
  for (const Eviction& eviction : result.evictions) {
    v1::Eviction* out = proto.add_evictions();
    out->set_pod_group(eviction.pod_group);
    out->set_pod(eviction.pod);
    out->set_node(eviction.node);
    out->set_reason(ProtoRawEnum<v1::EvictionReason>(eviction.reason));
    out->set_preemptor_pod_group(eviction.preemptor_pod_group);
    out->set_message(eviction.message);
  }
  for (const Admission& admission : result.admissions) {
    v1::Admission* out = proto.add_admissions();
    out->set_pod_group(admission.pod_group);
    out->set_queue(admission.queue);
    out->set_after_evictions(admission.after_evictions);
  }
  for (const PendingPodGroup& pending : result.pending) {
    v1::PendingPodGroup* out = proto.add_pending();
    out->set_pod_group(pending.pod_group);
    out->set_reason(pending.reason);
    out->set_message(pending.message);
  }
  return proto;
}

void MoveToProto(FairShareResult&& result, v1::FairShareResponse* proto) {
  MoveToProtoShares(std::move(result.queues), proto->mutable_queues());
}

void MoveToProto(ScheduleResult&& result, v1::ScheduleResponse* proto) {
  MoveToProtoShares(std::move(result.queues), proto->mutable_queues());
  proto->mutable_bindings()->Reserve(static_cast<int>(result.bindings.size()));
  for (Binding& binding : result.bindings) {
    v1::Binding* out = proto->add_bindings();
    out->set_pod_group(std::move(binding.pod_group));
    out->set_pod(std::move(binding.pod));
    out->set_node(std::move(binding.node));
    out->set_after_evictions(binding.after_evictions);
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
  }
  proto->mutable_pending()->Reserve(static_cast<int>(result.pending.size()));
  for (PendingPodGroup& pending : result.pending) {
    v1::PendingPodGroup* out = proto->add_pending();
    out->set_pod_group(std::move(pending.pod_group));
    out->set_reason(std::move(pending.reason));
    out->set_message(std::move(pending.message));
  }
}

FairShareResult FromProto(const v1::FairShareResponse& proto) {
  FairShareResult result;
  result.queues = FromProtoShares(proto.queues());
  return result;
}

ScheduleResult FromProto(const v1::ScheduleResponse& proto) {
  ScheduleResult result;
  result.queues = FromProtoShares(proto.queues());
  result.bindings.reserve(proto.bindings_size());
  for (const v1::Binding& binding : proto.bindings()) {
    result.bindings.push_back(
        {binding.pod_group(), binding.pod(), binding.node(), binding.after_evictions()});
  }
  result.evictions.reserve(proto.evictions_size());
  for (const v1::Eviction& eviction : proto.evictions()) {
    result.evictions.push_back({eviction.pod_group(), eviction.pod(), eviction.node(),
                                RawEnum<EvictionReason>(eviction.reason()),
                                eviction.preemptor_pod_group(), eviction.message()});
  }
  for (const v1::Admission& admission : proto.admissions()) {
    result.admissions.push_back(
        {admission.pod_group(), admission.queue(), admission.after_evictions()});
  }
  for (const v1::PendingPodGroup& pending : proto.pending()) {
    result.pending.push_back({pending.pod_group(), pending.reason(), pending.message()});
  }
  return result;
}

}  // namespace arbiter::server
