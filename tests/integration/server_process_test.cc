// The arbiter-server binary as operators run it: it announces its ports, serves, and stops
// cleanly on SIGTERM.
#include <signal.h>

#include <fstream>
#include <string>
#include <vector>

#include "arbiter/v1/arbiter.pb.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"
#include "tests/integration/subprocess.h"

namespace arbiter::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ServerProcess, AnnouncesPortsServesAndStopsOnSigterm) {
  BackgroundProcess server(
      {ARBITER_SERVER_PATH, "--host", "127.0.0.1", "--port", "0", "--metrics-port", "0"});
  std::string listening, metrics;
  ASSERT_TRUE(server.ReadLine(&listening));
  ASSERT_TRUE(server.ReadLine(&metrics));
  ASSERT_THAT(listening, StartsWith("listening on 127.0.0.1:"));
  ASSERT_THAT(metrics, StartsWith("metrics on 127.0.0.1:"));
  const std::string address = listening.substr(std::string("listening on ").size());
  const int metrics_port = std::stoi(metrics.substr(metrics.rfind(':') + 1));

  EXPECT_TRUE(WaitUntilServing(Connect(address)));
  const absl::StatusOr<std::string> scraped = HttpGet(metrics_port, "/metrics");
  ASSERT_TRUE(scraped.ok()) << scraped.status();

  EXPECT_EQ(server.SignalAndWait(SIGTERM), 0);
  EXPECT_THAT(server.ReadRest(), HasSubstr("stopped"));
}

TEST(ServerProcess, HelpListsEveryFlag) {
  const ProcessResult help = RunProcess({ARBITER_SERVER_PATH, "--help"});
  ASSERT_EQ(help.exit_code, 0);
  for (const char* flag :
       {"--host ", "--port ", "--metrics-port ", "--max-message-bytes ", "--max-nodes ",
        "--max-pods ", "--workers ", "--tls-cert ", "--tls-key ", "--tls-client-ca ",
        "--log-level ", "--drain-seconds ", "--shutdown-grace-seconds "}) {
    EXPECT_THAT(help.out, HasSubstr(flag));
  }
  EXPECT_THAT(help.out, HasSubstr("(default: 100000)"));   // --max-nodes
  EXPECT_THAT(help.out, HasSubstr("(default: 1000000)"));  // --max-pods
}

// stdout carries only the lines scripts read; the log (one line per call) goes to stderr.
TEST(ServerProcess, LogsOneLinePerCallOnStderr) {
  TempDir dir;
  const std::string log_path = dir.File("stderr");
  BackgroundProcess server(
      {ARBITER_SERVER_PATH, "--host", "127.0.0.1", "--port", "0", "--metrics-port", "-1"},
      log_path);
  std::string listening;
  ASSERT_TRUE(server.ReadLine(&listening));
  ASSERT_THAT(listening, StartsWith("listening on 127.0.0.1:"));
  std::shared_ptr<grpc::Channel> channel =
      Connect(listening.substr(std::string("listening on ").size()));
  ASSERT_TRUE(WaitUntilServing(channel));

  v1::ScheduleRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  const RawAnswer answer =
      CallRaw(channel, "/arbiter.v1.Arbiter/Schedule", edge::SerializeDeterministic(request),
              absl::Seconds(60), {{"x-request-id", "process-log-1"}});
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  channel.reset();  // an idle client connection would hold the shutdown for its grace period
  EXPECT_EQ(server.SignalAndWait(SIGTERM), 0);
  EXPECT_EQ(server.ReadRest(), "stopped\n");

  std::ifstream file(log_path);
  std::vector<std::string> call_lines;
  for (std::string line; std::getline(file, line);) {
    EXPECT_THAT(line, StartsWith("ts="));
    if (line.find(" msg=call ") != std::string::npos) call_lines.push_back(line);
  }
  ASSERT_EQ(call_lines.size(), 1u);
  EXPECT_EQ(LogField(call_lines[0], "request_id"), "process-log-1");
  EXPECT_EQ(LogField(call_lines[0], "method"), "Schedule");
  EXPECT_EQ(LogField(call_lines[0], "code"), "OK");
  EXPECT_EQ(LogField(call_lines[0], "nodes"), std::to_string(request.snapshot().nodes_size()));
}

TEST(ServerProcess, LogLevelWarnHidesSuccessfulCalls) {
  TempDir dir;
  const std::string log_path = dir.File("stderr");
  BackgroundProcess server({ARBITER_SERVER_PATH, "--host", "127.0.0.1", "--port", "0",
                            "--metrics-port", "-1", "--log-level", "warn"},
                           log_path);
  std::string listening;
  ASSERT_TRUE(server.ReadLine(&listening));
  std::shared_ptr<grpc::Channel> channel =
      Connect(listening.substr(std::string("listening on ").size()));
  ASSERT_TRUE(WaitUntilServing(channel));
  v1::ScheduleRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  ASSERT_TRUE(
      CallRaw(channel, "/arbiter.v1.Arbiter/Schedule", edge::SerializeDeterministic(request))
          .status.ok());
  request.mutable_snapshot()->mutable_queues(0)->set_name("");
  ASSERT_FALSE(
      CallRaw(channel, "/arbiter.v1.Arbiter/Schedule", edge::SerializeDeterministic(request))
          .status.ok());
  channel.reset();
  EXPECT_EQ(server.SignalAndWait(SIGTERM), 0);

  std::ifstream file(log_path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr(" level=warn msg=call "));
  EXPECT_EQ(LogField(lines[0], "code"), "INVALID_ARGUMENT");
}

TEST(ServerProcess, RejectsABadLogLevel) {
  const ProcessResult result = RunProcess({ARBITER_SERVER_PATH, "--log-level", "chatty"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: --log-level: "));
}

TEST(ServerProcess, RejectsBadFlagsWithExitTwo) {
  const ProcessResult result = RunProcess({ARBITER_SERVER_PATH, "--port", "seventy"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: --port: "));
  const ProcessResult out_of_range = RunProcess({ARBITER_SERVER_PATH, "--port", "70000"});
  EXPECT_EQ(out_of_range.exit_code, 2);
}

}  // namespace
}  // namespace arbiter::testing
