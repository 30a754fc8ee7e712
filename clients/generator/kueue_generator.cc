// The Kueue-shaped request: ClusterQueues under root cohorts and cohorts, nominal quotas with
// some borrowing and lending limits, fair-sharing weights and preemption policies; admitted
// workloads that fill about 85% of the nominal quota (busy queues borrowing), and pending
// workloads. With `flavors` N >= 1, every queue with quota gives it as resource groups of N
// flavors (SEMANTICS §5.8) and admitted workloads carry their flavors. Every constant here is
// documented in docs/generator.md.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/generator/kueue_quota.h"
#include "clients/generator/model_generators.h"
#include "clients/generator/random.h"

namespace arbiter::generator::internal {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kQuotaFill = 0.85;  // admitted usage / nominal quota, over the whole tree
constexpr double kCohortPool = 0.1;  // share of nominal quota held by cohorts themselves
constexpr int kRelocationTries = 32;
// Flavored requests (options.flavors >= 1).
constexpr char kFlavorLabel[] = "example.com/flavor";
constexpr char kGpuFlavorLabel[] = "example.com/gpu-flavor";
constexpr char kSpotTaint[] = "cloud.example.com/spot";
constexpr double kSelectorChance = 0.15;
constexpr double kSpotTolerationChance = 0.3;

struct Workload {
  int cq = -1;
  int pods = 1;
  ResourceMap per_pod;
  int priority = 0;
  bool non_preemptible = false;
  LabelMap node_selector;       // flavored requests only
  bool tolerates_spot = false;  // flavored requests only
};

// Where an admitted workload goes: its usage (by flavor-resource key) and flavors.
struct Placement {
  ResourceMap usage;
  LabelMap flavors;  // resource -> flavor; flavored queues only
};

class KueueGenerator {
 public:
  explicit KueueGenerator(const GeneratorOptions& options) : options_(options), rng_(options.seed) {
    resources_ = {"cpu", "memory", "nvidia.com/gpu"};
    for (int i = 0; i < options_.extra_resources; ++i) {
      resources_.push_back(absl::StrCat("example.com/res-", i));
    }
  }

  GeneratedRequest Run() {
    snapshot_.now = Timestamp{kNowSeconds, 0};
    if (flavored()) DeclareFlavors();
    MakeTree();
    const int total = options_.pods;
    const int pending =
        std::min(total, static_cast<int>(std::llround(total * options_.pending_fraction)));
    std::vector<Workload> admitted_candidates;
    for (int i = 0; i < total - pending; ++i) admitted_candidates.push_back(MakeWorkload());
    SetQuotas(admitted_candidates);
    if (flavored()) Flavorize();
    Admit(admitted_candidates);
    for (int i = 0; i < pending; ++i) Emit(MakeWorkload(), /*admitted=*/false, 0);
    GeneratedRequest request;
    request.policy.fairness_model = FairnessModel::kKueue;
    request.snapshot = std::move(snapshot_);
    return request;
  }

 private:
  struct Info {
    int parent = -1;
    bool leaf = false;
    std::vector<bool> covers;  // leaves only
    double activity = 0;
  };

  bool flavored() const { return options_.flavors > 0; }

  // The flavor names of group 0 (cpu, memory, extra kinds) and group 1 (nvidia.com/gpu).
  std::string FlavorName(int group, int i) const {
    return absl::StrCat(group == 0 ? "flavor-" : "gpu-flavor-", i);
  }

  // Every flavor but the first of each group is labelled with its own name; with two or more,
  // the last is a spot flavor, tainted NoSchedule.
  void DeclareFlavors() {
    const int n = options_.flavors;
    for (int group = 0; group < 2; ++group) {
      for (int i = 0; i < n; ++i) {
        ResourceFlavor flavor;
        flavor.name = FlavorName(group, i);
        if (i > 0) flavor.node_labels[group == 0 ? kFlavorLabel : kGpuFlavorLabel] = flavor.name;
        if (n >= 2 && i == n - 1)
          flavor.node_taints.push_back(Taint{kSpotTaint, "true", "NoSchedule"});
        snapshot_.resource_flavors.push_back(std::move(flavor));
      }
    }
  }

  // Turns every queue's legacy quota maps into resource groups: cpu, memory and the extra kinds
  // in group 0, nvidia.com/gpu in group 1, each resource's nominal quota and limits split among
  // the group's flavors by random weights. ClusterQueues list the flavors in a rotated order and
  // get a random flavor fungibility.
  void Flavorize() {
    const int n = options_.flavors;
    for (size_t q = 0; q < snapshot_.queues.size(); ++q) {
      Queue& queue = snapshot_.queues[q];
      const bool leaf = infos_[q].leaf;
      std::vector<std::string> keys[2];
      for (const std::string& r : resources_) {
        if (queue.deserved.count(r) || queue.borrowing_limit.count(r) ||
            queue.lending_limit.count(r)) {
          keys[r == "nvidia.com/gpu" ? 1 : 0].push_back(r);
        }
      }
      for (int group = 0; group < 2; ++group) {
        if (keys[group].empty()) continue;
        std::vector<double> weights;
        double weight_sum = 0;
        for (int i = 0; i < n; ++i) {
          weights.push_back(rng_.Real(0.5, 2.0));
          weight_sum += weights.back();
        }
        const int start = leaf ? static_cast<int>(rng_.Below(n)) : 0;
        ResourceGroup rg;
        std::vector<std::string> covered = keys[group];
        std::sort(covered.begin(), covered.end());
        rg.covered_resources = covered;
        for (int k = 0; k < n; ++k) {
          const int i = (start + k) % n;
          const double share = weights[i] / weight_sum;
          FlavorQuotas fq;
          fq.flavor = FlavorName(group, i);
          for (const std::string& r : covered) {
            FlavorResourceQuota& quota = fq.resources[r];
            auto split = [&](double v) {
              v = std::floor(v * share);
              return r == "memory" ? std::floor(v / kGiB) * kGiB : v;
            };
            auto d = queue.deserved.find(r);
            if (d != queue.deserved.end()) quota.nominal = split(d->second);
            auto bl = queue.borrowing_limit.find(r);
            if (bl != queue.borrowing_limit.end()) quota.borrowing_limit = split(bl->second);
            auto ll = queue.lending_limit.find(r);
            if (ll != queue.lending_limit.end()) quota.lending_limit = split(ll->second);
          }
          rg.flavors.push_back(std::move(fq));
        }
        queue.resource_groups.push_back(std::move(rg));
      }
      queue.deserved.clear();
      queue.borrowing_limit.clear();
      queue.lending_limit.clear();
      if (leaf) {
        FlavorFungibility& f = queue.flavor_fungibility;
        f.when_can_borrow = static_cast<WhenCanBorrow>(rng_.Below(3));
        f.when_can_preempt = static_cast<WhenCanPreempt>(rng_.Below(3));
        // A preference only where Kueue's webhook allows one (SEMANTICS §5.8, §1 step 2).
        if (f.when_can_borrow == WhenCanBorrow::kTryNextFlavor &&
            f.when_can_preempt != WhenCanPreempt::kMayStopSearch && rng_.Chance(0.5)) {
          f.preference = rng_.Chance(0.5) ? FlavorPreference::kBorrowingOverPreemption
                                          : FlavorPreference::kPreemptionOverBorrowing;
        }
      }
    }
  }

  const ResourceFlavor* FindFlavor(const std::string& name) const {
    for (const ResourceFlavor& f : snapshot_.resource_flavors) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }

  // SEMANTICS §5.8.5 for the workload's one pod set: its selector agrees with the flavor's
  // labels, and the spot taint is tolerated.
  bool Compatible(const std::string& flavor_name, const Workload& w) const {
    const ResourceFlavor* flavor = FindFlavor(flavor_name);
    if (flavor == nullptr) return true;
    for (const auto& [key, value] : w.node_selector) {
      auto label = flavor->node_labels.find(key);
      if (label != flavor->node_labels.end() && label->second != value) return false;
    }
    return flavor->node_taints.empty() || w.tolerates_spot;
  }

  // Where `w` goes in leaf `cq` now, if it fits: legacy queues take its total at the implicit
  // flavor; a flavored queue takes, per resource group, the first flavor in the queue's order
  // that suits the workload and holds all of the group's requested resources.
  bool Place(int cq, const Workload& w, const KueueQuotaTree& tree, Placement* out) const {
    const Queue& queue = snapshot_.queues[cq];
    if (queue.resource_groups.empty()) {
      out->usage = Total(w);
      out->flavors.clear();
      return tree.Fits(cq, out->usage);
    }
    ResourceMap usage;
    LabelMap flavors;
    const ResourceMap total = Total(w);
    for (const auto& [r, v] : total) {
      bool covered = false;
      for (const ResourceGroup& g : queue.resource_groups) {
        for (const std::string& c : g.covered_resources) covered = covered || c == r;
      }
      if (!covered) return false;
    }
    for (const ResourceGroup& g : queue.resource_groups) {
      bool requested = false;
      for (const std::string& r : g.covered_resources) requested = requested || total.count(r);
      if (!requested) continue;
      bool chosen = false;
      for (const FlavorQuotas& f : g.flavors) {
        if (!Compatible(f.flavor, w)) continue;
        ResourceMap part;
        for (const std::string& r : g.covered_resources) {
          auto it = total.find(r);
          if (it != total.end()) part[FlavorResourceKey(f.flavor, r)] = it->second;
        }
        if (!tree.Fits(cq, part)) continue;
        for (const auto& [key, v] : part) usage[key] = v;
        for (const std::string& r : g.covered_resources) {
          if (total.count(r)) flavors[r] = f.flavor;
        }
        chosen = true;
        break;
      }
      if (!chosen) return false;
    }
    out->usage = std::move(usage);
    out->flavors = std::move(flavors);
    return true;
  }

  void MakeTree() {
    const int cqs = options_.queues;
    int cohorts = options_.cohorts;
    if (cqs == 0) cohorts = 0;
    const bool two_levels = options_.depth >= 3 && cohorts >= 2;
    const int roots = two_levels ? std::max(1, (cohorts + 9) / 10) : cohorts;
    std::vector<int> root_index, mid_index;
    for (int i = 0; i < roots; ++i) {
      root_index.push_back(AddQueue(absl::StrFormat("org-%02d", i), -1, false));
    }
    for (int i = 0; i < cohorts - roots; ++i) {
      mid_index.push_back(
          AddQueue(absl::StrFormat("cohort-%03d", i), root_index[i % roots], false));
    }
    const std::vector<int>& homes = mid_index.empty() ? root_index : mid_index;
    // Every cohort gets a ClusterQueue first (a cohort without children would be a leaf).
    for (int i = 0; i < cqs; ++i) {
      const int parent = homes.empty()                        ? -1
                         : i < static_cast<int>(homes.size()) ? homes[i]
                                                              : homes[rng_.Below(homes.size())];
      const int q = AddQueue(absl::StrFormat("cq-%04d", i), parent, true);
      Info& info = infos_[q];
      info.covers.assign(resources_.size(), true);
      info.covers[2] = rng_.Chance(0.8);  // nvidia.com/gpu
      for (size_t r = 3; r < resources_.size(); ++r) info.covers[r] = rng_.Chance(0.5);
      info.activity = std::pow(rng_.Real(0.3, 1.7), 2);
      leaves_.push_back(q);
      activity_sum_ += info.activity;
      cumulative_.push_back(activity_sum_);
    }
    // A root cohort whose every cohort child got no ClusterQueue (too few of them) would be a
    // leaf: it is then a ClusterQueue without quota, which validation accepts.
  }

  int AddQueue(const std::string& name, int parent, bool leaf) {
    Queue queue;
    queue.name = name;
    if (parent >= 0) queue.parent = snapshot_.queues[parent].name;
    queue.creation_time = Timestamp{kNowSeconds - rng_.Between(30 * 86400, 365 * 86400), 0};
    if (rng_.Chance(0.4)) {
      static const std::vector<double> kWeights = {0.5, 1, 2, 4};
      queue.fair_sharing_weight = rng_.Chance(0.05) ? 0 : rng_.Pick(kWeights);
    }
    if (leaf) {
      static const WithinClusterQueue kWithin[] = {WithinClusterQueue::kNever,
                                                   WithinClusterQueue::kLowerPriority,
                                                   WithinClusterQueue::kLowerOrNewerEqualPriority};
      static const ReclaimWithinCohort kReclaim[] = {
          ReclaimWithinCohort::kNever, ReclaimWithinCohort::kLowerPriority,
          ReclaimWithinCohort::kAny, ReclaimWithinCohort::kAny};
      queue.kueue_preemption.within_cluster_queue = kWithin[rng_.Below(3)];
      queue.kueue_preemption.reclaim_within_cohort = kReclaim[rng_.Below(4)];
    }
    snapshot_.queues.push_back(std::move(queue));
    Info info;
    info.parent = parent;
    info.leaf = leaf;
    infos_.push_back(info);
    return static_cast<int>(snapshot_.queues.size()) - 1;
  }

  int DrawBusyLeaf() {
    const double x = rng_.Unit() * activity_sum_;
    size_t i = std::upper_bound(cumulative_.begin(), cumulative_.end(), x) - cumulative_.begin();
    return leaves_[std::min(i, leaves_.size() - 1)];
  }

  Workload MakeWorkload() {
    Workload w;
    if (leaves_.empty()) return w;
    w.cq = DrawBusyLeaf();
    const Info& info = infos_[w.cq];
    w.pods = static_cast<int>(rng_.Between(1, 4));
    const bool gpu = info.covers[2] && rng_.Chance(0.7);
    if (gpu) {
      const double g = static_cast<double>(1 << rng_.Below(3));
      w.per_pod["nvidia.com/gpu"] = g;
      w.per_pod["cpu"] = 8000 * g;
      w.per_pod["memory"] = 64 * g * kGiB;
    } else {
      w.per_pod["cpu"] = 1000 * static_cast<double>(rng_.Between(1, 16));
      w.per_pod["memory"] = 2 * static_cast<double>(rng_.Between(1, 32)) * kGiB;
    }
    for (size_t r = 3; r < resources_.size(); ++r) {
      if (info.covers[r] && rng_.Chance(0.2)) {
        w.per_pod[resources_[r]] = static_cast<double>(rng_.Between(1, 4));
      }
    }
    static const std::vector<int> kPriorities = {0, 0, 100, 100, 1000};
    w.priority = rng_.Pick(kPriorities);
    w.non_preemptible = rng_.Chance(0.1);
    if (flavored()) {
      // A selector naming a labelled flavor (of group 0, or for GPU work of group 1), and a
      // toleration of the spot taint.
      const int n = options_.flavors;
      if (n >= 2 && rng_.Chance(kSelectorChance)) {
        const bool on_gpu = gpu && rng_.Chance(0.5);
        const int i = static_cast<int>(rng_.Between(1, n - 1));
        w.node_selector[on_gpu ? kGpuFlavorLabel : kFlavorLabel] = FlavorName(on_gpu ? 1 : 0, i);
      }
      w.tolerates_spot = rng_.Chance(kSpotTolerationChance);
    }
    return w;
  }

  static ResourceMap Total(const Workload& w) {
    ResourceMap total;
    for (const auto& [r, v] : w.per_pod) total[r] = v * w.pods;
    return total;
  }

  // Nominal quotas: the admitted candidates' usage divided by kQuotaFill, shared among the
  // ClusterQueues by random weights (not by their activity, so busy queues borrow), and a
  // kCohortPool share held by some cohorts. Then borrowing and lending limits.
  void SetQuotas(const std::vector<Workload>& candidates) {
    std::vector<double> usage(resources_.size(), 0);
    for (const Workload& w : candidates) {
      for (size_t r = 0; r < resources_.size(); ++r) {
        auto it = w.per_pod.find(resources_[r]);
        if (it != w.per_pod.end()) usage[r] += it->second * w.pods;
      }
    }
    std::vector<double> weights;
    double weight_sum = 0;
    for (size_t i = 0; i < leaves_.size(); ++i) {
      weights.push_back(rng_.Real(0.5, 2.0));
      weight_sum += weights.back();
    }
    std::vector<int> pool_cohorts;
    for (size_t q = 0; q < infos_.size(); ++q) {
      if (!infos_[q].leaf && rng_.Chance(0.3)) pool_cohorts.push_back(static_cast<int>(q));
    }
    const double leaf_share = pool_cohorts.empty() ? 1.0 : 1.0 - kCohortPool;
    for (size_t i = 0; i < leaves_.size(); ++i) {
      Queue& queue = snapshot_.queues[leaves_[i]];
      const Info& info = infos_[leaves_[i]];
      for (size_t r = 0; r < resources_.size(); ++r) {
        if (!info.covers[r]) continue;
        double nominal = std::floor(usage[r] / kQuotaFill * leaf_share * weights[i] / weight_sum);
        if (r == 1) nominal = std::floor(nominal / kGiB) * kGiB;
        queue.deserved[resources_[r]] = nominal;
        if (rng_.Chance(0.2)) {
          queue.lending_limit[resources_[r]] = std::floor(nominal * rng_.Real(0.3, 1.0));
        }
        if (rng_.Chance(0.3)) {
          queue.borrowing_limit[resources_[r]] = std::floor(nominal * rng_.Real(0.0, 1.0));
        }
      }
    }
    for (int q : pool_cohorts) {
      Queue& queue = snapshot_.queues[q];
      for (size_t r = 0; r < resources_.size(); ++r) {
        double nominal = std::floor(usage[r] / kQuotaFill * kCohortPool / pool_cohorts.size());
        if (r == 1) nominal = std::floor(nominal / kGiB) * kGiB;
        queue.deserved[resources_[r]] = nominal;
      }
    }
    for (size_t q = 0; q < infos_.size(); ++q) {
      Queue& queue = snapshot_.queues[q];
      if (infos_[q].leaf || infos_[q].parent < 0 || !rng_.Chance(0.2)) continue;
      // A borrowing limit on an intermediate cohort, from its own subtree's nominal quota.
      double subtree_gpu = 0;
      for (int leaf : leaves_) {
        for (int a = infos_[leaf].parent; a >= 0; a = infos_[a].parent) {
          if (a != static_cast<int>(q)) continue;
          auto it = snapshot_.queues[leaf].deserved.find("nvidia.com/gpu");
          if (it != snapshot_.queues[leaf].deserved.end()) subtree_gpu += it->second;
        }
      }
      queue.borrowing_limit["nvidia.com/gpu"] = std::floor(subtree_gpu * rng_.Real(0.2, 1.0));
    }
  }

  // Admits the candidates in order where they fit; one that does not fit tries other
  // ClusterQueues, then is emitted pending.
  void Admit(const std::vector<Workload>& candidates) {
    KueueQuotaTree tree = KueueQuotaTree::Build(snapshot_);
    int64_t admitted_at = kNowSeconds - 7 * 86400;
    Placement placement;
    for (Workload w : candidates) {
      bool fits = Place(w.cq, w, tree, &placement);
      if (!fits && w.pods > 1) {  // a smaller workload of the same shape
        w.pods = 1;
        fits = Place(w.cq, w, tree, &placement);
      }
      for (int attempt = 0; !fits && attempt < kRelocationTries; ++attempt) {
        const int other = leaves_[rng_.Below(leaves_.size())];
        bool covered = true;
        for (const auto& [r, v] : w.per_pod) {
          const auto it = std::find(resources_.begin(), resources_.end(), r);
          if (!infos_[other].covers[it - resources_.begin()]) covered = false;
        }
        if (covered && Place(other, w, tree, &placement)) {
          w.cq = other;
          fits = true;
        }
      }
      if (fits) {
        tree.Add(w.cq, placement.usage);
        admitted_at += rng_.Between(1, 60);
        Emit(w, /*admitted=*/true, std::min(admitted_at, kNowSeconds), placement.flavors);
      } else {
        Emit(w, /*admitted=*/false, 0);
      }
    }
  }

  void Emit(const Workload& w, bool admitted, int64_t admitted_at,
            const LabelMap& flavors = LabelMap()) {
    if (w.cq < 0) return;
    PodGroup group;
    group.name = absl::StrFormat("wl-%07d", counter_++);
    group.queue = snapshot_.queues[w.cq].name;
    group.priority = w.priority;
    group.preemptibility =
        w.non_preemptible ? Preemptibility::kNonPreemptible : Preemptibility::kUnspecified;
    group.min_member = w.pods;
    const int64_t created =
        admitted ? admitted_at - rng_.Between(0, 3600) : kNowSeconds - rng_.Between(0, 86400);
    group.creation_time = Timestamp{created, 0};
    group.admitted = admitted;
    if (admitted) group.admission_time = Timestamp{admitted_at, 0};
    for (int p = 0; p < w.pods; ++p) {
      Pod pod;
      pod.name = absl::StrCat(group.name, "-", p);
      pod.requests = w.per_pod;
      pod.node_selector = w.node_selector;
      if (w.tolerates_spot) pod.tolerations.push_back(Toleration{kSpotTaint, "Exists", "", ""});
      group.pods.push_back(std::move(pod));
    }
    if (admitted && !flavors.empty()) group.flavors.push_back(PodSetFlavors{"", flavors});
    snapshot_.pod_groups.push_back(std::move(group));
  }

  GeneratorOptions options_;
  Rng rng_;
  std::vector<std::string> resources_;
  Snapshot snapshot_;
  std::vector<Info> infos_;  // parallel to snapshot_.queues
  std::vector<int> leaves_;
  std::vector<double> cumulative_;
  double activity_sum_ = 0;
  int counter_ = 0;
};

}  // namespace

GeneratedRequest GenerateKueue(const GeneratorOptions& options) {
  return KueueGenerator(options).Run();
}

}  // namespace arbiter::generator::internal
