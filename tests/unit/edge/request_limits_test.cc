// The per-request limits: counting a decoded snapshot, and the flags' own values (the queue tree's
// depth is validation's: tests/unit/core/validation_test.cc).
#include "edge/request_limits.h"

#include <string>
#include <vector>

#include "arbiter/v1/arbiter.pb.h"
#include "edge/proto_convert.h"
#include "edge/request_decoder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter::edge {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::Snapshot SnapshotOf(int nodes, const std::vector<int>& pods_per_group, int queues) {
  v1::Snapshot snapshot;
  for (int i = 0; i < nodes; ++i) snapshot.add_nodes()->set_name("node-" + std::to_string(i));
  for (size_t g = 0; g < pods_per_group.size(); ++g) {
    v1::PodGroup* group = snapshot.add_pod_groups();
    group->set_name("group-" + std::to_string(g));
    for (int p = 0; p < pods_per_group[g]; ++p) group->add_pods()->set_name(std::to_string(p));
  }
  for (int i = 0; i < queues; ++i) snapshot.add_queues()->set_name("q-" + std::to_string(i));
  return snapshot;
}

TEST(SizeOf, CountsPodsOverEveryGroupOfTheDecodedModel) {
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = SnapshotOf(3, {2, 0, 5}, 4);
  Snapshot model;
  Policy policy;
  ASSERT_TRUE(DecodeRequest(request.SerializeAsString(), &model, &policy));
  const SnapshotSize size = SizeOf(model);
  EXPECT_EQ(size.nodes, 3);
  EXPECT_EQ(size.pods, 7);
  EXPECT_EQ(size.pod_groups, 3);
  EXPECT_EQ(size.queues, 4);
}

TEST(CheckLimitOptions, NegativeLimitsAreRefusedByFlag) {
  RequestLimits limits;
  limits.max_resource_names = -1;
  const absl::Status status = CheckLimitOptions(limits);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("--max-resource-names: -1"));
}

TEST(RequestLimits, DefaultsAreGenerous) {
  const RequestLimits limits;
  EXPECT_EQ(limits.max_nodes, 100000);
  EXPECT_EQ(limits.max_pods, 1000000);
}

}  // namespace
}  // namespace arbiter::edge
