// The generator's only source of randomness: std::mt19937_64's raw output (fixed by the C++
// standard) through helpers of our own, so that a seed gives the same request on every platform.
// The std:: distributions are implementation-defined and are never used.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace arbiter::generator {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // A uniform integer in [0, n); 0 when n == 0. Unbiased (rejection sampling).
  uint64_t Below(uint64_t n) {
    if (n <= 1) return 0;
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return x % n;
  }

  // A uniform integer in [lo, hi] (lo <= hi).
  int64_t Between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo) + 1));
  }

  // A uniform double in [0, 1) with 53 random bits.
  double Unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // A uniform double in [lo, hi).
  double Real(double lo, double hi) { return lo + (hi - lo) * Unit(); }

  // True with probability p.
  bool Chance(double p) { return Unit() < p; }

  // An element of a non-empty vector.
  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[Below(items.size())];
  }

  // An index drawn with probability proportional to weights[i] (non-negative, some positive).
  size_t Weighted(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = Unit() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    for (size_t i = weights.size(); i > 0; --i) {
      if (weights[i - 1] > 0) return i - 1;
    }
    return 0;
  }

  // Fisher-Yates, drawing with Below().
  template <typename T>
  void Shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) {
      std::swap(items[i - 1], items[Below(i)]);
    }
  }

 private:
  std::mt19937_64 engine_;
};

// Draws indices with probability proportional to fixed weights, in O(log n): Rng::Weighted for
// many draws from the same weights.
class WeightedTable {
 public:
  WeightedTable() = default;  // empty
  explicit WeightedTable(const std::vector<double>& weights) {
    double sum = 0;
    for (double w : weights) {
      sum += w;
      cumulative_.push_back(sum);
    }
  }

  // True when no index can be drawn (no weights, or none positive).
  bool empty() const { return cumulative_.empty() || cumulative_.back() <= 0; }

  // An index; the table must not be empty().
  size_t Draw(Rng& rng) const {
    const double x = rng.Unit() * cumulative_.back();
    size_t i = std::upper_bound(cumulative_.begin(), cumulative_.end(), x) - cumulative_.begin();
    return std::min(i, cumulative_.size() - 1);
  }

 private:
  std::vector<double> cumulative_;
};

}  // namespace arbiter::generator
