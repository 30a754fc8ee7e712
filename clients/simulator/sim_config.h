// What `arbiter simulate` simulates: a cluster, its queues, the policy, the job streams that feed
// it, the clock, and how usage is remembered (docs/simulate.md).
//
// Two YAML dialects are read: arbiter's own (lower-case keys, `step`, `horizon`, `jobs` as a
// list of streams) and KAI Scheduler's time-aware fairness simulator config (`Cycles`,
// `WindowSize`, `HalfLifePeriod`, `KValue`, `Nodes`, `Queues`, `Jobs`), taken unchanged. KAI's
// config has no GPU-sharing field (its jobs ask for whole GPUs, an integer `GPUs` per pod), so GPU
// sharing (gpu_fraction, gpu_memory, gpu_device_memory) is written in arbiter's dialect only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model.h"

namespace arbiter::simulator {

enum class Arrival {
  kStart,    // `count` jobs at `start`
  kBacklog,  // from `start` on, `count` jobs of the stream always wait (an endless backlog)
  kRate,     // from `start` on, at random at `rate` jobs per hour (Poisson), `count` in all (0 = no
             // end)
};

// Jobs of one kind, submitted to one queue.
struct JobStream {
  std::string queue;
  std::string name;      // job names are "<name>-<n>"; default: the queue's name
  int pods = 1;          // pods per job
  int min_member = 0;    // gang size; 0 = every pod (the whole job is a gang)
  ResourceMap requests;  // per pod
  double duration = 0;   // seconds of uninterrupted running to finish; 0 = never finishes
  int32_t priority = 0;
  Preemptibility preemptibility = Preemptibility::kUnspecified;
  Arrival arrival = Arrival::kStart;
  int count = 1;     // kRate: default 0
  double rate = 0;   // kRate: jobs per hour
  double start = 0;  // seconds from the start of the simulation
  // Every pod's node selector and tolerations. Kueue reads them only to choose a compatible
  // resource flavor (SEMANTICS §5.8.5).
  LabelMap node_selector;
  std::vector<Toleration> tolerations;
  // KAI GPU sharing (SEMANTICS §4.13): each pod of the job takes gpu_fraction of each of
  // gpu_fraction_devices devices (0 = 1), or gpu_memory on each. A job that shares requests no
  // whole GPUs (requests has no nvidia.com/gpu).
  std::optional<double> gpu_fraction;
  std::optional<double> gpu_memory;
  int32_t gpu_fraction_devices = 0;
};

// `count` identical nodes named "<name>-<i>".
struct NodeSet {
  std::string name = "node";
  int count = 1;
  ResourceMap allocatable;
  LabelMap labels;
  double gpu_device_memory =
      0;  // §4.13: memory of each GPU device (gpu_memory's unit); 0 = unknown
};

// How usage is remembered: decay by half-life, and optionally only what falls inside a window.
struct Accounting {
  double half_life = 0;   // seconds; 0 = no decay
  double window = 0;      // seconds; 0 = since the start
  bool tumbling = false;  // window: start from nothing at every multiple (else sliding)
};

struct SimConfig {
  std::string name;  // for titles; default: the file name
  Policy policy;
  std::vector<Queue> queues;  // Kueue: with resource_groups and flavor_fungibility (§5.8)
  std::vector<ResourceFlavor> resource_flavors;  // Kueue (§5.8)
  std::vector<NodeSet> nodes;
  std::vector<JobStream> jobs;
  double step = 60;       // seconds per cycle
  double horizon = 3600;  // seconds simulated
  uint64_t seed = 1;
  Accounting accounting;
  bool from_kai = false;  // read from a KAI simulator config (its CSV columns are available)
};

// Reads either dialect; InvalidArgument naming the key path of the first problem. Durations are
// seconds, or strings with a unit: "90s", "15m", "1h", "2d". A null value (KAI's simulator
// writes an absent value as `null`) reads as its key being absent, in both dialects.
absl::StatusOr<SimConfig> ParseSimConfig(const std::string& yaml_text);
absl::StatusOr<SimConfig> LoadSimConfig(const std::string& path);

}  // namespace arbiter::simulator
