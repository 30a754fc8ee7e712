#include "server/rpc_metrics.h"

#include <string>

#include "edge/rpc/grpc_status.h"

namespace arbiter::server {
namespace {

using Buckets = prometheus::Histogram::BucketBoundaries;

// Call durations: 100 µs to 10 s, three buckets a decade.
const Buckets& DurationBuckets() {
  static const Buckets* const buckets =
      new Buckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                  0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return *buckets;
}

// Phase durations: 10 µs to 10 s (validating a small request takes microseconds).
const Buckets& PhaseBuckets() {
  static const Buckets* const buckets =
      new Buckets{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                  0.025,   0.05,     0.1,     0.25,   0.5,     1,      2.5,   5,      10};
  return *buckets;
}

// Snapshot sizes: 1 to 1,000,000 things (0 falls in the first bucket).
const Buckets& SizeBuckets() {
  static const Buckets* const buckets =
      new Buckets{1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000};
  return *buckets;
}

}  // namespace

bool IsInternalError(absl::StatusCode code) {
  return code == absl::StatusCode::kUnknown || code == absl::StatusCode::kInternal ||
         code == absl::StatusCode::kUnimplemented || code == absl::StatusCode::kDataLoss;
}

RpcMetrics::RpcMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("arbiter_rpc_requests_total")
                    .Help("Finished arbiter.v1 calls, by method and gRPC status code.")
                    .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("arbiter_rpc_duration_seconds")
                    .Help("Time from receiving an arbiter.v1 call to its answer, in seconds.")
                    .Register(registry)),
      in_flight_(prometheus::BuildGauge()
                     .Name("arbiter_rpc_in_flight")
                     .Help("arbiter.v1 calls accepted and not yet answered.")
                     .Register(registry)
                     .Add({})),
      waiting_(prometheus::BuildGauge()
                   .Name("arbiter_rpc_waiting")
                   .Help("arbiter.v1 calls accepted and waiting for a worker thread.")
                   .Register(registry)
                   .Add({})),
      snapshot_size_(prometheus::BuildHistogram()
                         .Name("arbiter_snapshot_size")
                         .Help("Sizes of the snapshots received: nodes, pods, queues and pod "
                               "groups per request.")
                         .Register(registry)),
      decisions_(prometheus::BuildCounter()
                     .Name("arbiter_decisions_total")
                     .Help("Decisions answered: bind and evict per pod, pending and admit per pod "
                           "group, by reason.")
                     .Register(registry)),
      phase_duration_(prometheus::BuildHistogram()
                          .Name("arbiter_cycle_phase_duration_seconds")
                          .Help("Time spent in each phase of a call, in seconds.")
                          .Register(registry)),
      internal_errors_(prometheus::BuildCounter()
                           .Name("arbiter_internal_errors_total")
                           .Help("Calls that failed through the server's own fault (UNKNOWN, "
                                 "INTERNAL, UNIMPLEMENTED, DATA_LOSS).")
                           .Register(registry)
                           .Add({})),
      memory_trims_(prometheus::BuildCounter()
                        .Name("arbiter_memory_trims_total")
                        .Help("Times the server gave freed memory back to the system after "
                              "falling idle.")
                        .Register(registry)
                        .Add({})) {}

void RpcMetrics::CallStarted() { in_flight_.Increment(); }

void RpcMetrics::CallFinished() { in_flight_.Decrement(); }

void RpcMetrics::MemoryTrimmed() { memory_trims_.Increment(); }

void RpcMetrics::CallQueued() { waiting_.Increment(); }

void RpcMetrics::CallDequeued() { waiting_.Decrement(); }

void RpcMetrics::RecordCall(const CallRecord& call) {
  const prometheus::Labels labels = {{"method", std::string(call.method)},
                                     {"code", rpc::StatusCodeName(call.status.code())}};
  requests_.Add(labels).Increment();
  duration_.Add(labels, DurationBuckets()).Observe(call.seconds);
  if (call.parsed) {
    snapshot_size_.Add({{"kind", "nodes"}}, SizeBuckets()).Observe(call.size.nodes);
    snapshot_size_.Add({{"kind", "pods"}}, SizeBuckets()).Observe(call.size.pods);
    snapshot_size_.Add({{"kind", "queues"}}, SizeBuckets()).Observe(call.size.queues);
    snapshot_size_.Add({{"kind", "pod_groups"}}, SizeBuckets()).Observe(call.size.pod_groups);
  }
  for (const auto& [kind_and_reason, count] : call.decisions.by_kind_and_reason) {
    decisions_.Add({{"kind", kind_and_reason.first}, {"reason", kind_and_reason.second}})
        .Increment(static_cast<double>(count));
  }
  for (const auto& [phase, seconds] : call.phase_seconds) {
    phase_duration_.Add({{"phase", phase}}, PhaseBuckets()).Observe(seconds);
  }
  if (IsInternalError(call.status.code())) internal_errors_.Increment();
}

}  // namespace arbiter::server
