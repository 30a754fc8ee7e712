// The stories of the time-aware fairness design and KEP-1714, and GPU sharing beside training,
// simulated with their pass marks (examples/simulations/, docs/simulate.md).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "clients/simulator/sim_config.h"
#include "clients/simulator/simulation.h"
#include "gtest/gtest.h"

namespace arbiter::simulator {
namespace {

constexpr char kGpu[] = "nvidia.com/gpu";

SimConfig Story(const std::string& file) {
  absl::StatusOr<SimConfig> config =
      LoadSimConfig(std::string(ARBITER_SOURCE_DIR) + "/examples/simulations/" + file);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : SimConfig{};
}

SimResult Simulated(const SimConfig& config) {
  absl::StatusOr<SimResult> result = Simulate(config, InProcess());
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SimResult{};
}

// Each leaf's share of the leaves' resource-seconds.
std::map<std::string, double> Shares(const SimResult& result, const std::string& resource) {
  const std::vector<double> seconds = ResourceSeconds(result, resource);
  std::map<std::string, double> by_queue;
  double total = 0;
  for (size_t q = 0; q < result.queues.size(); ++q) {
    if (std::find(result.leaves.begin(), result.leaves.end(), result.queues[q]) ==
        result.leaves.end()) {
      continue;
    }
    by_queue[result.queues[q]] = seconds[q];
    total += seconds[q];
  }
  for (auto& [queue, share] : by_queue) share /= total;
  return by_queue;
}

int Evictions(const SimResult& result) {
  int evictions = 0;
  for (const JobRecord& job : result.jobs) evictions += job.evictions;
  return evictions;
}

const JobRecord* Job(const SimResult& result, const std::string& name) {
  for (const JobRecord& job : result.jobs) {
    if (job.name == name) return &job;
  }
  return nullptr;
}

// Each queue of `budget` (GPU-hours) ran within 5% of its budget. A queue the story no longer
// has fails the test: a renamed queue must not leave the budget unchecked.
void ExpectGpuHoursNearBudgets(const SimResult& result,
                               const std::map<std::string, double>& budget) {
  const std::vector<double> seconds = ResourceSeconds(result, kGpu);
  for (const auto& [queue, hours] : budget) {
    const auto found = std::find(result.queues.begin(), result.queues.end(), queue);
    if (found == result.queues.end()) {
      ADD_FAILURE() << "the story has no queue " << queue;
      continue;
    }
    const size_t q = static_cast<size_t>(found - result.queues.begin());
    EXPECT_NEAR(seconds[q] / 3600, hours, 0.05 * hours) << queue;
  }
}

TEST(Story1ProportionalTimeSharing, WithoutTimeAwarenessOneQueueKeepsTheCluster) {
  SimConfig config = Story("story1-time-sharing.yaml");
  config.policy.k_value = 0;
  const SimResult result = Simulated(config);
  const std::map<std::string, double> shares = Shares(result, kGpu);
  EXPECT_DOUBLE_EQ(shares.at("team-a"), 1.0);
  EXPECT_DOUBLE_EQ(shares.at("team-b"), 0.0);
  EXPECT_EQ(Switches(result, kGpu), 0);
}

TEST(Story1ProportionalTimeSharing, WithTimeAwarenessEachQueueGetsHalfTheGpuHours) {
  const SimResult result = Simulated(Story("story1-time-sharing.yaml"));
  const std::map<std::string, double> shares = Shares(result, kGpu);
  EXPECT_NEAR(shares.at("team-a"), 0.5, 0.05);
  EXPECT_NEAR(shares.at("team-b"), 0.5, 0.05);
  // The allocation alternates, about once per one-hour job over 48 hours...
  EXPECT_GE(Switches(result, kGpu), 40);
  // ...and the one-hour min-runtime means that no job is cut short.
  EXPECT_EQ(Evictions(result), 0);
}

TEST(Story2BurstAccess, WithoutTimeAwarenessTheBurstJobNeverStarts) {
  SimConfig config = Story("story2-burst.yaml");
  config.policy.k_value = 0;
  const SimResult result = Simulated(config);
  const JobRecord* burst = Job(result, "burst-0");
  ASSERT_NE(burst, nullptr);
  EXPECT_LT(burst->start, 0) << "started at " << burst->start;
}

TEST(Story2BurstAccess, WithTimeAwarenessTheBurstJobStartsAndRunsToCompletion) {
  const SimResult result = Simulated(Story("story2-burst.yaml"));
  const JobRecord* burst = Job(result, "burst-0");
  ASSERT_NE(burst, nullptr);
  EXPECT_GE(burst->start, 2 * 3600.0);
  EXPECT_EQ(burst->evictions, 0);
  EXPECT_DOUBLE_EQ(burst->end - burst->start, 3 * 3600.0);
}

TEST(Story5ResourceHourBudgets, EachTeamGetsItsBudgetWithinFivePercent) {
  const SimResult result = Simulated(Story("story5-budgets.yaml"));
  const double month = 64.0 * 30 * 24;                         // GPU-hours
  ExpectGpuHoursNearBudgets(result, {{"team-a", 0.5 * month},  //
                                     {"team-b", 0.3 * month},
                                     {"team-c", 0.2 * month}});
  EXPECT_EQ(Evictions(result), 0);  // interruption-sensitive: nothing is cut short
}

TEST(Story5ResourceHourBudgets, OvercommittedBudgetsAreScaledDownAlike) {
  const SimResult result = Simulated(Story("story5-overcommitted.yaml"));
  const double month = 64.0 * 30 * 24;
  const double scale = 1.0 / 1.2;  // the budgets add up to 120% of the month
  ExpectGpuHoursNearBudgets(result, {{"team-a", 0.5 * month * scale},
                                     {"team-b", 0.4 * month * scale},
                                     {"team-c", 0.3 * month * scale}});
}

TEST(KueueFairSharing, BorrowingIsReclaimedAndTheWeightedSharesConverge) {
  const SimResult result = Simulated(Story("kueue-fair-sharing.yaml"));
  std::map<std::string, double> early;  // before cq-b and cq-c arrive
  std::map<std::string, double> late;   // the last step
  std::map<std::string, double> late_allocated;
  const double last = result.rows.back().time;
  for (const QueueRow& row : result.rows) {
    if (row.time == 1800)
      early[row.queue] = row.allocated.count("cpu") ? row.allocated.at("cpu") : 0;
    if (row.time == last) {
      late[row.queue] = row.weighted_share;
      late_allocated[row.queue] = row.allocated.count("cpu") ? row.allocated.at("cpu") : 0;
    }
  }
  EXPECT_GT(early["cq-a"], 6) << "cq-a borrows beyond its nominal quota while alone";
  EXPECT_DOUBLE_EQ(late["cq-a"], late["cq-b"]);
  EXPECT_DOUBLE_EQ(late["cq-b"], late["cq-c"]);
  EXPECT_GT(late["cq-a"], 0);
  EXPECT_DOUBLE_EQ(late_allocated["cq-a"], 16);
  EXPECT_DOUBLE_EQ(late_allocated["cq-b"], 16);
  EXPECT_DOUBLE_EQ(late_allocated["cq-c"], 16);
  EXPECT_GT(Evictions(result), 0) << "fair sharing preemption takes the borrowed CPUs back";
}

double FlavorCpu(const QueueRow& row, const std::string& flavor) {
  auto found = row.flavor_allocated.find(flavor);
  if (found == row.flavor_allocated.end()) return 0;
  auto cpu = found->second.find("cpu");
  return cpu == found->second.end() ? 0 : cpu->second;
}

TEST(KueueFlavorsSpill, WorkloadsSpillToSpotAndReturnToOnDemand) {
  const SimResult result = Simulated(Story("kueue-flavors-spill.yaml"));
  ASSERT_EQ(result.flavor_resources.size(), 2u);
  double first_spot = -1;           // when team-a first runs on spot
  double first_borrow = -1;         // when team-a first holds more than its 8 on-demand CPUs
  double spot_at_first_borrow = 0;  // team-a's spot CPUs then
  double reclaimed = -1;            // when team-a is back to its nominal 8 after borrowing
  double returned = -1;             // when team-a borrows on-demand again after that
  int team_a_evictions = 0;
  for (const QueueRow& row : result.rows) {
    const double on_demand = FlavorCpu(row, "on-demand");
    const double spot = FlavorCpu(row, "spot");
    if (row.queue == "team-b") {
      EXPECT_EQ(spot, 0) << "team-b neither lists nor tolerates spot, at " << row.time;
      EXPECT_LE(on_demand, 8) << "team-b never borrows, at " << row.time;
      if (row.time == 4 * 3600) {
        EXPECT_EQ(on_demand, 8) << "team-b takes its quota back";
      }
      continue;
    }
    if (row.queue == "pool") {
      EXPECT_LE(on_demand, 16) << row.time;
      EXPECT_LE(spot, 16) << row.time;
      continue;
    }
    team_a_evictions += row.evictions;
    EXPECT_LE(spot, 16) << row.time;
    if (spot > 0 && first_spot < 0) {
      first_spot = row.time;
      EXPECT_EQ(on_demand, 8) << "on-demand fills up to the nominal quota before the spill";
    }
    if (on_demand > 8 && first_borrow < 0) {
      first_borrow = row.time;
      spot_at_first_borrow = spot;
    }
    if (first_borrow >= 0 && reclaimed < 0 && on_demand == 8) reclaimed = row.time;
    if (reclaimed >= 0 && returned < 0 && on_demand > 8) returned = row.time;
  }
  ASSERT_GE(first_spot, 0) << "team-a never spilled to spot";
  ASSERT_GT(first_borrow, first_spot) << "team-a borrowed on-demand quota before spilling";
  EXPECT_EQ(spot_at_first_borrow, 16) << "team-a borrows on-demand only once spot is full";
  EXPECT_EQ(reclaimed, 4 * 3600) << "team-b reclaims its on-demand quota as it arrives";
  EXPECT_GT(team_a_evictions, 0);
  EXPECT_EQ(returned, 6 * 3600) << "team-a returns to on-demand as team-b's work finishes";
}

TEST(KaiSimulatorConfig, TheTwoQueueOscillationAlternatesAsKaisSimulatorShows) {
  const SimResult result = Simulated(Story("kai-two-queue-oscillation.yaml"));
  const std::map<std::string, double> shares = Shares(result, kGpu);
  EXPECT_NEAR(shares.at("queue1"), 0.5, 0.05);
  EXPECT_GE(Switches(result, kGpu), 4);
}

// GPU sharing (SEMANTICS §4.13): notebooks on a quarter or a half of a GPU beside two training
// teams' 4-GPU jobs, under time-aware fairness.
TEST(GpuSharingNotebooks, NotebooksPackOntoFewDevicesAndTheTrainingTeamsShareTheRestEvenly) {
  const SimConfig config = Story("gpu-sharing-notebooks.yaml");
  const SimResult result = Simulated(config);
  const std::vector<double> seconds = ResourceSeconds(result, kGpu);
  // Queues in config order: notebooks, vision, nlp. Time-aware fairness evens out training.
  EXPECT_NEAR(seconds[1] / seconds[2], 1.0, 0.05);

  // The notebooks are charged their shares, stay within their deserved quota (non-preemptible),
  // and are never evicted. A device holds at most one GPU of shares, and binpack packs them.
  double devices = 0;
  double running = 0;
  int steps = 0;
  for (const QueueRow& row : result.rows) {
    if (row.queue != "notebooks") continue;
    const double share = row.allocated.count(kGpu) ? row.allocated.at(kGpu) : 0;
    EXPECT_LE(share, 3.0 + 1e-9) << row.time;
    EXPECT_GE(row.gpu_devices + 1e-9, share) << row.time;
    EXPECT_EQ(row.evictions, 0) << row.time;
    devices += row.gpu_devices;
    for (const JobRecord& job : result.jobs) {
      running += job.queue == "notebooks" && job.start >= 0 && job.start <= row.time &&
                 (job.end < 0 || job.end > row.time);
    }
    ++steps;
  }
  ASSERT_GT(steps, 0);
  EXPECT_LT(devices, 0.5 * running) << "notebooks per device on average: " << running / devices;

  // Once training's two-hour reclaim min-runtime has passed, nine notebooks in ten start in the
  // step they arrive.
  int late = 0;
  int at_once = 0;
  for (const JobRecord& job : result.jobs) {
    if (job.queue != "notebooks" || job.submit < 7200) continue;
    ++late;
    at_once += job.start == job.submit;
  }
  EXPECT_GE(at_once, 0.9 * late) << at_once << " of " << late;

  // Without time awareness (k = 0), one training team falls behind.
  SimConfig k0 = config;
  k0.policy.k_value = 0;
  const std::vector<double> k0_seconds = ResourceSeconds(Simulated(k0), kGpu);
  EXPECT_LT(k0_seconds[1] / k0_seconds[2], 0.8);
}

}  // namespace
}  // namespace arbiter::simulator
