// RanksFirstWithin (solver_bounds.h) says that §4.3 ranks queue `y` before its sibling `x` on
// every allocation and unit within their ranges; the eviction search skips tries on that word.
// Checked over generated KAI requests: for pairs of sibling queues, ranges are drawn across the
// thresholds the rules read (fair share, deserved, nothing), and every range pair it accepts is
// sampled, at the ends of each resource's range and between them. On each sampled state the
// chain's keys (QueueChain::Key, rules 1-6) must put `y` first.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "clients/generator/random.h"
#include "core/kai/queue_order.h"
#include "core/kai/solver_bounds.h"
#include "gtest/gtest.h"
#include "tests/property/kai_case.h"
#include "tests/property/property_support.h"

namespace arbiter::testing {
namespace {

using kai::ChainKey;
using kai::QueueRange;

constexpr int kCases = 120;
constexpr int kRangesPerPair = 40;
constexpr int kSamplesPerRange = 24;

// The pairs of siblings of the tree: two children of one queue, or two top-level queues.
std::vector<std::pair<int, int>> Siblings(const QueueTree& tree) {
  std::vector<std::vector<int>> families(1);  // [0]: the top level
  for (int q = 0; q < tree.size(); ++q) {
    if (tree.parent(q) < 0) families[0].push_back(q);
    if (!tree.children(q).empty()) families.push_back(tree.children(q));
  }
  std::vector<std::pair<int, int>> pairs;
  for (const std::vector<int>& family : families) {
    for (size_t a = 0; a < family.size(); ++a) {
      for (size_t b = a + 1; b < family.size(); ++b) pairs.emplace_back(family[a], family[b]);
    }
  }
  return pairs;
}

// A value near one of the thresholds rule 1 or 2 reads for resource `r` of `amounts`, or 0.
double NearThreshold(const kai::QueueAmounts& amounts, int r, generator::Rng& rng) {
  const double fair_share = amounts.fair_share[r];
  const double deserved = amounts.deserved[r] >= 0 ? amounts.deserved[r] : fair_share;
  switch (rng.Below(4)) {
    case 0:
      return 0;
    case 1:
      return fair_share * rng.Real(0.8, 1.2);
    case 2:
      return deserved * rng.Real(0.8, 1.2);
    default:
      return std::max(fair_share, deserved) * rng.Real(0, 2);
  }
}

// A range for `queue`: each resource's allocation and unit between a low and a high end, often
// one point, often straddling a threshold.
QueueRange DrawRange(const kai::KaiFairShare& shares, int queue, int r_count, generator::Rng& rng) {
  QueueRange range;
  range.queue = queue;
  const kai::QueueAmounts& amounts = shares.queues[queue];
  for (int r = 0; r < r_count; ++r) {
    const double low = NearThreshold(amounts, r, rng);
    const double width = rng.Chance(0.4) ? 0 : low * rng.Real(0, 0.3);
    range.allocated_low.push_back(low);
    range.allocated_high.push_back(low + width);
    const double unit_low = rng.Chance(0.3) ? 0 : low * rng.Real(0, 0.1);
    const double unit_width = rng.Chance(0.4) ? 0 : low * rng.Real(0, 0.1);
    range.unit_low.push_back(unit_low);
    range.unit_high.push_back(unit_low + unit_width);
  }
  return range;
}

// A state within `range`: per resource the low end, the high end or a point between.
void Sample(const QueueRange& range, generator::Rng& rng, std::vector<double>* allocated,
            std::vector<double>* unit) {
  const auto pick = [&rng](double low, double high) {
    switch (rng.Below(3)) {
      case 0:
        return low;
      case 1:
        return high;
      default:
        return std::min(high, low + (high - low) * rng.Unit());
    }
  };
  allocated->clear();
  unit->clear();
  for (size_t r = 0; r < range.allocated_low.size(); ++r) {
    allocated->push_back(pick(range.allocated_low[r], range.allocated_high[r]));
    unit->push_back(pick(range.unit_low[r], range.unit_high[r]));
  }
}

TEST(RanksFirstWithin, EveryStateOfTheRangesItAcceptsRanksYFirst) {
  int accepted = 0;
  // Accepted ranges where rule 1 or 2 goes to `y` on some sampled states and ties on others,
  // left to the later rules there.
  int mixed = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    const kai::KaiFairShare& shares = c.shares;
    const kai::QueueChain chain(shares);
    const int r_count = c.session.cluster().num_resources();
    generator::Rng rng(index * 6151 + 3);
    std::vector<double> y_allocated, y_unit, x_allocated, x_unit;
    for (const auto& [a, b] : Siblings(shares.tree())) {
      for (int k = 0; k < kRangesPerPair; ++k) {
        const bool swap = rng.Chance(0.5);
        const QueueRange y = DrawRange(shares, swap ? b : a, r_count, rng);
        const QueueRange x = DrawRange(shares, swap ? a : b, r_count, rng);
        if (!kai::RanksFirstWithin(chain, shares, y, x)) continue;
        ++accepted;
        bool won = false;
        bool tied = false;
        for (int s = 0; s < kSamplesPerRange; ++s) {
          Sample(y, rng, &y_allocated, &y_unit);
          Sample(x, rng, &x_allocated, &x_unit);
          const ChainKey y_key = chain.Key(y.queue, y_allocated.data(), y_unit.data());
          const ChainKey x_key = chain.Key(x.queue, x_allocated.data(), x_unit.data());
          const bool tie = y_key.over == x_key.over && y_key.starved == x_key.starved;
          tied = tied || tie;
          won = won || !tie;
          ASSERT_TRUE(y_key < x_key) << DescribeCase(index, c.options) << " queues " << y.queue
                                     << " before " << x.queue << ", range " << k << " sample " << s;
        }
        if (won && tied) ++mixed;
      }
    }
  }
  EXPECT_GE(accepted, 1000);
  EXPECT_GE(mixed, 100);
  RecordProperty("accepted", accepted);
  RecordProperty("mixed", mixed);
}

}  // namespace
}  // namespace arbiter::testing
