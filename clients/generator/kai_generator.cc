// The KAI-shaped request: nodes of a few shapes, a queue tree with mixed quotas, running pod
// groups that fill about 85% of the GPUs and pending groups that ask for more than is free.
// Every constant here is documented in docs/generator.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/generator/model_generators.h"
#include "clients/generator/random.h"

namespace arbiter::generator::internal {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGpuFill = 0.85;        // share of schedulable GPUs held by running pods
constexpr double kTaintedNodes = 0.2;    // share of nodes with a taint
constexpr double kSelectorGroups = 0.1;  // share of pod groups with a node selector
constexpr double kUnschedulableNodes = 0.005;
constexpr double kReleasingGroups = 0.01;  // running groups that are terminating
constexpr double kReclaimDeservedScale = 0.6;
constexpr double kPendingGpuShare = 0.6;  // least chance that a pending group is GPU work

// Dense resource indices of the generator (the snapshot uses names).
constexpr int kCpu = 0;
constexpr int kMemory = 1;
constexpr int kGpu = 2;
constexpr int kFirstExtra = 3;

struct Shape {
  const char* name;
  double gpu;
  double cpu;  // millicores
  double memory_gib;
  const char* product;  // nvidia.com/gpu.product label, "" for CPU nodes
  double share;         // of all nodes
};

constexpr Shape kShapes[] = {
    {"gpu-8x-h100", 8, 128000, 1024, "H100", 0.30},
    {"gpu-4x-a100", 4, 64000, 512, "A100", 0.20},
    {"cpu-96", 0, 96000, 384, "", 0.30},
    {"cpu-32", 0, 32000, 128, "", 0.20},
};
constexpr int kShapeCount = sizeof(kShapes) / sizeof(kShapes[0]);

const char* const kZones[] = {"zone-a", "zone-b", "zone-c"};

enum class Kind { kTrain, kInference, kNotebook, kBatch, kService };

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kTrain:
      return "train";
    case Kind::kInference:
      return "infer";
    case Kind::kNotebook:
      return "notebook";
    case Kind::kBatch:
      return "batch";
    case Kind::kService:
      return "service";
  }
  return "job";
}

bool IsGpuKind(Kind kind) {
  return kind == Kind::kTrain || kind == Kind::kInference || kind == Kind::kNotebook;
}

// Draws with probability proportional to fixed weights, in O(log n).
class WeightedTable {
 public:
  explicit WeightedTable(const std::vector<double>& weights) {
    double sum = 0;
    for (double w : weights) {
      sum += w;
      cumulative_.push_back(sum);
    }
  }
  bool empty() const { return cumulative_.empty() || cumulative_.back() <= 0; }
  size_t Draw(Rng& rng) const {
    const double x = rng.Unit() * cumulative_.back();
    size_t i = std::upper_bound(cumulative_.begin(), cumulative_.end(), x) - cumulative_.begin();
    return std::min(i, cumulative_.size() - 1);
  }

 private:
  std::vector<double> cumulative_;
};

// A pod group before it is placed: per-pod requests are equal within a group.
struct GroupSpec {
  Kind kind = Kind::kBatch;
  int pods = 1;
  int pending_extra = 0;        // elastic running groups: pods left pending
  std::vector<double> request;  // per pod, dense
  int min_member = 0;
  int priority = 0;
  Preemptibility preemptibility = Preemptibility::kUnspecified;
  LabelMap selector;
  std::vector<Toleration> tolerations;
  int leaf = -1;  // index into the generator's queue list
  bool releasing = false;
  bool reclaim = false;
};

class KaiGenerator {
 public:
  explicit KaiGenerator(const GeneratorOptions& options) : options_(options), rng_(options.seed) {
    resource_names_ = {"cpu", "memory", "nvidia.com/gpu"};
    for (int i = 0; i < options_.extra_resources; ++i) {
      resource_names_.push_back(absl::StrCat("example.com/res-", i));
    }
  }

  GeneratedRequest Run() {
    snapshot_.now = Timestamp{kNowSeconds, 0};
    MakeNodes();
    MakeQueues();
    MakeGroups();
    SetLimits();
    GeneratedRequest request;
    request.policy.fairness_model = FairnessModel::kKai;
    request.snapshot = std::move(snapshot_);
    return request;
  }

 private:
  int R() const { return static_cast<int>(resource_names_.size()); }

  ResourceMap ToMap(const std::vector<double>& dense, bool skip_zero) const {
    ResourceMap map;
    for (int r = 0; r < R(); ++r) {
      if (skip_zero && dense[r] == 0) continue;
      map[resource_names_[r]] = dense[r];
    }
    return map;
  }

  // ---- Nodes ----

  void MakeNodes() {
    const int n = options_.nodes;
    // Shape counts by largest remainder, then shuffled over the node names.
    std::vector<int> counts(kShapeCount, 0);
    int assigned = 0;
    std::vector<std::pair<double, int>> remainders;
    for (int s = 0; s < kShapeCount; ++s) {
      const double exact = kShapes[s].share * n;
      counts[s] = static_cast<int>(std::floor(exact));
      assigned += counts[s];
      remainders.push_back({exact - counts[s], s});
    }
    std::stable_sort(remainders.begin(), remainders.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (int i = 0; assigned < n; ++i, ++assigned) ++counts[remainders[i % kShapeCount].second];
    std::vector<int> shapes;
    for (int s = 0; s < kShapeCount; ++s) shapes.insert(shapes.end(), counts[s], s);
    rng_.Shuffle(shapes);

    const int width = std::max(4, static_cast<int>(std::to_string(n).size()));
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    rng_.Shuffle(order);
    std::vector<bool> tainted(n, false), cordoned(n, false);
    const int taint_count = static_cast<int>(std::llround(kTaintedNodes * n));
    for (int i = 0; i < taint_count; ++i) tainted[order[i]] = true;
    const int cordon_count = static_cast<int>(std::floor(kUnschedulableNodes * n));
    for (int i = 0; i < cordon_count; ++i) cordoned[order[n - 1 - i]] = true;

    snapshot_.nodes.reserve(n);
    free_.reserve(n);
    for (int i = 0; i < n; ++i) {
      const Shape& shape = kShapes[shapes[i]];
      Node node;
      node.name = absl::StrFormat("node-%0*d", width, i);
      std::vector<double> alloc(R(), 0);
      alloc[kCpu] = shape.cpu;
      alloc[kMemory] = shape.memory_gib * kGiB;
      alloc[kGpu] = shape.gpu;
      for (int r = kFirstExtra; r < R(); ++r) alloc[r] = rng_.Chance(0.5) ? 32 : 0;
      node.allocatable = ToMap(alloc, /*skip_zero=*/false);
      if (shape.gpu == 0) node.allocatable.erase("nvidia.com/gpu");
      node.labels["node.kubernetes.io/instance-type"] = shape.name;
      node.labels["topology.kubernetes.io/zone"] = kZones[rng_.Below(3)];
      if (shape.gpu > 0) node.labels["nvidia.com/gpu.product"] = shape.product;
      if (tainted[i]) {
        const uint64_t pick = rng_.Below(10);
        if (shape.gpu > 0 && pick < 6) {
          node.taints.push_back({"nvidia.com/gpu", "present", "NoSchedule"});
        } else if (pick % 3 == 0) {
          node.taints.push_back({"dedicated", "batch", "NoSchedule"});
          node.labels["dedicated"] = "batch";
        } else if (pick % 3 == 1) {
          node.taints.push_back({"dedicated", "inference", "NoExecute"});
          node.labels["dedicated"] = "inference";
        } else {
          node.taints.push_back({"cloud.example.com/spot", "true", "PreferNoSchedule"});
        }
      }
      node.unschedulable = cordoned[i];
      if (!node.unschedulable) {
        schedulable_gpu_ += shape.gpu;
        (shape.gpu > 0 ? gpu_nodes_ : cpu_nodes_).push_back(i);
        if (shape.gpu >= 8) large_gpu_nodes_.push_back(i);
        if (shape.gpu > 0 && shape.gpu < 8) small_gpu_nodes_.push_back(i);
      }
      free_.push_back(alloc);
      snapshot_.nodes.push_back(std::move(node));
    }
  }

  // ---- Queues ----

  void MakeQueues() {
    int total = options_.queues;
    int reclaim_leaves = 0;
    if (options_.reclaim_groups > 0 && total >= 3) {
      reclaim_leaves = std::min((options_.reclaim_groups + 3) / 4, total - 2);
      total -= 1 + reclaim_leaves;
    }
    const int depth = std::min(options_.depth, std::max(total, 1));
    // Level sizes grow geometrically with ratio total^(1/depth).
    std::vector<int> level_size(depth, 0);
    if (total > 0) {
      const double b = std::pow(static_cast<double>(total), 1.0 / depth);
      double weight_sum = 0;
      for (int l = 0; l < depth; ++l) weight_sum += std::pow(b, l);
      int used = 0;
      for (int l = 0; l < depth; ++l) {
        level_size[l] =
            std::max(1, static_cast<int>(std::llround(total * std::pow(b, l) / weight_sum)));
        used += level_size[l];
      }
      level_size[depth - 1] += total - used;
      while (level_size[depth - 1] < 1) {  // rounding took too many from the top levels
        for (int l = depth - 2; l >= 0 && level_size[depth - 1] < 1; --l) {
          if (level_size[l] > 1) --level_size[l], ++level_size[depth - 1];
        }
      }
    }
    static const char* const kPrefixes[] = {"dept", "team", "proj", "grp", "sub"};
    std::vector<std::vector<int>> levels(depth);
    for (int l = 0; l < depth; ++l) {
      const int width = std::max(3, static_cast<int>(std::to_string(level_size[l]).size()));
      for (int i = 0; i < level_size[l]; ++i) {
        QueueInfo info;
        info.level = l;
        info.name = absl::StrFormat("%s-%0*d", kPrefixes[std::min(l, 4)], width, i);
        if (l > 0) {
          const std::vector<int>& parents = levels[l - 1];
          // Every parent gets a child first, then the rest go at random.
          const int parent = i < static_cast<int>(parents.size())
                                 ? parents[i]
                                 : parents[rng_.Below(parents.size())];
          info.parent = parent;
        }
        levels[l].push_back(static_cast<int>(queues_.size()));
        queues_.push_back(std::move(info));
      }
    }
    if (reclaim_leaves > 0) {
      QueueInfo top;
      top.name = "reclaim-dept";
      top.reclaim = true;
      const int top_index = static_cast<int>(queues_.size());
      queues_.push_back(top);
      for (int i = 0; i < reclaim_leaves; ++i) {
        QueueInfo leaf;
        leaf.name = absl::StrFormat("reclaim-team-%03d", i);
        leaf.parent = top_index;
        leaf.level = 1;
        leaf.reclaim = true;
        queues_.push_back(leaf);
      }
    }
    for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
      if (queues_[q].parent >= 0) queues_[queues_[q].parent].children.push_back(q);
    }
    for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
      QueueInfo& info = queues_[q];
      info.deserved.assign(R(), 0);
      info.allocated.assign(R(), 0);
      info.requested.assign(R(), 0);
      if (!info.children.empty()) continue;
      if (info.reclaim) {
        reclaim_leaf_list_.push_back(q);
        continue;
      }
      info.cpu_only = rng_.Chance(0.05);
      info.activity = std::pow(rng_.Real(0.3, 1.7), 2);
      leaf_list_.push_back(q);
    }
    // At least one leaf takes GPU work (a CPU-only team has GPU limit 0).
    if (!leaf_list_.empty() && std::all_of(leaf_list_.begin(), leaf_list_.end(),
                                           [&](int q) { return queues_[q].cpu_only; })) {
      queues_[leaf_list_.front()].cpu_only = false;
    }
    SetDeserved();
  }

  // Deserved top down: each level divides (a share of) its parent's amount by random weights.
  void SetDeserved() {
    std::vector<double> capacity(R(), 0);
    for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
      if (snapshot_.nodes[i].unschedulable) continue;
      for (int r = 0; r < R(); ++r) capacity[r] += free_[i][r];
    }
    // Effective amount a queue's children divide: its finite deserved, or its parent's.
    std::vector<std::vector<double>> effective(queues_.size());
    std::vector<int> roots;
    for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
      if (queues_[q].parent < 0 && !queues_[q].reclaim) roots.push_back(q);
    }
    const double reclaim_scale = reclaim_leaf_list_.empty() ? 1.0 : kReclaimDeservedScale;
    auto divide = [&](const std::vector<int>& siblings, const std::vector<double>& amount,
                      double lo, double hi, double scale) {
      if (siblings.empty()) return;
      std::vector<double> weights;
      double sum = 0;
      for (size_t i = 0; i < siblings.size(); ++i) {
        weights.push_back(rng_.Real(0.5, 2.0));
        sum += weights.back();
      }
      const double factor = rng_.Real(lo, hi) * scale;
      for (size_t i = 0; i < siblings.size(); ++i) {
        QueueInfo& info = queues_[siblings[i]];
        std::vector<double>& eff = effective[siblings[i]];
        eff.assign(R(), 0);
        const bool unlimited_cpu_memory = rng_.Chance(0.4);
        const bool opportunistic = rng_.Chance(0.1);
        for (int r = 0; r < R(); ++r) {
          double value = std::floor(amount[r] * factor * weights[i] / sum);
          if (r == kMemory) value = std::floor(value / kGiB) * kGiB;
          if (r == kGpu && opportunistic) value = 0;
          info.deserved[r] = value;
          eff[r] = value;
          if (r != kGpu && unlimited_cpu_memory) {
            info.deserved[r] = -1;
            eff[r] = amount[r];
          }
        }
      }
    };
    divide(roots, capacity, 0.8, 1.05, reclaim_scale);
    for (size_t q = 0; q < queues_.size(); ++q) {  // parents precede children in queues_
      if (!queues_[q].reclaim) divide(queues_[q].children, effective[q], 0.85, 1.0, 1.0);
    }
    for (QueueInfo& info : queues_) {
      info.priority = rng_.Chance(0.7) ? 0 : static_cast<int>(rng_.Between(1, 2));
      info.gpu_weight = rng_.Chance(0.05) ? 0 : static_cast<double>(1 << rng_.Below(3));
      info.same_weight = rng_.Chance(0.5);
      info.created = kNowSeconds - rng_.Between(30 * 86400, 365 * 86400);
      if (rng_.Chance(0.25)) info.reclaim_min_runtime = 300 * (1 << (2 * rng_.Below(3)));
      if (rng_.Chance(0.15)) info.preempt_min_runtime = 300 * (1 << (2 * rng_.Below(3)));
    }
  }

  // ---- Pod groups ----

  std::vector<double> Request(double cpu, double memory_gib, double gpu) {
    std::vector<double> request(R(), 0);
    request[kCpu] = cpu;
    request[kMemory] = memory_gib * kGiB;
    request[kGpu] = gpu;
    for (int r = kFirstExtra; r < R(); ++r) {
      if (rng_.Chance(0.2)) request[r] = static_cast<double>(rng_.Between(1, 4));
    }
    return request;
  }

  GroupSpec MakeSpec(Kind kind, int max_pods) {
    GroupSpec spec;
    spec.kind = kind;
    switch (kind) {
      case Kind::kTrain: {
        static const std::vector<double> kPodWeights = {0.4, 0.3, 0.2, 0.1};
        static const std::vector<double> kGpuWeights = {0.25, 0.25, 0.2, 0.3};
        spec.pods = 1 << rng_.Weighted(kPodWeights);
        const double gpu = static_cast<double>(1 << rng_.Weighted(kGpuWeights));
        spec.request = Request(12000 * gpu, 96 * gpu, gpu);
        spec.min_member = spec.pods;
        spec.priority = 50;
        if (rng_.Chance(0.1)) spec.preemptibility = Preemptibility::kPreemptible;
        break;
      }
      case Kind::kInference: {
        spec.pods = static_cast<int>(rng_.Between(1, 4));
        const double gpu = rng_.Chance(0.2) ? 0.5 : 1;
        spec.request = Request(4000, 32, gpu);
        spec.min_member = 1;
        spec.priority = 125;
        if (rng_.Chance(0.2)) spec.preemptibility = Preemptibility::kPreemptible;
        break;
      }
      case Kind::kNotebook: {
        spec.pods = 1;
        const double gpu = rng_.Chance(0.3) ? 0.5 : 1;
        spec.request = Request(2000, 16, gpu);
        spec.priority = 75;
        if (rng_.Chance(0.3)) spec.preemptibility = Preemptibility::kNonPreemptible;
        break;
      }
      case Kind::kBatch: {
        spec.pods = static_cast<int>(rng_.Between(1, 10));
        spec.request = Request(250 * static_cast<double>(rng_.Between(1, 16)),
                               static_cast<double>(rng_.Between(1, 16)), 0);
        spec.min_member = rng_.Chance(0.5) ? spec.pods : 1;
        spec.priority = rng_.Chance(0.5) ? 25 : 40;
        break;
      }
      case Kind::kService: {
        spec.pods = static_cast<int>(rng_.Between(1, 3));
        spec.request = Request(1000 * static_cast<double>(rng_.Between(1, 4)),
                               2 * static_cast<double>(rng_.Between(1, 4)), 0);
        if (rng_.Chance(0.5)) {
          spec.priority = 150;
        } else {
          spec.priority = 90;
          spec.preemptibility = Preemptibility::kNonPreemptible;
        }
        break;
      }
    }
    spec.pods = std::max(1, std::min(spec.pods, max_pods));
    if (spec.min_member > spec.pods) spec.min_member = spec.pods;
    AddConstraints(spec);
    return spec;
  }

  void AddConstraints(GroupSpec& spec) {
    const bool gpu = IsGpuKind(spec.kind);
    if (rng_.Chance(kSelectorGroups)) {
      if (gpu) {
        if (rng_.Chance(0.5)) {
          spec.selector["nvidia.com/gpu.product"] = rng_.Chance(0.5) ? "H100" : "A100";
        } else {
          spec.selector["topology.kubernetes.io/zone"] = kZones[rng_.Below(3)];
        }
      } else if (rng_.Chance(0.3)) {
        spec.selector["dedicated"] = "batch";
        spec.tolerations.push_back({"dedicated", "Equal", "batch", "NoSchedule"});
      } else if (rng_.Chance(0.5)) {
        spec.selector["node.kubernetes.io/instance-type"] = "cpu-96";
      } else {
        spec.selector["topology.kubernetes.io/zone"] = kZones[rng_.Below(3)];
      }
    }
    if (gpu && rng_.Chance(0.7)) {
      spec.tolerations.push_back({"nvidia.com/gpu", "Exists", "", "NoSchedule"});
    }
    if (spec.kind == Kind::kBatch && rng_.Chance(0.3) && spec.tolerations.empty()) {
      spec.tolerations.push_back({"dedicated", "", "batch", "NoSchedule"});
    }
    if ((spec.kind == Kind::kService || spec.kind == Kind::kInference) && rng_.Chance(0.3)) {
      spec.tolerations.push_back({"dedicated", "Equal", "inference", "NoExecute"});
    }
    if (rng_.Chance(0.02)) spec.tolerations.push_back({"", "Exists", "", ""});
  }

  static bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint) {
    for (const Toleration& t : tolerations) {
      if (!t.effect.empty() && t.effect != taint.effect) continue;
      if (t.op == "Exists") {
        if (t.key.empty() || t.key == taint.key) return true;
      } else if (t.key == taint.key && t.value == taint.value) {
        return true;
      }
    }
    return false;
  }

  bool Feasible(const GroupSpec& spec, int node_index) const {
    const Node& node = snapshot_.nodes[node_index];
    if (node.unschedulable) return false;
    for (const auto& [key, value] : spec.selector) {
      auto it = node.labels.find(key);
      if (it == node.labels.end() || it->second != value) return false;
    }
    for (const Taint& taint : node.taints) {
      if (taint.effect == "PreferNoSchedule") continue;
      if (!Tolerates(spec.tolerations, taint)) return false;
    }
    return true;
  }

  bool Fits(const GroupSpec& spec, int node_index) const {
    const std::vector<double>& free = free_[node_index];
    for (int r = 0; r < R(); ++r) {
      if (spec.request[r] > 0 && spec.request[r] > free[r]) return false;
    }
    return true;
  }

  // Places every pod of `spec` (round robin from the category's cursor, so that the fill is
  // spread and GPU nodes end up fragmented; CPU pods go to CPU nodes first and to GPU nodes'
  // spare CPU last). All or nothing: returns false and leaves no trace.
  bool Place(const GroupSpec& spec, std::vector<int>& nodes_out) {
    const bool gpu = spec.request[kGpu] > 0;
    nodes_out.clear();
    for (int p = 0; p < spec.pods; ++p) {
      // Training goes to the 8-GPU nodes first; inference, notebooks and spilled CPU work to
      // the smaller GPU nodes first, as clusters keep serving apart from training.
      const bool train = spec.kind == Kind::kTrain;
      int chosen = -1;
      if (!gpu) chosen = FindNode(spec, cpu_nodes_, cpu_cursor_, p);
      if (chosen < 0) {
        chosen = train ? FindNode(spec, large_gpu_nodes_, large_cursor_, p)
                       : FindNode(spec, small_gpu_nodes_, small_cursor_, p);
      }
      if (chosen < 0) {
        chosen = train ? FindNode(spec, small_gpu_nodes_, small_cursor_, p)
                       : FindNode(spec, large_gpu_nodes_, large_cursor_, p);
      }
      if (chosen < 0) {
        for (size_t i = 0; i < nodes_out.size(); ++i) Release(spec, nodes_out[i]);
        nodes_out.clear();
        return false;
      }
      for (int r = 0; r < R(); ++r) free_[chosen][r] -= spec.request[r];
      nodes_out.push_back(chosen);
    }
    return true;
  }

  // The first node from `cursor` on (cyclically) where the pod is feasible and fits, or -1.
  int FindNode(const GroupSpec& spec, const std::vector<int>& category, size_t& cursor, int pod) {
    const size_t n = category.size();
    for (size_t step = 0; step < n; ++step) {
      const int candidate = category[(cursor + step) % n];
      if (Feasible(spec, candidate) && Fits(spec, candidate)) {
        cursor = (cursor + step + 1) % n;
        return candidate;
      }
      // A group whose first pod finds nothing in a long scan is given up (it stays pending):
      // this keeps generation near-linear when the cluster is full.
      if (step >= 4096 && pod == 0) break;
    }
    return -1;
  }

  void Release(const GroupSpec& spec, int node_index) {
    for (int r = 0; r < R(); ++r) free_[node_index][r] += spec.request[r];
  }

  int DrawLeaf(bool gpu) {
    if (leaf_list_.empty()) return -1;
    if (!tables_built_) {
      std::vector<double> all, gpu_ok;
      for (int q : leaf_list_) {
        all.push_back(queues_[q].activity);
        gpu_ok.push_back(queues_[q].cpu_only ? 0 : queues_[q].activity);
      }
      all_leaves_ = std::make_unique<WeightedTable>(all);
      gpu_leaves_ = std::make_unique<WeightedTable>(gpu_ok);
      tables_built_ = true;
    }
    const WeightedTable& table = gpu && !gpu_leaves_->empty() ? *gpu_leaves_ : *all_leaves_;
    return leaf_list_[table.Draw(rng_)];
  }

  Kind DrawKind(bool gpu) {
    static const std::vector<double> kGpuKinds = {0.5, 0.3, 0.2};
    static const std::vector<double> kCpuKinds = {0.8, 0.2};
    if (gpu) {
      const size_t k = rng_.Weighted(kGpuKinds);
      return k == 0 ? Kind::kTrain : (k == 1 ? Kind::kInference : Kind::kNotebook);
    }
    return rng_.Weighted(kCpuKinds) == 0 ? Kind::kBatch : Kind::kService;
  }

  void MakeGroups() {
    const int total = options_.pods;
    int pending_budget = static_cast<int>(std::llround(total * options_.pending_fraction));
    pending_budget = std::min(pending_budget, total);
    int running_budget = total - pending_budget;

    // Reclaim groups first: each pod wants a whole 8-GPU node.
    std::vector<GroupSpec> pending;
    if (!reclaim_leaf_list_.empty()) {
      for (int i = 0; i < options_.reclaim_groups && pending_budget > 0; ++i) {
        GroupSpec spec;
        spec.kind = Kind::kTrain;
        spec.pods = static_cast<int>(std::min<int64_t>(rng_.Between(1, 2), pending_budget));
        spec.request = Request(96000, 768, 8);
        for (int r = kFirstExtra; r < R(); ++r) spec.request[r] = 0;
        spec.min_member = spec.pods;
        spec.priority = 50;
        spec.leaf = reclaim_leaf_list_[i % reclaim_leaf_list_.size()];
        spec.reclaim = true;
        pending_budget -= spec.pods;
        pending.push_back(std::move(spec));
      }
    }

    // Running groups: GPU kinds until the GPUs are ~85% full, then CPU kinds.
    const double gpu_target = kGpuFill * schedulable_gpu_;
    const double mean_gpu_per_pod = 2.5;
    double gpu_planned = 0;
    std::vector<GroupSpec> running;
    int remaining = running_budget;
    while (remaining > 0 && !leaf_list_.empty()) {
      const double need_pods = std::max(0.0, gpu_target - gpu_planned) / mean_gpu_per_pod;
      const bool gpu = rng_.Chance(std::min(1.0, need_pods / remaining));
      GroupSpec spec = MakeSpec(DrawKind(gpu), remaining);
      // Near the GPU target, draw again (smaller groups are likelier), then fall back to CPU.
      const double left = gpu_target - gpu_planned;
      for (int redraw = 0; gpu && spec.pods * spec.request[kGpu] > left; ++redraw) {
        spec = MakeSpec(redraw < 4 ? DrawKind(true) : DrawKind(false), remaining);
      }
      spec.leaf = DrawLeaf(gpu);
      // With reclaim groups, nothing is releasing: a pipelined binding onto releasing pods would
      // let a reclaim group run without evicting anyone.
      spec.releasing = rng_.Chance(kReleasingGroups) && reclaim_leaf_list_.empty();
      if (spec.kind == Kind::kInference && pending_budget > 0 && rng_.Chance(0.15)) {
        spec.pending_extra =
            static_cast<int>(std::min<int64_t>(rng_.Between(1, 2), pending_budget));
        pending_budget -= spec.pending_extra;
      }
      gpu_planned += spec.pods * spec.request[kGpu];
      remaining -= spec.pods;
      running.push_back(std::move(spec));
    }

    // Place the largest pods first, so that whole-node pods find whole nodes.
    std::vector<int> order(running.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const std::vector<double>& x = running[a].request;
      const std::vector<double>& y = running[b].request;
      if (x[kGpu] != y[kGpu]) return x[kGpu] > y[kGpu];
      return x[kCpu] > y[kCpu];
    });
    std::vector<std::vector<int>> placements(running.size());
    std::vector<bool> placed(running.size(), false);
    for (int i : order) placed[i] = Place(running[i], placements[i]);

    // Pending groups: mostly GPU work, so that they ask for more than is free.
    // (at least kPendingGpuShare of the groups, more while the demand is below twice the free
    // GPUs).
    double free_gpu = 0;
    for (int i : gpu_nodes_) free_gpu += free_[i][kGpu];
    double pending_gpu = 0;
    for (const GroupSpec& spec : pending) pending_gpu += spec.pods * spec.request[kGpu];
    while (pending_budget > 0 && !leaf_list_.empty()) {
      const double need_pods = std::max(0.0, 2 * free_gpu - pending_gpu) / mean_gpu_per_pod;
      const bool gpu =
          rng_.Chance(std::max(kPendingGpuShare, std::min(1.0, need_pods / pending_budget)));
      GroupSpec spec = MakeSpec(DrawKind(gpu), pending_budget);
      spec.leaf = DrawLeaf(gpu);
      pending_budget -= spec.pods;
      pending_gpu += spec.pods * spec.request[kGpu];
      pending.push_back(std::move(spec));
    }

    // Emit in generation order: running groups (those that did not fit stay pending), then
    // pending groups.
    for (size_t i = 0; i < running.size(); ++i) {
      Emit(running[i], placed[i] ? &placements[i] : nullptr);
    }
    for (const GroupSpec& spec : pending) Emit(spec, nullptr);
  }

  // Appends the group to the snapshot; `nodes` holds a node per pod when it runs.
  void Emit(const GroupSpec& spec, const std::vector<int>* nodes) {
    const bool reclaim_shape = spec.reclaim;
    PodGroup group;
    group.name = absl::StrFormat("%s-%07d", KindName(spec.kind), group_counter_++);
    if (reclaim_shape) group.name = absl::StrCat("reclaim-", group.name);
    QueueInfo& leaf = queues_[spec.leaf];
    group.queue = leaf.name;
    group.priority = spec.priority;
    group.preemptibility = spec.preemptibility;
    group.min_member = spec.min_member;
    const int64_t age =
        nodes != nullptr ? rng_.Between(600, 30 * 86400) : rng_.Between(0, 2 * 86400);
    group.creation_time = Timestamp{kNowSeconds - age, 0};
    const bool unknown_start = rng_.Chance(0.05);
    const ResourceMap request = ToMap(spec.request, /*skip_zero=*/true);
    const int pod_count = spec.pods + (nodes != nullptr ? spec.pending_extra : 0);
    for (int p = 0; p < pod_count; ++p) {
      Pod pod;
      pod.name = absl::StrCat(group.name, "-", p);
      pod.requests = request;
      pod.node_selector = spec.selector;
      pod.tolerations = spec.tolerations;
      if (nodes != nullptr && p < spec.pods) {
        pod.node_name = snapshot_.nodes[(*nodes)[p]].name;
        pod.phase = spec.releasing ? PodPhase::kReleasing : PodPhase::kRunning;
        if (!unknown_start) {
          pod.start_time =
              Timestamp{kNowSeconds - age + rng_.Between(0, std::min<int64_t>(age, 300)), 0};
        }
        if (!spec.releasing) AddUp(spec.leaf, spec.request, /*running=*/true);
      } else {
        pod.phase = PodPhase::kPending;
        AddUp(spec.leaf, spec.request, /*running=*/false);
      }
      group.pods.push_back(std::move(pod));
    }
    snapshot_.pod_groups.push_back(std::move(group));
  }

  void AddUp(int leaf, const std::vector<double>& request, bool running) {
    for (int q = leaf; q >= 0; q = queues_[q].parent) {
      for (int r = 0; r < R(); ++r) {
        queues_[q].requested[r] += request[r];
        if (running) queues_[q].allocated[r] += request[r];
      }
    }
  }

  // ---- Limits, and the queues into the snapshot ----

  void SetLimits() {
    // The reclaim subtree deserves exactly what its groups request, on every resource.
    for (QueueInfo& info : queues_) {
      if (info.reclaim) info.deserved = info.requested;
    }
    for (QueueInfo& info : queues_) {
      Queue queue;
      queue.name = info.name;
      if (info.parent >= 0) queue.parent = queues_[info.parent].name;
      queue.deserved = ToMap(info.deserved, /*skip_zero=*/false);
      queue.priority = info.priority;
      queue.creation_time = Timestamp{info.created, 0};
      queue.over_quota_weight["nvidia.com/gpu"] = info.gpu_weight;
      if (info.same_weight) {
        for (int r = 0; r < R(); ++r) queue.over_quota_weight[resource_names_[r]] = info.gpu_weight;
      }
      if (info.reclaim_min_runtime > 0)
        queue.reclaim_min_runtime = Duration{info.reclaim_min_runtime, 0};
      if (info.preempt_min_runtime > 0)
        queue.preempt_min_runtime = Duration{info.preempt_min_runtime, 0};
      if (!info.reclaim) {
        // Limits never below what the subtree already holds, so the input is within them.
        if (info.cpu_only) {
          queue.limit["nvidia.com/gpu"] = 0;
        } else if (rng_.Chance(0.3)) {
          queue.limit["nvidia.com/gpu"] =
              std::ceil(std::max({info.allocated[kGpu] * rng_.Real(1.1, 2.0),
                                  info.deserved[kGpu] * rng_.Real(1.0, 1.5), 1.0}));
        }
        if (rng_.Chance(0.1)) {
          queue.limit["cpu"] = std::ceil(
              std::max({info.allocated[kCpu] * rng_.Real(1.1, 2.0),
                        std::max(info.deserved[kCpu], 0.0) * rng_.Real(1.0, 1.5), 1000.0}));
        }
        if (info.deserved[kCpu] == -1 && rng_.Chance(0.5)) {
          queue.limit["cpu"] = -1;
          queue.limit["memory"] = -1;
        }
      }
      snapshot_.queues.push_back(std::move(queue));
    }
  }

  struct QueueInfo {
    std::string name;
    int parent = -1;
    int level = 0;
    std::vector<int> children;
    bool reclaim = false;
    bool cpu_only = false;
    double activity = 0;
    std::vector<double> deserved, allocated, requested;
    int priority = 0;
    double gpu_weight = 1;
    bool same_weight = false;
    int64_t created = 0;
    int64_t reclaim_min_runtime = 0;
    int64_t preempt_min_runtime = 0;
  };

  GeneratorOptions options_;
  Rng rng_;
  std::vector<std::string> resource_names_;
  Snapshot snapshot_;
  std::vector<std::vector<double>> free_;  // per node, dense
  std::vector<int> gpu_nodes_, cpu_nodes_;
  std::vector<int> large_gpu_nodes_, small_gpu_nodes_;  // 8 GPUs; fewer
  size_t large_cursor_ = 0, small_cursor_ = 0, cpu_cursor_ = 0;
  double schedulable_gpu_ = 0;
  std::vector<QueueInfo> queues_;
  std::vector<int> leaf_list_, reclaim_leaf_list_;
  bool tables_built_ = false;
  std::unique_ptr<WeightedTable> all_leaves_, gpu_leaves_;
  int group_counter_ = 0;
};

}  // namespace

GeneratedRequest GenerateKai(const GeneratorOptions& options) {
  return KaiGenerator(options).Run();
}

}  // namespace arbiter::generator::internal
