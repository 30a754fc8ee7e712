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

// A Kueue config with one queue `a`, and one with `a` flavored: one resource group covering cpu
// with the flavor spot, whose quota is `quota`, and `extra` as more keys of the queue.
const std::string kFlavored = "policy: {model: kueue}\nqueues: [{name: a}]\n";
const std::string kSpot = "resource_flavors: [{name: spot}]\n";

std::string FlavoredQueue(const std::string& quota, const std::string& extra = "") {
  return absl::StrCat("policy: {model: kueue}\nqueues: [{name: a, ", extra.empty() ? "" : extra,
                      extra.empty() ? "" : ", ",
                      "resource_groups: [{covered_resources: [cpu], flavors: [{flavor: spot, "
                      "resources: {cpu: ",
                      quota, "}}]}]}]\n");
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
      // Resource flavors.
      {"OwnResourceFlavors", own + "resource_flavors: null\n", own,
       [](const SimConfig& c) { return absl::StrCat(c.resource_flavors.size()); }},
      {"OwnFlavorTaints", kFlavored + "resource_flavors: [{name: spot, node_taints: null}]\n",
       kFlavored + "resource_flavors: [{name: spot}]\n",
       [](const SimConfig& c) { return absl::StrCat(c.resource_flavors[0].node_taints.size()); }},
      {"OwnFlavorQuotaLimit",
       FlavoredQueue("{nominal: 4, borrowing_limit: null}") + "resource_flavors: [{name: spot}]\n",
       FlavoredQueue("{nominal: 4}") + "resource_flavors: [{name: spot}]\n",
       [](const SimConfig& c) {
         const FlavorResourceQuota& quota =
             c.queues[0].resource_groups[0].flavors[0].resources.at("cpu");
         return absl::StrCat(quota.nominal, "/", quota.borrowing_limit.has_value());
       }},
      {"OwnFlavorFungibility", FlavoredQueue("4", "flavor_fungibility: null") + kSpot,
       FlavoredQueue("4") + kSpot,
       [](const SimConfig& c) {
         const FlavorFungibility& f = c.queues[0].flavor_fungibility;
         return absl::StrCat(static_cast<int>(f.when_can_borrow), "/",
                             static_cast<int>(f.when_can_preempt), "/",
                             static_cast<int>(f.preference));
       }},
      {"OwnFungibilityValue",
       FlavoredQueue("4", "flavor_fungibility: {when_can_borrow: null}") + kSpot,
       FlavoredQueue("4", "flavor_fungibility: {}") + kSpot,
       [](const SimConfig& c) {
         return absl::StrCat(static_cast<int>(c.queues[0].flavor_fungibility.when_can_borrow));
       }},
      {"OwnJobTolerations", kFlavored + "jobs: [{queue: a, tolerations: null}]\n",
       kFlavored + "jobs: [{queue: a}]\n",
       [](const SimConfig& c) { return absl::StrCat(c.jobs[0].tolerations.size()); }},
      {"OwnJobNodeSelector", kFlavored + "jobs: [{queue: a, node_selector: null}]\n",
       kFlavored + "jobs: [{queue: a}]\n",
       [](const SimConfig& c) { return absl::StrCat(c.jobs[0].node_selector.size()); }},
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

TEST(OwnConfig, GpuSharingFieldsMapToTheModel) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(R"(
policy: {model: kai, placement: binpack, gpu_device_placement: spread}
queues: [{name: a}]
nodes: [{name: n, allocatable: {gpu: 8}, gpu_device_memory: 81920}]
jobs:
  - {queue: a, name: nb, requests: {cpu: 1000}, gpu_fraction: 0.25}
  - {queue: a, name: pair, gpu_fraction: 0.5, gpu_fraction_devices: 2}
  - {queue: a, name: mem, gpu_memory: 20480, requests: {gpu: 0}}
  - {queue: a, name: train, requests: {gpu: 1}}
)");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->policy.placement, Placement::kBinpack);
  EXPECT_EQ(config->policy.gpu_device_placement, Placement::kSpread);
  EXPECT_EQ(config->nodes[0].gpu_device_memory, 81920);
  const std::vector<JobStream>& jobs = config->jobs;
  EXPECT_EQ(jobs[0].gpu_fraction, 0.25);
  EXPECT_FALSE(jobs[0].gpu_memory.has_value());
  EXPECT_EQ(jobs[0].gpu_fraction_devices, 0);
  EXPECT_EQ(jobs[1].gpu_fraction_devices, 2);
  EXPECT_EQ(jobs[2].gpu_memory, 20480);
  EXPECT_FALSE(jobs[3].gpu_fraction || jobs[3].gpu_memory);
  // Absent: the device placement follows placement (UNSPECIFIED), and devices are unknown (0).
  absl::StatusOr<SimConfig> plain =
      ParseSimConfig("queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}}]\n");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->policy.gpu_device_placement, Placement::kUnspecified);
  EXPECT_EQ(plain->nodes[0].gpu_device_memory, 0);
}

TEST(OwnConfig, GpuSharingErrorsNameTheKeyPath) {
  const std::string base =
      "queues: [{name: a}]\nnodes: [{allocatable: {gpu: 8}, gpu_device_memory: 40960}]\n";
  auto error = [&](const std::string& more) {
    return std::string(ParseSimConfig(base + more).status().message());
  };
  EXPECT_THAT(error("jobs: [{queue: a, gpu_fraction: 0.5, requests: {gpu: 1}}]\n"),
              HasSubstr("jobs[0].requests.gpu: a job that shares GPUs (gpu_fraction) must not "
                        "also request whole GPUs"));
  EXPECT_THAT(error("jobs: [{queue: a, gpu_memory: 1024, requests: {nvidia.com/gpu: 2}}]\n"),
              HasSubstr("jobs[0].requests.nvidia.com/gpu: a job that shares GPUs (gpu_memory)"));
  EXPECT_THAT(error("jobs: [{queue: a, gpu_fraction: 1}]\n"),
              HasSubstr("jobs[0].gpu_fraction: must be a share of one GPU above 0 and below 1"));
  EXPECT_THAT(error("jobs: [{queue: a, gpu_fraction: 0}]\n"), HasSubstr("jobs[0].gpu_fraction:"));
  EXPECT_THAT(error("jobs: [{queue: a, gpu_memory: 0.5}]\n"),
              HasSubstr("jobs[0].gpu_memory: must be a whole number >= 1"));
  EXPECT_THAT(error("jobs: [{queue: a, gpu_fraction: 0.5, gpu_memory: 1024}]\n"),
              HasSubstr("jobs[0].gpu_memory: a job shares GPUs by gpu_fraction or by gpu_memory, "
                        "not both"));
  EXPECT_THAT(error("jobs: [{queue: a, gpu_fraction_devices: 2, requests: {gpu: 2}}]\n"),
              HasSubstr("jobs[0].gpu_fraction_devices: needs gpu_fraction or gpu_memory"));
  EXPECT_THAT(error("jobs: [{queue: a, gpu_fraction: 0.5, gpu_fraction_devices: 0}]\n"),
              HasSubstr("jobs[0].gpu_fraction_devices: must be 1 to 10000"));
  EXPECT_THAT(
      std::string(ParseSimConfig("queues: [{name: a}]\n"
                                 "nodes: [{allocatable: {gpu: 8}, gpu_device_memory: -1}]\n")
                      .status()
                      .message()),
      HasSubstr("nodes[0].gpu_device_memory: must be a whole number >= 0"));
  EXPECT_THAT(error("policy: {gpu_device_placement: fill}\n"),
              HasSubstr("policy.gpu_device_placement: must be binpack or spread"));
  EXPECT_THAT(error("policy: {model: kueue}\njobs: [{queue: a, gpu_fraction: 0.5}]\n"),
              HasSubstr("jobs[0].gpu_fraction: GPU sharing is read by the KAI model only"));
}

TEST(FlavorConfig, TheCoresValidationNamesTheConfigsKeys) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(R"(
policy: {model: kueue}
resource_flavors:
  - name: on-demand
    node_labels: {capacity: on-demand}
  - name: spot
    node_labels: {capacity: spot}
    node_taints: [{key: spot, value: "true", effect: NoSchedule}, {key: flaky, effect: PreferNoSchedule}]
    tolerations: [{key: maintenance, operator: Exists, effect: NoExecute}]
queues:
  - name: pool
  - name: a
    parent: pool
    resource_groups:
      - covered_resources: [cpu, mem]
        flavors:
          - {flavor: on-demand, resources: {cpu: 8, mem: 64}}
          - flavor: spot
            resources:
              cpu: {nominal: 16, borrowing_limit: 4, lending_limit: -1}
              mem: {nominal: 128}
      - covered_resources: [gpu]
        flavors: [{flavor: spot, resources: {gpu: 2}}]
    flavor_fungibility:
      when_can_borrow: TryNextFlavor
      when_can_preempt: TryNextFlavor
      preference: PreemptionOverBorrowing
  - {name: legacy, parent: pool, deserved: {cpu: 4}, borrowing_limit: {cpu: 2}}
jobs:
  - queue: a
    requests: {cpu: 1}
    node_selector: {capacity: spot}
    tolerations: [{key: spot, operator: Equal, value: "true", effect: NoSchedule}, {operator: Exists}]
)");
  ASSERT_FALSE(config.ok()) << "a flavor listed twice in one queue is the core's own error";
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("queues[1].resource_groups[1].flavors[0].flavor: duplicate flavor"));
}

TEST(FlavorConfig, EveryFieldMapsToTheModel) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(R"(
policy: {model: kueue}
resource_flavors:
  - name: on-demand
    node_labels: {capacity: on-demand}
  - name: spot
    node_labels: {capacity: spot}
    node_taints: [{key: spot, value: "true", effect: NoSchedule}, {key: flaky, effect: PreferNoSchedule}]
    tolerations: [{key: maintenance, operator: Exists, effect: NoExecute}]
  - name: a100
queues:
  - name: pool
  - name: a
    parent: pool
    resource_groups:
      - covered_resources: [cpu, mem]
        flavors:
          - {flavor: on-demand, resources: {cpu: 8, mem: 64}}
          - flavor: spot
            resources:
              cpu: {nominal: 16, borrowing_limit: 4, lending_limit: -1}
              mem: {nominal: 128}
      - covered_resources: [gpu]
        flavors: [{flavor: a100, resources: {gpu: 2}}]
    flavor_fungibility:
      when_can_borrow: TryNextFlavor
      when_can_preempt: TryNextFlavor
      preference: PreemptionOverBorrowing
  - {name: legacy, parent: pool, deserved: {cpu: 4}, borrowing_limit: {cpu: 2}}
jobs:
  - queue: a
    requests: {cpu: 1}
    node_selector: {capacity: spot}
    tolerations: [{key: spot, operator: Equal, value: "true", effect: NoSchedule}, {operator: Exists}]
)");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->resource_flavors.size(), 3u);
  const ResourceFlavor& spot = config->resource_flavors[1];
  EXPECT_EQ(spot.name, "spot");
  EXPECT_EQ(spot.node_labels.at("capacity"), "spot");
  ASSERT_EQ(spot.node_taints.size(), 2u);
  EXPECT_EQ(spot.node_taints[0].key, "spot");
  EXPECT_EQ(spot.node_taints[0].value, "true");
  EXPECT_EQ(spot.node_taints[0].effect, "NoSchedule");
  EXPECT_EQ(spot.node_taints[1].value, "");
  ASSERT_EQ(spot.tolerations.size(), 1u);
  EXPECT_EQ(spot.tolerations[0].key, "maintenance");
  EXPECT_EQ(spot.tolerations[0].op, "Exists");
  EXPECT_EQ(spot.tolerations[0].effect, "NoExecute");

  const Queue& a = config->queues[1];
  ASSERT_EQ(a.resource_groups.size(), 2u);
  EXPECT_EQ(a.resource_groups[0].covered_resources, (std::vector<std::string>{"cpu", "memory"}));
  ASSERT_EQ(a.resource_groups[0].flavors.size(), 2u);
  EXPECT_EQ(a.resource_groups[0].flavors[0].flavor, "on-demand");  // order kept: tried first
  const FlavorResourceQuota& plain = a.resource_groups[0].flavors[0].resources.at("cpu");
  EXPECT_EQ(plain.nominal, 8);  // a number is the nominal quota
  EXPECT_FALSE(plain.borrowing_limit.has_value());
  EXPECT_FALSE(plain.lending_limit.has_value());
  EXPECT_EQ(a.resource_groups[0].flavors[0].resources.at("memory").nominal, 64);
  const FlavorResourceQuota& limited = a.resource_groups[0].flavors[1].resources.at("cpu");
  EXPECT_EQ(limited.nominal, 16);
  EXPECT_EQ(limited.borrowing_limit, 4);
  EXPECT_EQ(limited.lending_limit, -1);
  EXPECT_EQ(a.resource_groups[1].covered_resources, (std::vector<std::string>{kGpu}));
  EXPECT_EQ(a.resource_groups[1].flavors[0].resources.at(kGpu).nominal, 2);
  EXPECT_EQ(a.flavor_fungibility.when_can_borrow, WhenCanBorrow::kTryNextFlavor);
  EXPECT_EQ(a.flavor_fungibility.when_can_preempt, WhenCanPreempt::kTryNextFlavor);
  EXPECT_EQ(a.flavor_fungibility.preference, FlavorPreference::kPreemptionOverBorrowing);
  EXPECT_TRUE(a.deserved.empty());

  const Queue& legacy = config->queues[2];  // a legacy queue beside flavored ones
  EXPECT_TRUE(legacy.resource_groups.empty());
  EXPECT_EQ(legacy.deserved.at("cpu"), 4);
  EXPECT_EQ(legacy.borrowing_limit.at("cpu"), 2);

  const JobStream& job = config->jobs[0];
  EXPECT_EQ(job.node_selector.at("capacity"), "spot");
  ASSERT_EQ(job.tolerations.size(), 2u);
  EXPECT_EQ(job.tolerations[0].op, "Equal");
  EXPECT_EQ(job.tolerations[0].value, "true");
  EXPECT_EQ(job.tolerations[1].key, "");
  EXPECT_EQ(job.tolerations[1].op, "Exists");
  EXPECT_EQ(job.tolerations[1].effect, "");
}

TEST(FlavorConfig, DefaultsLeaveFungibilityAndLimitsToTheModel) {
  absl::StatusOr<SimConfig> config =
      ParseSimConfig(FlavoredQueue("4") + kSpot + "jobs: [{queue: a}]\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->resource_flavors[0].node_labels.empty());
  EXPECT_TRUE(config->resource_flavors[0].node_taints.empty());
  EXPECT_TRUE(config->resource_flavors[0].tolerations.empty());
  const Queue& a = config->queues[0];
  // Unspecified: the model applies Kueue's defaults (MayStopSearch, TryNextFlavor,
  // BorrowingOverPreemption; SEMANTICS §0.2).
  EXPECT_EQ(a.flavor_fungibility.when_can_borrow, WhenCanBorrow::kUnspecified);
  EXPECT_EQ(a.flavor_fungibility.when_can_preempt, WhenCanPreempt::kUnspecified);
  EXPECT_EQ(a.flavor_fungibility.preference, FlavorPreference::kUnspecified);
  const FlavorResourceQuota& quota = a.resource_groups[0].flavors[0].resources.at("cpu");
  EXPECT_EQ(quota.nominal, 4);
  EXPECT_FALSE(quota.borrowing_limit.has_value());
  EXPECT_FALSE(quota.lending_limit.has_value());
  EXPECT_TRUE(config->jobs[0].node_selector.empty());
  EXPECT_TRUE(config->jobs[0].tolerations.empty());

  // Without any flavor field, a Kueue config is as before: no flavors anywhere.
  config = ParseSimConfig("policy: {model: kueue}\nqueues: [{name: a, deserved: {cpu: 4}}]\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->resource_flavors.empty());
  EXPECT_TRUE(config->queues[0].resource_groups.empty());
}

TEST(FlavorConfig, ErrorsNameTheKeyPath) {
  const std::string kueue = "policy: {model: kueue}\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {FlavoredQueue("4", "flavor_fungibility: {when_can_borrow: Borrow}") + kSpot,
       "queues[0].flavor_fungibility.when_can_borrow: must be MayStopSearch or TryNextFlavor"},
      {FlavoredQueue("4", "flavor_fungibility: {when_can_preempt: TRY_NEXT_FLAVOR}") + kSpot,
       "queues[0].flavor_fungibility.when_can_preempt: must be MayStopSearch or TryNextFlavor"},
      {FlavoredQueue("4", "flavor_fungibility: {preference: Borrowing}") + kSpot,
       "queues[0].flavor_fungibility.preference: must be BorrowingOverPreemption or "
       "PreemptionOverBorrowing"},
      {FlavoredQueue("4", "flavor_fungibility: {when: now}") + kSpot,
       "queues[0].flavor_fungibility.when: unknown key"},
      {FlavoredQueue("4", "flavor_fungibility: {preference: PreemptionOverBorrowing}") + kSpot,
       "queues[0].flavor_fungibility.preference: "},
      {FlavoredQueue("{nominal: 4, borrow: 1}") + kSpot,
       "queues[0].resource_groups[0].flavors[0].resources.cpu.borrow: unknown key"},
      {FlavoredQueue("{borrowing_limit: 1}") + kSpot,
       "queues[0].resource_groups[0].flavors[0].resources.cpu.nominal: is required"},
      {FlavoredQueue("null") + kSpot,
       "queues[0].resource_groups[0].flavors[0].resources: no quota for covered resource"},
      {FlavoredQueue("-1") + kSpot,
       "queues[0].resource_groups[0].flavors[0].resources[\"cpu\"].nominal: "},
      {FlavoredQueue("[4]") + kSpot,
       "queues[0].resource_groups[0].flavors[0].resources.cpu: must be a finite number, got a "
       "list"},
      {FlavoredQueue("4"),
       "queues[0].resource_groups[0].flavors[0].flavor: no resource flavor named \"spot\" in "
       "resource_flavors"},
      {FlavoredQueue("4", "deserved: {cpu: 1}") + kSpot,
       "queues[0].deserved[\"cpu\"]: set on a queue with resource_groups"},
      {kueue +
           "queues: [{name: a, resource_groups: [{flavors: [{flavor: spot, resources: {cpu: "
           "1}}]}]}]\n" +
           kSpot,
       "queues[0].resource_groups[0].covered_resources: is required"},
      {kueue + "queues: [{name: a, resource_groups: [{covered_resources: [cpu]}]}]\n" + kSpot,
       "queues[0].resource_groups[0].flavors: is required"},
      {kueue + "queues: [{name: a, resource_groups: {cpu: 1}}]\n",
       "queues[0].resource_groups: must be a list, got a mapping"},
      {FlavoredQueue("4") + "resource_flavors: [{name: spot}, {name: spot}]\n",
       "resource_flavors[1].name: "},
      {FlavoredQueue("4") + "resource_flavors: [{node_labels: {a: b}}]\n",
       "resource_flavors[0].name: is required"},
      {FlavoredQueue("4") + "resource_flavors: [{name: spot, colour: red}]\n",
       "resource_flavors[0].colour: unknown key"},
      {FlavoredQueue("4") +
           "resource_flavors: [{name: spot, node_taints: [{key: spot, effect: Never}]}]\n",
       "resource_flavors[0].node_taints[0].effect: must be NoSchedule, PreferNoSchedule or "
       "NoExecute"},
      {FlavoredQueue("4") + "resource_flavors: [{name: spot, node_taints: [{key: spot}]}]\n",
       "resource_flavors[0].node_taints[0].effect: is required"},
      {FlavoredQueue("4") + kSpot + "jobs: [{queue: a, tolerations: [{operator: Maybe}]}]\n",
       "jobs[0].tolerations[0].operator: must be Equal or Exists"},
      {FlavoredQueue("4") + kSpot + "jobs: [{queue: a, node_selector: [spot]}]\n",
       "jobs[0].node_selector: must map label keys to values, got a list"},
      {"queues: [{name: a}]\nnodes: [{allocatable: {gpu: 1}}]\n" + kSpot,
       "resource_flavors: only the kueue model has resource flavors"},
      {"queues: [{name: a, resource_groups: [{covered_resources: [cpu], flavors: [{flavor: spot, "
       "resources: {cpu: 1}}]}]}]\nnodes: [{allocatable: {gpu: 1}}]\n",
       "queues[0].resource_groups: only the kueue model has resource flavors"},
  };
  for (const auto& [yaml, message] : cases) {
    absl::StatusOr<SimConfig> config = ParseSimConfig(yaml);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(message)) << yaml;
  }
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
