#include "server/idle_trimmer.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace arbiter::server {
namespace {

constexpr int64_t kMinBytes = 1000;
constexpr absl::Duration kIdleFor = absl::Milliseconds(50);

TEST(IdleTrimmer, TrimsOnceTheServerHasBeenIdleAfterALargeCall) {
  absl::Notification trimmed;
  IdleTrimmer trimmer(kIdleFor, kMinBytes, [&] { trimmed.Notify(); });
  trimmer.CallStarted();
  trimmer.CallEnded(kMinBytes + 1);
  const absl::Time ended = absl::Now();
  ASSERT_TRUE(trimmed.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_GE(absl::Now() - ended, kIdleFor);
}

TEST(IdleTrimmer, KeepsTheMemoryWhileACallRuns) {
  std::atomic<int> trims{0};
  absl::Notification trimmed;
  IdleTrimmer trimmer(kIdleFor, kMinBytes, [&] {
    trims.fetch_add(1);
    trimmed.Notify();
  });
  trimmer.CallStarted();  // a long call
  trimmer.CallStarted();
  trimmer.CallEnded(kMinBytes + 1);
  // Several idle periods pass while the long call runs: nothing is trimmed.
  EXPECT_FALSE(trimmed.WaitForNotificationWithTimeout(kIdleFor * 6));
  const absl::Time ended = absl::Now();
  trimmer.CallEnded(0);
  ASSERT_TRUE(trimmed.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_GE(absl::Now() - ended, kIdleFor);
  EXPECT_EQ(trims.load(), 1);
}

TEST(IdleTrimmer, SmallCallsLeaveNothingToTrim) {
  absl::Notification trimmed;
  IdleTrimmer trimmer(kIdleFor, kMinBytes, [&] { trimmed.Notify(); });
  trimmer.CallStarted();
  trimmer.CallEnded(kMinBytes);
  EXPECT_FALSE(trimmed.WaitForNotificationWithTimeout(kIdleFor * 6));
}

TEST(IdleTrimmer, DestructionStopsAWaitingTrimmer) {
  const absl::Time start = absl::Now();
  {
    IdleTrimmer trimmer(absl::Hours(1), kMinBytes);
    trimmer.CallStarted();
    trimmer.CallEnded(kMinBytes + 1);
  }
  EXPECT_LT(absl::Now() - start, absl::Minutes(1));
}

}  // namespace
}  // namespace arbiter::server
