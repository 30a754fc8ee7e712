// Reading simulation configs: arbiter's own YAML and KAI's simulator config, unchanged.
#include "clients/simulator/sim_config.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// A config as KAI's simulator writes it (sigs.k8s.io/yaml over its Go structs): keys sorted, every
// field present, and every optional field it was not given (a nil pointer) written as null.
constexpr char kKaiWritten[] = R"(Cycles: 64
HalfLifePeriod: null
Jobs:
  queue1:
    GPUs: 16
    NumJobs: 100
    NumPods: 1
  queue2:
    GPUs: 16
    NumJobs: 100
    NumPods: 1
KValue: null
Nodes:
- Count: 1
  GPUs: 16
Queues:
- DeservedGPUs: null
  Name: dept
  Parent: ""
  Priority: null
  Weight: null
- DeservedGPUs: null
  Name: queue1
  Parent: dept
  Priority: null
  Weight: null
- DeservedGPUs: 4
  Name: queue2
  Parent: dept
  Priority: 50
  Weight: null
WindowSize: null
)";

TEST(KaiConfig, AConfigAsKaisSimulatorWritesItReadsWithKaisDefaults) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(kKaiWritten);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->from_kai);
  EXPECT_EQ(config->horizon, 64);
  EXPECT_EQ(config->accounting.window, 5);
  EXPECT_EQ(config->accounting.half_life, 0);
  EXPECT_EQ(config->policy.k_value, 1.0);
  ASSERT_EQ(config->queues.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(config->queues[i].priority, 100) << i;
    EXPECT_EQ(config->queues[i].deserved.at(kGpu), 0) << i;
    EXPECT_EQ(config->queues[i].over_quota_weight.at(kGpu), 1) << i;
  }
  EXPECT_EQ(config->queues[2].priority, 50);
  EXPECT_EQ(config->queues[2].deserved.at(kGpu), 4);
  EXPECT_EQ(config->queues[2].over_quota_weight.at(kGpu), 1);
  EXPECT_EQ(config->jobs.size(), 2u);
}

TEST(KaiConfig, AConfigWithEveryOptionalFieldNullReadsAsKaisDefaults) {
  // KAI writes a nil list or map as null too: here there are no jobs.
  absl::StatusOr<SimConfig> config = ParseSimConfig(R"(Cycles: null
HalfLifePeriod: null
Jobs: null
KValue: null
Nodes:
- Count: null
  GPUs: 8
Queues:
- DeservedGPUs: null
  Name: q
  Parent: null
  Priority: null
  Weight: null
WindowSize: null
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->from_kai);
  EXPECT_EQ(config->horizon, 100);
  EXPECT_EQ(config->accounting.window, 5);
  EXPECT_EQ(config->accounting.half_life, 0);
  EXPECT_EQ(config->policy.k_value, 1.0);
  ASSERT_EQ(config->nodes.size(), 1u);
  EXPECT_EQ(config->nodes[0].count, 1);
  ASSERT_EQ(config->queues.size(), 1u);
  EXPECT_EQ(config->queues[0].parent, "");
  EXPECT_EQ(config->queues[0].priority, 100);
  EXPECT_TRUE(config->jobs.empty());
}

// A null value reads as if its key were absent, for every kind of field in both dialects: each
// case's `field` renders the field that `with_null` sets to null and `without` leaves out.
struct NullCase {
  std::string name;
  std::string with_null;
  std::string without;
  std::function<std::string(const SimConfig&)> field;
};

std::string Resources(const ResourceMap& map) {
  return absl::StrJoin(map, ",", absl::PairFormatter("="));
}

std::vector<NullCase> NullCases() {
  const std::string own = "queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}}]\n";
  const std::string kai = "Nodes: [{GPUs: 8}]\nQueues: [{Name: q}]\nJobs: {q: {GPUs: 1}}\n";
  return {
      // Numbers: plain, integer and duration.
      {"KaiNumber", kai + "KValue: null\n", kai,
       [](const SimConfig& c) { return absl::StrCat(c.policy.k_value); }},
      {"KaiInteger", kai + "Cycles: null\n", kai,
       [](const SimConfig& c) { return absl::StrCat(c.horizon); }},
      {"KaiQueueNumber", "Nodes: [{GPUs: 8}]\nQueues: [{Name: q, DeservedGPUs: null}]\n",
       "Nodes: [{GPUs: 8}]\nQueues: [{Name: q}]\n",
       [](const SimConfig& c) { return Resources(c.queues[0].deserved); }},
      {"OwnNumber", own + "policy: {k_value: null}\n", own + "policy: {}\n",
       [](const SimConfig& c) { return absl::StrCat(c.policy.k_value); }},
      {"OwnInteger", own + "seed: null\n", own,
       [](const SimConfig& c) { return absl::StrCat(c.seed); }},
      {"OwnDuration", own + "step: null\n", own,
       [](const SimConfig& c) { return absl::StrCat(c.step); }},
      {"OwnBool", own + "policy: {consolidating_reclaim: null}\n", own,
       [](const SimConfig& c) {
         const std::optional<bool>& value = c.policy.consolidating_reclaim;
         return value.has_value() ? absl::StrCat(*value) : "unset";
       }},
      // Strings.
      {"KaiString", "Nodes: [{GPUs: 8}]\nQueues: [{Name: q, Parent: null}]\n",
       "Nodes: [{GPUs: 8}]\nQueues: [{Name: q}]\n",
       [](const SimConfig& c) { return c.queues[0].parent; }},
      {"OwnString", own + "name: null\n", own, [](const SimConfig& c) { return c.name; }},
      {"OwnEnumString", own + "policy: {placement: null}\n", own,
       [](const SimConfig& c) { return absl::StrCat(static_cast<int>(c.policy.placement)); }},
      // Lists.
      {"OwnList", own + "policy: {actions: null}\n", own,
       [](const SimConfig& c) { return absl::StrCat(c.policy.actions.size()); }},
      {"OwnTopLevelList", own + "jobs: null\n", own,
       [](const SimConfig& c) { return absl::StrCat(c.jobs.size()); }},
      // Maps.
      {"KaiMap", "Nodes: [{GPUs: 8}]\nQueues: [{Name: q}]\nJobs: null\n",
       "Nodes: [{GPUs: 8}]\nQueues: [{Name: q}]\n",
       [](const SimConfig& c) { return absl::StrCat(c.jobs.size()); }},
      {"OwnResourceMap", "queues: [{name: a, deserved: null}]\nnodes: [{allocatable: {gpu: 1}}]\n",
       own, [](const SimConfig& c) { return Resources(c.queues[0].deserved); }},
      {"OwnLabelMap", "queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}, labels: null}]\n", own,
       [](const SimConfig& c) { return absl::StrCat(c.nodes[0].labels.size()); }},
      {"OwnLabelValue",
       "queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}, labels: {zone: null}}]\n", own,
       [](const SimConfig& c) { return absl::StrCat(c.nodes[0].labels.size()); }},
      {"OwnSection", own + "accounting: null\n", own,
       [](const SimConfig& c) {
         return absl::StrCat(c.accounting.half_life, "/", c.accounting.window, "/",
                             c.accounting.tumbling);
       }},
      {"OwnEmptyValue", own + "policy:\n", own,
       [](const SimConfig& c) { return absl::StrCat(c.policy.actions.size()); }},
  };
}

TEST(NullValues, ReadAsAbsentForEveryKindOfField) {
  for (const NullCase& test : NullCases()) {
    SCOPED_TRACE(test.name);
    absl::StatusOr<SimConfig> with_null = ParseSimConfig(test.with_null);
    absl::StatusOr<SimConfig> without = ParseSimConfig(test.without);
    ASSERT_TRUE(with_null.ok()) << with_null.status();
    ASSERT_TRUE(without.ok()) << without.status();
    EXPECT_EQ(with_null->from_kai, without->from_kai);
    EXPECT_EQ(test.field(*with_null), test.field(*without));
  }
}

TEST(NullValues, ARequiredFieldThatIsNullIsRequired) {
  EXPECT_THAT(
      std::string(
          ParseSimConfig("Nodes: [{GPUs: null}]\nQueues: [{Name: q}]\n").status().message()),
      HasSubstr("Nodes[0].GPUs: is required"));
  EXPECT_THAT(std::string(ParseSimConfig("queues: [{name: null}]\nnodes: [{allocatable: {}}]\n")
                              .status()
                              .message()),
              HasSubstr("queues[0].name: is required"));
}

TEST(NullValues, AWrongTypeThatIsNotNullNamesTheFieldAndWhatItGot) {
  const std::string kai = "Nodes: [{GPUs: 8}]\nQueues: [{Name: q}]\n";
  const std::string own = "queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}}]\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kai + "KValue: [1]\n", "KValue: must be a finite number, got a list"},
      {kai + "KValue: high\n", "KValue: must be a finite number, got \"high\""},
      {kai + "Cycles: {a: 1}\n", "Cycles: must be an integer, got a mapping"},
      {"Nodes: [{GPUs: 8}]\nQueues: [{Name: q, Parent: [a]}]\n",
       "Queues[0].Parent: must be a string, got a list"},
      {"Nodes: 8\nQueues: [{Name: q}]\n", "Nodes: must be a list, got \"8\""},
      {kai + "Jobs: [q]\n", "Jobs: must map queue names to jobs, got a list"},
      {own + "policy: {actions: allocate}\n", "policy.actions: must be a list, got \"allocate\""},
      {own + "policy: {actions: [allocate, null]}\n",
       "policy.actions[1]: must be a string, got null"},
      {own + "step: [1]\n", "step: must be a duration such as 90"},
      {own + "policy: {consolidating_reclaim: [true]}\n",
       "policy.consolidating_reclaim: must be true or false, got a list"},
      {"queues: [{name: a, deserved: [1]}]\nnodes: [{allocatable: {gpu: 1}}]\n",
       "queues[0].deserved: must map resource names to amounts, got a list"},
      {"queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}, labels: {zone: [a]}}]\n",
       "nodes[0].labels.zone: must be a string, got a list"},
      {"queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}}]\naccounting: 3\n",
       "accounting: must be a mapping, got \"3\""},
  };
  for (const auto& [yaml, message] : cases) {
    absl::StatusOr<SimConfig> config = ParseSimConfig(yaml);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(message)) << yaml;
  }
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
