// The server's life as operators and load balancers see it: SERVING once started, NOT_SERVING
// while draining, and a SIGTERM that lets the calls in flight finish before exiting 0.
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "arbiter/v1/arbiter.pb.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace arbiter::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

constexpr char kSchedule[] = "/arbiter.v1.Arbiter/Schedule";
constexpr int kServing = 1;
constexpr int kNotServing = 2;

std::string DemoBytes() {
  v1::ScheduleRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  return edge::SerializeDeterministic(request);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// ---- Health ----

TEST(Lifecycle, HealthIsServingAsSoonAsStartReturns) {
  server::ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.metrics_port = -1;
  absl::StatusOr<std::unique_ptr<server::ArbiterServer>> server =
      server::ArbiterServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  // No waiting: the first answer the health service gives is already SERVING.
  const std::shared_ptr<grpc::Channel> channel = Connect((*server)->address());
  for (const char* service : {"", "arbiter.v1.Arbiter"}) {
    const HealthAnswer answer = CheckHealth(channel, service);
    ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
    EXPECT_EQ(answer.serving_status, kServing) << "service \"" << service << "\"";
  }
}

TEST(Lifecycle, DrainingReportsNotServingWhileCallsAreStillAnswered) {
  std::unique_ptr<server::ArbiterServer> server = StartTestServer();
  const std::shared_ptr<grpc::Channel> channel = Connect(server->address());
  ASSERT_EQ(CheckHealth(channel, "").serving_status, kServing);

  server->Drain();
  for (const char* service : {"", "arbiter.v1.Arbiter"}) {
    const HealthAnswer answer = CheckHealth(channel, service);
    ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
    EXPECT_EQ(answer.serving_status, kNotServing) << "service \"" << service << "\"";
  }
  const RawAnswer call = CallRaw(channel, kSchedule, DemoBytes());
  EXPECT_TRUE(call.status.ok()) << call.status.error_message();

  server->Shutdown(absl::Seconds(10));
  const RawAnswer refused = CallRaw(channel, kSchedule, DemoBytes(), absl::Seconds(2));
  EXPECT_FALSE(refused.status.ok());
}

// --drain-seconds: after SIGTERM the binary keeps answering calls while health says NOT_SERVING,
// then exits 0.
TEST(Lifecycle, SigtermDrainsThenExitsZero) {
  TempDir dir;
  ServerProcess server({"--metrics-port", "-1", "--drain-seconds", "10"}, dir.File("stderr"));
  ASSERT_FALSE(server.address().empty()) << ReadWhole(dir.File("stderr"));
  std::shared_ptr<grpc::Channel> channel = Connect(server.address());
  ASSERT_TRUE(WaitUntilServing(channel));

  server.process().Signal(SIGTERM);
  EXPECT_TRUE(PollUntil(
      [&] { return CheckHealth(channel, "", absl::Seconds(5)).serving_status == kNotServing; },
      absl::Seconds(8)));
  const RawAnswer call = CallRaw(channel, kSchedule, DemoBytes(), absl::Seconds(5));
  EXPECT_TRUE(call.status.ok()) << call.status.error_message();
  channel.reset();  // an idle client connection would hold the shutdown for its grace period

  EXPECT_EQ(server.process().Wait(), 0);
  EXPECT_THAT(server.process().ReadRest(), HasSubstr("stopped"));
  const std::string log = ReadWhole(dir.File("stderr"));
  EXPECT_THAT(log, HasSubstr("msg=\"stop signal\" signal=15"));
  EXPECT_THAT(log, HasSubstr("msg=draining"));
  EXPECT_THAT(log, HasSubstr("msg=stopped"));
}

// A request whose call stays in flight long enough for the metrics poll to see it: M with all
// four actions, about 100 ms a call (allocate only, a call takes a few milliseconds on a fast
// machine, and three of them could come and go between two polls).
std::string InFlightLongEnough() { return GeneratedScheduleBytes("M", /*allocate_only=*/false); }

// SIGTERM with calls in flight (one running and at least one queued behind it on the single
// worker): every call is answered in full, then the server exits 0.
TEST(Lifecycle, SigtermLetsTheCallsInFlightFinishAndExitsZero) {
  TempDir dir;
  ServerProcess server({"--metrics-port", "0", "--workers", "1", "--shutdown-grace-seconds", "300"},
                       dir.File("stderr"));
  ASSERT_FALSE(server.address().empty()) << ReadWhole(dir.File("stderr"));
  ASSERT_GT(server.metrics_port(), 0);
  const std::shared_ptr<grpc::Channel> channel = Connect(server.address());
  ASSERT_TRUE(WaitUntilServing(channel));

  const std::string request = InFlightLongEnough();
  constexpr int kCalls = 3;
  std::vector<RawAnswer> answers(kCalls);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      answers[i] = CallRaw(channel, kSchedule, request, absl::Seconds(300),
                           {{"x-request-id", "in-flight-" + std::to_string(i)}});
    });
  }
  // Every call accepted by the server before the signal (answered or in flight), and at least
  // two still in flight: one running, one queued behind it. (Waiting for two in flight alone
  // let the signal come before the third call had reached the server, which then refused it.)
  const bool two_in_flight = PollUntil(
      [&] {
        const absl::StatusOr<std::string> metrics = HttpGet(server.metrics_port(), "/metrics");
        if (!metrics.ok()) return false;
        const double in_flight = MetricValue(*metrics, "arbiter_rpc_in_flight");
        const double answered = std::max(
            0.0,
            MetricValue(*metrics, "arbiter_rpc_requests_total{code=\"OK\",method=\"Schedule\"}"));
        return in_flight >= 2 && in_flight + answered >= kCalls;
      },
      absl::Seconds(120));
  server.process().Signal(SIGTERM);
  const int exit_code = server.process().Wait();
  for (std::thread& caller : callers) caller.join();

  ASSERT_TRUE(two_in_flight);
  EXPECT_EQ(exit_code, 0);
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_TRUE(answers[i].status.ok()) << i << ": " << answers[i].status.error_message();
    v1::ScheduleResponse response;
    EXPECT_TRUE(response.ParseFromString(answers[i].bytes)) << i;
    EXPECT_GT(response.bindings_size(), 0) << i;
  }
  // The log shows the signal before the last call's line: with one worker, of two calls in
  // flight one at least had not even started when the signal came.
  const std::vector<std::string> log = Lines(ReadWhole(dir.File("stderr")));
  size_t signal_line = log.size();
  std::vector<size_t> call_lines;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i].find("msg=\"stop signal\"") != std::string::npos) signal_line = i;
    if (log[i].find(" msg=call ") != std::string::npos) {
      EXPECT_EQ(LogField(log[i], "code"), "OK") << log[i];
      call_lines.push_back(i);
    }
  }
  ASSERT_THAT(call_lines, SizeIs(kCalls));
  ASSERT_LT(signal_line, log.size());
  EXPECT_LT(signal_line, call_lines.back());
}

// Past --shutdown-grace-seconds the calls still queued are cancelled and the server stops.
TEST(Lifecycle, ShutdownWithoutGraceCancelsQueuedCalls) {
  server::ServerOptions options;
  options.metrics_port = 0;
  options.workers = 1;
  std::unique_ptr<server::ArbiterServer> server = StartTestServer(options);
  const std::shared_ptr<grpc::Channel> channel = Connect(server->address());
  const std::string request = InFlightLongEnough();
  constexpr int kCalls = 3;
  std::vector<RawAnswer> answers(kCalls);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back(
        [&, i] { answers[i] = CallRaw(channel, kSchedule, request, absl::Seconds(300)); });
  }
  ASSERT_TRUE(PollUntil(
      [&] {
        const absl::StatusOr<std::string> metrics = HttpGet(server->metrics_port(), "/metrics");
        return metrics.ok() && MetricValue(*metrics, "arbiter_rpc_in_flight") >= 2;
      },
      absl::Seconds(120)));
  server->Shutdown(absl::ZeroDuration());
  for (std::thread& caller : callers) caller.join();
  // Of two calls in flight on the only worker, one at least was still queued: it is refused.
  int refused = 0;
  for (const RawAnswer& answer : answers) refused += answer.status.ok() ? 0 : 1;
  EXPECT_GE(refused, 1);
}

}  // namespace
}  // namespace arbiter::testing
