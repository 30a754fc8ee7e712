// `arbiter simulate CONFIG`, the built binary: its files, the same run in-process and through a
// real server, KAI's CSV, and bad configs.
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
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

TEST(SimulateCli, AServerGivesTheSameRunWithResourceFlavors) {
  std::unique_ptr<server::ArbiterServer> server = StartTestServer();
  TempDir local;
  TempDir remote;
  const std::string config = Story("kueue-flavors-spill.yaml");
  ASSERT_EQ(Simulate(config, local.path()).exit_code, 0);
  const ProcessResult result = Simulate(config, remote.path(), {"--server", server->address()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(Read(local.File("queues.csv")), Read(remote.File("queues.csv")));
  EXPECT_EQ(Read(local.File("jobs.csv")), Read(remote.File("jobs.csv")));
}

// GPU sharing: the pods' sharing fields and the bindings' devices cross the wire both ways, and
// the devices carry over from step to step, as in-process.
TEST(SimulateCli, AServerGivesTheSameRunWithGpuSharing) {
  std::unique_ptr<server::ArbiterServer> server = StartTestServer();
  TempDir local;
  TempDir remote;
  const std::string config = Story("gpu-sharing-notebooks.yaml");
  const ProcessResult in_process = Simulate(config, local.path());
  ASSERT_EQ(in_process.exit_code, 0) << in_process.err;
  EXPECT_THAT(in_process.out, HasSubstr("notebooks                  41.2"));
  const ProcessResult result = Simulate(config, remote.path(), {"--server", server->address()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string queues = Read(local.File("queues.csv"));
  EXPECT_THAT(queues, StartsWith("time_s,queue,allocated:cpu,allocated:nvidia.com/gpu,"));
  EXPECT_THAT(queues.substr(0, queues.find('\n')), ::testing::EndsWith(",evictions,gpu_devices"));
  EXPECT_EQ(queues, Read(remote.File("queues.csv")));
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

// team-a's CPUs per flavor, by time (s), from queues.csv's flavor columns.
struct FlavorCpus {
  double on_demand = 0;
  double spot = 0;
};

std::map<int, FlavorCpus> TeamA(const std::string& csv) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = absl::StrSplit(line, ',');
  const auto column = [&](const std::string& name) {
    return std::find(header.begin(), header.end(), name) - header.begin();
  };
  const auto on_demand = column("allocated:cpu@on-demand");
  const auto spot = column("allocated:cpu@spot");
  std::map<int, FlavorCpus> out;
  while (std::getline(in, line)) {
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    if (cells.size() != header.size() || cells[1] != "team-a") continue;
    out[std::stoi(cells[0])] = {std::stod(cells[on_demand]), std::stod(cells[spot])};
  }
  return out;
}

TEST(SimulateCli, KueueFlavorsSpillToSpotAndReturnToOnDemand) {
  TempDir dir;
  const ProcessResult result = Simulate(Story("kueue-flavors-spill.yaml"), dir.path(), {"--plot"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string csv = Read(dir.File("queues.csv"));
  EXPECT_THAT(csv, StartsWith("time_s,queue,allocated:cpu,fair_share:cpu,usage:cpu,pending,"
                              "evictions,weighted_share,allocated:cpu@on-demand,allocated:cpu@spot,"
                              "borrowed:cpu@on-demand,borrowed:cpu@spot\n"));
  const std::map<int, FlavorCpus> team_a = TeamA(csv);
  ASSERT_EQ(team_a.size(), 120u);
  // On-demand fills to its nominal 8 first, then the workloads spill to spot.
  double spill = -1;
  for (const auto& [time, cpus] : team_a) {
    if (cpus.spot > 0) {
      spill = time;
      EXPECT_EQ(cpus.on_demand, 8) << time;
      break;
    }
  }
  EXPECT_GT(spill, 0);
  // Spot full, team-a borrows team-b's idle on-demand quota; team-b reclaims it at 4 h.
  EXPECT_EQ(team_a.at(4 * 3600 - 300).on_demand, 16);
  EXPECT_EQ(team_a.at(4 * 3600 - 300).spot, 16);
  EXPECT_EQ(team_a.at(4 * 3600).on_demand, 8);
  EXPECT_EQ(team_a.at(4 * 3600).spot, 16);
  // As team-b's work finishes at 6 h, team-a's waiting workloads return to on-demand.
  EXPECT_EQ(team_a.at(6 * 3600 - 300).on_demand, 8);
  EXPECT_GT(team_a.at(6 * 3600).on_demand, 8);
  EXPECT_EQ(team_a.at(9 * 3600).spot, 0);
  EXPECT_GT(Read(dir.File("flavors.png")).size(), 1000u);
  EXPECT_THAT(Read(dir.File("flavors.svg")), HasSubstr("team-a spot"));
}

}  // namespace
}  // namespace arbiter::testing
