// The working state of a cycle (SEMANTICS.md §4.1) and its statements: rollback restores every
// value exactly, statements nest, evictions move requests from used to releasing.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/kai/kai_fair_share.h"
#include "core/kai/session.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::SnapshotBuilder;

Snapshot Cluster3() {
  return SnapshotBuilder()
      .Node("n1", {{"cpu", 10}, {"nvidia.com/gpu", 1}})
      .Node("n2", {{"cpu", 10}, {"nvidia.com/gpu", 1}})
      .Queue("dept")
      .Queue("team", "dept")
      .Queue("other", "dept")
      .Group("np", "team")
      .Preemptible(Preemptibility::kNonPreemptible)
      .RunningPods(1, {{"cpu", 0.1}}, "n1")
      .Group("run", "other")
      .RunningPods(2, {{"cpu", 0.2}}, "n2")
      .Group("job", "team")
      .Pods(3, {{"cpu", 0.3}, {"nvidia.com/gpu", 0.1}})
      .Build();
}

// Everything observable, as a string of exact values.
std::string Dump(const Cluster& cluster, const WorkingState& state) {
  std::string out;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    for (int k = 0; k < cluster.num_node_resources(); ++k) {
      out += std::to_string(state.idle(n, k)) + "/" + std::to_string(state.releasing(n, k)) + " ";
    }
  }
  for (int q = 0; q < cluster.tree().size(); ++q) {
    for (int r = 0; r < cluster.num_resources(); ++r) {
      out += std::to_string(state.allocated(q)[r]) + "," + std::to_string(state.allocated_np(q)[r]);
    }
  }
  for (int p = 0; p < cluster.num_pods(); ++p) {
    out += std::to_string(static_cast<int>(state.pod_state(p))) + std::to_string(state.pod_node(p));
  }
  for (int g = 0; g < cluster.num_groups(); ++g) {
    out += std::to_string(state.active(g)) + std::to_string(state.pending_left(g));
  }
  return out;
}

struct Fixture {
  Fixture() : Fixture(Cluster3()) {}
  explicit Fixture(Snapshot built) : snapshot(std::move(built)) {}
  Snapshot snapshot;
  KaiFairShare shares = ::arbiter::testing::KaiFairShareOf(snapshot, Policy{});
  Session session{shares};
  const Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  int Group(const std::string& name) {
    for (int g = 0; g < cluster.num_groups(); ++g) {
      if (cluster.group_name(g) == name) return g;
    }
    return -1;
  }
};

TEST(WorkingState, RollbackRestoresEveryValueExactly) {
  Fixture f;
  const std::string before = Dump(f.cluster, f.state);
  const int job = f.Group("job");
  const int run = f.Group("run");
  WorkingState::Mark mark = f.state.Checkpoint();
  f.state.Bind(f.state.pending_pod(job, 0), 0, false);
  f.state.Bind(f.state.pending_pod(job, 0), 1, true);
  f.state.Evict(f.cluster.group(run).first_pod);
  f.state.Relocate(f.cluster.group(run).first_pod, 0);
  EXPECT_NE(Dump(f.cluster, f.state), before);
  f.state.Rollback(mark);
  EXPECT_EQ(Dump(f.cluster, f.state), before);
  // The node index was re-keyed too: the pod is placed as before the statement.
  EXPECT_EQ(f.session.placer().Choose(f.state.pending_pod(job, 0)).node, 0);
}

// While the index is frozen a changed node is only noted; the thaw hands the index each noted
// node's amounts, so a statement committed while frozen re-keys the index as if it had not been.
TEST(WorkingState, ChangesWhileTheIndexIsFrozenReachItAtTheThaw) {
  Fixture kept;
  Fixture fresh;
  const int job = kept.Group("job");
  const int run = kept.Group("run");
  const int cpu = kept.cluster.NodeSpaceOf(kept.cluster.resources().Find("cpu"));
  const int node_class = kept.session.feasibility().node_class(1);
  kept.state.FreezeIndex();
  WorkingState::Mark mark = kept.state.Checkpoint();
  kept.state.Evict(kept.cluster.group(run).first_pod);
  kept.state.Bind(kept.state.pending_pod(job, 0), 0, true);
  kept.state.Commit(mark);
  // Frozen: the index still holds the amounts of before the statement.
  const double before = fresh.session.index().LargestFree(node_class, cpu).free;
  EXPECT_EQ(kept.session.index().LargestFree(node_class, cpu).free, before);
  kept.state.ThawIndex();
  // The same changes made with the index awake.
  mark = fresh.state.Checkpoint();
  fresh.state.Evict(fresh.cluster.group(run).first_pod);
  fresh.state.Bind(fresh.state.pending_pod(job, 0), 0, true);
  fresh.state.Commit(mark);
  EXPECT_NE(fresh.session.index().LargestFree(node_class, cpu).free, before);
  for (int r = 0; r < kept.cluster.num_node_resources(); ++r) {
    EXPECT_EQ(kept.session.index().LargestFree(node_class, r).free,
              fresh.session.index().LargestFree(node_class, r).free);
    EXPECT_EQ(kept.session.index().LargestFree(node_class, r).node,
              fresh.session.index().LargestFree(node_class, r).node);
  }
  EXPECT_EQ(kept.session.placer().Choose(kept.state.pending_pod(job, 0)).node,
            fresh.session.placer().Choose(fresh.state.pending_pod(job, 0)).node);
}

// The generation of the state a try starts from (what the placer's remembered answers are kept
// by): a try rolled back restores it, as do statements inside the try; committing the try, a
// change outside any statement, and a statement ended outside a frozen try change it.
TEST(WorkingState, TheBaseGenerationMovesOnlyWhenTheStateATryStartsFromChanges) {
  Fixture f;
  const int job = f.Group("job");
  const int run = f.Group("run");
  uint64_t generation = f.state.base_generation();
  f.state.FreezeIndex();
  WorkingState::Mark mark = f.state.Checkpoint();
  f.state.Evict(f.cluster.group(run).first_pod);
  WorkingState::Mark inner = f.state.Checkpoint();
  f.state.Bind(f.state.pending_pod(job, 0), 0, true);
  f.state.Commit(inner);
  inner = f.state.Checkpoint();
  f.state.Bind(f.state.pending_pod(job, 0), 1, true);
  f.state.Rollback(inner);
  EXPECT_EQ(f.state.base_generation(), generation);
  f.state.Rollback(mark);
  f.state.ThawIndex();
  EXPECT_EQ(f.state.base_generation(), generation) << "a try rolled back";
  f.state.FreezeIndex();
  mark = f.state.Checkpoint();
  f.state.Bind(f.state.pending_pod(job, 0), 0, true);
  f.state.Commit(mark);
  f.state.ThawIndex();
  EXPECT_NE(f.state.base_generation(), generation) << "a try committed";
  generation = f.state.base_generation();
  f.state.Bind(f.state.pending_pod(job, 0), 1, false);
  EXPECT_NE(f.state.base_generation(), generation) << "a change outside any statement";
  generation = f.state.base_generation();
  mark = f.state.Checkpoint();
  f.state.Bind(f.state.pending_pod(job, 0), 0, false);
  f.state.Rollback(mark);
  EXPECT_NE(f.state.base_generation(), generation) << "a statement ended outside a frozen try";
}

TEST(WorkingState, StatementsNest) {
  Fixture f;
  const std::string before = Dump(f.cluster, f.state);
  const int job = f.Group("job");
  WorkingState::Mark outer = f.state.Checkpoint();
  f.state.Bind(f.state.pending_pod(job, 0), 0, false);
  const std::string middle = Dump(f.cluster, f.state);
  WorkingState::Mark inner = f.state.Checkpoint();
  f.state.Bind(f.state.pending_pod(job, 0), 0, false);
  f.state.Rollback(inner);
  EXPECT_EQ(Dump(f.cluster, f.state), middle);
  inner = f.state.Checkpoint();
  f.state.Bind(f.state.pending_pod(job, 0), 0, false);
  f.state.Commit(inner);
  f.state.Rollback(outer);  // undoes the committed inner statement too
  EXPECT_EQ(Dump(f.cluster, f.state), before);
}

TEST(WorkingState, EvictionMovesRequestsFromUsedToReleasing) {
  Fixture f;
  const int run = f.Group("run");
  const int pod = f.cluster.group(run).first_pod;
  const int cpu = f.cluster.resources().Find("cpu");
  const int node_cpu = f.cluster.NodeSpaceOf(cpu);  // node amounts span the node resources
  const int other = f.cluster.tree().Find("other");
  const double idle = f.state.idle(1, node_cpu);
  const double free = f.state.free(1, node_cpu);
  f.state.Evict(pod);
  // Decimal amounts round in the last bit: compare within an ulp here.
  EXPECT_DOUBLE_EQ(f.state.idle(1, node_cpu), idle);
  EXPECT_EQ(f.state.releasing(1, node_cpu), 0.2);
  EXPECT_GT(f.state.free(1, node_cpu), free);
  EXPECT_EQ(f.state.allocated(other)[cpu], 0.2);
  EXPECT_EQ(f.state.active(run), 1);
  EXPECT_EQ(f.state.pod_state(pod), PodState::kEvicted);
}

TEST(WorkingState, PipelinedClaimTakesReleasingFirstThenIdle) {
  Fixture f;
  const int run = f.Group("run");
  const int job = f.Group("job");
  const int cpu = f.cluster.NodeSpaceOf(f.cluster.resources().Find("cpu"));
  f.state.Evict(f.cluster.group(run).first_pod);  // 0.2 cpu releasing on n2
  const double idle = f.state.idle(1, cpu);
  f.state.Bind(f.state.pending_pod(job, 0), 1, true);  // needs 0.3 cpu
  EXPECT_EQ(f.state.releasing(1, cpu), 0);
  EXPECT_DOUBLE_EQ(f.state.idle(1, cpu), idle - (0.3 - 0.2));
}

TEST(WorkingState, NonPreemptibleAllocationFollowsDecisions) {
  Fixture f;
  const int np = f.Group("np");
  const int cpu = f.cluster.resources().Find("cpu");
  const int team = f.cluster.tree().Find("team");
  const int dept = f.cluster.tree().Find("dept");
  EXPECT_EQ(f.state.allocated_np(team)[cpu], 0.1);
  EXPECT_EQ(f.state.allocated_np(dept)[cpu], 0.1);
  f.state.Evict(f.cluster.group(np).first_pod);
  EXPECT_EQ(f.state.allocated_np(team)[cpu], 0);
  EXPECT_EQ(f.state.allocated_np(dept)[cpu], 0);
}

// ---- GPU devices (§4.13.2) ----

Snapshot SharingCluster() {
  return SnapshotBuilder()
      .Node("n1", {{"cpu", 10}, {"nvidia.com/gpu", 2}})
      .Node("n2", {{"cpu", 10}, {"nvidia.com/gpu", 2}})
      .Queue("team")
      .Group("run", "team")
      .Pod({{"cpu", 1}}, "n1", PodPhase::kRunning)
      .GpuFraction(0.5)
      .GpuGroups({"k"})
      .Pod({{"cpu", 1}}, "n1", PodPhase::kReleasing)
      .GpuFraction(0.25)
      .GpuGroups({"k"})
      .Group("job", "team")
      .Pod({{"cpu", 1}})
      .GpuFraction(0.5)
      .GpuDevices(2)
      .Build();
}

// Devices, the pool and the pods' devices, as a string of exact values.
std::string DumpDevices(const Cluster& cluster, const WorkingState& state) {
  std::string out = Dump(cluster, state);
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    for (int slot : state.node_devices(n)) {
      // A slot whose units are all 0 does not exist (it may be opened again).
      if (state.device_used(slot) == 0 && state.device_releasing(slot) == 0) continue;
      out += " " + state.device_key(slot) + ":" + std::to_string(state.device_used(slot)) + "/" +
             std::to_string(state.device_releasing(slot));
    }
  }
  return out;
}

TEST(WorkingStateDevices, RollbackRestoresDevicesAndThePoolExactly) {
  Fixture f(SharingCluster());
  const Cluster& cluster = f.cluster;
  WorkingState& state = f.state;
  const int gpu = cluster.node_gpu();
  // One active device: the pool has 1 used; the releasing quarter stays on the device.
  EXPECT_EQ(state.idle(0, gpu), 1);
  const std::string before = DumpDevices(cluster, state);
  // Groups in name order: job (0), run (1).
  const int run_pod = cluster.group(1).first_pod;
  WorkingState::Mark mark = state.Checkpoint();
  const int pending = state.pending_pod(0, 0);
  DeviceChoice choice{{state.node_devices(0)[0], kNewDevice}, false};
  state.Bind(pending, 0, /*after_evictions=*/true, &choice);
  EXPECT_EQ(state.device_key(state.pod_device(pending, 1)), "new-0");
  state.Evict(run_pod);
  state.Restore(run_pod);
  EXPECT_NE(DumpDevices(cluster, state), before);
  state.Rollback(mark);
  EXPECT_EQ(DumpDevices(cluster, state), before);
}

// Evicting the last running pod of a device drains it: one GPU moves from used to releasing in
// the pool; restoring it makes it active again.
TEST(WorkingStateDevices, AnEvictionThatEmptiesADeviceDrainsIt) {
  Fixture f(SharingCluster());
  const Cluster& cluster = f.cluster;
  WorkingState& state = f.state;
  const int gpu = cluster.node_gpu();
  const int run_pod = cluster.group(1).first_pod;
  ASSERT_EQ(state.pod_state(run_pod), PodState::kRunning);
  WorkingState::Mark mark = state.Checkpoint();
  state.Evict(run_pod);
  const int device = state.pod_device(run_pod, 0);
  EXPECT_TRUE(state.device_draining(device));
  EXPECT_EQ(state.idle(0, gpu), 1);
  EXPECT_EQ(state.releasing(0, gpu), 1);
  state.Restore(run_pod);
  EXPECT_TRUE(state.device_active(device));
  EXPECT_EQ(state.releasing(0, gpu), 0);
  state.Rollback(mark);
}

// The joinable tree's G column counts the devices a pod could take (§4.13.4's device choice): the
// active devices, plus the pool's idle GPUs for a fit now, or its whole free GPUs once releasing
// pods are gone. On n1 one device is active and the other GPU is held by a releasing whole-GPU
// pod: a pod of two devices (one joined, one opened) fits there only once that pod has left (on
// n2 a running whole-GPU pod leaves none), and a pod of one device joins now. The memory column
// holds the device room in units where the devices' memory is known, and -inf on n2, whose memory
// is not: no memory pod joins there.
TEST(WorkingStateDevices, TheJoinableTreeCountsTheDevicesAPodCouldTake) {
  Fixture f(SnapshotBuilder()
                .Node("n1", {{"cpu", 10}, {"nvidia.com/gpu", 2}})
                .DeviceMemory(40000)
                .Node("n2", {{"cpu", 10}, {"nvidia.com/gpu", 2}})
                .Queue("team")
                .Group("run", "team")
                .Pod({{"cpu", 1}}, "n1", PodPhase::kRunning)
                .GpuMemory(10000)
                .GpuGroups({"k"})
                .Pod({{"cpu", 1}}, "n2", PodPhase::kRunning)
                .GpuFraction(0.5)
                .GpuGroups({"j"})
                .Group("whole", "team")
                .Pod({{"cpu", 1}, {"nvidia.com/gpu", 1}}, "n1", PodPhase::kReleasing)
                .Pod({{"cpu", 1}, {"nvidia.com/gpu", 1}}, "n2", PodPhase::kRunning)
                .Build());
  const Cluster& cluster = f.cluster;
  const CapacityTree& tree = f.state.joinable_tree();
  const int rn = cluster.num_node_resources();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> request(static_cast<size_t>(rn + WorkingState::kJoinableColumns), 0.0);
  request[cluster.node_cpu()] = 1;
  request[rn] = 0.25;  // a quarter of a device
  auto found = [&](bool now) {
    const CapacityTree::Found first = tree.FindFirst(-kInf, -1, kInf, request.data(), now);
    return first.slot < 0 ? std::string("none") : cluster.node_name(tree.member(first.slot));
  };
  request[cluster.node_gpu()] = 2;
  EXPECT_EQ(found(/*now=*/true), "none");
  EXPECT_EQ(found(/*now=*/false), "n1");
  request[cluster.node_gpu()] = 1;
  EXPECT_EQ(found(/*now=*/true), "n2");  // fewer free GPUs: first in binpack's order
  // A memory pod of 30,000 of n1's 40,000 units: n1's device has 30,000 left, n2 is out.
  request[rn + 1] = 30000;
  EXPECT_EQ(found(/*now=*/true), "n1");
  request[rn + 1] = 30001;
  EXPECT_EQ(found(/*now=*/true), "none");
}

// A pod that joins a device asks for cpu and a share of one: the joinable tree pairs the two
// columns, cpu as a share of the nodes' mean (here (10 + 30) / 2 = 20 cpus) and the device share
// as it is, so that a subtree whose members each lack one of them is passed over.
TEST(WorkingStateDevices, TheJoinableTreePairsCpuWithTheDeviceShare) {
  Fixture f(SnapshotBuilder()
                .Node("n1", {{"cpu", 10}, {"nvidia.com/gpu", 2}})
                .Node("n2", {{"cpu", 30}, {"nvidia.com/gpu", 2}})
                .Queue("team")
                .Group("run", "team")
                .Pod({{"cpu", 1}}, "n1", PodPhase::kRunning)
                .GpuFraction(0.5)
                .GpuGroups({"k"})
                .Build());
  const CapacityTree::Pair& pair = f.state.joinable_tree().pair();
  EXPECT_EQ(pair.a, f.cluster.node_cpu());
  EXPECT_EQ(pair.b, f.cluster.num_node_resources());  // the share column
  EXPECT_DOUBLE_EQ(pair.weight_a, 1.0 / 20);
  EXPECT_EQ(pair.weight_b, 1.0);
}

// The pairs' weight: the inverse of a resource's mean allocatable over the members, and 0 (no
// pair) for a resource no node has, no members, or a mean of 0.
TEST(WorkingStateDevices, ShareWeightIsTheInverseOfTheMeanAllocatable) {
  Fixture f(SnapshotBuilder()
                .Node("n1", {{"cpu", 10}, {"memory", 0}})
                .Node("n2", {{"cpu", 30}, {"memory", 0}})
                .Queue("team")
                .Build());
  const Cluster& cluster = f.cluster;
  const int memory = cluster.NodeSpaceOf(cluster.resources().Find("memory"));
  ASSERT_GE(memory, 0);
  EXPECT_DOUBLE_EQ(ShareWeight(cluster, {0, 1}, cluster.node_cpu()), 1.0 / 20);
  EXPECT_DOUBLE_EQ(ShareWeight(cluster, {1}, cluster.node_cpu()), 1.0 / 30);
  EXPECT_EQ(ShareWeight(cluster, {}, cluster.node_cpu()), 0);
  EXPECT_EQ(ShareWeight(cluster, {0, 1}, -1), 0);
  EXPECT_EQ(ShareWeight(cluster, {0, 1}, memory), 0);
}

// In a frozen try the joinable devices are read as at the freeze: the placer weighs the nodes the
// try changed on its own, and keeps the tree's best for a pod from one try to the next (from the
// same starting state), weighing the nodes that were stale when it found it. n1's device k has
// room for half a GPU, so p joins it outside any try. Try A evicts r1: k drains, no node has a
// joinable device, and p takes a new device on n2, the fullest node with a GPU free. Try B evicts
// a cpu pod on n4 only: the answer kept from try A (no joinable node but n1, which was stale then)
// still holds, and n1, not stale now, is weighed again: p joins k, where a pod asking a whole GPU
// would go to n2. n3 (no GPU free) and n4 (four free) keep binpack's range the same.
TEST(WorkingStateDevices, AFrozenTryWeighsTheNodesItChangedAndThoseStaleWhenItsAnswerWasKept) {
  Fixture f(SnapshotBuilder()
                .Node("n1", {{"cpu", 10}, {"nvidia.com/gpu", 3}})
                .Node("n2", {{"cpu", 10}, {"nvidia.com/gpu", 2}})
                .Node("n3", {{"cpu", 10}, {"nvidia.com/gpu", 2}})
                .Node("n4", {{"cpu", 10}, {"nvidia.com/gpu", 4}})
                .Queue("team")
                .Group("a-run", "team")
                .Pod({{"cpu", 1}}, "n1", PodPhase::kRunning)
                .GpuFraction(0.5)
                .GpuGroups({"k"})
                .Group("b-run", "team")
                .Pod({{"cpu", 1}}, "n2", PodPhase::kRunning)
                .GpuFraction(0.75)
                .GpuGroups({"j"})
                .Group("c-whole", "team")
                .RunningPods(2, {{"cpu", 1}, {"nvidia.com/gpu", 1}}, "n3")
                .Group("d-cpu", "team")
                .RunningPods(1, {{"cpu", 1}}, "n4")
                .Group("e-job", "team")
                .Pod({{"cpu", 1}})
                .GpuFraction(0.5)
                .Build());
  const Cluster& cluster = f.cluster;
  WorkingState& state = f.state;
  Placer& placer = f.session.placer();
  const int pod = state.pending_pod(f.Group("e-job"), 0);
  const int n1 = 0;
  const int k = state.node_devices(n1)[0];
  const auto choose = [&](int evicted) {
    state.FreezeIndex();
    const WorkingState::Mark mark = state.Checkpoint();
    placer.SetOverlay(&mark);
    state.Evict(evicted);
    const NodeChoice choice = placer.Choose(pod);
    state.Rollback(mark);
    placer.SetOverlay(nullptr);
    state.ThawIndex();
    return choice;
  };
  const NodeChoice outside = placer.Choose(pod);
  EXPECT_EQ(outside.node, n1);
  EXPECT_EQ(outside.devices.devices, std::vector<int>{k});
  const uint64_t generation = state.base_generation();
  const NodeChoice a = choose(cluster.group(f.Group("a-run")).first_pod);
  EXPECT_EQ(a.node, 1);
  EXPECT_EQ(a.devices.devices, std::vector<int>{kNewDevice});
  const NodeChoice b = choose(cluster.group(f.Group("d-cpu")).first_pod);
  EXPECT_EQ(b.node, n1);
  EXPECT_EQ(b.devices.devices, std::vector<int>{k});
  EXPECT_EQ(state.base_generation(), generation);
}

}  // namespace
}  // namespace arbiter::kai
