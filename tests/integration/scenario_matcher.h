// Scenario files (tests/scenarios/**/): a request and the decisions expected for it.
//
// A scenario is a directory holding
// - request.json: an arbiter.v1.ScheduleRequest in proto3 JSON;
// - expected.json: a partial arbiter.v1.ScheduleResponse in proto3 JSON (original field names),
//   with an optional "description" string. Only the lists it names are checked, among
//   "bindings", "evictions", "admissions", "pending" and "queues". A named list must have the
//   same length and order as the answer's; in each entry, every key the file writes must be
//   equal in the answer (numbers exactly, enums by name, maps key by key), and keys it leaves out
//   are not checked, so {"pod_group": "g", "reason": "insufficient-resources"} checks a pending
//   group's reason without its message. Default values count as written in the answer
//   ("after_evictions": false is checked).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "arbiter/v1/arbiter.pb.h"

namespace arbiter::testing {

// The directories below `root` that hold both request.json and expected.json, sorted.
std::vector<std::string> FindScenarios(const std::string& root);

// OK when `actual` matches `expected_json` as described above; otherwise InvalidArgument for an
// expected.json that does not parse or names an unknown key, and NotFound listing every
// mismatch as "bindings[2].node: expected \"n1\", got \"n2\"".
absl::Status MatchExpected(const std::string& expected_json, const v1::ScheduleResponse& actual);

}  // namespace arbiter::testing
