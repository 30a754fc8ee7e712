// The generator's GPU sharing mix (docs/generator.md, "GPU sharing"; SEMANTICS §4.13): valid,
// deterministic, about the asked percentage of the GPU pods, devices never over-committed, and
// with the option at 0 (the default) exactly the request without it.
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/generator/generator.h"
#include "core/validated_snapshot.h"
#include "core/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property/property_support.h"
#include "tests/support/status_matchers.h"

namespace arbiter::testing {
namespace {

using generator::GeneratedRequest;
using generator::GeneratorModel;
using generator::GeneratorOptions;

double Gpu(const ResourceMap& m) {
  const auto it = m.find("nvidia.com/gpu");
  return it == m.end() ? 0 : it->second;
}

// Every field the generator sets on nodes and pods, the sharing fields included, as text.
std::string Dump(const Snapshot& s) {
  std::string out;
  for (const Node& n : s.nodes) {
    absl::StrAppend(&out, n.name, " ", n.gpu_device_memory, " ", n.unschedulable);
    for (const auto& [r, v] : n.allocatable) absl::StrAppend(&out, " ", r, "=", v);
    out += "\n";
  }
  for (const PodGroup& g : s.pod_groups) {
    absl::StrAppend(&out, g.name, " ", g.queue, " ", g.min_member, "\n");
    for (const Pod& p : g.pods) {
      absl::StrAppend(&out, " ", p.name, " ", p.node_name, " ", static_cast<int>(p.phase),
                      " f=", p.gpu_fraction ? absl::StrCat(*p.gpu_fraction) : "-",
                      " m=", p.gpu_memory ? absl::StrCat(*p.gpu_memory) : "-",
                      " d=", p.gpu_fraction_devices, " [", absl::StrJoin(p.gpu_groups, ","), "]");
      for (const auto& [r, v] : p.requests) absl::StrAppend(&out, " ", r, "=", v);
      out += "\n";
    }
  }
  for (const Queue& q : s.queues) {
    absl::StrAppend(&out, q.name, " ", q.parent);
    for (const auto& [r, v] : q.deserved) absl::StrAppend(&out, " d:", r, "=", v);
    for (const auto& [r, v] : q.limit) absl::StrAppend(&out, " l:", r, "=", v);
    out += "\n";
  }
  return out;
}

GeneratorOptions Sharing(GeneratorOptions options, double percent) {
  options.gpu_sharing = percent;
  return options;
}

// A cluster large enough for the mix's shares to show: the M preset (1,000 nodes, 12,000 pods).
GeneratorOptions MidSize(uint64_t seed) {
  GeneratorOptions o = *generator::SizePreset("M");
  o.seed = seed;
  return o;
}

struct Mix {
  int gpu_pods = 0;  // pods that ask for GPUs, whole or shared
  int sharing = 0, fraction = 0, memory = 0, two_devices = 0, running_sharing = 0;
  std::set<double> fractions, memories, device_memories;
  int unknown_memory_gpu_nodes = 0;
};

Mix MixOf(const Snapshot& s) {
  Mix mix;
  for (const Node& n : s.nodes) {
    if (Gpu(n.allocatable) <= 0) continue;
    if (n.gpu_device_memory == 0) ++mix.unknown_memory_gpu_nodes;
    mix.device_memories.insert(n.gpu_device_memory);
  }
  for (const PodGroup& g : s.pod_groups) {
    if (g.name.rfind("reclaim-", 0) == 0) continue;  // never share
    for (const Pod& p : g.pods) {
      if (!Shares(p)) {
        mix.gpu_pods += Gpu(p.requests) > 0;
        continue;
      }
      ++mix.gpu_pods;
      ++mix.sharing;
      if (p.gpu_fraction) ++mix.fraction, mix.fractions.insert(*p.gpu_fraction);
      if (p.gpu_memory) ++mix.memory, mix.memories.insert(*p.gpu_memory);
      mix.two_devices += p.gpu_fraction_devices == 2;
      mix.running_sharing += EffectivePhase(p) != PodPhase::kPending;
    }
  }
  return mix;
}

// §4.13's device state of the input: per device Σ units <= the device, per node the GPUs that
// do not share plus the devices <= allocatable; keys name one of the node's GPUs.
absl::Status CheckDevices(const Snapshot& s) {
  std::map<std::string, const Node*> nodes;
  for (const Node& n : s.nodes) nodes[n.name] = &n;
  std::map<std::string, double> whole;                            // by node
  std::map<std::string, std::map<std::string, int64_t>> devices;  // by node, key: units
  for (const PodGroup& g : s.pod_groups) {
    for (const Pod& p : g.pods) {
      if (EffectivePhase(p) == PodPhase::kPending) {
        if (!p.gpu_groups.empty()) return absl::InternalError(p.name + ": pending with keys");
        continue;
      }
      const Node& node = *nodes.at(p.node_name);
      if (!Shares(p)) {
        whole[node.name] += Gpu(p.requests);
        continue;
      }
      const double m = node.gpu_device_memory > 0 ? node.gpu_device_memory : 100;
      if (p.gpu_memory && node.gpu_device_memory == 0) {
        return absl::InternalError(p.name + ": memory pod on a node of unknown memory");
      }
      const int64_t u = p.gpu_memory ? static_cast<int64_t>(*p.gpu_memory)
                                     : std::max<int64_t>(1, std::llround(*p.gpu_fraction * m));
      const size_t d = p.gpu_fraction_devices == 0 ? 1 : p.gpu_fraction_devices;
      if (p.gpu_groups.size() != d) return absl::InternalError(p.name + ": key count");
      for (const std::string& key : p.gpu_groups) {
        int index = -1;
        if (key.rfind("gpu-", 0) != 0 || (index = std::stoi(key.substr(4))) < 0 ||
            index >= Gpu(node.allocatable)) {
          return absl::InternalError(
              absl::StrCat(p.name, ": key ", key, " names no GPU of ", node.name));
        }
        if ((devices[node.name][key] += u) > m) {
          return absl::InternalError(absl::StrCat(node.name, "/", key, " over-committed"));
        }
      }
    }
  }
  for (const Node& n : s.nodes) {
    const double used = whole[n.name] + static_cast<double>(devices[n.name].size());
    if (used > Gpu(n.allocatable)) {
      return absl::InternalError(
          absl::StrCat(n.name, ": ", used, " GPUs used of ", Gpu(n.allocatable)));
    }
  }
  return absl::OkStatus();
}

TEST(GeneratorGpuSharing, ZeroIsTheRequestWithoutTheOption) {
  for (uint64_t i = 0; i < 40; ++i) {
    const GeneratorOptions options = PropertyCaseOptions(i, GeneratorModel::kKai);
    const std::string plain = Dump(generator::Generate(options).snapshot);
    EXPECT_EQ(plain, Dump(generator::Generate(Sharing(options, 0)).snapshot))
        << DescribeCase(i, options);
    EXPECT_EQ(plain, Dump(generator::Generate(Sharing(options, -5)).snapshot))
        << DescribeCase(i, options);
  }
}

TEST(GeneratorGpuSharing, RequestsAreValidAndDevicesNeverOverCommitted) {
  for (uint64_t i = 0; i < 200; ++i) {
    const double percent = (i % 4 == 0) ? 100 : 5.0 + static_cast<double>(i % 90);
    const GeneratorOptions options = Sharing(PropertyCaseOptions(i, GeneratorModel::kKai), percent);
    const GeneratedRequest r = generator::Generate(options);
    EXPECT_THAT(ValidatedSnapshot::Validate(r.snapshot, r.policy, RequestKind::kSchedule).status(),
                IsOk())
        << DescribeCase(i, options) << " gpu_sharing=" << percent;
    EXPECT_THAT(CheckDevices(r.snapshot), IsOk()) << DescribeCase(i, options);
    Snapshot empty = r.snapshot;
    for (PodGroup& g : empty.pod_groups) g.pods.clear();
    EXPECT_THAT(CheckNodeCapacity(empty, r.snapshot), IsOk()) << DescribeCase(i, options);
  }
  const GeneratedRequest m = generator::Generate(Sharing(*generator::SizePreset("M"), 40));
  EXPECT_THAT(ValidatedSnapshot::Validate(m.snapshot, m.policy, RequestKind::kSchedule).status(),
              IsOk());
  EXPECT_THAT(CheckDevices(m.snapshot), IsOk());
}

// Sharing changes only the GPU fields: the same nodes, pods, placements and other requests, and
// a sharing pod's GPU amount (SEMANTICS §4.13.1) is at most the GPUs it asked for without it, so
// that no queue goes over a limit drawn from the GPUs its pods hold.
TEST(GeneratorGpuSharing, OnlyTheGpuFieldsChangeAndAmountsDoNotGrow) {
  for (uint64_t i = 0; i < 60; ++i) {
    const GeneratorOptions options = PropertyCaseOptions(i, GeneratorModel::kKai);
    const Snapshot plain = generator::Generate(options).snapshot;
    const Snapshot shared = generator::Generate(Sharing(options, 70)).snapshot;
    ASSERT_EQ(plain.nodes.size(), shared.nodes.size());
    std::map<std::string, double> memory;
    for (size_t n = 0; n < plain.nodes.size(); ++n) {
      EXPECT_EQ(plain.nodes[n].name, shared.nodes[n].name);
      EXPECT_EQ(plain.nodes[n].allocatable, shared.nodes[n].allocatable);
      EXPECT_EQ(plain.nodes[n].gpu_device_memory, 0.0);
      if (Gpu(shared.nodes[n].allocatable) == 0) {
        EXPECT_EQ(shared.nodes[n].gpu_device_memory, 0.0);
      }
      memory[shared.nodes[n].name] = shared.nodes[n].gpu_device_memory;
    }
    ASSERT_EQ(plain.pod_groups.size(), shared.pod_groups.size());
    for (size_t g = 0; g < plain.pod_groups.size(); ++g) {
      const std::vector<Pod>& before = plain.pod_groups[g].pods;
      const std::vector<Pod>& after = shared.pod_groups[g].pods;
      ASSERT_EQ(before.size(), after.size());
      for (size_t p = 0; p < before.size(); ++p) {
        EXPECT_EQ(before[p].name, after[p].name);
        EXPECT_EQ(before[p].node_name, after[p].node_name);
        EXPECT_EQ(before[p].phase, after[p].phase);
        ResourceMap other = before[p].requests;
        if (!Shares(after[p])) {
          EXPECT_EQ(before[p].requests, after[p].requests) << after[p].name;
          continue;
        }
        other.erase("nvidia.com/gpu");
        EXPECT_EQ(other, after[p].requests) << after[p].name;
        const double d = after[p].gpu_fraction_devices == 0 ? 1 : after[p].gpu_fraction_devices;
        const double device = after[p].node_name.empty() ? 40000 : memory[after[p].node_name];
        const double amount =
            after[p].gpu_fraction ? d * *after[p].gpu_fraction : d * *after[p].gpu_memory / device;
        EXPECT_LE(amount, Gpu(before[p].requests)) << after[p].name;
      }
    }
  }
}

TEST(GeneratorGpuSharing, SameOptionsGiveTheSameRequestAndSeedsDiffer) {
  const GeneratorOptions options = Sharing(MidSize(3), 50);
  const std::string first = Dump(generator::Generate(options).snapshot);
  EXPECT_EQ(first, Dump(generator::Generate(options).snapshot));
  EXPECT_NE(first, Dump(generator::Generate(Sharing(MidSize(4), 50)).snapshot));
  EXPECT_NE(first, Dump(generator::Generate(Sharing(MidSize(3), 60)).snapshot));
}

// The asked share of the GPU pods shares, up to the draw (a group shares whole) and the rare
// running group whose node has no device for it; every kind of sharing pod appears.
TEST(GeneratorGpuSharing, RespectsThePercentageAndMixesEveryKind) {
  for (uint64_t seed : {1, 2, 3}) {
    EXPECT_EQ(MixOf(generator::Generate(MidSize(seed)).snapshot).sharing, 0);
    for (double percent : {10.0, 30.0, 60.0, 100.0}) {
      const Mix mix = MixOf(generator::Generate(Sharing(MidSize(seed), percent)).snapshot);
      const double share = static_cast<double>(mix.sharing) / mix.gpu_pods;
      SCOPED_TRACE(absl::StrCat("seed ", seed, ", ", percent, "%: ", mix.sharing, " of ",
                                mix.gpu_pods, " GPU pods share"));
      EXPECT_GT(mix.gpu_pods, 1000);
      if (percent == 100) {
        EXPECT_GE(share, 0.98);
      } else {
        EXPECT_NEAR(share, percent / 100, 0.05);
      }
      EXPECT_GT(mix.fraction, 0);
      EXPECT_GT(mix.memory, 0);
      EXPECT_GT(mix.two_devices, 0);
      EXPECT_GT(mix.running_sharing, 0);
      EXPECT_LT(mix.running_sharing, mix.sharing);  // some pending ones too
      EXPECT_THAT(mix.fractions, ::testing::IsSupersetOf({0.25, 0.5, 0.3}));
      EXPECT_THAT(mix.memories, ::testing::IsSupersetOf({10000.0, 20000.0}));
      EXPECT_THAT(mix.device_memories, ::testing::ElementsAre(0.0, 40000.0, 80000.0));
      EXPECT_GT(mix.unknown_memory_gpu_nodes, 0);
    }
  }
}

// Devices are shared: some device holds more than one pod.
TEST(GeneratorGpuSharing, RunningPodsShareDevices) {
  const Snapshot s = generator::Generate(Sharing(MidSize(1), 60)).snapshot;
  std::map<std::string, int> pods_on;  // node/key
  for (const PodGroup& g : s.pod_groups) {
    for (const Pod& p : g.pods) {
      for (const std::string& key : p.gpu_groups) ++pods_on[p.node_name + "/" + key];
    }
  }
  int shared = 0;
  for (const auto& [device, count] : pods_on) shared += count > 1;
  EXPECT_GT(shared, 10);
}

// The option is the KAI realistic shape's: the reclaim shape and Kueue ignore it.
TEST(GeneratorGpuSharing, TheReclaimShapeAndKueueIgnoreIt) {
  GeneratorOptions reclaim;
  reclaim.shape = generator::GeneratorShape::kKaiReclaim;
  reclaim.nodes = 5;
  EXPECT_EQ(Dump(generator::Generate(reclaim).snapshot),
            Dump(generator::Generate(Sharing(reclaim, 100)).snapshot));
  const GeneratorOptions kueue = PropertyCaseOptions(1, GeneratorModel::kKueue);
  EXPECT_EQ(Dump(generator::Generate(kueue).snapshot),
            Dump(generator::Generate(Sharing(kueue, 100)).snapshot));
}

// Reclaim groups keep their whole-node requests (they must run only by evicting).
TEST(GeneratorGpuSharing, ReclaimGroupsNeverShare) {
  GeneratorOptions options = Sharing(MidSize(2), 100);
  options.reclaim_groups = 8;
  const Snapshot s = generator::Generate(options).snapshot;
  int reclaim_pods = 0;
  for (const PodGroup& g : s.pod_groups) {
    if (g.name.rfind("reclaim-", 0) != 0) continue;
    for (const Pod& p : g.pods) {
      ++reclaim_pods;
      EXPECT_FALSE(Shares(p)) << p.name;
      EXPECT_EQ(Gpu(p.requests), 8) << p.name;
    }
  }
  EXPECT_GT(reclaim_pods, 0);
}

}  // namespace
}  // namespace arbiter::testing
