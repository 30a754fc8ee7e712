// Fair-share properties over generated requests (issue 2; SEMANTICS.md §2, §3, §0.5).
#include <algorithm>
#include <map>
#include <string>

#include "clients/generator/generator.h"
#include "clients/generator/random.h"
#include "core/api/arbiter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property/property_support.h"
#include "tests/support/status_matchers.h"

namespace arbiter::testing {
namespace {

using generator::GeneratedRequest;
using generator::GeneratorModel;

constexpr int kCases = 300;

// Half of the cases turn time-aware fairness on (§3) with random usage, so that the properties
// cover the k-weighted rounds too.
GeneratedRequest MakeCase(uint64_t index) {
  GeneratedRequest request = generator::Generate(PropertyCaseOptions(index, GeneratorModel::kKai));
  generator::Rng rng(index * 7919 + 13);
  if (rng.Chance(0.5)) {
    request.policy.k_value = rng.Real(0, 3);
    request.snapshot.usage_capacity = {{"nvidia.com/gpu", 1e6}, {"cpu", 1e9}};
    for (const Queue& q : request.snapshot.queues) {
      if (rng.Chance(0.7)) {
        request.snapshot.usage.push_back(
            {q.name, {{"nvidia.com/gpu", rng.Real(0, 5e5)}, {"cpu", rng.Real(0, 5e8)}}});
      }
    }
  }
  return request;
}

double Get(const ResourceMap& m, const std::string& key, double absent) {
  auto it = m.find(key);
  return it == m.end() ? absent : it->second;
}

// §2.1: req' = request capped by the limit (no cap when absent or -1).
double Requestable(const Queue& q, const QueueShare& share, const std::string& r) {
  const double request = Get(share.requested, r, 0);
  const double limit = Get(q.limit, r, -1);
  return limit == -1 ? request : std::min(limit, request);
}

TEST(FairShareProperty, NoFairShareAboveRequestOrLimit) {
  for (uint64_t i = 0; i < kCases; ++i) {
    const GeneratedRequest req = MakeCase(i);
    auto result = ComputeFairShares(req.snapshot, req.policy);
    ASSERT_THAT(result, IsOk()) << DescribeCase(i, PropertyCaseOptions(i, GeneratorModel::kKai));
    std::map<std::string, const Queue*> queues;
    for (const Queue& q : req.snapshot.queues) queues[q.name] = &q;
    for (const QueueShare& share : QueueList(*result)) {
      const Queue& q = *queues.at(share.queue);
      for (const auto& [r, fs] : share.fair_share) {
        EXPECT_GE(fs, 0) << "case " << i << " " << share.queue << " " << r;
        EXPECT_LE(fs, Get(share.requested, r, 0)) << "case " << i << ": " << share.queue
                                                  << " fair share of " << r << " above its request";
        const double limit = Get(q.limit, r, -1);
        if (limit != -1) {
          EXPECT_LE(fs, limit) << "case " << i << ": " << share.queue << " fair share of " << r
                               << " above its limit";
        }
      }
    }
  }
}

// Siblings divide their parent's fair share (the capacity at the top level). Their fair shares
// may add up to more only through the deserved phase: Σ fs <= max(T, Σ min(d, req')) (§2.2).
TEST(FairShareProperty, SiblingsExceedParentOnlyByOversubscribedDeserved) {
  for (uint64_t i = 0; i < kCases; ++i) {
    const GeneratedRequest req = MakeCase(i);
    auto result = ComputeFairShares(req.snapshot, req.policy);
    ASSERT_THAT(result, IsOk());
    const std::vector<QueueShare> list = QueueList(*result);
    std::map<std::string, const QueueShare*> shares;
    for (const QueueShare& s : list) shares[s.queue] = &s;
    std::map<std::string, std::vector<const Queue*>> children;  // "" = top level
    for (const Queue& q : req.snapshot.queues) children[q.parent].push_back(&q);
    ResourceMap capacity;
    for (const Node& n : req.snapshot.nodes) {
      if (n.unschedulable) continue;
      for (const auto& [r, v] : n.allocatable) capacity[r] += v;
    }
    for (const auto& [r, v] : req.snapshot.capacity) capacity[r] = v;
    for (auto& [parent, kids] : children) {
      std::sort(kids.begin(), kids.end(),
                [](const Queue* a, const Queue* b) { return a->name < b->name; });
      const ResourceMap& total = parent.empty() ? capacity : shares.at(parent)->fair_share;
      for (const auto& [r, unused] : shares.at(kids.front()->name)->fair_share) {
        const double t = Get(total, r, 0);
        double sum = 0, deserved_phase = 0;
        for (const Queue* q : kids) {
          const QueueShare& s = *shares.at(q->name);
          sum += Get(s.fair_share, r, 0);
          const double d = Get(q->deserved, r, 0);
          deserved_phase += std::min(d == -1 ? t : d, Requestable(*q, s, r));
        }
        EXPECT_LE(sum, std::max(t, deserved_phase))
            << "case " << i << ": children of \"" << parent << "\" hold " << sum << " " << r
            << " of " << t << " (deserved phase " << deserved_phase << ")";
      }
    }
  }
}

TEST(FairShareProperty, SameInputGivesSameShares) {
  for (uint64_t i = 0; i < kCases; ++i) {
    const GeneratedRequest req = MakeCase(i);
    auto first = ComputeFairShares(req.snapshot, req.policy);
    auto again = ComputeFairShares(req.snapshot, req.policy);
    auto permuted = ComputeFairShares(Permuted(req.snapshot, i), req.policy);
    ASSERT_THAT(first, IsOk());
    ASSERT_THAT(again, IsOk());
    ASSERT_THAT(permuted, IsOk());
    EXPECT_FALSE(QueueList(*first).empty()) << "case " << i;
    EXPECT_EQ(DiffQueueShares(QueueList(*first), QueueList(*again)), "") << "case " << i;
    EXPECT_EQ(DiffQueueShares(QueueList(*first), QueueList(*permuted)), "")
        << "case " << i << " with permuted input";
  }
}

TEST(FairShareProperty, SameInputGivesSameKueueShares) {
  for (uint64_t i = 0; i < kCases; ++i) {
    const GeneratedRequest req =
        generator::Generate(PropertyCaseOptions(i, GeneratorModel::kKueue));
    auto first = ComputeFairShares(req.snapshot, req.policy);
    auto permuted = ComputeFairShares(Permuted(req.snapshot, i), req.policy);
    ASSERT_THAT(first, IsOk());
    ASSERT_THAT(permuted, IsOk());
    EXPECT_EQ(DiffQueueShares(first->queues, permuted->queues), "")
        << "case " << i << " with permuted input";
  }
}

}  // namespace
}  // namespace arbiter::testing
