// SEMANTICS.md §0.5: equal requests give byte-identical responses, and the response does not
// depend on the order of repeated input fields or map entries. Checked on the bytes the server
// and the CLI write (deterministic binary and JSON), through the calls they both use.
#include "edge/calls.h"

#include <algorithm>
#include <map>
#include <string>

#include "edge/proto_convert.h"
#include "edge/wire.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter::edge {
namespace {

using ::google::protobuf::Map;

// A small GPU cluster under two top-level queues. KAI reads "everything" as -1 for cpu and memory;
// Kueue's nominal quotas are finite (SEMANTICS.md §1.2), so they get large finite ones.
Snapshot ClusterSnapshot(FairnessModel model) {
  const double all = model == FairnessModel::kKueue ? 1e12 : -1;
  return testing::SnapshotBuilder()
      .Now(10000)
      .Node("gpu-a", {{"cpu", 32000}, {"memory", 256e9}, {"nvidia.com/gpu", 8}})
      .Label("pool", "gpu")
      .Node("gpu-b", {{"cpu", 32000}, {"memory", 256e9}, {"nvidia.com/gpu", 8}})
      .Label("pool", "gpu")
      .Taint("dedicated", "ml", "NoSchedule")
      .Node("cpu-a", {{"cpu", 64000}, {"memory", 128e9}})
      .Queue("research")
      .Deserved({{"nvidia.com/gpu", 10}, {"cpu", all}, {"memory", all}})
      .Queue("vision", "research")
      .Deserved({{"nvidia.com/gpu", 6}, {"cpu", all}, {"memory", all}})
      .Weight({{"nvidia.com/gpu", 2}})
      .Queue("nlp", "research")
      .Deserved({{"nvidia.com/gpu", 4}, {"cpu", all}, {"memory", all}})
      .Queue("prod")
      .Deserved({{"nvidia.com/gpu", 6}, {"cpu", all}, {"memory", all}})
      .Group("vision-train", "vision")
      .MinMember(2)
      .RunningPods(2, {{"cpu", 4000}, {"nvidia.com/gpu", 4}}, "gpu-a")
      .Started(9000)
      .Group("nlp-train", "nlp")
      .MinMember(3)
      .Pods(3, {{"cpu", 2000}, {"memory", 8e9}, {"nvidia.com/gpu", 2}})
      .Tolerate("dedicated", "Equal", "ml", "NoSchedule")
      .Group("serve", "prod")
      .Priority(150)
      .Pods(2, {{"cpu", 1000}, {"nvidia.com/gpu", 1}})
      .Selector("pool", "gpu")
      .Group("batch", "prod")
      .Pods(4, {{"cpu", 8000}, {"memory", 4e9}})
      .Build();
}

// Re-inserts every entry of `map` in reverse key order.
template <typename Value>
void ReverseInsertion(Map<std::string, Value>* map) {
  std::map<std::string, Value> sorted(map->begin(), map->end());
  map->clear();
  for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) (*map)[it->first] = it->second;
}

template <typename Repeated>
void Reverse(Repeated* repeated) {
  std::reverse(repeated->begin(), repeated->end());
}

// The same snapshot with every repeated field and every map in a different order.
v1::Snapshot Shuffled(v1::Snapshot snapshot) {
  Reverse(snapshot.mutable_queues());
  for (v1::Queue& queue : *snapshot.mutable_queues()) {
    ReverseInsertion(queue.mutable_deserved());
    ReverseInsertion(queue.mutable_over_quota_weight());
  }
  Reverse(snapshot.mutable_nodes());
  for (v1::Node& node : *snapshot.mutable_nodes()) {
    ReverseInsertion(node.mutable_allocatable());
    ReverseInsertion(node.mutable_labels());
  }
  Reverse(snapshot.mutable_pod_groups());
  for (v1::PodGroup& group : *snapshot.mutable_pod_groups()) {
    Reverse(group.mutable_pods());
    for (v1::Pod& pod : *group.mutable_pods()) ReverseInsertion(pod.mutable_requests());
  }
  return snapshot;
}

template <typename Request>
Request MakeRequest(const v1::Snapshot& snapshot, FairnessModel model) {
  Request request;
  *request.mutable_snapshot() = snapshot;
  request.mutable_policy()->set_fairness_model(static_cast<v1::FairnessModel>(model));
  return request;
}

struct Bytes {
  std::string binary;
  std::string json;
};

template <typename Response>
Bytes BytesOf(const absl::StatusOr<Response>& response) {
  EXPECT_TRUE(response.ok()) << response.status();
  if (!response.ok()) return {};
  absl::StatusOr<std::string> json = ToJson(*response);
  EXPECT_TRUE(json.ok()) << json.status();
  return {SerializeDeterministic(*response), json.value_or("")};
}

class DeterministicResponse : public ::testing::TestWithParam<FairnessModel> {};

TEST_P(DeterministicResponse, FairSharesIgnoreInputOrder) {
  const v1::Snapshot snapshot = ToProto(ClusterSnapshot(GetParam()));
  const Bytes first =
      BytesOf(CallComputeFairShares(MakeRequest<v1::FairShareRequest>(snapshot, GetParam())));
  const Bytes again =
      BytesOf(CallComputeFairShares(MakeRequest<v1::FairShareRequest>(snapshot, GetParam())));
  const Bytes shuffled = BytesOf(
      CallComputeFairShares(MakeRequest<v1::FairShareRequest>(Shuffled(snapshot), GetParam())));
  ASSERT_FALSE(first.binary.empty());
  EXPECT_EQ(first.binary, again.binary);
  EXPECT_EQ(first.binary, shuffled.binary);
  EXPECT_EQ(first.json, shuffled.json);
}

TEST_P(DeterministicResponse, ScheduleIgnoresInputOrder) {
  const v1::Snapshot snapshot = ToProto(ClusterSnapshot(GetParam()));
  const Bytes first = BytesOf(CallSchedule(MakeRequest<v1::ScheduleRequest>(snapshot, GetParam())));
  const Bytes again = BytesOf(CallSchedule(MakeRequest<v1::ScheduleRequest>(snapshot, GetParam())));
  const Bytes shuffled =
      BytesOf(CallSchedule(MakeRequest<v1::ScheduleRequest>(Shuffled(snapshot), GetParam())));
  ASSERT_FALSE(first.binary.empty());
  EXPECT_EQ(first.binary, again.binary);
  EXPECT_EQ(first.binary, shuffled.binary);
  EXPECT_EQ(first.json, shuffled.json);
}

INSTANTIATE_TEST_SUITE_P(Models, DeterministicResponse,
                         ::testing::Values(FairnessModel::kKai, FairnessModel::kKueue),
                         [](const ::testing::TestParamInfo<FairnessModel>& param) {
                           return param.param == FairnessModel::kKai ? std::string("Kai")
                                                                     : std::string("Kueue");
                         });

}  // namespace
}  // namespace arbiter::edge
