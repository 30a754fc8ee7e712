// The discrete-time simulation of `arbiter simulate` (docs/simulate.md). At every step it:
//   1. submits the jobs that arrive;
//   2. builds the snapshot (now, queues, nodes, pod groups, usage and usage capacity);
//   3. asks the decision core (in-process, or a server: the caller's Decide);
//   4. applies the decisions with ApplyDecisions, the function the property tests use;
//   5. records one row per queue, and each job's start and evictions;
//   6. accounts usage over the step with the core's AccumulateUsage;
//   7. advances the clock and finishes the jobs whose running time reached their duration.
// Deterministic: equal configs (seed included) and an equal decider give equal results.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "clients/simulator/sim_config.h"
#include "core/model.h"

namespace arbiter::simulator {

// One queue at one step, after the step's decisions.
struct QueueRow {
  double time = 0;  // seconds from the start
  std::string queue;
  ResourceMap allocated;      // what its subtree's running pods hold
  ResourceMap fair_share;     // the answer's fair share (KAI) or nominal quota share (Kueue)
  ResourceMap usage;          // the decayed usage sent with the step's snapshot
  double weighted_share = 0;  // Kueue: the answer's weighted share
  int pending = 0;            // its subtree's jobs waiting after the step
  int evictions = 0;          // its subtree's jobs evicted in the step
  // GPU sharing (SEMANTICS §4.13): the GPU devices its subtree's sharing pods run on after the
  // step (a device counts once, however many of its pods share it).
  int gpu_devices = 0;
  // Kueue with resource flavors (SEMANTICS §5.8), per flavor and resource: what its subtree's
  // admitted workloads hold, and what the answer reports it borrowing (flavor_resources).
  std::map<std::string, ResourceMap> flavor_allocated;
  std::map<std::string, ResourceMap> flavor_borrowed;
};

// One flavor-resource of the queues' resource groups.
struct FlavorResource {
  std::string flavor;
  std::string resource;
  bool operator<(const FlavorResource& other) const {
    return std::tie(flavor, resource) < std::tie(other.flavor, other.resource);
  }
};

struct JobRecord {
  std::string name;
  std::string queue;
  double submit = 0;
  double start = -1;  // first start; -1 = never started
  double end = -1;    // finish; -1 = still running or waiting at the horizon
  int evictions = 0;
  double wait = 0;  // seconds spent waiting in all (before the first start and after evictions)
};

struct SimResult {
  std::vector<std::string> queues;     // config order
  std::vector<std::string> leaves;     // the queues without children, config order
  std::vector<std::string> resources;  // every resource of the nodes, name order
  // Kueue with resource flavors: every (flavor, resource) a queue's resource groups list, in
  // (flavor, resource) order; empty without flavors.
  std::vector<FlavorResource> flavor_resources;
  bool gpu_sharing = false;     // some job stream shares GPUs: QueueRow::gpu_devices is reported
  std::vector<QueueRow> rows;   // step by step, queues in config order
  std::vector<JobRecord> jobs;  // submission order
  int64_t cycles = 0;
  double step = 0;
  double decide_seconds = 0;  // wall time spent in the decider (the core, or the server round trip)
  double total_seconds = 0;   // wall time of the whole run
};

using Decide = std::function<absl::StatusOr<ScheduleResult>(const Snapshot&, const Policy&)>;
// Called after every step with the steps done and the total; returning false stops early with
// CancelledError.
using Progress = std::function<bool(int64_t done, int64_t total)>;

// The decision core in-process.
Decide InProcess();

absl::StatusOr<SimResult> Simulate(const SimConfig& config, const Decide& decide,
                                   const Progress& progress = {});

// Summaries used by the stories' pass marks and the CLI's closing report.
// Each queue's resource-seconds of `resource` over the whole run.
std::vector<double> ResourceSeconds(const SimResult& result, const std::string& resource);
// The number of times the leaf queue holding most of `resource` changed (ties keep the holder;
// steps where no leaf holds any are skipped).
int Switches(const SimResult& result, const std::string& resource);

}  // namespace arbiter::simulator
