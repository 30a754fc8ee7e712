// ToProto and the one way in (DecodeRequest): every field crosses the edge unchanged both ways, raw
// enum values and presence are kept for validation, and answers are written canonically
// (SEMANTICS.md §0.5).
#include "edge/proto_convert.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "edge/request_decoder.h"
#include "edge/wire.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter::edge {
namespace {

using ::google::protobuf::util::MessageDifferencer;

// A request that sets every field of every message in the snapshot and the policy.
constexpr char kEveryField[] = R"json({
  "snapshot": {
    "now": "2024-05-01T12:00:00.250Z",
    "queues": [
      {"name": "dept", "deserved": {"cpu": -1}, "limit": {"cpu": 64000},
       "over_quota_weight": {"cpu": 2}, "priority": 7,
       "creation_time": "2024-01-01T00:00:00Z",
       "borrowing_limit": {"cpu": 1000}, "lending_limit": {"memory": 5},
       "fair_sharing_weight": 0, "reclaim_min_runtime": "60s",
       "preempt_min_runtime": "1.5s",
       "kueue_preemption": {"within_cluster_queue": "WITHIN_CLUSTER_QUEUE_LOWER_PRIORITY",
                            "reclaim_within_cohort": "RECLAIM_WITHIN_COHORT_ANY"}},
      {"name": "team-a", "parent": "dept"}
    ],
    "nodes": [
      {"name": "gpu-1", "allocatable": {"cpu": 32000, "nvidia.com/gpu": 8},
       "labels": {"zone": "a", "pool": "gpu"},
       "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
       "unschedulable": true}
    ],
    "pod_groups": [
      {"name": "train", "queue": "team-a", "priority": 50, "preemptibility": "NON_PREEMPTIBLE",
       "min_member": 2, "creation_time": "2024-04-01T00:00:00Z", "admitted": true,
       "admission_time": "2024-04-02T00:00:00Z",
       "pods": [
         {"name": "p0", "requests": {"nvidia.com/gpu": 0.5}, "node_name": "gpu-1",
          "phase": "POD_PHASE_RELEASING", "start_time": "2024-04-03T00:00:00Z",
          "node_selector": {"zone": "a"},
          "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml",
                           "effect": "NoSchedule"}]},
         {"name": "p1", "requests": {"cpu": 1000}}
       ]}
    ],
    "usage": [{"queue": "team-a", "usage": {"nvidia.com/gpu": 3600}}],
    "usage_capacity": {"nvidia.com/gpu": 28800},
    "capacity": {"cpu": 32000}
  },
  "policy": {
    "fairness_model": "FAIRNESS_MODEL_KAI", "k_value": 0.5,
    "reclaimer_utilization_multiplier": 1.2, "placement": "PLACEMENT_SPREAD",
    "actions": ["ACTION_RECLAIM", "ACTION_ALLOCATE"],
    "kueue_preemption_strategies": ["LESS_THAN_INITIAL_SHARE"],
    "consolidating_reclaim": false, "max_consolidation_preemptees": 0
  }
})json";

// A request's model, read the one way a request is read: its bytes through the decoder.
struct Model {
  Snapshot snapshot;
  Policy policy;
};

Model Decode(const v1::ScheduleRequest& request) {
  Model model;
  EXPECT_TRUE(DecodeRequest(request.SerializeAsString(), &model.snapshot, &model.policy));
  return model;
}

Snapshot DecodeSnapshot(const v1::Snapshot& snapshot) {
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = snapshot;
  return Decode(request).snapshot;
}

// The one answer writer, into a fresh message.
v1::ScheduleResponse Written(ScheduleResult result) {
  v1::ScheduleResponse proto;
  ToProto(std::move(result), &proto);
  return proto;
}

v1::FairShareResponse Written(FairShareResult result) {
  v1::FairShareResponse proto;
  ToProto(std::move(result), &proto);
  return proto;
}

v1::ScheduleRequest EveryFieldRequest() {
  v1::ScheduleRequest request;
  const absl::Status status = ParseJson(kEveryField, &request);
  EXPECT_TRUE(status.ok()) << status;
  return request;
}

TEST(ProtoConvert, RequestRoundTripKeepsEveryField) {
  const v1::ScheduleRequest request = EveryFieldRequest();
  const Model model = Decode(request);
  v1::ScheduleRequest back;
  *back.mutable_snapshot() = ToProto(model.snapshot);
  *back.mutable_policy() = ToProto(model.policy);
  std::string difference;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&difference);
  EXPECT_TRUE(differencer.Compare(request, back)) << difference;
}

TEST(ProtoConvert, ReadsEveryFieldIntoTheModel) {
  const v1::ScheduleRequest request = EveryFieldRequest();
  const auto [snapshot, policy] = Decode(request);

  ASSERT_TRUE(snapshot.now.has_value());
  EXPECT_EQ(snapshot.now->seconds, 1714564800);
  EXPECT_EQ(snapshot.now->nanos, 250000000);
  ASSERT_EQ(snapshot.queues.size(), 2u);
  const Queue& dept = snapshot.queues[0];
  EXPECT_EQ(dept.deserved.at("cpu"), -1);
  EXPECT_EQ(dept.priority, 7);
  ASSERT_TRUE(dept.fair_sharing_weight.has_value());
  EXPECT_EQ(*dept.fair_sharing_weight, 0);
  ASSERT_TRUE(dept.preempt_min_runtime.has_value());
  EXPECT_EQ(dept.preempt_min_runtime->seconds, 1);
  EXPECT_EQ(dept.preempt_min_runtime->nanos, 500000000);
  EXPECT_EQ(dept.kueue_preemption.within_cluster_queue, WithinClusterQueue::kLowerPriority);
  EXPECT_EQ(dept.kueue_preemption.reclaim_within_cohort, ReclaimWithinCohort::kAny);
  EXPECT_EQ(snapshot.queues[1].parent, "dept");

  const Node& node = snapshot.nodes.at(0);
  EXPECT_EQ(node.allocatable.at("nvidia.com/gpu"), 8);
  EXPECT_EQ(node.labels.at("pool"), "gpu");
  ASSERT_EQ(node.taints.size(), 1u);
  EXPECT_EQ(node.taints[0].effect, "NoSchedule");
  EXPECT_TRUE(node.unschedulable);

  const PodGroup& group = snapshot.pod_groups.at(0);
  EXPECT_EQ(group.preemptibility, Preemptibility::kNonPreemptible);
  EXPECT_EQ(group.min_member, 2);
  EXPECT_TRUE(group.admitted);
  ASSERT_EQ(group.pods.size(), 2u);
  EXPECT_EQ(group.pods[0].phase, PodPhase::kReleasing);
  EXPECT_EQ(group.pods[0].tolerations.at(0).op, "Equal");
  EXPECT_EQ(group.pods[0].node_selector.at("zone"), "a");
  EXPECT_EQ(group.pods[1].phase, PodPhase::kUnspecified);

  EXPECT_EQ(snapshot.usage.at(0).usage.at("nvidia.com/gpu"), 3600);
  EXPECT_EQ(snapshot.usage_capacity.at("nvidia.com/gpu"), 28800);
  EXPECT_EQ(snapshot.capacity.at("cpu"), 32000);

  EXPECT_EQ(policy.fairness_model, FairnessModel::kKai);
  EXPECT_EQ(policy.placement, Placement::kSpread);
  EXPECT_EQ(policy.actions, (std::vector<Action>{Action::kReclaim, Action::kAllocate}));
  EXPECT_EQ(policy.kueue_preemption_strategies,
            std::vector<KueuePreemptionStrategy>{KueuePreemptionStrategy::kLessThanInitialShare});
  EXPECT_EQ(policy.consolidating_reclaim, std::optional<bool>(false));
  EXPECT_EQ(policy.max_consolidation_preemptees, std::optional<int32_t>(0));
}

// Validation (SEMANTICS.md §1.1) must see an out-of-range enum to reject it with its path.
TEST(ProtoConvert, KeepsOutOfRangeEnumValuesForValidation) {
  v1::ScheduleRequest request;
  v1::PodGroup* group = request.mutable_snapshot()->add_pod_groups();
  group->set_preemptibility(static_cast<v1::Preemptibility>(9));
  group->add_pods()->set_phase(static_cast<v1::PodPhase>(-3));
  request.mutable_snapshot()->add_queues()->mutable_kueue_preemption()->set_within_cluster_queue(
      static_cast<v1::KueuePreemption::WithinClusterQueue>(42));
  request.mutable_policy()->set_fairness_model(static_cast<v1::FairnessModel>(5));
  request.mutable_policy()->add_actions(static_cast<v1::Action>(77));

  const auto [snapshot, policy] = Decode(request);
  EXPECT_EQ(static_cast<int>(snapshot.pod_groups[0].preemptibility), 9);
  EXPECT_EQ(static_cast<int>(snapshot.pod_groups[0].pods[0].phase), -3);
  EXPECT_EQ(static_cast<int>(snapshot.queues[0].kueue_preemption.within_cluster_queue), 42);
  EXPECT_EQ(static_cast<int>(policy.fairness_model), 5);
  EXPECT_EQ(static_cast<int>(policy.actions.at(0)), 77);
}

// SEMANTICS.md §0.2: an absent timestamp or optional scalar has its own meaning, distinct from
// a present zero.
TEST(ProtoConvert, AbsentTimestampsAndOptionalsStayAbsent) {
  v1::ScheduleRequest request;
  v1::Queue* queue = request.mutable_snapshot()->add_queues();
  queue->set_name("q");
  v1::PodGroup* group = request.mutable_snapshot()->add_pod_groups();
  group->add_pods();

  const auto [snapshot, policy] = Decode(request);
  EXPECT_FALSE(snapshot.now.has_value());
  EXPECT_FALSE(snapshot.queues[0].creation_time.has_value());
  EXPECT_FALSE(snapshot.queues[0].fair_sharing_weight.has_value());
  EXPECT_FALSE(snapshot.queues[0].reclaim_min_runtime.has_value());
  EXPECT_FALSE(snapshot.queues[0].preempt_min_runtime.has_value());
  EXPECT_FALSE(snapshot.pod_groups[0].creation_time.has_value());
  EXPECT_FALSE(snapshot.pod_groups[0].admission_time.has_value());
  EXPECT_FALSE(snapshot.pod_groups[0].pods[0].start_time.has_value());
  EXPECT_FALSE(policy.consolidating_reclaim.has_value());
  EXPECT_FALSE(policy.max_consolidation_preemptees.has_value());
}

TEST(ProtoConvert, PresentZeroTimestampIsKept) {
  v1::Snapshot proto;
  proto.mutable_now();  // present, 1970-01-01T00:00:00Z
  const Snapshot snapshot = DecodeSnapshot(proto);
  ASSERT_TRUE(snapshot.now.has_value());
  EXPECT_EQ(*snapshot.now, (Timestamp{0, 0}));
}

TEST(ProtoConvert, ModelRoundTripThroughProtoIsStable) {
  const Snapshot snapshot = testing::SnapshotBuilder()
                                .Now(1000)
                                .Node("n1", {{"cpu", 8000}, {"memory", 1e9}})
                                .Label("zone", "b")
                                .Taint("gpu", "", "NoExecute")
                                .Queue("dept")
                                .Deserved({{"cpu", 4000}})
                                .FairSharingWeight(2)
                                .Queue("team", "dept")
                                .Limit({{"cpu", -1}})
                                .Group("job", "team")
                                .MinMember(3)
                                .RunningPods(2, {{"cpu", 500}}, "n1")
                                .Started(900)
                                .Pods(1, {{"cpu", 500}})
                                .Tolerate("gpu", "Exists", "", "")
                                .Build();
  const v1::Snapshot once = ToProto(snapshot);
  const v1::Snapshot twice = ToProto(DecodeSnapshot(once));
  EXPECT_TRUE(MessageDifferencer::Equals(once, twice));
  EXPECT_EQ(SerializeDeterministic(once), SerializeDeterministic(twice));
}

ScheduleResult SampleResult() {
  ScheduleResult result;
  QueueShare share;
  share.queue = "team-a";
  share.deserved = {{"cpu", -1}};
  share.fair_share = {{"cpu", 4000}, {"nvidia.com/gpu", 2}};
  share.allocated = {{"cpu", 1000}, {"nvidia.com/gpu", 0}};
  share.requested = {{"cpu", 3000}, {"nvidia.com/gpu", 1}};
  share.saturation = std::numeric_limits<double>::infinity();
  share.weighted_share = 250;
  share.dominant_resource = "cpu";
  share.borrowing = true;
  share.flavor_resources.push_back({"spot", "cpu", 4000, 8000, 9000, 1000});
  result.queues.push_back(share);
  result.bindings.push_back({"job", "job-0", "n1", true, {}});
  result.evictions.push_back(
      {"old", "old-0", "n1", EvictionReason::kFairShareReclaim, "job", "reclaimed for team-a/job"});
  result.admissions.push_back({"wl", "cq", true, {{"main", {{"cpu", "spot"}}}}});
  result.pending.push_back({"big", "insufficient-resources", "needs 4 cpu"});
  return result;
}

TEST(ProtoConvert, ScheduleResultRoundTripKeepsEveryField) {
  const v1::ScheduleResponse proto = Written(SampleResult());
  const v1::ScheduleResponse back = Written(FromProto(proto));
  EXPECT_TRUE(MessageDifferencer::Equals(proto, back));
  EXPECT_EQ(proto.queues(0).saturation(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(proto.evictions(0).reason(), v1::FAIR_SHARE_RECLAIM);
  EXPECT_TRUE(proto.bindings(0).after_evictions());
  EXPECT_EQ(proto.admissions(0).queue(), "cq");
  EXPECT_EQ(proto.admissions(0).pod_sets(0).flavors().at("cpu"), "spot");
  EXPECT_EQ(proto.queues(0).flavor_resources(0).borrowed(), 1000);
  EXPECT_EQ(proto.pending(0).reason(), "insufficient-resources");
  EXPECT_EQ(proto.queues(0).fair_share().at("nvidia.com/gpu"), 2);
}

TEST(ProtoConvert, FairShareResultIsWrittenWhole) {
  FairShareResult result;
  result.queues = SampleResult().queues;
  const v1::FairShareResponse proto = Written(result);
  ASSERT_EQ(proto.queues_size(), 1);
  EXPECT_TRUE(MessageDifferencer::Equals(proto.queues(0), Written(SampleResult()).queues(0)));
}

// The server writes its answer on an arena: the same bytes as on the heap.
TEST(ProtoConvert, AnAnswerOnAnArenaIsWrittenAsOnTheHeap) {
  google::protobuf::Arena arena;
  auto* on_arena = google::protobuf::Arena::CreateMessage<v1::ScheduleResponse>(&arena);
  ToProto(SampleResult(), on_arena);
  EXPECT_EQ(SerializeDeterministic(*on_arena), SerializeDeterministic(Written(SampleResult())));
}

// SEMANTICS.md §0.5: -0.0 is written as 0.
TEST(ProtoConvert, WritesNegativeZeroAsZero) {
  ScheduleResult result;
  QueueShare share;
  share.queue = "q";
  share.fair_share = {{"cpu", -0.0}};
  share.saturation = -0.0;
  share.weighted_share = -0.0;
  result.queues.push_back(share);
  const v1::ScheduleResponse proto = Written(result);
  EXPECT_FALSE(std::signbit(proto.queues(0).fair_share().at("cpu")));
  EXPECT_FALSE(std::signbit(proto.queues(0).saturation()));
  EXPECT_FALSE(std::signbit(proto.queues(0).weighted_share()));
  EXPECT_EQ(SerializeDeterministic(proto), SerializeDeterministic(Written([&] {
              ScheduleResult positive = result;
              positive.queues[0].fair_share["cpu"] = 0.0;
              positive.queues[0].saturation = 0.0;
              positive.queues[0].weighted_share = 0.0;
              return positive;
            }())));
}

}  // namespace
}  // namespace arbiter::edge
