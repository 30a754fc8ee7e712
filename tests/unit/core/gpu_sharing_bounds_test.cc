// The server's bound on a GPU-sharing pod's devices (RequestBounds::max_gpu_devices_per_pod,
// --max-gpu-devices-per-pod): each device is named in the pod's binding, so the count is bounded
// before any work is paid for it.
#include "core/validation.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"

namespace arbiter {
namespace {

using ::arbiter::testing::SnapshotBuilder;
using ::arbiter::testing::StatusIs;

Snapshot OnePodOf(int32_t devices) {
  return SnapshotBuilder()
      .Node("n0", {{"nvidia.com/gpu", 1e12}})
      .Queue("q")
      .Group("g", "q")
      .Pod({{"cpu", 1}})
      .GpuFraction(0.5)
      .GpuDevices(devices)
      .Build();
}

TEST(GpuSharingBounds, MoreDevicesThanTheBoundNameTheFieldAndTheFlag) {
  RequestBounds bounds;
  bounds.max_gpu_devices_per_pod = 64;
  bounds.max_gpu_devices_per_pod_name = "--max-gpu-devices-per-pod";
  EXPECT_THAT(
      ValidateRequest(OnePodOf(2000000000), Policy{}, RequestKind::kSchedule, nullptr, bounds),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "snapshot.pod_groups[0].pods[0].gpu_fraction_devices: 2000000000 devices; "
               "at most 64 are accepted (--max-gpu-devices-per-pod)"));
  EXPECT_TRUE(
      ValidateRequest(OnePodOf(64), Policy{}, RequestKind::kSchedule, nullptr, bounds).ok());
}

TEST(GpuSharingBounds, WithoutABoundAnyCountIsValid) {
  EXPECT_TRUE(ValidateRequest(OnePodOf(100000), Policy{}, RequestKind::kSchedule).ok());
}

}  // namespace
}  // namespace arbiter
