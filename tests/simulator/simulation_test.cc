// The time loop: determinism, arrivals, durations, evictions and the usage window.
#include "clients/simulator/simulation.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "clients/simulator/sim_config.h"
#include "clients/simulator/sim_output.h"
#include "gtest/gtest.h"
#include "tests/support/temp_dir.h"

namespace arbiter::simulator {
namespace {

SimConfig Parse(const std::string& yaml) {
  absl::StatusOr<SimConfig> config = ParseSimConfig(yaml);
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : SimConfig{};
}

std::string Csv(const SimResult& result) {
  std::ostringstream out;
  WriteQueuesCsv(result, false, out);
  WriteJobsCsv(result, out);
  return out.str();
}

constexpr char kRandom[] = R"(
step: 5m
horizon: 12h
policy: {k_value: 1}
accounting: {half_life: 1h}
queues: [{name: a}, {name: b}]
nodes: [{count: 2, allocatable: {gpu: 8}}]
jobs:
  - {queue: a, requests: {gpu: 2}, duration: 40m, arrival: rate, rate: 6, preemptible: true}
  - {queue: b, requests: {gpu: 4}, duration: 1h, arrival: rate, rate: 3, preemptible: true}
)";

TEST(Simulation, TheSameConfigAndSeedGiveTheSameRun) {
  const SimConfig config = Parse(kRandom);
  absl::StatusOr<SimResult> first = Simulate(config, InProcess());
  absl::StatusOr<SimResult> second = Simulate(config, InProcess());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(Csv(*first), Csv(*second));
  EXPECT_GT(first->jobs.size(), 20u);
}

// KAI's simulator writes the values it was not given as null; such a config runs exactly as the
// same config without those keys.
TEST(Simulation, AKaiConfigWithNullsRunsAsOneWithoutThem) {
  const SimConfig with_nulls = Parse(R"(Cycles: 40
HalfLifePeriod: null
Jobs:
  queue1:
    GPUs: 8
    NumJobs: 10
    NumPods: 1
  queue2:
    GPUs: 8
    NumJobs: 10
    NumPods: 1
KValue: null
Nodes:
- Count: null
  GPUs: 8
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
- DeservedGPUs: null
  Name: queue2
  Parent: dept
  Priority: null
  Weight: null
WindowSize: null
)");
  const SimConfig without = Parse(R"(Cycles: 40
Jobs:
  queue1: {GPUs: 8, NumJobs: 10, NumPods: 1}
  queue2: {GPUs: 8, NumJobs: 10, NumPods: 1}
Nodes: [{GPUs: 8}]
Queues: [{Name: dept, Parent: ""}, {Name: queue1, Parent: dept}, {Name: queue2, Parent: dept}]
)");
  absl::StatusOr<SimResult> first = Simulate(with_nulls, InProcess());
  absl::StatusOr<SimResult> second = Simulate(without, InProcess());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(Csv(*first), Csv(*second));
  EXPECT_FALSE(first->jobs.empty());
}

TEST(Simulation, AnotherSeedGivesOtherArrivals) {
  SimConfig config = Parse(kRandom);
  absl::StatusOr<SimResult> first = Simulate(config, InProcess());
  config.seed = 2;
  absl::StatusOr<SimResult> second = Simulate(config, InProcess());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(Csv(*first), Csv(*second));
}

TEST(Simulation, AJobFinishesAfterItsDurationAndWaitsAreCounted) {
  const SimConfig config = Parse(R"(
step: 10m
horizon: 3h
queues: [{name: a}]
nodes: [{allocatable: {gpu: 8}}]
jobs: [{queue: a, requests: {gpu: 8}, duration: 1h, count: 2}]
)");
  absl::StatusOr<SimResult> result = Simulate(config, InProcess());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->jobs.size(), 2u);
  EXPECT_EQ(result->jobs[0].start, 0);
  EXPECT_EQ(result->jobs[0].end, 3600);
  EXPECT_EQ(result->jobs[1].start, 3600);  // the second waits for the node
  EXPECT_EQ(result->jobs[1].end, 7200);
  EXPECT_EQ(result->jobs[1].wait, 3600);
}

TEST(Simulation, ABacklogKeepsItsCountWaiting) {
  const SimConfig config = Parse(R"(
step: 10m
horizon: 1h
queues: [{name: a}]
nodes: [{allocatable: {gpu: 8}}]
jobs: [{queue: a, requests: {gpu: 8}, arrival: backlog, count: 3}]
)");
  absl::StatusOr<SimResult> result = Simulate(config, InProcess());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->jobs.size(), 4u);  // one runs forever, three always wait
  EXPECT_EQ(result->rows.back().pending, 3);
}

TEST(Simulation, UsageOutsideASlidingWindowIsForgotten) {
  // One queue holds 8 GPUs for the first hour only; with a one-hour sliding window and no decay
  // its usage is 8 GPU-hours after that hour, and nothing an hour later.
  const SimConfig config = Parse(R"(
step: 10m
horizon: 3h
accounting: {window: 1h}
queues: [{name: a}]
nodes: [{allocatable: {gpu: 8}}]
jobs: [{queue: a, requests: {gpu: 8}, duration: 1h}]
)");
  absl::StatusOr<SimResult> result = Simulate(config, InProcess());
  ASSERT_TRUE(result.ok()) << result.status();
  auto usage_at = [&](double time) {
    for (const QueueRow& row : result->rows) {
      if (row.time == time)
        return row.usage.count("nvidia.com/gpu") ? row.usage.at("nvidia.com/gpu") : 0.0;
    }
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(usage_at(3600), 8 * 3600);
  EXPECT_DOUBLE_EQ(usage_at(5400), 8 * 1800);
  EXPECT_DOUBLE_EQ(usage_at(7200), 0);
}

TEST(Simulation, ATumblingWindowStartsEmpty) {
  const SimConfig config = Parse(R"(
step: 30m
horizon: 3h
accounting: {window: 1h, window_type: tumbling}
queues: [{name: a}]
nodes: [{allocatable: {gpu: 8}}]
jobs: [{queue: a, requests: {gpu: 8}}]
)");
  absl::StatusOr<SimResult> result = Simulate(config, InProcess());
  ASSERT_TRUE(result.ok()) << result.status();
  // The usage sent at 1h is what 0h-1h held, and the window starting at 1h forgets it.
  EXPECT_DOUBLE_EQ(result->rows[2].usage.at("nvidia.com/gpu"), 8 * 3600);
  EXPECT_DOUBLE_EQ(result->rows[3].usage.at("nvidia.com/gpu"), 8 * 1800);
}

TEST(Simulation, ADeciderErrorStopsTheRunNamingTheTime) {
  const SimConfig config = Parse(R"(
step: 10m
horizon: 1h
queues: [{name: a}]
nodes: [{allocatable: {gpu: 8}}]
)");
  int calls = 0;
  Decide failing = [&](const Snapshot&, const Policy&) -> absl::StatusOr<ScheduleResult> {
    if (++calls == 3) return absl::UnavailableError("server gone");
    return ScheduleResult{};
  };
  absl::StatusOr<SimResult> result = Simulate(config, failing);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(result.status().message(), "at t=1200s: server gone");
}

// GPU sharing (SEMANTICS §4.13): three 0.25-GPU notebooks and one of 10 GiB on a 40 GiB device
// pack onto one device, which leaves the node's other GPU to a whole-GPU job. The queue holds,
// and its usage grows by, the notebooks' GPU share (1 GPU), not a GPU per pod; the devices the
// answer names carry over into the next cycle's snapshot.
constexpr char kSharing[] = R"(
step: 10m
horizon: 2h
policy: {k_value: 1}
accounting: {half_life: 1h}
queues: [{name: nb}, {name: train}]
nodes: [{name: n, allocatable: {gpu: 2, cpu: 16000}, gpu_device_memory: 40960}]
jobs:
  - {queue: nb, name: quarter, gpu_fraction: 0.25, requests: {cpu: 1000}, duration: 1h, count: 3}
  - {queue: nb, name: mem, gpu_memory: 10240, duration: 1h}
  - {queue: train, requests: {gpu: 1}, duration: 2h}
)";

TEST(Simulation, SharingPodsPackOntoOneDeviceAndTheirQueueHoldsTheirShare) {
  const SimConfig config = Parse(kSharing);
  std::vector<Snapshot> seen;
  const Decide core = InProcess();
  Decide recording = [&](const Snapshot& snapshot, const Policy& policy) {
    seen.push_back(snapshot);
    return core(snapshot, policy);
  };
  absl::StatusOr<SimResult> result = Simulate(config, recording);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const JobRecord& job : result->jobs) {
    EXPECT_EQ(job.start, 0) << job.name;
    EXPECT_EQ(job.evictions, 0) << job.name;
  }
  EXPECT_EQ(result->jobs[0].end, 3600);

  // The second cycle sees the notebooks on the device the first answer opened, "new-0".
  ASSERT_GE(seen.size(), 2u);
  int sharing = 0;
  for (const PodGroup& group : seen[1].pod_groups) {
    for (const Pod& pod : group.pods) {
      EXPECT_EQ(pod.phase, PodPhase::kRunning) << pod.name;
      if (!Shares(pod)) {
        EXPECT_TRUE(pod.gpu_groups.empty()) << pod.name;
        continue;
      }
      ++sharing;
      EXPECT_EQ(pod.gpu_groups, std::vector<std::string>{"new-0"}) << pod.name;
    }
  }
  EXPECT_EQ(sharing, 4);

  std::map<std::pair<double, std::string>, const QueueRow*> rows;
  for (const QueueRow& row : result->rows) rows[{row.time, row.queue}] = &row;
  const std::string gpu = "nvidia.com/gpu";
  EXPECT_EQ(rows.at({0, "nb"})->allocated.at(gpu), 1.0);
  EXPECT_EQ(rows.at({0, "train"})->allocated.at(gpu), 1.0);
  EXPECT_EQ(rows.at({0, "nb"})->allocated.at("cpu"), 3000);
  EXPECT_EQ(rows.at({0, "nb"})->gpu_devices, 1);  // four pods, one device
  EXPECT_EQ(rows.at({0, "train"})->gpu_devices, 0);
  // Equal holdings, equal usage: the ledger counts the notebooks' share too.
  EXPECT_EQ(rows.at({600, "nb"})->usage.at(gpu), rows.at({600, "train"})->usage.at(gpu));
  EXPECT_GT(rows.at({600, "nb"})->usage.at(gpu), 0);
  // The notebooks finish after an hour; the device ceases to exist with them.
  EXPECT_EQ(rows.at({3600, "nb"})->allocated.count(gpu), 0u);
  EXPECT_EQ(rows.at({3600, "train"})->allocated.at(gpu), 1.0);
  EXPECT_EQ(rows.at({3600, "nb"})->gpu_devices, 0);
}

TEST(Simulation, WithGpuSharingTheOutputsGainTheDevicesColumnLast) {
  absl::StatusOr<SimResult> result = Simulate(Parse(kSharing), InProcess());
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->gpu_sharing);
  std::ostringstream csv;
  WriteQueuesCsv(*result, false, csv);
  EXPECT_EQ(csv.str().substr(0, csv.str().find('\n')),
            "time_s,queue,allocated:cpu,allocated:nvidia.com/gpu,fair_share:cpu,"
            "fair_share:nvidia.com/gpu,usage:cpu,usage:nvidia.com/gpu,pending,evictions,"
            "gpu_devices");
  EXPECT_NE(csv.str().find("\n0,nb,3000,1,"), std::string::npos) << csv.str();
  std::ostringstream json;
  WriteJson(*result, json);
  EXPECT_NE(json.str().find("\"queue\":\"nb\",\"allocated\":{\"cpu\":3000,\"nvidia.com/gpu\":1}"),
            std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find(",\"gpu_devices\":1}"), std::string::npos);

  // Without a job that shares, nothing changes.
  absl::StatusOr<SimResult> plain = Simulate(Parse(kRandom), InProcess());
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->gpu_sharing);
  std::ostringstream plain_csv;
  WriteQueuesCsv(*plain, false, plain_csv);
  EXPECT_EQ(plain_csv.str().find("gpu_devices"), std::string::npos);
  std::ostringstream plain_json;
  WriteJson(*plain, plain_json);
  EXPECT_EQ(plain_json.str().find("gpu_devices"), std::string::npos);
}

TEST(Plots, ChartsAreWrittenAsValidPngAndSvg) {
  const SimConfig config = Parse(kRandom);
  absl::StatusOr<SimResult> result = Simulate(config, InProcess());
  ASSERT_TRUE(result.ok());
  const testing::TempDir scratch;
  const std::string& dir = scratch.path();
  ASSERT_TRUE(WritePlots(*result, "test", dir).ok());
  for (const char* chart : {"allocation", "resource_hours", "jobs"}) {
    std::ifstream png(dir + "/" + chart + ".png", std::ios::binary);
    std::string head(8, '\0');
    png.read(head.data(), 8);
    EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8)) << chart;
    std::ifstream svg(dir + "/" + chart + ".svg");
    std::stringstream text;
    text << svg.rdbuf();
    EXPECT_NE(text.str().find("<svg"), std::string::npos) << chart;
    EXPECT_NE(text.str().find("</svg>"), std::string::npos) << chart;
  }
}

// Two flavors: a job that fits on-demand takes it; the next spills to spot, which only jobs
// that tolerate its taint may use; one that tolerates nothing waits.
constexpr char kFlavors[] = R"(
step: 10m
horizon: 1h
policy: {model: kueue}
resource_flavors:
  - {name: on-demand}
  - {name: spot, node_taints: [{key: spot, effect: NoSchedule}]}
queues:
  - name: a
    resource_groups:
      - covered_resources: [cpu]
        flavors: [{flavor: on-demand, resources: {cpu: 2}}, {flavor: spot, resources: {cpu: 4}}]
  - {name: legacy, deserved: {cpu: 1}}
jobs:
  - {queue: a, name: tolerant, requests: {cpu: 2}, count: 2, tolerations: [{key: spot, operator: Exists}]}
  - {queue: a, name: picky, requests: {cpu: 2}, start: 20m}
  - {queue: legacy, requests: {cpu: 1}}
)";

TEST(Flavors, AdmissionsAreChargedToTheirFlavorsAndATaintKeepsOthersAway) {
  absl::StatusOr<SimResult> result = Simulate(Parse(kFlavors), InProcess());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->flavor_resources.size(), 2u);
  EXPECT_EQ(result->flavor_resources[0].flavor, "on-demand");
  EXPECT_EQ(result->flavor_resources[1].flavor, "spot");
  const QueueRow& last = result->rows[result->rows.size() - 2];  // a, at the last step
  ASSERT_EQ(last.queue, "a");
  EXPECT_EQ(last.flavor_allocated.at("on-demand").at("cpu"), 2);
  EXPECT_EQ(last.flavor_allocated.at("spot").at("cpu"), 2);
  EXPECT_EQ(last.allocated.at("cpu"), 4);
  EXPECT_EQ(last.pending, 1) << "picky does not tolerate spot, and on-demand is full";
  const QueueRow& legacy = result->rows.back();
  EXPECT_EQ(legacy.allocated.at("cpu"), 1) << "a legacy queue beside flavored ones";
  EXPECT_TRUE(legacy.flavor_allocated.empty());
}

TEST(Plots, WithGpuSharingAGpuSharingChartIsDrawn) {
  absl::StatusOr<SimResult> result = Simulate(Parse(kSharing), InProcess());
  ASSERT_TRUE(result.ok()) << result.status();
  const testing::TempDir scratch;
  const std::string& dir = scratch.path();
  ASSERT_TRUE(WritePlots(*result, "test", dir).ok());
  std::ifstream png(dir + "/gpu_sharing.png", std::ios::binary);
  std::string head(8, '\0');
  png.read(head.data(), 8);
  EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8));
  std::ifstream data(dir + "/sharing.dat");
  std::stringstream text;
  text << data.rdbuf();
  EXPECT_EQ(text.str().substr(0, text.str().find('\n', text.str().find('\n') + 1)), "# nb\n0 1 1");
}

TEST(Flavors, OutputsGainTheFlavorColumnsAfterTheExistingOnes) {
  absl::StatusOr<SimResult> result = Simulate(Parse(kFlavors), InProcess());
  ASSERT_TRUE(result.ok()) << result.status();
  std::ostringstream csv;
  WriteQueuesCsv(*result, true, csv);
  EXPECT_EQ(csv.str().substr(0, csv.str().find('\n')),
            "time_s,queue,allocated:cpu,fair_share:cpu,usage:cpu,pending,evictions,weighted_share,"
            "allocated:cpu@on-demand,allocated:cpu@spot,borrowed:cpu@on-demand,borrowed:cpu@spot");
  EXPECT_NE(csv.str().find("\n3000,a,4,0,"), std::string::npos) << csv.str();
  std::ostringstream json;
  WriteJson(*result, json);
  EXPECT_NE(json.str().find("\"flavor_resources\":[{\"flavor\":\"on-demand\",\"resource\":\"cpu\"},"
                            "{\"flavor\":\"spot\",\"resource\":\"cpu\"}]"),
            std::string::npos);
  EXPECT_NE(
      json.str().find("\"flavor_allocated\":{\"on-demand\":{\"cpu\":2},\"spot\":{\"cpu\":2}}"),
      std::string::npos);

  // Without flavors, nothing changes.
  absl::StatusOr<SimResult> plain = Simulate(Parse(kRandom), InProcess());
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->flavor_resources.empty());
  std::ostringstream plain_csv;
  WriteQueuesCsv(*plain, false, plain_csv);
  EXPECT_EQ(plain_csv.str().find('@'), std::string::npos);
  std::ostringstream plain_json;
  WriteJson(*plain, plain_json);
  EXPECT_EQ(plain_json.str().find("flavor"), std::string::npos);
}

TEST(Plots, WithFlavorsAFlavorsChartIsDrawn) {
  absl::StatusOr<SimResult> result = Simulate(Parse(kFlavors), InProcess());
  ASSERT_TRUE(result.ok());
  const testing::TempDir scratch;
  const std::string& dir = scratch.path();
  ASSERT_TRUE(WritePlots(*result, "flavors", dir).ok());
  std::ifstream png(dir + "/flavors.png", std::ios::binary);
  std::string head(8, '\0');
  png.read(head.data(), 8);
  EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8));
  std::ifstream data(dir + "/flavors.dat");
  std::stringstream text;
  text << data.rdbuf();
  EXPECT_NE(text.str().find("# a on-demand\n"), std::string::npos);
  EXPECT_NE(text.str().find("# a spot\n"), std::string::npos);
  // Every leaf has its blocks, so that each queue keeps its colour from the other charts.
  EXPECT_NE(text.str().find("# legacy spot\n"), std::string::npos);
}

}  // namespace
}  // namespace arbiter::simulator
