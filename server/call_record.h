// What one arbiter.v1 call did: the facts that the call's log line (server/call_log.h) and the
// metrics (server/rpc_metrics.h) are made of. Filled in by the service as the call goes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "edge/request_limits.h"

namespace arbiter::server {

// The decisions of an answer, counted, and grouped by (kind, reason) for the metrics. Kinds are
// "bind", "evict", "pending" and "admit"; reasons are short fixed codes (see CountDecisions in
// server/arbiter_service.cc), never a pod, node or queue name.
struct DecisionCounts {
  int64_t bindings = 0;
  int64_t evictions = 0;
  int64_t pending = 0;
  int64_t admissions = 0;
  std::map<std::pair<std::string, std::string>, int64_t> by_kind_and_reason;
};

struct CallRecord {
  std::string_view method;  // the RPC's short name, e.g. "Schedule"
  std::string request_id;
  int64_t request_bytes = 0;
  int64_t response_bytes = 0;  // 0 unless the call succeeded
  bool parsed = false;         // whether `size` is known (the request parsed)
  int64_t decoded_bytes = 0;   // the decoded request's accounted memory (request_decoder.h)
  edge::SnapshotSize size;
  DecisionCounts decisions;  // empty unless the call succeeded
  // Consecutive phases in order, each measured from the end of the one before: the server's
  // "decode", the core's phases (CycleHooks::phase_done), "to_proto", "serialize".
  std::vector<std::pair<std::string, double>> phase_seconds;
  // Per eviction action, its victim search's counters (CycleHooks::phase_counters) as
  // "name=value,name=value".
  std::vector<std::pair<std::string, std::string>> phase_counters;
  absl::Status status;
  double seconds = 0;  // from receiving the call to answering it
};

}  // namespace arbiter::server
