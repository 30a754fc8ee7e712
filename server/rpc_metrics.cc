#include "server/rpc_metrics.h"

#include <string>

#include "server/grpc_status.h"

namespace arbiter::server {
namespace {

// 100 µs to 10 s, three buckets a decade.
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const auto* const buckets = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,    0.5,    1,     2.5,    5,     10};
  return *buckets;
}

}  // namespace

RpcMetrics::RpcMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("arbiter_rpc_requests_total")
                    .Help("Finished arbiter.v1 calls, by method and gRPC status code.")
                    .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("arbiter_rpc_duration_seconds")
                    .Help("Time from receiving an arbiter.v1 call to its answer, in seconds.")
                    .Register(registry)) {}

void RpcMetrics::RecordCall(std::string_view method, absl::StatusCode code, double seconds) {
  const prometheus::Labels labels = {{"method", std::string(method)},
                                     {"code", StatusCodeName(code)}};
  requests_.Add(labels).Increment();
  duration_.Add(labels, DurationBuckets()).Observe(seconds);
}

}  // namespace arbiter::server
