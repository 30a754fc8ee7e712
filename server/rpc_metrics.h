// The server's Prometheus metrics: per-call counters and latency histograms.
//
// Labels are low-cardinality only: `method` (the RPC's short name) and `code` (the gRPC status
// code name, e.g. "OK", "INVALID_ARGUMENT").
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace arbiter::server {

class RpcMetrics {
 public:
  // Registers the metric families in `registry`, which must outlive this object.
  explicit RpcMetrics(prometheus::Registry& registry);

  // Counts one finished call of `method` that ended with `code` after `seconds`. Thread-safe.
  void RecordCall(std::string_view method, absl::StatusCode code, double seconds);

 private:
  prometheus::Family<prometheus::Counter>& requests_;   // arbiter_rpc_requests_total
  prometheus::Family<prometheus::Histogram>& duration_;  // arbiter_rpc_duration_seconds
};

}  // namespace arbiter::server
