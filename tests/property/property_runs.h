// One run of a property case, computed once per test executable and shared by its TESTs: the
// generated request, the first Schedule answer, the snapshot with its decisions applied and the
// answer of the next call on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/generator/generator.h"
#include "core/model.h"

namespace arbiter::testing {

struct PropertyRun {
  uint64_t index = 0;
  std::string description;
  generator::GeneratedRequest request;
  absl::StatusOr<ScheduleResult> first;
  absl::StatusOr<Snapshot> applied;       // the decisions of `first` applied
  absl::StatusOr<ScheduleResult> second;  // Schedule on `applied`, when asked for
};

// Runs cases [0, count) of `model`; `adjust` may change each request's policy before the calls.
// With `second_call`, each case is scheduled again on its applied snapshot (for ping-pong);
// otherwise `second` holds FailedPrecondition.
std::vector<PropertyRun> RunPropertyCases(int count, generator::GeneratorModel model,
                                          void (*adjust)(uint64_t index, Policy& policy),
                                          bool second_call = true);

// The same over the options `options_of` gives for each case index (FlavoredPropertyCaseOptions,
// say).
std::vector<PropertyRun> RunPropertyCases(int count,
                                          generator::GeneratorOptions (*options_of)(uint64_t index),
                                          void (*adjust)(uint64_t index, Policy& policy),
                                          bool second_call = true);

}  // namespace arbiter::testing
