// Whole-cycle scenarios (issue 3): each is a table test here, and the same request and the
// expected decisions are kept as proto3 JSON in tests/scenarios/kai/<name>/ for the scenario
// runner. This test fails when a file no longer matches its case; run it with
// ARBITER_UPDATE_SCENARIOS=1 to rewrite the files after a deliberate change.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/unit/kai/kai_test_util.h"
#include "tests/unit/kai/scenario_json.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::AllocateOnly;
using ::arbiter::testing::Bindings;
using ::arbiter::testing::Cpu;
using ::arbiter::testing::Gpu;
using ::arbiter::testing::Pending;
using ::arbiter::testing::SnapshotBuilder;

struct Scenario {
  std::string name;
  Snapshot snapshot;
  Policy policy;
  std::vector<std::string> bindings;        // "pod@node", "+" when pipelined
  std::vector<std::string> pending;         // "group:reason"
  std::vector<std::string> evictions = {};  // "pod@node REASON for preemptor"
};

std::string ReasonName(EvictionReason reason) {
  switch (reason) {
    case EvictionReason::kFairShareReclaim:
      return "FAIR_SHARE_RECLAIM";
    case EvictionReason::kQuotaReclaim:
      return "QUOTA_RECLAIM";
    case EvictionReason::kPriorityPreemption:
      return "PRIORITY_PREEMPTION";
    case EvictionReason::kConsolidation:
      return "CONSOLIDATION";
    default:
      return "OTHER";
  }
}

std::vector<std::string> Evictions(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Eviction& e : result.evictions) {
    out.push_back(e.pod + "@" + e.node + " " + ReasonName(e.reason) + " for " +
                  e.preemptor_pod_group);
  }
  return out;
}

std::vector<Scenario> Scenarios() {
  std::vector<Scenario> all;

  // A gang that fits only whole: "train" (3 × 4 GPUs) fits across both nodes; "eval" (2 × 2
  // GPUs) then finds 2 GPUs for one pod and none for the other, so neither is bound.
  all.push_back(Scenario{"gang_fits_only_whole",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(8))
                             .Node("node-b", Gpu(6))
                             .Queue("research")
                             .Group("eval", "research")
                             .Priority(1)
                             .MinMember(2)
                             .Pods(2, Gpu(2))
                             .Group("train", "research")
                             .Priority(2)
                             .MinMember(3)
                             .Pods(3, Gpu(4))
                             .Build(),
                         AllocateOnly(),
                         {"train-0@node-b", "train-1@node-a", "train-2@node-a"},
                         {"eval:gang-does-not-fit"}});

  // A limit up the tree: dept caps nvidia.com/gpu at 6 and team-b already runs 4, so team-a's
  // 2 × 2 GPU gang would take dept to 8, though the cluster has room. "solo" in another
  // department is placed.
  all.push_back(Scenario{"limit_up_the_tree",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(8))
                             .Node("node-b", Gpu(8))
                             .Queue("dept")
                             .Limit(Gpu(6))
                             .Queue("team-a", "dept")
                             .Queue("team-b", "dept")
                             .Queue("other")
                             .Group("busy", "team-b")
                             .RunningPods(2, Gpu(2), "node-a")
                             .Group("gang", "team-a")
                             .MinMember(2)
                             .Pods(2, Gpu(2))
                             .Group("solo", "other")
                             .Pods(1, Gpu(2))
                             .Build(),
                         AllocateOnly(),
                         {"solo-0@node-a"},
                         {"gang:queue-over-limit"}});

  // Non-preemptible work must fit in deserved (4 GPUs), counting only non-preemptible
  // allocation: "serve-2" would take it to 6; the preemptible "batch" may go above deserved.
  all.push_back(Scenario{"non_preemptible_over_quota",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(8))
                             .Node("node-b", Gpu(8))
                             .Queue("inference")
                             .Deserved(Gpu(4))
                             .Group("serve-1", "inference")
                             .Priority(100)
                             .RunningPods(1, Gpu(2), "node-a")
                             .Group("serve-2", "inference")
                             .Priority(100)
                             .Pods(1, Gpu(4))
                             .Group("batch", "inference")
                             .Priority(10)
                             .Pods(1, Gpu(6))
                             .Build(),
                         AllocateOnly(),
                         {"batch-0@node-a"},
                         {"serve-2:non-preemptible-over-quota"}});

  // Selectors and taints: h100 nodes are tainted for research; a-spot prefers no scheduling, so
  // "any" takes a100-1 although a-spot ties on score and sorts first, while "spot-ok", which
  // tolerates it, takes a-spot; the v100 node is unschedulable.
  all.push_back(Scenario{"selectors_and_taints",
                         SnapshotBuilder()
                             .Node("a100-1", Gpu(8))
                             .Label("gpu", "a100")
                             .Node("h100-1", Gpu(8))
                             .Label("gpu", "h100")
                             .Taint("dedicated", "research", "NoSchedule")
                             .Node("a-spot", Gpu(8))
                             .Label("gpu", "a100")
                             .Taint("spot", "true", "PreferNoSchedule")
                             .Node("v100-1", Gpu(8))
                             .Label("gpu", "v100")
                             .Unschedulable()
                             .Queue("team")
                             .Group("h100-tolerating", "team")
                             .Pod(Gpu(4))
                             .Selector("gpu", "h100")
                             .Tolerate("dedicated", "Equal", "research", "NoSchedule")
                             .Group("h100-plain", "team")
                             .Pod(Gpu(4))
                             .Selector("gpu", "h100")
                             .Group("any", "team")
                             .Pod(Gpu(8))
                             .Group("spot-ok", "team")
                             .Pod(Gpu(4))
                             .Tolerate("spot", "Exists", "", "")
                             .Group("v100", "team")
                             .Pod(Gpu(1))
                             .Selector("gpu", "v100")
                             .Build(),
                         AllocateOnly(),
                         {"any-0@a100-1", "h100-tolerating-0@h100-1", "spot-ok-0@a-spot"},
                         {"h100-plain:no-node-matches-selector", "v100:no-node-matches-selector"}});

  // Binpack versus spread on the same cluster: binpack fills the busier node first, spread
  // takes the node with the largest free fraction.
  auto placement_cluster = [] {
    return SnapshotBuilder()
        .Node("node-a", Gpu(8))
        .Node("node-b", Gpu(8))
        .Node("node-c", Gpu(4))
        .Queue("team")
        .Group("running", "team")
        .RunningPods(1, Gpu(4), "node-b")
        .Group("web", "team")
        .Pods(3, Gpu(2))
        .Build();
  };
  all.push_back(Scenario{"binpack",
                         placement_cluster(),
                         AllocateOnly(Placement::kBinpack),
                         {"web-0@node-b", "web-1@node-b", "web-2@node-c"},
                         {}});
  all.push_back(Scenario{"spread",
                         placement_cluster(),
                         AllocateOnly(Placement::kSpread),
                         {"web-0@node-a", "web-1@node-c", "web-2@node-a"},
                         {}});

  // Pipelined binding onto releasing pods: node-a is full of a releasing job. "small" fits now on
  // node-b; "gang" fits only on node-a's releasing capacity and is pipelined as a whole;
  // "late" finds nothing left to claim.
  all.push_back(
      Scenario{"pipelined_onto_releasing",
               SnapshotBuilder()
                   .Node("node-a", {{"cpu", 32000}, {"nvidia.com/gpu", 8}})
                   .Node("node-b", {{"cpu", 32000}, {"nvidia.com/gpu", 4}})
                   .Queue("team")
                   .Group("finished", "team")
                   .Pod({{"cpu", 8000}, {"nvidia.com/gpu", 8}}, "node-a", PodPhase::kReleasing)
                   .Group("small", "team")
                   .Priority(3)
                   .Pods(1, Gpu(4))
                   .Group("gang", "team")
                   .Priority(2)
                   .MinMember(2)
                   .Pods(2, Gpu(4))
                   .Group("late", "team")
                   .Priority(1)
                   .Pods(1, Gpu(2))
                   .Build(),
               AllocateOnly(),
               {"gang-0@node-a+", "gang-1@node-a+", "small-0@node-b"},
               {"finished:gang-incomplete", "late:insufficient-resources"}});

  // Issue 4: a team reclaims its deserved quota from a team that borrowed it. team-b holds all 8
  // GPUs with deserved 4 (and fair share 4, since team-a asks for its deserved 4); team-a's
  // 2 × 2 GPU gang is within its fair share, and team-b's elastic group gives up its last two
  // pods, one at a time, each while team-b is above its allocatable share: fair-share reclaim.
  all.push_back(Scenario{"reclaim_deserved_quota",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(8))
                             .Queue("team-a")
                             .Deserved(Gpu(4))
                             .Queue("team-b")
                             .Deserved(Gpu(4))
                             .Group("borrowed", "team-b")
                             .RunningPods(4, Gpu(2), "node-a")
                             .Group("train", "team-a")
                             .MinMember(2)
                             .Pods(2, Gpu(2))
                             .Build(),
                         Policy{},
                         {"train-0@node-a+", "train-1@node-a+"},
                         {},
                         {"borrowed-2@node-a FAIR_SHARE_RECLAIM for train",
                          "borrowed-3@node-a FAIR_SHARE_RECLAIM for train"}});

  // Issue 4: a lower-priority job is preempted in the same queue.
  all.push_back(Scenario{"preempt_lower_priority",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(4))
                             .Queue("team")
                             .Deserved(Gpu(4))
                             .Group("batch", "team")
                             .Priority(10)
                             .MinMember(2)
                             .RunningPods(2, Gpu(2), "node-a")
                             .Group("urgent", "team")
                             .Priority(50)
                             .Pods(1, Gpu(4))
                             .Build(),
                         Policy{},
                         {"urgent-0@node-a+"},
                         {},
                         {"batch-0@node-a PRIORITY_PREEMPTION for urgent",
                          "batch-1@node-a PRIORITY_PREEMPTION for urgent"}});

  // Issue 4: consolidation lets a 4-GPU job fit on a fragmented node set: three 4-GPU nodes
  // each hold one 2-GPU pod; one pod moves next to another and frees a whole node.
  all.push_back(Scenario{"consolidate_fragmented",
                         SnapshotBuilder()
                             .Node("node-a", Gpu(4))
                             .Node("node-b", Gpu(4))
                             .Node("node-c", Gpu(4))
                             .Queue("team")
                             .Group("web-a", "team")
                             .RunningPods(1, Gpu(2), "node-a")
                             .Group("web-b", "team")
                             .RunningPods(1, Gpu(2), "node-b")
                             .Group("web-c", "team")
                             .RunningPods(1, Gpu(2), "node-c")
                             .Group("train", "team")
                             .Pods(1, Gpu(4))
                             .Build(),
                         Policy{},
                         {"train-0@node-c+", "web-c-0@node-a+"},
                         {},
                         {"web-c-0@node-c CONSOLIDATION for train"}});
  return all;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class ScenarioTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(ScenarioTest, DecisionsAndFiles) {
  const Scenario& s = GetParam();
  ScheduleResult result = arbiter::testing::RunCycle(s.snapshot, s.policy);
  EXPECT_EQ(Bindings(result), s.bindings);
  EXPECT_EQ(Pending(result), s.pending);
  EXPECT_EQ(Evictions(result), s.evictions);

  const std::filesystem::path dir =
      std::filesystem::path(ARBITER_SOURCE_DIR) / "tests/scenarios/kai" / s.name;
  const std::string request = arbiter::testing::RequestJson(s.snapshot, s.policy);
  const std::string expected = arbiter::testing::DecisionsJson(result);
  if (std::getenv("ARBITER_UPDATE_SCENARIOS") != nullptr) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "request.json") << request;
    std::ofstream(dir / "expected.json") << expected;
  }
  EXPECT_EQ(ReadFile(dir / "request.json"), request);
  EXPECT_EQ(ReadFile(dir / "expected.json"), expected);
}

INSTANTIATE_TEST_SUITE_P(Kai, ScenarioTest, ::testing::ValuesIn(Scenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace arbiter::kai
