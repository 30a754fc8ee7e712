// The server's Prometheus series: what one call adds, and that no label names a pod, node or
// queue.
#include "server/rpc_metrics.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace arbiter::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Exposition(prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

CallRecord ScheduleCall() {
  CallRecord call;
  call.method = "Schedule";
  call.request_id = "pod-name-like-id";
  call.parsed = true;
  call.size.nodes = 10;
  call.size.pods = 50;
  call.size.queues = 5;
  call.size.pod_groups = 12;
  call.decisions.by_kind_and_reason[{"bind", "free-capacity"}] = 3;
  call.decisions.by_kind_and_reason[{"evict", "fair-share-reclaim"}] = 2;
  call.decisions.by_kind_and_reason[{"pending", "gang-does-not-fit"}] = 1;
  call.phase_seconds = {{"parse", 0.0002}, {"allocate", 0.003}};
  call.seconds = 0.004;
  return call;
}

TEST(RpcMetrics, ACallCountsByMethodAndCodeWithDurationBucketsFrom100MicrosecondsTo10Seconds) {
  prometheus::Registry registry;
  RpcMetrics metrics(registry);
  metrics.RecordCall(ScheduleCall());
  const std::string text = Exposition(registry);
  EXPECT_THAT(text, HasSubstr("arbiter_rpc_requests_total{code=\"OK\",method=\"Schedule\"} 1"));
  EXPECT_THAT(text, HasSubstr("arbiter_rpc_duration_seconds_bucket{code=\"OK\","
                              "method=\"Schedule\",le=\"0.0001\"} 0"));
  EXPECT_THAT(text, HasSubstr("arbiter_rpc_duration_seconds_bucket{code=\"OK\","
                              "method=\"Schedule\",le=\"0.005\"} 1"));
  EXPECT_THAT(text, HasSubstr("arbiter_rpc_duration_seconds_bucket{code=\"OK\","
                              "method=\"Schedule\",le=\"10\"} 1"));
}

TEST(RpcMetrics, SnapshotSizesByKind) {
  prometheus::Registry registry;
  RpcMetrics metrics(registry);
  metrics.RecordCall(ScheduleCall());
  const std::string text = Exposition(registry);
  EXPECT_THAT(text, HasSubstr("arbiter_snapshot_size_sum{kind=\"nodes\"} 10"));
  EXPECT_THAT(text, HasSubstr("arbiter_snapshot_size_sum{kind=\"pods\"} 50"));
  EXPECT_THAT(text, HasSubstr("arbiter_snapshot_size_sum{kind=\"queues\"} 5"));
  EXPECT_THAT(text, HasSubstr("arbiter_snapshot_size_sum{kind=\"pod_groups\"} 12"));
  EXPECT_THAT(text, HasSubstr("arbiter_snapshot_size_bucket{kind=\"pods\",le=\"30\"} 0"));
  EXPECT_THAT(text, HasSubstr("arbiter_snapshot_size_bucket{kind=\"pods\",le=\"100\"} 1"));
}

TEST(RpcMetrics, DecisionsByKindAndReason) {
  prometheus::Registry registry;
  RpcMetrics metrics(registry);
  metrics.RecordCall(ScheduleCall());
  metrics.RecordCall(ScheduleCall());
  const std::string text = Exposition(registry);
  EXPECT_THAT(text, HasSubstr("arbiter_decisions_total{kind=\"bind\",reason=\"free-capacity\"} 6"));
  EXPECT_THAT(text,
              HasSubstr("arbiter_decisions_total{kind=\"evict\",reason=\"fair-share-reclaim\"} 4"));
  EXPECT_THAT(
      text, HasSubstr("arbiter_decisions_total{kind=\"pending\",reason=\"gang-does-not-fit\"} 2"));
}

TEST(RpcMetrics, PhaseDurations) {
  prometheus::Registry registry;
  RpcMetrics metrics(registry);
  metrics.RecordCall(ScheduleCall());
  const std::string text = Exposition(registry);
  EXPECT_THAT(text, HasSubstr("arbiter_cycle_phase_duration_seconds_count{phase=\"parse\"} 1"));
  EXPECT_THAT(text, HasSubstr("arbiter_cycle_phase_duration_seconds_count{phase=\"allocate\"} 1"));
  EXPECT_THAT(text, HasSubstr("arbiter_cycle_phase_duration_seconds_bucket{phase=\"parse\","
                              "le=\"0.00025\"} 1"));
}

TEST(RpcMetrics, InternalErrorsCountOnlyTheServersOwnFailures) {
  prometheus::Registry registry;
  RpcMetrics metrics(registry);
  CallRecord bad_input = ScheduleCall();
  bad_input.status = absl::InvalidArgumentError("snapshot.queues[0].name: empty");
  metrics.RecordCall(bad_input);
  EXPECT_THAT(Exposition(registry), HasSubstr("arbiter_internal_errors_total 0"));
  CallRecord broken = ScheduleCall();
  broken.status = absl::InternalError("broken");
  metrics.RecordCall(broken);
  EXPECT_THAT(Exposition(registry), HasSubstr("arbiter_internal_errors_total 1"));
}

TEST(RpcMetrics, UnparsedRequestsAddNoSnapshotSize) {
  prometheus::Registry registry;
  RpcMetrics metrics(registry);
  CallRecord garbage;
  garbage.method = "Schedule";
  garbage.status = absl::InvalidArgumentError("request: not a valid binary");
  metrics.RecordCall(garbage);
  EXPECT_THAT(Exposition(registry), Not(HasSubstr("arbiter_snapshot_size_count")));
}

TEST(RpcMetrics, InFlightGaugeFollowsStartsAndFinishes) {
  prometheus::Registry registry;
  RpcMetrics metrics(registry);
  metrics.CallStarted();
  metrics.CallStarted();
  EXPECT_THAT(Exposition(registry), HasSubstr("arbiter_rpc_in_flight 2"));
  metrics.CallFinished();
  EXPECT_THAT(Exposition(registry), HasSubstr("arbiter_rpc_in_flight 1"));
}

TEST(RpcMetrics, NoLabelCarriesTheRequestId) {
  prometheus::Registry registry;
  RpcMetrics metrics(registry);
  metrics.RecordCall(ScheduleCall());
  EXPECT_THAT(Exposition(registry), Not(HasSubstr("pod-name-like-id")));
}

}  // namespace
}  // namespace arbiter::server
