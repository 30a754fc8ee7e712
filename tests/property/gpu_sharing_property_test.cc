// GPU sharing over generated KAI requests (SEMANTICS.md §4.13): at every step of the cycle (after
// each action, on the working state itself) no device holds more units than it has, the node's
// GPU pool counts exactly one GPU per active device (so a whole-GPU pod never lands on a shared
// device), draining devices count as releasing, and the largest free device share the pending
// messages name is the one every node weighed afresh gives; the answer, applied device by device,
// never over-commits a device or a node; the fast placement agrees with the reference scan; and the
// answer does not depend on input order; and the search's bounds change no answer, over-committed
// clusters included.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "clients/generator/generator.h"
#include "clients/generator/random.h"
#include "core/api/arbiter.h"
#include "core/kai/allocate.h"
#include "core/kai/consolidate.h"
#include "core/kai/gpu_devices.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/preempt.h"
#include "core/kai/reclaim.h"
#include "core/kai/session.h"
#include "core/validated_snapshot.h"
#include "gtest/gtest.h"
#include "tests/property/property_support.h"

namespace arbiter::testing {
namespace {

using generator::GeneratorModel;
using generator::GeneratorOptions;

// `make test` runs 300 cases; ARBITER_GPU_SHARING_CASES=N runs N.
const int kCases = CasesFromEnvironment("ARBITER_GPU_SHARING_CASES", 300);

GeneratorOptions SharingCase(uint64_t index) {
  GeneratorOptions options = PropertyCaseOptions(index, GeneratorModel::kKai);
  options.gpu_sharing = 20 + static_cast<double>(index % 5) * 20;  // 20% to 100%
  return options;
}

// A third of the cases spread, a third place devices apart from nodes.
Policy CasePolicy(uint64_t index, Policy policy) {
  generator::Rng rng(index * 7919 + 3);
  switch (rng.Below(3)) {
    case 0:
      policy.placement = Placement::kSpread;
      break;
    case 1:
      policy.gpu_device_placement = rng.Below(2) == 0 ? Placement::kSpread : Placement::kBinpack;
      break;
    default:
      break;
  }
  return policy;
}

bool Holds(kai::PodState state) {
  return state == kai::PodState::kRunning || state == kai::PodState::kBound ||
         state == kai::PodState::kMoved;
}

// The device and pool invariants of §4.13.2 on the working state, node by node.
absl::Status CheckDevices(const kai::Session& session, const std::vector<int64_t>& input_over) {
  const kai::Cluster& cluster = session.cluster();
  const kai::WorkingState& state = const_cast<kai::Session&>(session).state();
  const int gpu = cluster.node_gpu();
  const int g_index = cluster.gpu();
  std::map<int, int64_t> used;  // device slot -> units of the pods that hold it
  std::vector<double> staying(cluster.num_nodes(), 0.0);
  std::vector<double> leaving(cluster.num_nodes(), 0.0);
  for (int p = 0; p < cluster.num_pods(); ++p) {
    const kai::ClusterPod& pod = cluster.pod(p);
    const kai::PodState pod_state = state.pod_state(p);
    const int node = state.pod_node(p);
    if (node < 0 || pod_state == kai::PodState::kPending) continue;
    if (pod.shares()) {
      if (!Holds(pod_state)) continue;
      for (int j = 0; j < pod.gpu_devices; ++j) {
        used[state.pod_device(p, j)] += cluster.DeviceUnits(p, node);
      }
      continue;
    }
    const double g = g_index < 0 ? 0 : cluster.requests(p)[g_index];
    (Holds(pod_state) ? staying : leaving)[node] += g;
    // A moved pod also leaves its first node.
    if (pod_state == kai::PodState::kMoved) leaving[pod.node] += g;
  }
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    int active = 0;
    int draining = 0;
    for (int slot : state.node_devices(n)) {
      const int64_t units = state.device_used(slot);
      if (units != used[slot]) {
        return absl::InternalError(absl::StrCat("node ", cluster.node_name(n), " device ",
                                                state.device_key(slot), ": used ", units,
                                                " units, its pods hold ", used[slot]));
      }
      if (state.device_releasing(slot) < 0) {
        return absl::InternalError(
            absl::StrCat("device ", state.device_key(slot), ": negative releasing"));
      }
      const int64_t total = units + state.device_releasing(slot);
      if (total > cluster.node(n).device_units &&
          total > input_over[slot < static_cast<int>(input_over.size()) ? slot : 0]) {
        return absl::InternalError(absl::StrCat("node ", cluster.node_name(n), " device ",
                                                state.device_key(slot), " holds ", total,
                                                " units of ", cluster.node(n).device_units));
      }
      active += state.device_active(slot) ? 1 : 0;
      draining += state.device_draining(slot) ? 1 : 0;
    }
    if (gpu < 0) continue;
    // free = allocatable - what stays on the node, one GPU per active device included.
    const double expected = cluster.allocatable(n)[gpu] - staying[n] - active;
    if (std::fabs(state.free(n, gpu) - expected) > 1e-6) {
      return absl::InternalError(absl::StrCat("node ", cluster.node_name(n), ": free GPUs ",
                                              state.free(n, gpu), ", expected ", expected, " (",
                                              active, " active devices)"));
    }
    if (state.releasing(n, gpu) > leaving[n] + draining + 1e-6) {
      return absl::InternalError(absl::StrCat("node ", cluster.node_name(n), ": releasing GPUs ",
                                              state.releasing(n, gpu), " above ",
                                              leaving[n] + draining));
    }
  }
  return absl::OkStatus();
}

// Units on each input device before the cycle, where that is above the device's units (an
// over-committed snapshot is not an error, §4.13.6): such a device may stay as full.
std::vector<int64_t> InputOver(const kai::Session& session) {
  kai::WorkingState& state = const_cast<kai::Session&>(session).state();
  std::vector<int64_t> over(session.cluster().num_input_devices() + 1, 0);
  for (int slot = 0; slot < session.cluster().num_input_devices(); ++slot) {
    over[slot] = state.device_used(slot) + state.device_releasing(slot);
  }
  return over;
}

// Placer::LargestFreeShare, kept per pod shape and brought up to date from the nodes changed
// since, against every feasible node weighed afresh, for each pod that shares.
absl::Status CheckLargestFreeShares(kai::Session& session) {
  const kai::Cluster& cluster = session.cluster();
  kai::Feasibility& feasibility = session.feasibility();
  for (int p = 0; p < cluster.num_pods(); ++p) {
    const kai::ClusterPod& pod = cluster.pod(p);
    if (!pod.shares()) continue;
    kai::Placer::FreeShare fresh;
    for (const auto& feasible : feasibility.FeasibleClasses(feasibility.pod_signature(p))) {
      for (int node : feasibility.class_nodes(feasible.node_class)) {
        const double memory = cluster.node(node).node->gpu_device_memory;
        if (pod.gpu_memory > 0 && !(memory >= static_cast<double>(pod.gpu_memory))) continue;
        const double share = kai::LargestFreeDeviceShare(session.state(), node);
        if (fresh.node < 0 || share > fresh.share || (share == fresh.share && node < fresh.node)) {
          fresh = {node, share};
        }
      }
    }
    const kai::Placer::FreeShare kept = session.placer().LargestFreeShare(p);
    if (kept.node != fresh.node || kept.share != fresh.share) {
      return absl::InternalError(absl::StrCat("pod ", cluster.pod_name(p), ": kept ", kept.share,
                                              " on node ", kept.node, ", afresh ", fresh.share,
                                              " on node ", fresh.node));
    }
  }
  return absl::OkStatus();
}

TEST(GpuSharingProperty, DevicesAndThePoolAgreeAfterEveryAction) {
  int sharing_cases = 0;
  for (int index = 0; index < kCases; ++index) {
    const GeneratorOptions options = SharingCase(index);
    generator::GeneratedRequest request = generator::Generate(options);
    const Policy policy = CasePolicy(index, request.policy);
    absl::StatusOr<ValidatedSnapshot> validated =
        ValidatedSnapshot::Validate(request.snapshot, policy, RequestKind::kSchedule);
    ASSERT_TRUE(validated.ok()) << DescribeCase(index, options) << validated.status();
    const kai::KaiFairShare shares = kai::ComputeKaiFairShare(*validated);
    kai::Session session(shares);
    if (!session.cluster().any_sharing()) continue;
    ++sharing_cases;
    const std::vector<int64_t> over = InputOver(session);
    ASSERT_TRUE(CheckDevices(session, over).ok()) << DescribeCase(index, options) << " at start";
    ASSERT_TRUE(CheckLargestFreeShares(session).ok()) << DescribeCase(index, options);
    const std::pair<const char*, void (*)(kai::Session&)> steps[] = {
        {"allocate", kai::Allocate},
        {"consolidate", kai::Consolidate},
        {"reclaim", kai::Reclaim},
        {"preempt", kai::Preempt}};
    for (const auto& [name, run] : steps) {
      run(session);
      const absl::Status status = CheckDevices(session, over);
      ASSERT_TRUE(status.ok()) << DescribeCase(index, options) << " after " << name << ": "
                               << status;
      const absl::Status shares_status = CheckLargestFreeShares(session);
      ASSERT_TRUE(shares_status.ok())
          << DescribeCase(index, options) << " after " << name << ": " << shares_status;
    }
  }
  EXPECT_GT(sharing_cases, kCases / 2);
}

// The answer as an adapter applies it: each node's devices from the running pods' keys, minus
// the evicted, plus the bindings' keys. No device holds more units than it has and no node more
// GPUs (whole-GPU pods plus devices) than it has, unless the snapshot already did.
absl::Status CheckAppliedDevices(const Snapshot& snapshot, const ScheduleResult& result) {
  std::map<std::string, const Node*> nodes;
  for (const Node& node : snapshot.nodes) nodes[node.name] = &node;
  std::map<std::pair<std::string, std::string>, const Pod*> pods;  // (group, pod)
  for (const PodGroup& group : snapshot.pod_groups) {
    for (const Pod& pod : group.pods) pods[{group.name, pod.name}] = &pod;
  }
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::vector<std::string>>>
      where;  // (group, pod) -> (node, keys) after the answer
  for (const PodGroup& group : snapshot.pod_groups) {
    for (const Pod& pod : group.pods) {
      if (EffectivePhase(pod) == PodPhase::kRunning) {
        where[{group.name, pod.name}] = {pod.node_name, pod.gpu_groups};
      }
    }
  }
  for (const Eviction& eviction : result.evictions) where.erase({eviction.pod_group, eviction.pod});
  for (const Binding& binding : result.bindings) {
    where[{binding.pod_group, binding.pod}] = {binding.node, binding.gpu_groups};
  }
  const auto units = [&](const Pod& pod, const Node& node) -> double {
    const double m = node.gpu_device_memory > 0 ? node.gpu_device_memory : 100;
    if (pod.gpu_memory) return *pod.gpu_memory;
    return std::max(1.0, std::round(*pod.gpu_fraction * m));
  };
  std::map<std::pair<std::string, std::string>, double> device_units;  // (node, key)
  std::map<std::string, double> whole;
  for (const auto& [id, place] : where) {
    const Pod& pod = *pods[id];
    const Node& node = *nodes[place.first];
    if (!Shares(pod)) {
      const auto g = pod.requests.find("nvidia.com/gpu");
      if (g != pod.requests.end()) whole[node.name] += g->second;
      continue;
    }
    for (const std::string& key : place.second) device_units[{node.name, key}] += units(pod, node);
  }
  std::map<std::string, int> devices;
  for (const auto& [device, used] : device_units) {
    const Node& node = *nodes[device.first];
    const double m = node.gpu_device_memory > 0 ? node.gpu_device_memory : 100;
    ++devices[device.first];
    if (used > m) {
      return absl::InternalError(absl::StrCat("node ", device.first, " device ", device.second,
                                              " holds ", used, " units of ", m));
    }
  }
  for (const Node& node : snapshot.nodes) {
    const auto g = node.allocatable.find("nvidia.com/gpu");
    const double allocatable = g == node.allocatable.end() ? 0 : g->second;
    if (whole[node.name] + devices[node.name] > allocatable + 1e-9) {
      return absl::InternalError(absl::StrCat("node ", node.name, " holds ", whole[node.name],
                                              " whole GPUs and ", devices[node.name],
                                              " shared devices of ", allocatable));
    }
  }
  return absl::OkStatus();
}

// Generated snapshots never over-commit, so the answers must not either.
TEST(GpuSharingProperty, AppliedAnswersNeverOverCommitADevice) {
  int sharing_evicted = 0;  // the eviction actions are exercised on sharing victims
  int sharing_bound = 0;
  for (int index = 0; index < kCases; ++index) {
    const GeneratorOptions options = SharingCase(index);
    generator::GeneratedRequest request = generator::Generate(options);
    const Policy policy = CasePolicy(index, request.policy);
    ASSERT_TRUE(CheckAppliedDevices(request.snapshot, ScheduleResult{}).ok())
        << DescribeCase(index, options) << ": the generated snapshot over-commits";
    absl::StatusOr<ScheduleResult> result = Schedule(request.snapshot, policy);
    ASSERT_TRUE(result.ok()) << DescribeCase(index, options) << result.status();
    const absl::Status status = CheckAppliedDevices(request.snapshot, *result);
    EXPECT_TRUE(status.ok()) << DescribeCase(index, options) << ": " << status;
    for (const Binding& binding : result->bindings) sharing_bound += !binding.gpu_groups.empty();
    for (const Eviction& eviction : result->evictions) {
      for (const PodGroup& group : request.snapshot.pod_groups) {
        if (group.name != eviction.pod_group) continue;
        for (const Pod& pod : group.pods)
          sharing_evicted += pod.name == eviction.pod && Shares(pod);
      }
    }
  }
  EXPECT_GT(sharing_bound, kCases);
  EXPECT_GT(sharing_evicted, 10);
}

TEST(GpuSharingProperty, SameAnswerInAnyInputOrder) {
  for (int index = 0; index < kCases; index += 3) {
    const GeneratorOptions options = SharingCase(index);
    generator::GeneratedRequest request = generator::Generate(options);
    const Policy policy = CasePolicy(index, request.policy);
    absl::StatusOr<ScheduleResult> first = Schedule(request.snapshot, policy);
    absl::StatusOr<ScheduleResult> shuffled =
        Schedule(Permuted(request.snapshot, static_cast<uint64_t>(index) + 11), policy);
    ASSERT_TRUE(first.ok() && shuffled.ok()) << DescribeCase(index, options);
    EXPECT_EQ(DiffResults(*first, *shuffled), "") << DescribeCase(index, options);
  }
}

// The placement through the node index (nodes with devices on their own, the others as pods
// asking whole GPUs) and the scan of every feasible node (CycleHooks::reference_search) agree.
TEST(GpuSharingProperty, FastPlacementAgreesWithTheReferenceScan) {
  for (int index = 0; index < kCases; index += 2) {
    const GeneratorOptions options = SharingCase(index);
    generator::GeneratedRequest request = generator::Generate(options);
    const Policy policy = CasePolicy(index, request.policy);
    CycleHooks reference;
    reference.reference_search = true;
    absl::StatusOr<ScheduleResult> fast = Schedule(request.snapshot, policy);
    absl::StatusOr<ScheduleResult> scan = Schedule(request.snapshot, policy, reference);
    ASSERT_TRUE(fast.ok() && scan.ok()) << DescribeCase(index, options);
    EXPECT_EQ(DiffResults(*fast, *scan), "") << DescribeCase(index, options);
  }
}

// The snapshot as an over-committed cluster reports it (§4.13.6, "not errors"): on every node
// with a device, a non-preemptible group of the device's queue holds a RUNNING pod that takes
// the device above M_n, and on every other such node one more that holds a device of its own,
// beyond the node's GPUs when they are all taken. Each group and pod named "debt-<i>".
Snapshot OverCommitted(Snapshot snapshot) {
  std::map<std::string, std::pair<std::string, std::string>> devices;  // node: queue, key
  for (const PodGroup& group : snapshot.pod_groups) {
    for (const Pod& pod : group.pods) {
      if (pod.phase == PodPhase::kRunning && Shares(pod) && !pod.gpu_groups.empty()) {
        devices.try_emplace(pod.node_name, group.queue, pod.gpu_groups.front());
      }
    }
  }
  int i = 0;
  for (const auto& [node, device] : devices) {
    PodGroup debt;
    debt.name = absl::StrCat("debt-", i);
    debt.queue = device.first;
    debt.priority = 100;
    debt.preemptibility = Preemptibility::kNonPreemptible;
    Pod over;
    over.name = debt.name;
    over.node_name = node;
    over.phase = PodPhase::kRunning;
    over.gpu_fraction = 0.9;
    over.gpu_groups = {device.second};
    debt.pods.push_back(over);
    if (i % 2 == 0) {
      Pod pool = over;
      pool.name = absl::StrCat(debt.name, "-pool");
      pool.gpu_fraction = 0.5;
      pool.gpu_groups = {absl::StrCat("debt-", i)};
      debt.pods.push_back(pool);
    }
    snapshot.pod_groups.push_back(std::move(debt));
    ++i;
  }
  return snapshot;
}

// Answers case `index` (over-committed by OverCommitted when `over_committed`) with the search's
// bounds and with every try made and run to its end (CycleHooks::unbounded_search), expects the
// same answer, and adds the bounded search's skipped and stopped tries to `skipped` and
// `cut_short`.
void ExpectBoundsChangeNoAnswer(int index, bool over_committed, int64_t* skipped,
                                int64_t* cut_short) {
  const GeneratorOptions options = SharingCase(index);
  generator::GeneratedRequest request = generator::Generate(options);
  if (over_committed) request.snapshot = OverCommitted(std::move(request.snapshot));
  const Policy policy = CasePolicy(index, request.policy);
  CycleHooks bounded;
  bounded.phase_counters = [skipped, cut_short](
                               std::string_view,
                               const std::vector<std::pair<std::string_view, int64_t>>& counters) {
    for (const auto& [name, value] : counters) {
      if (name == "tries_skipped_count" || name == "tries_skipped_quota") *skipped += value;
      if (name == "tries_cut_short") *cut_short += value;
    }
  };
  CycleHooks unbounded;
  unbounded.unbounded_search = true;
  absl::StatusOr<ScheduleResult> fast = Schedule(request.snapshot, policy, bounded);
  absl::StatusOr<ScheduleResult> every_try = Schedule(request.snapshot, policy, unbounded);
  ASSERT_TRUE(fast.ok() && every_try.ok())
      << DescribeCase(index, options) << (fast.ok() ? every_try.status() : fast.status());
  EXPECT_EQ(DiffResults(*fast, *every_try), "")
      << DescribeCase(index, options) << (over_committed ? " over-committed" : "");
}

// The room bound counts a device's GPU for the pool only once every unit on it is evicted, the
// quota bound skips tries no victim set can lift, and a try stops once the victims re-placed
// before the preemptor leave too little room for its part (core/kai/solver_bounds.h,
// Solver::Try): with every try made and run to its end instead, the answers are the same, so
// the bounds skipped and stopped only tries that would fail.
TEST(GpuSharingProperty, SearchBoundsSkipOnlyTriesThatFail) {
  int64_t skipped = 0;
  int64_t cut_short = 0;
  for (int index = 1; index < kCases; index += 2) {
    ExpectBoundsChangeNoAnswer(index, /*over_committed=*/false, &skipped, &cut_short);
  }
  // The comparison means something only when the bounds skip tries and stop some.
  EXPECT_GT(skipped, 0);
  EXPECT_GT(cut_short, 0);
}

// A part whose pods share GPUs counts its room as a try goes too (RoomBound::PodsNow): G is the
// pool's free GPUs plus each active device's free share. These cases, chosen among 8,000, each
// give another answer when PodsNow leaves the devices' shares out (the try then stops while a
// device could still take the part's pod).
TEST(GpuSharingProperty, TriesOfASharingPartStopOnlyOnceTheDevicesHaveNoRoomLeft) {
  int64_t skipped = 0;
  int64_t cut_short = 0;
  for (int index : {317, 4093, 4489, 8331, 8631, 8693, 13923}) {
    ExpectBoundsChangeNoAnswer(index, /*over_committed=*/false, &skipped, &cut_short);
  }
  EXPECT_GT(cut_short, 0);
}

// The same on over-committed clusters (OverCommitted): a device above M_n and a pool with more
// devices than GPUs are debts that free nothing elsewhere, so the bounds count them as 0
// (ProvableDeviceRoom) and still skip and stop only tries that would fail.
TEST(GpuSharingProperty, SearchBoundsSkipOnlyTriesThatFailOnAnOverCommittedCluster) {
  int64_t skipped = 0;
  int64_t cut_short = 0;
  for (int index = 1; index < kCases; index += 2) {
    ExpectBoundsChangeNoAnswer(index, /*over_committed=*/true, &skipped, &cut_short);
  }
  EXPECT_GT(skipped, 0);
  EXPECT_GT(cut_short, 0);
}

}  // namespace
}  // namespace arbiter::testing
