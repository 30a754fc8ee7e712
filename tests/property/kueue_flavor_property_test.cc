// Kueue resource flavors over random flavored trees (SEMANTICS.md §5.8): the same answer in any
// input order and twice in a row, every admission's flavors listed by its queue and suited to its
// pod sets (§5.8.5), every flavored admission charged where it says (§5.8.9), and every eviction
// taking quota of a flavor its preemptor was assigned (§5.8.8).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/generator/random.h"
#include "core/api/arbiter.h"
#include "core/taints.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property/property_support.h"
#include "tests/support/status_matchers.h"

namespace arbiter::testing {
namespace {

using generator::Rng;

constexpr int kCases = 300;
const std::vector<std::string> kFlavors = {"on-demand", "reserved", "spot"};
const std::vector<std::string> kResources = {"cpu", "nvidia.com/gpu"};

// A random flavored tree: one or two cohorts of two to four ClusterQueues (some legacy), two or
// three declared flavors with labels and sometimes a taint, each queue offering cpu and gpu in
// one or two resource groups over a random subset of the flavors, admitted workloads charged to
// listed flavors, and pending ones with one or two pod sets, selectors and tolerations.
Snapshot RandomFlavoredSnapshot(uint64_t seed) {
  Rng rng(seed);
  Snapshot s;
  s.now = Timestamp{100000, 0};
  const int flavor_count = static_cast<int>(rng.Between(2, 3));
  for (int f = 0; f < flavor_count; ++f) {
    ResourceFlavor flavor;
    flavor.name = kFlavors[f];
    flavor.node_labels["capacity"] = kFlavors[f];
    if (rng.Chance(0.4)) flavor.node_taints.push_back(Taint{kFlavors[f], "true", "NoSchedule"});
    s.resource_flavors.push_back(std::move(flavor));
  }
  const int cohorts = static_cast<int>(rng.Between(1, 2));
  std::vector<std::string> cqs;
  for (int c = 0; c < cohorts; ++c) {
    Queue cohort;
    cohort.name = absl::StrCat("cohort-", c);
    s.queues.push_back(cohort);
    const int members = static_cast<int>(rng.Between(2, 4));
    for (int m = 0; m < members; ++m) {
      Queue q;
      q.name = absl::StrCat("cq-", c, "-", m);
      q.parent = cohort.name;
      q.kueue_preemption.within_cluster_queue = static_cast<WithinClusterQueue>(rng.Between(1, 3));
      q.kueue_preemption.reclaim_within_cohort =
          static_cast<ReclaimWithinCohort>(rng.Between(1, 3));
      if (rng.Chance(0.15)) {
        for (const std::string& r : kResources)
          q.deserved[r] = static_cast<double>(rng.Between(0, 6));
      } else {
        const bool split = rng.Chance(0.3);
        for (int g = 0; g < (split ? 2 : 1); ++g) {
          ResourceGroup group;
          group.covered_resources = split ? std::vector<std::string>{kResources[g]} : kResources;
          // Two groups of one queue never share a flavor: split, group g offers flavors f with
          // f % 2 == g.
          std::vector<std::string> offered;
          for (int f = 0; f < flavor_count; ++f) {
            if (split && f % 2 != g) continue;
            if (rng.Chance(0.7)) offered.push_back(kFlavors[f]);
          }
          if (offered.empty()) offered.push_back(kFlavors[split ? g : rng.Below(flavor_count)]);
          if (rng.Chance(0.5)) std::swap(offered.front(), offered.back());
          for (const std::string& name : offered) {
            FlavorQuotas quotas;
            quotas.flavor = name;
            for (const std::string& r : group.covered_resources) {
              FlavorResourceQuota& quota = quotas.resources[r];
              quota.nominal = static_cast<double>(rng.Between(0, 4));
              if (rng.Chance(0.2)) quota.borrowing_limit = static_cast<double>(rng.Between(0, 3));
              if (rng.Chance(0.2)) quota.lending_limit = static_cast<double>(rng.Between(0, 3));
            }
            group.flavors.push_back(std::move(quotas));
          }
          q.resource_groups.push_back(std::move(group));
        }
        q.flavor_fungibility.when_can_borrow = static_cast<WhenCanBorrow>(rng.Between(0, 2));
        q.flavor_fungibility.when_can_preempt = static_cast<WhenCanPreempt>(rng.Between(0, 2));
        if (q.flavor_fungibility.when_can_borrow == WhenCanBorrow::kTryNextFlavor &&
            q.flavor_fungibility.when_can_preempt != WhenCanPreempt::kMayStopSearch &&
            rng.Chance(0.5)) {
          q.flavor_fungibility.preference = static_cast<FlavorPreference>(rng.Between(1, 2));
        }
      }
      cqs.push_back(q.name);
      s.queues.push_back(std::move(q));
    }
  }
  const int groups = static_cast<int>(rng.Between(3, 12));
  for (int i = 0; i < groups; ++i) {
    PodGroup g;
    g.name = absl::StrCat("wl-", i);
    g.queue = rng.Pick(cqs);
    g.priority = static_cast<int32_t>(rng.Between(0, 3));
    g.creation_time = Timestamp{1000 + i, 0};
    g.admitted = rng.Chance(0.5);
    if (g.admitted) g.admission_time = Timestamp{2000 + static_cast<int64_t>(rng.Below(50)), 0};
    const int sets = rng.Chance(0.3) ? 2 : 1;
    for (int p = 0; p < sets; ++p) {
      Pod pod;
      pod.name = absl::StrCat(g.name, "-", p);
      pod.pod_set = sets == 1 ? "" : absl::StrCat("set-", p);
      pod.requests["cpu"] = static_cast<double>(rng.Between(1, 3));
      if (rng.Chance(0.4)) pod.requests["nvidia.com/gpu"] = static_cast<double>(rng.Between(1, 2));
      if (rng.Chance(0.2)) pod.node_selector["capacity"] = kFlavors[rng.Below(flavor_count)];
      if (rng.Chance(0.5)) pod.tolerations.push_back(Toleration{"", "Exists", "", ""});
      g.pods.push_back(pod);
    }
    if (g.admitted) {
      // Charged to flavors its queue lists (the first of each group, or a random one).
      const Queue* queue = nullptr;
      for (const Queue& q : s.queues) {
        if (q.name == g.queue) queue = &q;
      }
      for (const Pod& pod : g.pods) {
        PodSetFlavors entry;
        entry.pod_set = pod.pod_set;
        for (const ResourceGroup& group : queue->resource_groups) {
          const std::string& flavor = group.flavors[rng.Below(group.flavors.size())].flavor;
          for (const std::string& r : group.covered_resources) entry.flavors[r] = flavor;
        }
        g.flavors.push_back(std::move(entry));
      }
    }
    s.pod_groups.push_back(std::move(g));
  }
  return s;
}

Policy KueuePolicy() {
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  return policy;
}

struct FlavoredRun {
  uint64_t seed = 0;
  Snapshot snapshot;
  absl::StatusOr<ScheduleResult> result;
};

const std::vector<FlavoredRun>& Runs() {
  static const std::vector<FlavoredRun>* runs = [] {
    auto* out = new std::vector<FlavoredRun>();
    for (uint64_t seed = 1; seed <= kCases; ++seed) {
      FlavoredRun run;
      run.seed = seed;
      run.snapshot = RandomFlavoredSnapshot(seed);
      run.result = Schedule(run.snapshot, KueuePolicy());
      out->push_back(std::move(run));
    }
    return out;
  }();
  return *runs;
}

std::string Describe(const FlavoredRun& run) { return absl::StrCat("flavored case ", run.seed); }

TEST(KueueFlavorProperty, EveryGeneratedRequestIsAnswered) {
  int admitted = 0;
  int evicted = 0;
  for (const FlavoredRun& run : Runs()) {
    ASSERT_THAT(run.result, IsOk()) << Describe(run);
    admitted += static_cast<int>(run.result->admissions.size());
    evicted += static_cast<int>(run.result->evictions.size());
  }
  EXPECT_GT(admitted, 0) << "nothing admitted: the properties below are vacuous";
  EXPECT_GT(evicted, 0) << "nothing evicted: the eviction property is vacuous";
}

// §0.5: the same answer for any order of the repeated fields, and twice in a row.
TEST(KueueFlavorProperty, SameAnswerInAnyInputOrder) {
  for (const FlavoredRun& run : Runs()) {
    if (!run.result.ok()) continue;
    const absl::StatusOr<ScheduleResult> again = Schedule(run.snapshot, KueuePolicy());
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(DiffResults(*run.result, *again), "") << Describe(run);
    for (uint64_t k = 1; k <= 2; ++k) {
      const absl::StatusOr<ScheduleResult> permuted =
          Schedule(Permuted(run.snapshot, run.seed * 7 + k), KueuePolicy());
      ASSERT_THAT(permuted, IsOk());
      EXPECT_EQ(DiffResults(*run.result, *permuted), "") << Describe(run) << " permutation " << k;
    }
  }
}

const Queue& QueueOf(const Snapshot& s, const std::string& name) {
  for (const Queue& q : s.queues) {
    if (q.name == name) return q;
  }
  static const Queue kNone;
  return kNone;
}

const PodGroup& GroupOf(const Snapshot& s, const std::string& name) {
  for (const PodGroup& g : s.pod_groups) {
    if (g.name == name) return g;
  }
  static const PodGroup kNone;
  return kNone;
}

// §5.8.5, §5.8.9: an admission names, for every pod set and every resource it requests, a flavor
// that its queue lists in the group covering that resource, and that suits every pod of the set.
TEST(KueueFlavorProperty, AdmissionsUseListedCompatibleFlavors) {
  int checked = 0;
  for (const FlavoredRun& run : Runs()) {
    if (!run.result.ok()) continue;
    for (const Admission& admission : run.result->admissions) {
      const PodGroup& group = GroupOf(run.snapshot, admission.pod_group);
      const Queue& queue = QueueOf(run.snapshot, admission.queue);
      for (const PodSetFlavors& set : admission.pod_sets) {
        for (const Pod& pod : group.pods) {
          if (pod.pod_set != set.pod_set) continue;
          for (const auto& [resource, amount] : pod.requests) {
            if (!(amount > 0)) continue;
            const auto assigned = set.flavors.find(resource);
            ASSERT_NE(assigned, set.flavors.end()) << Describe(run) << " " << admission.pod_group;
            if (queue.resource_groups.empty()) {
              EXPECT_EQ(assigned->second, "") << Describe(run);
              continue;
            }
            bool listed = false;
            for (const ResourceGroup& g : queue.resource_groups) {
              for (const FlavorQuotas& f : g.flavors) {
                for (const std::string& r : g.covered_resources) {
                  listed = listed || (f.flavor == assigned->second && r == resource);
                }
              }
            }
            EXPECT_TRUE(listed) << Describe(run) << " " << admission.pod_group << " " << resource;
            for (const ResourceFlavor& flavor : run.snapshot.resource_flavors) {
              if (flavor.name != assigned->second) continue;
              for (const auto& [key, value] : pod.node_selector) {
                const auto label = flavor.node_labels.find(key);
                EXPECT_TRUE(label == flavor.node_labels.end() || label->second == value)
                    << Describe(run) << " " << pod.name;
              }
              for (const Taint& taint : flavor.node_taints) {
                bool tolerated = false;
                for (const Toleration& t : pod.tolerations) tolerated |= Tolerates(t, taint);
                EXPECT_TRUE(tolerated) << Describe(run) << " " << pod.name;
              }
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// §5.8.8: a victim used some flavor-resource that its preemptor, once admitted, was assigned.
TEST(KueueFlavorProperty, VictimsFreeAFlavorTheirPreemptorTakes) {
  int checked = 0;
  for (const FlavoredRun& run : Runs()) {
    if (!run.result.ok()) continue;
    std::map<std::string, std::set<std::string>> assigned;  // group -> "flavor/resource"
    for (const Admission& admission : run.result->admissions) {
      for (const PodSetFlavors& set : admission.pod_sets) {
        for (const auto& [r, f] : set.flavors) assigned[admission.pod_group].insert(f + "/" + r);
      }
    }
    for (const Eviction& eviction : run.result->evictions) {
      const auto preemptor = assigned.find(eviction.preemptor_pod_group);
      if (preemptor == assigned.end()) continue;  // still waiting at the end of the call
      const PodGroup& victim = GroupOf(run.snapshot, eviction.pod_group);
      const bool legacy = QueueOf(run.snapshot, victim.queue).resource_groups.empty();
      bool shares = false;
      for (const Pod& pod : victim.pods) {
        for (const auto& [resource, amount] : pod.requests) {
          std::string flavor;
          if (!legacy) {
            for (const PodSetFlavors& set : victim.flavors) {
              if (set.pod_set != pod.pod_set) continue;
              const auto it = set.flavors.find(resource);
              if (it != set.flavors.end()) flavor = it->second;
            }
          }
          shares = shares || preemptor->second.count(flavor + "/" + resource) > 0;
        }
      }
      EXPECT_TRUE(shares) << Describe(run) << " " << eviction.pod_group << " for "
                          << eviction.preemptor_pod_group;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace arbiter::testing
