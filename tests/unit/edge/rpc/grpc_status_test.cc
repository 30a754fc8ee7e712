#include "edge/rpc/grpc_status.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter::rpc {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;

TEST(CappedMessage, ShortMessagesAreKeptWhole) {
  EXPECT_EQ(CappedMessage("snapshot.queues[3].parent: unknown queue"),
            "snapshot.queues[3].parent: unknown queue");
}

TEST(CappedMessage, LongMessagesAreCutAndSaySo) {
  const std::string message = "snapshot.queues[1].name: \"" + std::string(100'000, 'x') + "\"";
  const std::string capped = CappedMessage(message);
  EXPECT_LT(capped.size(), kMaxStatusMessageBytes + 64);
  EXPECT_THAT(capped, StartsWith("snapshot.queues[1].name: \"xxx"));
  EXPECT_THAT(capped, EndsWith(" more bytes)"));
}

TEST(CappedMessage, NeverCutsInsideACharacter) {
  // "é" is two bytes: put its second byte right at the cut.
  const std::string message =
      std::string(kMaxStatusMessageBytes - 1, 'a') + "\xc3\xa9" + std::string(100, 'b');
  const std::string capped = CappedMessage(message);
  EXPECT_THAT(capped, StartsWith(std::string(kMaxStatusMessageBytes - 1, 'a') + "... ("));
}

TEST(ToGrpcStatus, CapsTheMessageAndKeepsTheCode) {
  const grpc::Status status = ToGrpcStatus(absl::InvalidArgumentError(std::string(50'000, 'y')));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(status.error_message().size(), kMaxStatusMessageBytes + 64);
}

}  // namespace
}  // namespace arbiter::rpc
