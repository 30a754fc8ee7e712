// Reading simulation configs: arbiter's own YAML and KAI's simulator config, unchanged.
#include "clients/simulator/sim_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter::simulator {
namespace {

using ::testing::HasSubstr;

constexpr char kGpu[] = "nvidia.com/gpu";

TEST(KaiConfig, EveryFieldMapsAsDocumented) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(R"(
Cycles: 50
WindowSize: 20
HalfLifePeriod: 10
KValue: 2.5
Nodes:
  - GPUs: 8
    Count: 2
  - GPUs: 4
Queues:
  - Name: dept
    Parent: ""
  - Name: q1
    Parent: dept
    Priority: 7
    DeservedGPUs: 3
    Weight: 2
Jobs:
  q1:
    GPUs: 2
    NumPods: 3
    NumJobs: 5
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->from_kai);
  EXPECT_EQ(config->step, 1);
  EXPECT_EQ(config->horizon, 50);
  EXPECT_EQ(config->accounting.window, 20);
  EXPECT_FALSE(config->accounting.tumbling);
  EXPECT_EQ(config->accounting.half_life, 10);
  EXPECT_EQ(config->policy.k_value, 2.5);
  ASSERT_EQ(config->nodes.size(), 2u);
  EXPECT_EQ(config->nodes[0].count, 2);
  EXPECT_EQ(config->nodes[0].allocatable.at(kGpu), 8);
  EXPECT_EQ(config->nodes[1].count, 1);
  ASSERT_EQ(config->queues.size(), 2u);
  EXPECT_EQ(config->queues[0].priority, 100);  // KAI's default
  EXPECT_EQ(config->queues[0].over_quota_weight.at(kGpu), 1);
  EXPECT_EQ(config->queues[1].parent, "dept");
  EXPECT_EQ(config->queues[1].priority, 7);
  EXPECT_EQ(config->queues[1].deserved.at(kGpu), 3);
  EXPECT_EQ(config->queues[1].over_quota_weight.at(kGpu), 2);
  ASSERT_EQ(config->jobs.size(), 1u);
  EXPECT_EQ(config->jobs[0].queue, "q1");
  EXPECT_EQ(config->jobs[0].pods, 3);
  EXPECT_EQ(config->jobs[0].count, 5);
  EXPECT_EQ(config->jobs[0].requests.at(kGpu), 2);
  EXPECT_EQ(config->jobs[0].arrival, Arrival::kStart);
  EXPECT_EQ(config->jobs[0].duration, 0);  // KAI's jobs run until the end
}

TEST(KaiConfig, DefaultsAreKais) {
  absl::StatusOr<SimConfig> config =
      ParseSimConfig("Nodes: [{GPUs: 8}]\nQueues: [{Name: q}]\nJobs: {q: {GPUs: 1}}\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->horizon, 100);
  EXPECT_EQ(config->accounting.window, 5);
  EXPECT_EQ(config->accounting.half_life, 0);
  EXPECT_EQ(config->policy.k_value, 1.0);
}

TEST(OwnConfig, DurationsTakeUnitsAndResourcesTakeShortNames) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(R"(
step: 90s
horizon: 2d
accounting: {half_life: 1h, window: 7d, window_type: tumbling}
policy: {model: kai, k_value: 1, actions: [allocate, reclaim], placement: spread}
queues: [{name: a, deserved: {gpu: 2, mem: 10}, reclaim_min_runtime: 15m}]
nodes: [{name: n, count: 3, allocatable: {gpu: 8}}]
jobs: [{queue: a, pods: 2, min_member: 1, requests: {gpu: 1}, duration: 30m, arrival: rate, rate: 4, count: 10, start: 1h, preemptible: false, priority: 5}]
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->step, 90);
  EXPECT_EQ(config->horizon, 2 * 86400);
  EXPECT_TRUE(config->accounting.tumbling);
  EXPECT_EQ(config->accounting.window, 7 * 86400);
  EXPECT_EQ(config->policy.placement, Placement::kSpread);
  EXPECT_EQ(config->policy.actions.size(), 2u);
  EXPECT_EQ(config->queues[0].deserved.at("memory"), 10);
  EXPECT_EQ(config->queues[0].reclaim_min_runtime->seconds, 900);
  const JobStream& stream = config->jobs[0];
  EXPECT_EQ(stream.arrival, Arrival::kRate);
  EXPECT_EQ(stream.rate, 4);
  EXPECT_EQ(stream.start, 3600);
  EXPECT_EQ(stream.duration, 1800);
  EXPECT_EQ(stream.preemptibility, Preemptibility::kNonPreemptible);
}

TEST(OwnConfig, ErrorsNameTheKeyPath) {
  const std::string base = "queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}}]\n";
  EXPECT_THAT(std::string(ParseSimConfig(base + "jobs: [{queue: b}]\n").status().message()),
              HasSubstr("jobs[0].queue: no queue named \"b\""));
  EXPECT_THAT(std::string(ParseSimConfig(base + "step: soon\n").status().message()),
              HasSubstr("step: must be a duration"));
  EXPECT_THAT(std::string(ParseSimConfig(base + "policy: {model: slurm}\n").status().message()),
              HasSubstr("policy.model: must be kai or kueue"));
  EXPECT_THAT(
      std::string(ParseSimConfig(base + "jobs: [{queue: a, colour: red}]\n").status().message()),
      HasSubstr("jobs[0].colour: unknown key"));
  EXPECT_THAT(std::string(ParseSimConfig("queues: [{name: a}]\n").status().message()),
              HasSubstr("nodes: at least one is needed"));
  EXPECT_THAT(std::string(ParseSimConfig("queues: [").status().message()), HasSubstr("config:"));
  EXPECT_EQ(ParseSimConfig(base + "horizon: 0\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OwnConfig, TheStreamsPodsAreBoundedBeforeAnyIsMade) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(
      "queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}}]\n"
      "jobs: [{queue: a, pods: 10000, count: 1000000, arrival: backlog}]\n");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("more than 10,000,000 pods"));
}

}  // namespace
}  // namespace arbiter::simulator
