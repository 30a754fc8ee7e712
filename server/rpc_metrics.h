// The server's Prometheus metrics, served at /metrics:
//
//   arbiter_rpc_requests_total{method,code}             counter: finished arbiter.v1 calls
//   arbiter_rpc_duration_seconds{method,code}           histogram, 100 µs .. 10 s
//   arbiter_rpc_in_flight                               gauge: calls accepted, not yet answered
//   arbiter_snapshot_size{kind}                         histogram of the requests' sizes; kind is
//                                                       nodes | pods | queues | pod_groups
//   arbiter_decisions_total{kind,reason}                counter; kind is bind | evict | pending |
//                                                       admit, reason a fixed short code
//   arbiter_cycle_phase_duration_seconds{phase}         histogram, 10 µs .. 10 s: decode, the
//                                                       core's phases, to_proto, serialize
//   arbiter_internal_errors_total                       counter: calls that ended in UNKNOWN,
//                                                       INTERNAL, UNIMPLEMENTED or DATA_LOSS
//   arbiter_memory_trims_total                          counter: freed memory given back to the
//                                                       system once idle (server/idle_trimmer.h)
//
// Labels are low-cardinality only: never a pod, node or queue name. `method` is the RPC's short
// name, `code` the gRPC status code name (e.g. "OK", "INVALID_ARGUMENT").
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/call_record.h"

namespace arbiter::server {

class RpcMetrics {
 public:
  // Registers the metric families in `registry`, which must outlive this object.
  explicit RpcMetrics(prometheus::Registry& registry);

  RpcMetrics(const RpcMetrics&) = delete;
  RpcMetrics& operator=(const RpcMetrics&) = delete;

  // A call was accepted / answered (the in-flight gauge). Thread-safe.
  void CallStarted();
  void CallFinished();
  // A call waits for a worker (arbiter_rpc_waiting), and no longer does.
  void CallQueued();
  void CallDequeued();
  // The server gave freed memory back to the system (arbiter_memory_trims_total). Thread-safe.
  void MemoryTrimmed();

  // Records everything `call` says: the request counter and duration, the snapshot sizes (once
  // parsed), the decisions, the phase durations, and an internal error. Thread-safe.
  void RecordCall(const CallRecord& call);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Gauge& in_flight_;
  prometheus::Gauge& waiting_;
  prometheus::Family<prometheus::Histogram>& snapshot_size_;
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Histogram>& phase_duration_;
  prometheus::Counter& internal_errors_;
  prometheus::Counter& memory_trims_;
};

// Whether `code` is the server's own failure rather than the caller's (counted in
// arbiter_internal_errors_total and logged at error level).
bool IsInternalError(absl::StatusCode code);

}  // namespace arbiter::server
