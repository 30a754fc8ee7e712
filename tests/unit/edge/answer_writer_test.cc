// The fair-share answer written straight from the core's rows gives exactly the bytes of the
// response message's deterministic serialisation.
#include "edge/answer_writer.h"

#include <string>

#include "arbiter/v1/arbiter.pb.h"
#include "clients/generator/generator.h"
#include "core/api/arbiter.h"
#include "edge/proto_convert.h"
#include "edge/wire.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter::edge {
namespace {

using ::arbiter::testing::SnapshotBuilder;

// The written bytes and the message's, for `snapshot` under `policy`.
void ExpectSameBytes(const Snapshot& snapshot, const Policy& policy) {
  absl::StatusOr<FairShareResult> result = ComputeFairShares(snapshot, policy);
  ASSERT_TRUE(result.ok()) << result.status();
  std::string written;
  AppendFairShareResponse(*result, &written);
  v1::FairShareResponse proto;
  ToProto(*std::move(result), &proto);
  EXPECT_EQ(written, SerializeDeterministic(proto));
  v1::FairShareResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(written));
  EXPECT_EQ(parsed.queues_size(), static_cast<int>(snapshot.queues.size()));
}

TEST(AppendFairShareResponse, KaiRowsGiveTheMessagesBytes) {
  // A long name (its length takes two bytes), a long resource name, deserved -1 and 0, a queue
  // with nothing (saturation 0, left out) and one over its share.
  const std::string long_name(300, 'q');
  const Snapshot snapshot =
      SnapshotBuilder()
          .Node("n1", {{"cpu", 8000}, {"example.com/a-rather-long-resource-name", 2}})
          .Queue("dept")
          .Deserved({{"cpu", -1}})
          .Queue(long_name, "dept")
          .Deserved({{"cpu", 0}, {"example.com/a-rather-long-resource-name", 1}})
          .Queue("idle", "dept")
          .Group("job", long_name)
          .Pod({{"cpu", 6000}}, "n1", PodPhase::kRunning)
          .Pod({{"cpu", 1000}})
          .Build();
  ExpectSameBytes(snapshot, Policy{});
}

TEST(AppendFairShareResponse, AnEmptyAnswerIsNoBytes) {
  std::string written;
  AppendFairShareResponse(FairShareResult{}, &written);
  EXPECT_EQ(written, "");
}

TEST(AppendFairShareResponse, GeneratedRequestsOfBothModelsGiveTheMessagesBytes) {
  for (const char* size : {"S", "M"}) {
    for (const bool kueue : {false, true}) {
      absl::StatusOr<generator::GeneratorOptions> options = generator::SizePreset(
          size, kueue ? generator::GeneratorModel::kKueue : generator::GeneratorModel::kKai);
      ASSERT_TRUE(options.ok());
      const generator::GeneratedRequest request = generator::Generate(*options);
      SCOPED_TRACE(std::string(size) + (kueue ? " KUEUE" : " KAI"));
      ExpectSameBytes(request.snapshot, request.policy);
    }
  }
}

}  // namespace
}  // namespace arbiter::edge
