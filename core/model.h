// The core's view of a request and of its answer.
//
// These types mirror proto/arbiter/v1/arbiter.proto one to one, without protobuf: the edge reads
// requests into them (edge/request_decoder.h) and writes answers from them
// (edge/proto_convert.h), and the core never sees a protobuf type. Enum
// fields keep the caller's raw value, so that an out-of-range value reaches validation
// (core/validation.h) and is reported there with its field path.
//
// Maps are SortedMaps (core/sorted_map.h): every iteration is in bytewise key order
// (SEMANTICS.md §0.5), and a map is one array rather than a heap node per entry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/sorted_map.h"

namespace arbiter {

// A resource name to quantity map, in the caller's units ("cpu" millicores, "memory" bytes,
// "nvidia.com/gpu" devices by convention; the core never converts).
using ResourceMap = SortedMap<double>;
using LabelMap = SortedMap<std::string>;

// A point in time: seconds and nanos since the Unix epoch, compared exactly.
struct Timestamp {
  int64_t seconds = 0;
  int32_t nanos = 0;

  friend bool operator<(const Timestamp& a, const Timestamp& b) {
    return a.seconds != b.seconds ? a.seconds < b.seconds : a.nanos < b.nanos;
  }
  friend bool operator==(const Timestamp& a, const Timestamp& b) {
    return a.seconds == b.seconds && a.nanos == b.nanos;
  }
  friend bool operator!=(const Timestamp& a, const Timestamp& b) { return !(a == b); }
  friend bool operator<=(const Timestamp& a, const Timestamp& b) { return !(b < a); }
};

// A span of time, as google.protobuf.Duration.
struct Duration {
  int64_t seconds = 0;
  int32_t nanos = 0;
};

// `t + d`, normalised so that 0 <= nanos < 1e9.
Timestamp AddDuration(const Timestamp& t, const Duration& d);

// ---- Enums (values equal the proto numbers; anything else is rejected by validation) ----

enum class PodPhase : int32_t { kUnspecified = 0, kPending = 1, kRunning = 2, kReleasing = 3 };
enum class Preemptibility : int32_t { kUnspecified = 0, kPreemptible = 1, kNonPreemptible = 2 };
enum class FairnessModel : int32_t { kUnspecified = 0, kKai = 1, kKueue = 2 };
enum class Action : int32_t {
  kUnspecified = 0,
  kAllocate = 1,
  kConsolidate = 2,
  kReclaim = 3,
  kPreempt = 4
};
enum class Placement : int32_t { kUnspecified = 0, kBinpack = 1, kSpread = 2 };
enum class KueuePreemptionStrategy : int32_t {
  kUnspecified = 0,
  kLessThanOrEqualToFinalShare = 1,
  kLessThanInitialShare = 2
};
enum class WithinClusterQueue : int32_t {
  kUnspecified = 0,  // = NEVER
  kNever = 1,
  kLowerPriority = 2,
  kLowerOrNewerEqualPriority = 3
};
enum class ReclaimWithinCohort : int32_t {
  kUnspecified = 0,  // = NEVER
  kNever = 1,
  kLowerPriority = 2,
  kAny = 3
};
enum class EvictionReason : int32_t {
  kUnspecified = 0,
  kFairShareReclaim = 1,
  kQuotaReclaim = 2,
  kPriorityPreemption = 3,
  kConsolidation = 4,
  kKueueInClusterQueue = 5,
  kKueueInCohortReclamation = 6,
  kKueueInCohortFairSharing = 7
};

// Kueue flavor fungibility (SEMANTICS §5.8.6); UNSPECIFIED takes the §0.2 default.
enum class WhenCanBorrow : int32_t { kUnspecified = 0, kMayStopSearch = 1, kTryNextFlavor = 2 };
enum class WhenCanPreempt : int32_t { kUnspecified = 0, kMayStopSearch = 1, kTryNextFlavor = 2 };
enum class FlavorPreference : int32_t {
  kUnspecified = 0,  // = BORROWING_OVER_PREEMPTION
  kBorrowingOverPreemption = 1,
  kPreemptionOverBorrowing = 2
};

// ---- The snapshot ----

struct KueuePreemption {
  WithinClusterQueue within_cluster_queue = WithinClusterQueue::kUnspecified;
  ReclaimWithinCohort reclaim_within_cohort = ReclaimWithinCohort::kUnspecified;
};

// Kueue resource flavors (SEMANTICS §5.8): one flavor's quota of one resource.
struct FlavorResourceQuota {
  double nominal = 0;
  std::optional<double> borrowing_limit;  // absent or -1 = no limit
  std::optional<double> lending_limit;    // absent or -1 = no limit
};

// One flavor of a resource group, with a quota per covered resource.
struct FlavorQuotas {
  std::string flavor;
  SortedMap<FlavorResourceQuota> resources;
};

struct ResourceGroup {
  std::vector<std::string> covered_resources;
  std::vector<FlavorQuotas> flavors;  // order significant: tried in this order
};

struct FlavorFungibility {
  WhenCanBorrow when_can_borrow = WhenCanBorrow::kUnspecified;
  WhenCanPreempt when_can_preempt = WhenCanPreempt::kUnspecified;
  FlavorPreference preference = FlavorPreference::kUnspecified;
};

// The flavor of each resource of one pod set: resource name -> flavor name.
struct PodSetFlavors {
  std::string pod_set;
  LabelMap flavors;
};

struct Queue {
  std::string name;
  std::string parent;  // "" = top level
  ResourceMap deserved;
  ResourceMap limit;
  ResourceMap over_quota_weight;
  int32_t priority = 0;
  std::optional<Timestamp> creation_time;  // absent = epoch
  ResourceMap borrowing_limit;
  ResourceMap lending_limit;
  std::optional<double> fair_sharing_weight;  // absent = 1
  std::optional<Duration> reclaim_min_runtime;
  std::optional<Duration> preempt_min_runtime;
  KueuePreemption kueue_preemption;
  std::vector<ResourceGroup> resource_groups;  // Kueue §5.8: non-empty = a flavored queue
  FlavorFungibility flavor_fungibility;
};

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

struct Toleration {
  std::string key;
  std::string op;  // "" (= Equal) | Equal | Exists; proto field `operator`
  std::string value;
  std::string effect;  // "" = all effects
};

// Kueue: a ResourceFlavor; its labels and taints decide which pod sets it suits (§5.8.5).
struct ResourceFlavor {
  std::string name;
  LabelMap node_labels;
  std::vector<Taint> node_taints;
  std::vector<Toleration> tolerations;
};

struct Node {
  std::string name;
  ResourceMap allocatable;
  LabelMap labels;
  std::vector<Taint> taints;
  bool unschedulable = false;
  double gpu_device_memory = 0;  // §4.13: memory of each GPU device; 0 = unknown
};

struct Pod {
  std::string name;
  ResourceMap requests;
  std::string node_name;
  PodPhase phase = PodPhase::kUnspecified;
  std::optional<Timestamp> start_time;  // absent = unknown
  LabelMap node_selector;
  std::vector<Toleration> tolerations;
  std::string pod_set;  // Kueue: pods with equal values form one pod set
  // KAI GPU sharing (§4.13): the pod shares iff gpu_fraction or gpu_memory is set.
  std::optional<double> gpu_fraction;   // 0 < f < 1, of each device
  std::optional<double> gpu_memory;     // integer >= 1, on each device
  int32_t gpu_fraction_devices = 0;     // distinct devices; 0 = 1
  std::vector<std::string> gpu_groups;  // RUNNING/RELEASING sharing pods: their device keys
};

// G of §4.13: the resource whose devices sharing pods divide.
inline constexpr char kGpuResource[] = "nvidia.com/gpu";

// §4.13: whether a pod uses the GPU-sharing fields.
inline bool Shares(const Pod& pod) { return pod.gpu_fraction || pod.gpu_memory; }

struct PodGroup {
  std::string name;
  std::string queue;
  int32_t priority = 0;
  Preemptibility preemptibility = Preemptibility::kUnspecified;
  int32_t min_member = 0;
  std::optional<Timestamp> creation_time;  // absent = epoch
  std::vector<Pod> pods;
  bool admitted = false;
  std::optional<Timestamp> admission_time;  // absent = Snapshot.now
  bool one_pod_per_node = false;            // KAI placement: the group's pods on distinct nodes
  std::vector<PodSetFlavors> flavors;       // Kueue, admitted groups: the admission's flavors
};

struct QueueUsage {
  std::string queue;
  ResourceMap usage;
};

struct Snapshot {
  std::optional<Timestamp> now;
  std::vector<Queue> queues;
  std::vector<Node> nodes;
  std::vector<PodGroup> pod_groups;
  std::vector<QueueUsage> usage;
  ResourceMap usage_capacity;
  ResourceMap capacity;  // empty = Σ allocatable of schedulable nodes, per resource
  std::vector<ResourceFlavor> resource_flavors;  // Kueue §5.8
};

struct Policy {
  FairnessModel fairness_model = FairnessModel::kUnspecified;
  double k_value = 0;
  double reclaimer_utilization_multiplier = 0;  // 0 = 1
  Placement placement = Placement::kUnspecified;
  std::vector<Action> actions;  // empty = allocate, consolidate, reclaim, preempt
  std::vector<KueuePreemptionStrategy> kueue_preemption_strategies;
  std::optional<bool> consolidating_reclaim;                 // absent = true
  std::optional<int32_t> max_consolidation_preemptees;       // absent = 16
  Placement gpu_device_placement = Placement::kUnspecified;  // §4.13.3: UNSPECIFIED = placement
};

// §0.2: the phase a pod counts as; UNSPECIFIED is RUNNING when the pod has a node, else PENDING.
inline PodPhase EffectivePhase(const Pod& pod) {
  if (pod.phase != PodPhase::kUnspecified) return pod.phase;
  return pod.node_name.empty() ? PodPhase::kPending : PodPhase::kRunning;
}

// §0.7, KAI: whether the group may be evicted; UNSPECIFIED means priority below 100.
bool IsPreemptibleUnderKai(const PodGroup& group);

// ---- The answer ----

// Kueue: one flavor-resource of a queue (§5.8.9).
struct FlavorResourceShare {
  std::string flavor;
  std::string resource;
  double nominal = 0;
  double subtree_quota = 0;
  double usage = 0;
  double borrowed = 0;
};

struct QueueShare {
  std::string queue;
  ResourceMap deserved;
  ResourceMap fair_share;
  ResourceMap allocated;
  ResourceMap requested;
  double saturation = 0;
  double weighted_share = 0;
  std::string dominant_resource;
  bool borrowing = false;
  std::vector<FlavorResourceShare> flavor_resources;  // Kueue, flavored requests only
};

struct Binding {
  std::string pod_group;
  std::string pod;
  std::string node;
  bool after_evictions = false;
  std::vector<std::string> gpu_groups;  // §4.13: a sharing pod's device keys, ascending bytewise
};

struct Eviction {
  std::string pod_group;
  std::string pod;
  std::string node;
  EvictionReason reason = EvictionReason::kUnspecified;
  std::string preemptor_pod_group;
  std::string message;
};

struct Admission {
  std::string pod_group;
  std::string queue;
  bool after_evictions = false;
  std::vector<PodSetFlavors> pod_sets;  // flavored requests: each pod set's flavors, by name
};

struct PendingPodGroup {
  std::string pod_group;
  std::string reason;
  std::string message;
};

// A queue list as dense rows over one list of resource names, instead of one QueueShare (four
// maps of string keys) per queue: how KAI answers ComputeFairShares, one row per queue of the
// request, so that the answer is written straight from them. Row q is the q-th queue in name
// order: its name, its fair_share, allocated and requested amounts for every column (each listed,
// 0 included), its deserved as configured (a run of (column, amount) pairs, ascending), and its
// saturation. Kueue's weighted_share, dominant_resource and borrowing stay unset (0, "", false).
struct QueueShareRows {
  std::vector<std::string> resources;  // the columns, in bytewise order
  std::string names;                   // every row's queue name, back to back
  std::vector<uint32_t> name_ends;     // per row: one past its name in `names`
  std::vector<double> fair_share;      // per row, one amount per column: [row * columns + r]
  std::vector<double> allocated;
  std::vector<double> requested;
  std::vector<std::pair<int32_t, double>> deserved;  // every row's run of (column, amount)
  std::vector<uint32_t> deserved_ends;               // per row: one past its run in `deserved`
  std::vector<double> saturation;                    // per row

  int size() const { return static_cast<int>(name_ends.size()); }
  int columns() const { return static_cast<int>(resources.size()); }
  std::string_view name(int row) const {
    const uint32_t begin = row == 0 ? 0 : name_ends[row - 1];
    return std::string_view(names).substr(begin, name_ends[row] - begin);
  }
  // [begin, end) of row's run in `deserved`.
  std::pair<uint32_t, uint32_t> deserved_run(int row) const {
    return {row == 0 ? 0 : deserved_ends[row - 1], deserved_ends[row]};
  }
  // Row `row` as a QueueShare.
  QueueShare Share(int row) const;
};

struct FairShareResult {
  // The queue list in name order, in one of two forms: as QueueShares (Kueue), or as rows (KAI:
  // `queues` is then empty). QueueList reads either.
  std::vector<QueueShare> queues;
  QueueShareRows rows;
};

// The queue list of `result` as QueueShares, whichever form it is held in.
std::vector<QueueShare> QueueList(const FairShareResult& result);

struct ScheduleResult {
  std::vector<QueueShare> queues;        // name order
  std::vector<Binding> bindings;         // by (pod_group, pod)
  std::vector<Eviction> evictions;       // by (pod_group, pod)
  std::vector<Admission> admissions;     // by pod_group
  std::vector<PendingPodGroup> pending;  // by pod_group
};

}  // namespace arbiter
