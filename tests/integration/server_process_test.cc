// The arbiter-server binary as operators run it: it announces its ports, serves, and stops
// cleanly on SIGTERM.
#include <signal.h>

#include <string>

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

TEST(ServerProcess, RejectsBadFlagsWithExitTwo) {
  const ProcessResult result = RunProcess({ARBITER_SERVER_PATH, "--port", "seventy"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: --port: "));
  const ProcessResult out_of_range = RunProcess({ARBITER_SERVER_PATH, "--port", "70000"});
  EXPECT_EQ(out_of_range.exit_code, 2);
}

}  // namespace
}  // namespace arbiter::testing
