// `arbiter simulate CONFIG`, the built binary: its files, the same run in-process and through a
// real server, KAI's CSV, and bad configs.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/arbiter_server.h"
#include "tests/integration/server_harness.h"
#include "tests/integration/subprocess.h"

namespace arbiter::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ProcessResult Simulate(const std::string& config, const std::string& out,
                       std::vector<std::string> flags = {}) {
  std::vector<std::string> argv = {ARBITER_CLI_PATH, "simulate", config, "--out", out, "--quiet"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return RunProcess(argv);
}

std::string Story(const std::string& name) { return SourcePath("examples/simulations/" + name); }

TEST(SimulateCli, WritesQueueAndJobCsvsAndASummary) {
  TempDir dir;
  const ProcessResult result = Simulate(Story("story1-time-sharing.yaml"), dir.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, StartsWith("story1-time-sharing: 2880 steps of 60s (48.0 h)\n"));
  EXPECT_THAT(result.out, HasSubstr("team-a                    192.0   50.0%"));
  EXPECT_THAT(Read(dir.File("queues.csv")),
              StartsWith("time_s,queue,allocated:cpu,allocated:nvidia.com/gpu,"));
  EXPECT_THAT(
      Read(dir.File("jobs.csv")),
      StartsWith(
          "job,queue,submit_s,start_s,end_s,evictions,wait_s\nteam-a-0,team-a,0,0,3600,0,0\n"));
}

TEST(SimulateCli, AServerGivesTheSameRunAsInProcess) {
  std::unique_ptr<server::ArbiterServer> server = StartTestServer();
  TempDir local;
  TempDir remote;
  const std::string config = Story("story2-burst.yaml");
  ASSERT_EQ(Simulate(config, local.path()).exit_code, 0);
  const ProcessResult result = Simulate(config, remote.path(), {"--server", server->address()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(Read(local.File("queues.csv")), Read(remote.File("queues.csv")));
  EXPECT_EQ(Read(local.File("jobs.csv")), Read(remote.File("jobs.csv")));
}

TEST(SimulateCli, AKaiConfigRunsUnchangedAndWritesKaisColumns) {
  TempDir dir;
  const ProcessResult result =
      Simulate(Story("kai-two-queue-oscillation.yaml"), dir.path(), {"--format", "kai-csv"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(Read(dir.File("kai.csv")),
              StartsWith("Time,QueueID,Allocation,FairShare\n0,dept,16.000000,16.000000\n"
                         "0,queue1,16.000000,8.000000\n0,queue2,0.000000,8.000000\n"));
}

TEST(SimulateCli, JsonHoldsStepsAndJobs) {
  TempDir dir;
  ASSERT_EQ(Simulate(Story("kueue-fair-sharing.yaml"), dir.path(), {"--format", "json"}).exit_code,
            0);
  const std::string json = Read(dir.File("simulation.json"));
  EXPECT_THAT(json, StartsWith("{\"step_s\":300,\"cycles\":144,\"queues\":[\"cohort\",\"cq-a\""));
  EXPECT_THAT(json, HasSubstr("\"jobs\":["));
  EXPECT_THAT(json, HasSubstr("\"weighted_share\":"));
}

TEST(SimulateCli, ABadConfigIsInvalidArgumentNamingTheKey) {
  TempDir dir;
  const std::string config = dir.File("bad.yaml");
  std::ofstream(config) << "queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}}]\n"
                           "jobs: [{queue: a, arrival: sometimes}]\n";
  const ProcessResult result = Simulate(config, dir.File("out"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("INVALID_ARGUMENT: "));
  EXPECT_THAT(result.err, HasSubstr("jobs[0].arrival: must be start, backlog or rate"));
}

TEST(SimulateCli, PlotWritesTheCharts) {
  TempDir dir;
  const ProcessResult result = Simulate(Story("story1-time-sharing.yaml"), dir.path(), {"--plot"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const char* chart : {"allocation.png", "allocation.svg", "resource_hours.png",
                            "resource_hours.svg", "jobs.png", "jobs.svg"}) {
    EXPECT_GT(Read(dir.File(chart)).size(), 1000u) << chart;
  }
}

}  // namespace
}  // namespace arbiter::testing
