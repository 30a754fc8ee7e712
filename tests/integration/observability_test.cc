// What operators see of the real server: the /metrics series (scraped over HTTP), one log line
// per call, and request ids.
#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "arbiter/v1/arbiter.pb.h"
#include "clients/generator/generator.h"
#include "edge/proto_convert.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"

namespace arbiter::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::SizeIs;

constexpr char kSchedule[] = "/arbiter.v1.Arbiter/Schedule";
constexpr char kComputeFairShares[] = "/arbiter.v1.Arbiter/ComputeFairShares";

class Observability : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    logs_ = new LogCapture();
    server::ServerOptions options;
    options.metrics_port = 0;
    options.log_sink = logs_->Sink();
    server_ = StartTestServer(options).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete logs_;
    logs_ = nullptr;
  }

  void SetUp() override { channel_ = Connect(server_->address()); }

  static v1::ScheduleRequest Demo() {
    v1::ScheduleRequest request;
    ReadSourceMessage("examples/demo.json", &request);
    return request;
  }

  static std::string Scrape() {
    const absl::StatusOr<std::string> metrics = HttpGet(server_->metrics_port(), "/metrics");
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    return metrics.ok() ? *metrics : "";
  }

  // The call lines logged for `request_id`.
  static std::vector<std::string> CallLines(const std::string& request_id) {
    return logs_->LinesWith({" msg=call ", " request_id=" + request_id + " "});
  }

  static LogCapture* logs_;
  static server::ArbiterServer* server_;
  std::shared_ptr<grpc::Channel> channel_;
};

LogCapture* Observability::logs_ = nullptr;
server::ArbiterServer* Observability::server_ = nullptr;

int PodCount(const v1::ScheduleRequest& request) {
  int pods = 0;
  for (const v1::PodGroup& group : request.snapshot().pod_groups()) pods += group.pods_size();
  return pods;
}

// ---- Logs ----

TEST_F(Observability, ACallGivesOneInfoLineWithMethodIdSizesDurationAndDecisions) {
  const v1::ScheduleRequest request = Demo();
  const std::string bytes = edge::SerializeDeterministic(request);
  const RawAnswer answer =
      CallRaw(channel_, kSchedule, bytes, absl::Seconds(60), {{"x-request-id", "log-test-1"}});
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  v1::ScheduleResponse response;
  ASSERT_TRUE(response.ParseFromString(answer.bytes));

  const std::vector<std::string> lines = CallLines("log-test-1");
  ASSERT_THAT(lines, SizeIs(1));
  const std::string& line = lines.front();
  EXPECT_THAT(line, MatchesRegex("ts=[0-9-]+T[0-9:.]+Z level=info msg=call .*"));
  EXPECT_EQ(LogField(line, "method"), "Schedule");
  EXPECT_EQ(LogField(line, "code"), "OK");
  EXPECT_EQ(LogField(line, "request_bytes"), std::to_string(bytes.size()));
  EXPECT_EQ(LogField(line, "response_bytes"), std::to_string(answer.bytes.size()));
  EXPECT_EQ(LogField(line, "nodes"), std::to_string(request.snapshot().nodes_size()));
  EXPECT_EQ(LogField(line, "pods"), std::to_string(PodCount(request)));
  EXPECT_EQ(LogField(line, "queues"), std::to_string(request.snapshot().queues_size()));
  EXPECT_EQ(LogField(line, "pod_groups"), std::to_string(request.snapshot().pod_groups_size()));
  EXPECT_EQ(LogField(line, "bindings"), std::to_string(response.bindings_size()));
  EXPECT_EQ(LogField(line, "evictions"), std::to_string(response.evictions_size()));
  EXPECT_EQ(LogField(line, "pending"), std::to_string(response.pending_size()));
  EXPECT_EQ(LogField(line, "admissions"), std::to_string(response.admissions_size()));
  const double duration_ms = std::stod(LogField(line, "duration_ms"));
  EXPECT_GT(duration_ms, 0);
  EXPECT_LT(duration_ms, 60000);
}

TEST_F(Observability, TheCallersRequestIdIsEchoedInTheTrailers) {
  const RawAnswer answer = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(Demo()),
                                   absl::Seconds(60), {{"x-request-id", "echo-me-7"}});
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  const auto echoed = answer.trailers.find("x-request-id");
  ASSERT_NE(echoed, answer.trailers.end());
  EXPECT_EQ(echoed->second, "echo-me-7");
}

TEST_F(Observability, WithoutARequestIdTheServerMakesOneAndLogsIt) {
  const RawAnswer answer = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(Demo()));
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  const auto made = answer.trailers.find("x-request-id");
  ASSERT_NE(made, answer.trailers.end());
  EXPECT_THAT(made->second, MatchesRegex("[0-9a-f]{16}"));
  EXPECT_THAT(CallLines(made->second), SizeIs(1));
}

TEST_F(Observability, AnUnsafeRequestIdIsReplacedNotLogged) {
  const std::string forged = "x level=error msg=forged";
  const RawAnswer answer = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(Demo()),
                                   absl::Seconds(60), {{"x-request-id", forged}});
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  const auto made = answer.trailers.find("x-request-id");
  ASSERT_NE(made, answer.trailers.end());
  EXPECT_THAT(made->second, MatchesRegex("[0-9a-f]{16}"));
  EXPECT_THAT(logs_->LinesWith({"msg=forged"}), SizeIs(0));
}

TEST_F(Observability, AnErrorIsLoggedAtWarnWithItsRequestIdCodeAndMessage) {
  v1::ScheduleRequest bad = Demo();
  bad.mutable_snapshot()->mutable_queues(1)->set_parent("no-such-queue");
  const RawAnswer answer = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(bad),
                                   absl::Seconds(60), {{"x-request-id", "bad-input-1"}});
  ASSERT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const auto echoed = answer.trailers.find("x-request-id");
  ASSERT_NE(echoed, answer.trailers.end());
  EXPECT_EQ(echoed->second, "bad-input-1");

  const std::vector<std::string> lines = CallLines("bad-input-1");
  ASSERT_THAT(lines, SizeIs(1));
  EXPECT_THAT(lines.front(), HasSubstr(" level=warn msg=call "));
  EXPECT_EQ(LogField(lines.front(), "code"), "INVALID_ARGUMENT");
  EXPECT_EQ(LogField(lines.front(), "error"), answer.status.error_message());
  EXPECT_EQ(LogField(lines.front(), "bindings"), "");  // no decisions on failure
}

TEST_F(Observability, BytesThatAreNoRequestAreLoggedWithoutSizes) {
  const RawAnswer answer = CallRaw(channel_, kComputeFairShares, "\xff\xff\xff", absl::Seconds(60),
                                   {{"x-request-id", "garbage-1"}});
  ASSERT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const std::vector<std::string> lines = CallLines("garbage-1");
  ASSERT_THAT(lines, SizeIs(1));
  EXPECT_EQ(LogField(lines.front(), "method"), "ComputeFairShares");
  EXPECT_EQ(LogField(lines.front(), "request_bytes"), "3");
  EXPECT_EQ(LogField(lines.front(), "nodes"), "");
}

// ---- Metrics ----

// Every decision of `response` as arbiter_decisions_total series, counted.
std::map<std::string, int> ExpectedDecisionSeries(const v1::ScheduleResponse& response) {
  std::map<std::string, int> series;
  auto add = [&series](const std::string& kind, const std::string& reason) {
    ++series["arbiter_decisions_total{kind=\"" + kind + "\",reason=\"" + reason + "\"}"];
  };
  for (const v1::Binding& binding : response.bindings()) {
    add("bind", binding.after_evictions() ? "after-evictions" : "free-capacity");
  }
  for (const v1::Eviction& eviction : response.evictions()) {
    std::string reason = v1::EvictionReason_Name(eviction.reason());
    for (char& c : reason) c = c == '_' ? '-' : static_cast<char>(std::tolower(c));
    add("evict", reason);
  }
  for (const v1::PendingPodGroup& pending : response.pending()) add("pending", pending.reason());
  for (const v1::Admission& admission : response.admissions()) {
    add("admit", admission.after_evictions() ? "after-evictions" : "fits-quota");
  }
  return series;
}

double ValueOrZero(const std::string& metrics, const std::string& series) {
  const double value = MetricValue(metrics, series);
  return value < 0 ? 0 : value;
}

TEST_F(Observability, DecisionsAreCountedByKindAndReason) {
  const v1::ScheduleRequest request = Demo();
  const std::string before = Scrape();
  const RawAnswer answer = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(request));
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  const std::string after = Scrape();
  v1::ScheduleResponse response;
  ASSERT_TRUE(response.ParseFromString(answer.bytes));
  ASSERT_GT(response.bindings_size(), 0);
  ASSERT_GT(response.pending_size(), 0);
  const std::map<std::string, int> expected = ExpectedDecisionSeries(response);
  for (const auto& [series, count] : expected) {
    EXPECT_EQ(ValueOrZero(after, series) - ValueOrZero(before, series), count) << series;
  }
}

TEST_F(Observability, KueueAdmissionsAreCountedByReason) {
  absl::StatusOr<generator::GeneratorOptions> options =
      generator::SizePreset("S", generator::GeneratorModel::kKueue);
  ASSERT_TRUE(options.ok());
  const generator::GeneratedRequest generated = generator::Generate(*options);
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = edge::ToProto(generated.snapshot);
  *request.mutable_policy() = edge::ToProto(generated.policy);

  const std::string before = Scrape();
  const RawAnswer answer = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(request));
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  const std::string after = Scrape();
  v1::ScheduleResponse response;
  ASSERT_TRUE(response.ParseFromString(answer.bytes));
  ASSERT_GT(response.admissions_size(), 0);
  for (const auto& [series, count] : ExpectedDecisionSeries(response)) {
    EXPECT_EQ(ValueOrZero(after, series) - ValueOrZero(before, series), count) << series;
  }
  EXPECT_GE(MetricValue(after, "arbiter_cycle_phase_duration_seconds_count{phase=\"admission\"}"),
            1);
}

TEST_F(Observability, EverySeriesIsExposed) {
  const v1::ScheduleRequest request = Demo();
  ASSERT_TRUE(CallRaw(channel_, kSchedule, edge::SerializeDeterministic(request)).status.ok());
  const std::string metrics = Scrape();

  EXPECT_GE(MetricValue(metrics, "arbiter_rpc_requests_total{code=\"OK\",method=\"Schedule\"}"), 1);
  EXPECT_GE(MetricValue(metrics,
                        "arbiter_rpc_duration_seconds_bucket{code=\"OK\","
                        "method=\"Schedule\",le=\"10\"}"),
            1);
  EXPECT_GE(MetricValue(metrics,
                        "arbiter_rpc_duration_seconds_bucket{code=\"OK\","
                        "method=\"Schedule\",le=\"0.0001\"}"),
            0);
  for (const char* kind : {"nodes", "pods", "queues", "pod_groups"}) {
    EXPECT_GE(
        MetricValue(metrics, std::string("arbiter_snapshot_size_count{kind=\"") + kind + "\"}"), 1)
        << kind;
  }
  for (const char* phase :
       {"decode", "validate", "fair_share", "allocate", "respond", "to_proto", "serialize"}) {
    EXPECT_GE(MetricValue(metrics, std::string("arbiter_cycle_phase_duration_seconds_count{"
                                               "phase=\"") +
                                       phase + "\"}"),
              1)
        << phase;
  }
  EXPECT_EQ(MetricValue(metrics, "arbiter_internal_errors_total"), 0);
  EXPECT_EQ(MetricValue(metrics, "arbiter_rpc_in_flight"), 0);
}

// STYLE.md: no pod, node or queue name (nor any other request text) in a label.
TEST_F(Observability, NoLabelNamesAPodNodeOrQueue) {
  const v1::ScheduleRequest request = Demo();
  ASSERT_TRUE(CallRaw(channel_, kSchedule, edge::SerializeDeterministic(request)).status.ok());
  const std::string metrics = Scrape();
  std::vector<std::string> names;
  for (const v1::Node& node : request.snapshot().nodes()) names.push_back(node.name());
  for (const v1::Queue& queue : request.snapshot().queues()) names.push_back(queue.name());
  for (const v1::PodGroup& group : request.snapshot().pod_groups()) {
    names.push_back(group.name());
    for (const v1::Pod& pod : group.pods()) names.push_back(pod.name());
  }
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    EXPECT_EQ(metrics.find("=\"" + name + "\""), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace arbiter::testing
