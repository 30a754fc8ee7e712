#include "clients/generator/kai_nodes.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "clients/generator/kai_constraints.h"

namespace arbiter::generator::internal {
namespace {

constexpr double kTaintedNodes = 0.2;          // share of nodes with a taint
constexpr double kUnschedulableNodes = 0.005;  // share of nodes cordoned

struct NodeShape {
  const char* name;
  double gpu;
  double cpu;  // millicores
  double memory_gib;
  const char* product;  // nvidia.com/gpu.product label, "" for CPU nodes
  double share;         // of all nodes
};

constexpr NodeShape kShapes[] = {
    {"gpu-8x-h100", 8, 128000, 1024, "H100", 0.30},
    {"gpu-4x-a100", 4, 64000, 512, "A100", 0.20},
    {"cpu-96", 0, 96000, 384, "", 0.30},
    {"cpu-32", 0, 32000, 128, "", 0.20},
};
constexpr int kShapeCount = sizeof(kShapes) / sizeof(kShapes[0]);

// The shape of each of `count` nodes: counts by largest remainder, then shuffled.
std::vector<int> DrawShapes(int count, Rng& rng) {
  std::vector<int> counts(kShapeCount, 0);
  int assigned = 0;
  std::vector<std::pair<double, int>> remainders;
  for (int s = 0; s < kShapeCount; ++s) {
    const double exact = kShapes[s].share * count;
    counts[s] = static_cast<int>(std::floor(exact));
    assigned += counts[s];
    remainders.push_back({exact - counts[s], s});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int i = 0; assigned < count; ++i, ++assigned) ++counts[remainders[i % kShapeCount].second];
  std::vector<int> shapes;
  for (int s = 0; s < kShapeCount; ++s) shapes.insert(shapes.end(), counts[s], s);
  rng.Shuffle(shapes);
  return shapes;
}

}  // namespace

KaiNodes::KaiNodes(int count, const KaiResources& resources, Rng& rng)
    : resource_count_(resources.count()), schedulable_capacity_(resources.Zero()) {
  const std::vector<int> shapes = DrawShapes(count, rng);

  // round(n/5) nodes tainted from the front of a random order, floor(n/200) cordoned from its
  // back.
  std::vector<int> order(count);
  std::iota(order.begin(), order.end(), 0);
  rng.Shuffle(order);
  std::vector<bool> tainted(count, false), cordoned(count, false);
  const int taint_count = static_cast<int>(std::llround(kTaintedNodes * count));
  for (int i = 0; i < taint_count; ++i) tainted[order[i]] = true;
  const int cordon_count = static_cast<int>(std::floor(kUnschedulableNodes * count));
  for (int i = 0; i < cordon_count; ++i) cordoned[order[count - 1 - i]] = true;

  const int width = std::max(4, static_cast<int>(std::to_string(count).size()));
  nodes_.reserve(count);
  free_.reserve(count);
  for (int i = 0; i < count; ++i) {
    const NodeShape& shape = kShapes[shapes[i]];
    Node node;
    node.name = absl::StrFormat("node-%0*d", width, i);
    DenseResources alloc = resources.Zero();
    alloc[kCpu] = shape.cpu;
    alloc[kMemory] = shape.memory_gib * kGiB;
    alloc[kGpu] = shape.gpu;
    for (int r = kFirstExtra; r < resource_count_; ++r) alloc[r] = rng.Chance(0.5) ? 32 : 0;
    node.allocatable = resources.ToMap(alloc, /*skip_zero=*/false);
    if (shape.gpu == 0) node.allocatable.erase("nvidia.com/gpu");
    node.labels["node.kubernetes.io/instance-type"] = shape.name;
    node.labels["topology.kubernetes.io/zone"] = kZones[rng.Below(3)];
    if (shape.gpu > 0) node.labels["nvidia.com/gpu.product"] = shape.product;
    if (tainted[i]) AddNodeTaint(/*gpu_node=*/shape.gpu > 0, rng, node);
    node.unschedulable = cordoned[i];
    if (!node.unschedulable) {
      for (int r = 0; r < resource_count_; ++r) schedulable_capacity_[r] += alloc[r];
      if (shape.gpu > 0) gpu_nodes_.push_back(i);
      if (shape.gpu == 0) cpu_.nodes.push_back(i);
      if (shape.gpu >= 8) large_gpu_.nodes.push_back(i);
      if (shape.gpu > 0 && shape.gpu < 8) small_gpu_.nodes.push_back(i);
    }
    free_.push_back(std::move(alloc));
    nodes_.push_back(std::move(node));
  }
}

double KaiNodes::FreeGpus() const {
  double free_gpus = 0;
  for (int i : gpu_nodes_) free_gpus += free_[i][kGpu];
  return free_gpus;
}

bool KaiNodes::Place(const GroupSpec& spec, std::vector<int>& nodes_out) {
  const bool gpu = spec.request[kGpu] > 0;
  const bool train = spec.kind == GroupKind::kTrain;
  Category& first_gpu = train ? large_gpu_ : small_gpu_;
  Category& second_gpu = train ? small_gpu_ : large_gpu_;
  nodes_out.clear();
  for (int p = 0; p < spec.pods; ++p) {
    int chosen = -1;
    if (!gpu) chosen = FindNode(spec, cpu_, p);
    if (chosen < 0) chosen = FindNode(spec, first_gpu, p);
    if (chosen < 0) chosen = FindNode(spec, second_gpu, p);
    if (chosen < 0) {
      for (int placed : nodes_out) Release(spec, placed);
      nodes_out.clear();
      return false;
    }
    Take(spec, chosen);
    nodes_out.push_back(chosen);
  }
  return true;
}

int KaiNodes::FindNode(const GroupSpec& spec, Category& category, int pod) {
  const size_t n = category.nodes.size();
  for (size_t step = 0; step < n; ++step) {
    const int candidate = category.nodes[(category.cursor + step) % n];
    if (Admits(nodes_[candidate], spec) && Fits(spec, candidate)) {
      category.cursor = (category.cursor + step + 1) % n;
      return candidate;
    }
    // A group whose first pod finds nothing in a long scan is given up (it stays pending):
    // this keeps generation near-linear when the cluster is full.
    if (step >= 4096 && pod == 0) break;
  }
  return -1;
}

bool KaiNodes::Fits(const GroupSpec& spec, int node) const {
  const DenseResources& free = free_[node];
  for (int r = 0; r < resource_count_; ++r) {
    if (spec.request[r] > 0 && spec.request[r] > free[r]) return false;
  }
  return true;
}

void KaiNodes::Take(const GroupSpec& spec, int node) {
  for (int r = 0; r < resource_count_; ++r) free_[node][r] -= spec.request[r];
}

void KaiNodes::Release(const GroupSpec& spec, int node) {
  for (int r = 0; r < resource_count_; ++r) free_[node][r] += spec.request[r];
}

}  // namespace arbiter::generator::internal
