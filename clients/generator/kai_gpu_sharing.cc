#include "clients/generator/kai_gpu_sharing.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "clients/generator/random.h"

namespace arbiter::generator::internal {
namespace {

// The sharing mix draws from its own engine, seeded with the request's seed XOR this constant
// ("gpushare"), so that turning it on changes nothing the main engine draws.
constexpr uint64_t kSharingStream = 0x6770757368617265ULL;

constexpr double kUnknownMemoryNodes = 0.1;   // GPU nodes whose gpu_device_memory is 0 (unknown)
constexpr double kH100Memory = 80000;         // gpu_device_memory of gpu-8x-h100 nodes
constexpr double kA100Memory = 40000;         // of gpu-4x-a100 nodes; memory pods fit it
constexpr int64_t kUnknownMemoryUnits = 100;  // SEMANTICS §4.13.1: M_n when the memory is unknown
constexpr double kMemoryPods = 0.3;           // of sharing groups: gpu_memory, else gpu_fraction
constexpr double kTwoDevices = 0.3;           // of sharing groups with at least 2 GPUs per pod

// gpu_fraction values and their weights; a group takes one with devices · fraction <= its GPUs.
constexpr double kFractions[] = {0.25, 0.5, 0.3, 0.75};
constexpr double kFractionWeights[] = {0.35, 0.35, 0.15, 0.15};
constexpr double kLargestFraction = 0.75;
// gpu_memory values (equal weights); a group takes one with devices · memory <= its GPUs ·
// kA100Memory, so that its amount never exceeds the GPUs it asked for.
constexpr double kMemories[] = {10000, 20000, 40000};

// How the pods of one group share.
struct Share {
  bool chosen = false;
  std::optional<double> fraction;
  std::optional<double> memory;
  int devices = 1;
};

struct Device {
  int index = 0;     // the key is "gpu-<index>"
  int64_t used = 0;  // units of the RUNNING and RELEASING pods on it
};

// The GPU devices of one node as the mix fills them.
struct NodeDevices {
  double gpus = 0;    // allocatable nvidia.com/gpu
  double whole = 0;   // nvidia.com/gpu of the RUNNING and RELEASING pods on it that do not share
  double memory = 0;  // gpu_device_memory; 0 = unknown
  std::vector<Device> devices;

  int64_t units() const { return memory > 0 ? static_cast<int64_t>(memory) : kUnknownMemoryUnits; }
};

double GpuOf(const Pod& pod) {
  const auto it = pod.requests.find(kGpuResource);
  return it == pod.requests.end() ? 0 : it->second;
}

Share DrawShare(double gpus, double percent, Rng& rng) {
  Share share;
  share.chosen = rng.Chance(percent / 100);
  if (!share.chosen) return share;
  const bool memory = rng.Chance(kMemoryPods);
  if (gpus >= 2 && rng.Chance(kTwoDevices)) share.devices = 2;
  if (memory) {
    std::vector<double> weights;
    for (double m : kMemories) weights.push_back(share.devices * m <= gpus * kA100Memory ? 1 : 0);
    share.memory = kMemories[rng.Weighted(weights)];
  } else {
    std::vector<double> weights;
    for (size_t k = 0; k < std::size(kFractions); ++k) {
      weights.push_back(share.devices * kFractions[k] <= gpus ? kFractionWeights[k] : 0);
    }
    share.fraction = kFractions[rng.Weighted(weights)];
  }
  return share;
}

// The pod's units on each of its devices on a node of `units` per device (SEMANTICS §4.13.1).
int64_t UnitsOf(const Share& share, int64_t units) {
  if (share.memory) return static_cast<int64_t>(*share.memory);
  return std::max<int64_t>(1, std::llround(*share.fraction * static_cast<double>(units)));
}

// Puts a pod of `gpus` whole GPUs, now sharing, on `share.devices` distinct devices of `node`:
// the fullest devices with room first (then by index), new devices for the rest while the node's
// GPUs cover every device and every pod that does not share. False (and `node` unchanged) when
// it does not fit. `keys` receives its device keys, ascending.
bool PlacePod(const Share& share, double gpus, NodeDevices& node, std::vector<std::string>& keys) {
  if (share.memory && node.memory <= 0) return false;
  const int64_t units = node.units();
  const int64_t u = UnitsOf(share, units);
  if (u > units) return false;
  std::vector<size_t> joinable;
  for (size_t k = 0; k < node.devices.size(); ++k) {
    if (node.devices[k].used + u <= units) joinable.push_back(k);
  }
  std::stable_sort(joinable.begin(), joinable.end(), [&](size_t a, size_t b) {
    if (node.devices[a].used != node.devices[b].used) {
      return node.devices[a].used > node.devices[b].used;
    }
    return node.devices[a].index < node.devices[b].index;
  });
  const size_t joined = std::min<size_t>(joinable.size(), share.devices);
  const size_t opened = share.devices - joined;
  const double whole = node.whole - gpus;
  if (whole + static_cast<double>(node.devices.size() + opened) > node.gpus) return false;
  std::vector<int> indices;
  for (size_t k = 0; k < joined; ++k) {
    node.devices[joinable[k]].used += u;
    indices.push_back(node.devices[joinable[k]].index);
  }
  for (size_t k = 0; k < opened; ++k) {
    int index = 0;
    while (std::any_of(node.devices.begin(), node.devices.end(),
                       [index](const Device& d) { return d.index == index; })) {
      ++index;
    }
    node.devices.push_back(Device{index, u});
    indices.push_back(index);
  }
  node.whole = whole;
  keys.clear();
  for (int index : indices) keys.push_back(absl::StrCat("gpu-", index));
  std::sort(keys.begin(), keys.end());
  return true;
}

// The mix over one snapshot: its nodes' devices, and the groups that share.
class SharingMix {
 public:
  SharingMix(uint64_t seed, Snapshot& snapshot) : rng_(seed ^ kSharingStream), s_(snapshot) {}

  // Each GPU node's gpu_device_memory, in node order; the GPUs its pods hold.
  void DrawDeviceMemory() {
    nodes_.resize(s_.nodes.size());
    for (size_t n = 0; n < s_.nodes.size(); ++n) {
      Node& node = s_.nodes[n];
      node_index_[node.name] = static_cast<int>(n);
      const auto gpus = node.allocatable.find(kGpuResource);
      nodes_[n].gpus = gpus == node.allocatable.end() ? 0 : gpus->second;
      if (nodes_[n].gpus <= 0) continue;
      if (!rng_.Chance(kUnknownMemoryNodes)) {
        const auto product = node.labels.find("nvidia.com/gpu.product");
        const bool h100 = product != node.labels.end() && product->second == "H100";
        node.gpu_device_memory = h100 ? kH100Memory : kA100Memory;
      }
      nodes_[n].memory = node.gpu_device_memory;
    }
    for (const PodGroup& group : s_.pod_groups) {
      for (const Pod& pod : group.pods) {
        if (const int n = NodeOf(pod); n >= 0) nodes_[n].whole += GpuOf(pod);
      }
    }
  }

  // Which GPU groups share, and how, in group order; returns the sharing groups' indices.
  std::vector<size_t> DrawShares(double percent, const std::vector<bool>& exempt) {
    shares_.assign(s_.pod_groups.size(), Share{});
    std::vector<size_t> sharing;
    for (size_t i = 0; i < s_.pod_groups.size(); ++i) {
      const PodGroup& group = s_.pod_groups[i];
      if ((i < exempt.size() && exempt[i]) || group.pods.empty()) continue;
      const double gpus = GpuOf(group.pods.front());
      if (gpus <= 0) continue;
      shares_[i] = DrawShare(gpus, percent, rng_);
      if (shares_[i].chosen) sharing.push_back(i);
    }
    return sharing;
  }

  // Makes group i share: devices for its RUNNING and RELEASING pods, then the fields of all its
  // pods. A group with a pod that finds no devices keeps its requests, all its pods.
  void ShareGroup(size_t i) {
    PodGroup& group = s_.pod_groups[i];
    Share share = shares_[i];
    // A memory group with a pod on a node of unknown device memory asks for the same share of
    // an A100 as a fraction instead (at most kLargestFraction).
    if (share.memory && std::any_of(group.pods.begin(), group.pods.end(), [&](const Pod& pod) {
          const int n = NodeOf(pod);
          return n >= 0 && nodes_[n].memory <= 0;
        })) {
      share.fraction = std::min(*share.memory / kA100Memory, kLargestFraction);
      share.memory.reset();
    }
    std::map<int, NodeDevices> before;  // the nodes this group changed, as they were
    std::vector<std::vector<std::string>> keys(group.pods.size());
    for (size_t p = 0; p < group.pods.size(); ++p) {
      const int n = NodeOf(group.pods[p]);
      if (n < 0) continue;
      before.emplace(n, nodes_[n]);
      if (!PlacePod(share, GpuOf(group.pods[p]), nodes_[n], keys[p])) {
        for (auto& [m, devices] : before) nodes_[m] = std::move(devices);
        return;
      }
    }
    for (size_t p = 0; p < group.pods.size(); ++p) {
      Pod& pod = group.pods[p];
      pod.requests.erase(kGpuResource);
      pod.gpu_fraction = share.fraction;
      pod.gpu_memory = share.memory;
      pod.gpu_fraction_devices = share.devices > 1 ? share.devices : 0;
      pod.gpu_groups = std::move(keys[p]);
    }
  }

  double GpusPerPod(size_t i) const { return GpuOf(s_.pod_groups[i].pods.front()); }

 private:
  // The node a pod holds GPUs on: RUNNING and RELEASING pods; -1 for PENDING ones.
  int NodeOf(const Pod& pod) const {
    return EffectivePhase(pod) != PodPhase::kPending ? node_index_.at(pod.node_name) : -1;
  }

  Rng rng_;
  Snapshot& s_;
  std::vector<NodeDevices> nodes_;  // by node index
  absl::flat_hash_map<std::string, int> node_index_;
  std::vector<Share> shares_;  // by group index
};

}  // namespace

void ApplyGpuSharing(double percent, uint64_t seed, const std::vector<bool>& exempt,
                     Snapshot& snapshot) {
  SharingMix mix(seed, snapshot);
  mix.DrawDeviceMemory();
  std::vector<size_t> order = mix.DrawShares(percent, exempt);
  // Groups with the most GPUs per pod first: a whole-GPU pod that shares frees room on its node,
  // and a half-GPU pod then joins its devices.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return mix.GpusPerPod(a) > mix.GpusPerPod(b); });
  for (size_t i : order) mix.ShareGroup(i);
}

}  // namespace arbiter::generator::internal
