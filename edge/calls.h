// The two arbiter.v1 calls answered in-process, the way the server answers them: the request's
// bytes read by the one decoder (request_decoder.h), the core asked (core/api/arbiter.h), the
// answer written by the one writer (proto_convert.h). The CLI's in-process mode and the tests use
// them; the server runs the same steps in its own timed phases (server/arbiter_service.cc).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "arbiter/v1/arbiter.pb.h"
#include "core/cycle_hooks.h"

namespace arbiter::edge {

// Fair shares for the binary FairShareRequest `request_bytes`, decoded without limits (the
// caller is trusted: the CLI on its own file, a test). InvalidArgument "request: not a valid
// binary ..." for bytes that do not parse; otherwise the core's errors unchanged: InvalidArgument
// with a field path for bad input, Cancelled when hooks.cancelled said so. hooks.phase_done hears
// "decode" once the request is read, then the core's phases. Thread-safe.
absl::StatusOr<v1::FairShareResponse> CallComputeFairShares(std::string_view request_bytes,
                                                            const CycleHooks& hooks = {});

// One scheduling cycle for the binary ScheduleRequest `request_bytes`; as CallComputeFairShares.
absl::StatusOr<v1::ScheduleResponse> CallSchedule(std::string_view request_bytes,
                                                  const CycleHooks& hooks = {});

// The same for a message in hand: serialised first, then decoded as above.
absl::StatusOr<v1::FairShareResponse> CallComputeFairShares(const v1::FairShareRequest& request,
                                                            const CycleHooks& hooks = {});
absl::StatusOr<v1::ScheduleResponse> CallSchedule(const v1::ScheduleRequest& request,
                                                  const CycleHooks& hooks = {});

}  // namespace arbiter::edge
