// The two arbiter.v1 calls on protobuf messages, shared by the gRPC service and the CLI's
// in-process mode: convert the request (proto_convert.h), ask the core (core/api/arbiter.h),
// convert the answer back.
#pragma once

#include "absl/status/statusor.h"
#include "arbiter/v1/arbiter.pb.h"
#include "core/api/arbiter.h"

namespace arbiter::server {

// Fair shares for `request`. The core's errors unchanged: InvalidArgument with a field path for
// bad input, Cancelled when hooks.cancelled said so. Thread-safe.
absl::StatusOr<v1::FairShareResponse> CallComputeFairShares(const v1::FairShareRequest& request,
                                                            const CycleHooks& hooks = {});

// One scheduling cycle for `request`; errors as CallComputeFairShares. Thread-safe.
absl::StatusOr<v1::ScheduleResponse> CallSchedule(const v1::ScheduleRequest& request,
                                                  const CycleHooks& hooks = {});

}  // namespace arbiter::server
