// ValidatedSnapshot: a request validated, then interned once for both models.
#include "core/validated_snapshot.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"

namespace arbiter {
namespace {

using ::arbiter::testing::IsOk;
using ::arbiter::testing::SnapshotBuilder;
using ::arbiter::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// (resource name, amount) pairs of a run, in run order.
std::vector<std::pair<std::string, double>> Named(const ValidatedSnapshot& request, Amounts run) {
  std::vector<std::pair<std::string, double>> out;
  for (const Amount& a : run) out.emplace_back(request.resources().name(a.resource), a.value);
  return out;
}

using P = std::pair<std::string, double>;

// Names and maps deliberately out of order: queues, nodes, groups and pods are given in reverse.
Snapshot Unordered() {
  Snapshot s = SnapshotBuilder()
                   .Capacity({{"memory", 64}, {"cpu", 16}})
                   .Node("n2", {{"nvidia.com/gpu", 4}, {"cpu", 8}})
                   .Node("n1", {{"cpu", 8}, {"memory", 32}})
                   .Queue("root")
                   .Deserved({{"cpu", 10}})
                   .Queue("b", "root")
                   .Limit({{"nvidia.com/gpu", 2}})
                   .Queue("a", "root")
                   .Weight({{"cpu", 3}})
                   .Group("g2", "a")
                   .RunningPods(1, {{"cpu", 1}}, "n2")
                   .Group("g1", "b")
                   .Pods(2, {{"memory", 2}, {"cpu", 1}})
                   .Build();
  // Pod names in reverse within g1, and a usage entry with a resource outside R.
  s.pod_groups[1].pods[0].name = "z";
  s.pod_groups[1].pods[1].name = "y";
  s.usage.push_back({"a", {{"cpu", 5}, {"example.com/unknown", 7}}});
  s.usage_capacity = {{"cpu", 100}};
  return s;
}

TEST(ValidatedSnapshotTest, InternsTheResourceSetInNameOrderAndEveryMapAsAscendingRuns) {
  const Snapshot s = Unordered();
  const absl::StatusOr<ValidatedSnapshot> request =
      ValidatedSnapshot::Validate(s, Policy{}, RequestKind::kSchedule);
  ASSERT_THAT(request, IsOk());
  EXPECT_THAT(request->resources().names(), ElementsAre("cpu", "memory", "nvidia.com/gpu"));
  EXPECT_THAT(Named(*request, request->capacity()), ElementsAre(P{"cpu", 16}, P{"memory", 64}));
  // Nodes keep their input indices; the name order is a separate list.
  EXPECT_THAT(Named(*request, request->allocatable(0)),
              ElementsAre(P{"cpu", 8}, P{"nvidia.com/gpu", 4}));
  EXPECT_THAT(request->nodes_by_name(), ElementsAre(1, 0));
  // Queue runs are indexed by the tree (name order): a, b, root.
  EXPECT_EQ(request->tree().queue(0).name, "a");
  EXPECT_THAT(Named(*request, request->over_quota_weight(0)), ElementsAre(P{"cpu", 3}));
  EXPECT_THAT(Named(*request, request->limit(1)), ElementsAre(P{"nvidia.com/gpu", 2}));
  EXPECT_THAT(Named(*request, request->deserved(2)), ElementsAre(P{"cpu", 10}));
  EXPECT_TRUE(request->deserved(0).empty());
  // Usage keeps only resources of R.
  EXPECT_EQ(request->usage_queue(0), 0);
  EXPECT_THAT(Named(*request, request->usage(0)), ElementsAre(P{"cpu", 5}));
  EXPECT_THAT(Named(*request, request->usage_capacity()), ElementsAre(P{"cpu", 100}));
}

// §4.13.1: a pod that shares asks G = amt(p) even when no map of the request names G. The name
// interned for it must outlive the interner (it once pointed at a temporary: found by the fuzzer,
// tests/fuzz/corpus/regression-sharing-gpu-name.pb).
TEST(ValidatedSnapshotTest, ASharingPodNamesGpuInRWhenNoMapDoes) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 8}})
                   .Queue("a")
                   .Group("g", "a")
                   .Pods(2, {{"cpu", 1}})
                   .Build();
  s.pod_groups[0].pods[0].gpu_fraction = 0.5;
  s.pod_groups[0].pods[1].gpu_fraction = 0.25;
  s.pod_groups[0].pods[1].gpu_fraction_devices = 2;
  const absl::StatusOr<ValidatedSnapshot> request =
      ValidatedSnapshot::Validate(s, Policy{}, RequestKind::kSchedule);
  ASSERT_THAT(request, IsOk());
  EXPECT_THAT(request->resources().names(), ElementsAre("cpu", "nvidia.com/gpu"));
  EXPECT_THAT(Named(*request, request->requests(0)),
              ElementsAre(P{"cpu", 1}, P{"nvidia.com/gpu", 0.5}));
  EXPECT_THAT(Named(*request, request->requests(1)),
              ElementsAre(P{"cpu", 1}, P{"nvidia.com/gpu", 0.5}));
}

TEST(ValidatedSnapshotTest, NumbersPodsFlatAndKeepsNameOrdersAndIndices) {
  const Snapshot s = Unordered();
  const absl::StatusOr<ValidatedSnapshot> request =
      ValidatedSnapshot::Validate(s, Policy{}, RequestKind::kSchedule);
  ASSERT_THAT(request, IsOk());
  EXPECT_THAT(request->groups_by_name(), ElementsAre(1, 0));  // g1, g2
  EXPECT_EQ(request->group_queue(0), 0);                      // g2 in a
  EXPECT_EQ(request->group_queue(1), 1);                      // g1 in b
  ASSERT_EQ(request->num_pods(), 3);
  EXPECT_EQ(request->first_pod(0), 0);
  EXPECT_EQ(request->first_pod(1), 1);
  EXPECT_EQ(request->first_pod(2), 3);
  EXPECT_EQ(request->pod_node(0), 0);  // g2's pod runs on n2, input index 0
  EXPECT_EQ(request->pod_node(1), -1);
  // g1's pods are "z" then "y" in input order: by name, position 1 comes first.
  EXPECT_EQ(request->pods_by_name()[1], 1);
  EXPECT_EQ(request->pods_by_name()[2], 0);
  EXPECT_THAT(Named(*request, request->requests(1)), ElementsAre(P{"cpu", 1}, P{"memory", 2}));
}

// §0.2: a pod's phase as it counts, UNSPECIFIED resolved by whether it has a node.
TEST(ValidatedSnapshotTest, KeepsEachPodsEffectivePhase) {
  Snapshot s = Unordered();
  s.pod_groups[0].pods[0].phase = PodPhase::kUnspecified;  // on n2
  s.pod_groups[1].pods[0].phase = PodPhase::kUnspecified;  // no node
  s.pod_groups[1].pods[1].phase = PodPhase::kPending;
  const absl::StatusOr<ValidatedSnapshot> request =
      ValidatedSnapshot::Validate(s, Policy{}, RequestKind::kSchedule);
  ASSERT_THAT(request, IsOk());
  EXPECT_EQ(request->pod_phase(0), PodPhase::kRunning);
  EXPECT_EQ(request->pod_phase(1), PodPhase::kPending);
  EXPECT_EQ(request->pod_phase(2), PodPhase::kPending);
}

TEST(ValidatedSnapshotTest, AnInvalidRequestIsRefusedWithItsFieldPath) {
  Snapshot s = Unordered();
  s.pod_groups[0].queue = "nowhere";
  EXPECT_THAT(ValidatedSnapshot::Validate(s, Policy{}, RequestKind::kSchedule),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("snapshot.pod_groups[0]")));
}

TEST(ValidatedSnapshotTest, HoldsItsOwnCopyOfThePolicy) {
  const Snapshot s = Unordered();
  absl::StatusOr<ValidatedSnapshot> request = [&] {
    Policy policy;
    policy.k_value = 2;
    return ValidatedSnapshot::Validate(s, policy, RequestKind::kSchedule);
  }();
  ASSERT_THAT(request, IsOk());
  EXPECT_EQ(request->policy().k_value, 2);
}

// The poll asks its hook once per CancelPoll::kInterval units of work: a request of a few
// thousand pods is asked at least once.
TEST(ValidatedSnapshotTest, ACancelledCallStopsWithCancelled) {
  const Snapshot s = SnapshotBuilder()
                         .Node("n1", {{"cpu", 8}})
                         .Queue("a")
                         .Group("g", "a")
                         .Pods(4 * static_cast<int>(CancelPoll::kInterval), {{"cpu", 1}})
                         .Build();
  const std::function<bool()> cancelled = [] { return true; };
  CancelPoll poll(&cancelled);
  poll.set_phase("validate");
  EXPECT_THAT(ValidatedSnapshot::Validate(s, Policy{}, RequestKind::kSchedule, &poll),
              StatusIs(absl::StatusCode::kCancelled));
}

}  // namespace
}  // namespace arbiter
