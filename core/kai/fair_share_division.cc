#include "core/kai/fair_share_division.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace arbiter::kai {
namespace {

// Divides one resource among one set of siblings (§2.2), reusing its buffers across calls.
class LevelDivider {
 public:
  LevelDivider(const KaiFairShare& shares, const std::vector<std::vector<double>>& usage_share,
               double k, CancelPoll& poll)
      : shares_(shares), usage_share_(usage_share), k_(k), poll_(poll) {}

  // `siblings` in name order; `groups` the same queues as runs of equal priority, highest
  // priority first, name order within a run (`group_ends[i]` ends run i). Writes fs_q,r.
  void Divide(const std::vector<int>& siblings, const std::vector<int>& groups,
              const std::vector<int>& group_ends, int r, double total,
              std::vector<QueueAmounts>& queues) {
    const size_t n = siblings.size();
    // Cancelled: fair shares stay partial; the caller discards the division.
    if (poll_.Tick(static_cast<int64_t>(n))) return;
    requestable_.resize(n);
    fraction_.resize(n);
    has_fraction_.assign(n, false);
    // Per-queue state below is indexed by the position in `groups`.
    double left = total;
    // Deserved phase, in name order.
    for (int q : siblings) {
      QueueAmounts& a = queues[q];
      const double limit = a.limit[r];
      const double request = a.requested[r];
      const double requestable = limit == -1 ? request : std::min(limit, request);
      const double deserved = a.deserved[r] == -1 ? total : a.deserved[r];
      const double fs = std::min(deserved, requestable);
      a.fair_share[r] = fs;
      left -= fs;
    }
    if (left <= 0) return;
    for (size_t i = 0; i < n; ++i) {
      const QueueAmounts& a = queues[groups[i]];
      const double limit = a.limit[r];
      const double request = a.requested[r];
      requestable_[i] = limit == -1 ? request : std::min(limit, request);
    }
    // Over-quota rounds, every priority group in turn.
    size_t begin = 0;
    for (int end : group_ends) {
      left = Rounds(groups, begin, static_cast<size_t>(end), r, left, queues);
      begin = static_cast<size_t>(end);
    }
    // Remainder phase, same group order: at most one unit per queue with a fraction, capped by
    // what the queue can still take (the deviation from KAI in §2.2).
    begin = 0;
    for (int end : group_ends) {
      order_.clear();
      for (size_t i = begin; i < static_cast<size_t>(end); ++i) {
        if (has_fraction_[i]) order_.push_back(i);
      }
      OrderByFraction(groups);
      for (size_t i : order_) {
        if (left <= 0) return;
        double& fs = queues[groups[i]].fair_share[r];
        const double x = std::min(std::min(1.0, left), requestable_[i] - fs);
        if (x > 0) {
          fs += x;
          left -= x;
        }
      }
      begin = static_cast<size_t>(end);
    }
  }

 private:
  // Sorts order_ into the remainder order of §2.2: fraction descending, fractions within
  // FractionsTie of each other being equal, then creation time, then name. A comparator with a
  // tolerance is not a strict weak order, so the fractions are sorted exactly first; then each
  // run of fractions that tie with the run's largest is one tie, ordered by the tie-break.
  void OrderByFraction(const std::vector<int>& groups) {
    std::sort(order_.begin(), order_.end(), [&](size_t x, size_t y) {
      if (fraction_[x] != fraction_[y]) return fraction_[x] > fraction_[y];
      return x < y;
    });
    const auto older = [&](size_t x, size_t y) {
      const Queue& qx = shares_.tree().queue(groups[x]);
      const Queue& qy = shares_.tree().queue(groups[y]);
      const Timestamp tx = qx.creation_time.value_or(Timestamp{});
      const Timestamp ty = qy.creation_time.value_or(Timestamp{});
      if (tx != ty) return tx < ty;
      return qx.name < qy.name;
    };
    for (size_t run = 0; run < order_.size();) {
      size_t end = run + 1;
      while (end < order_.size() && FractionsTie(fraction_[order_[run]], fraction_[order_[end]])) {
        ++end;
      }
      std::sort(order_.begin() + static_cast<std::ptrdiff_t>(run),
                order_.begin() + static_cast<std::ptrdiff_t>(end), older);
      run = end;
    }
  }

  // rounds(G, left) of §2.2 over groups[begin, end).
  double Rounds(const std::vector<int>& groups, size_t begin, size_t end, int r, double left,
                std::vector<QueueAmounts>& queues) {
    while (true) {
      // Nothing left to divide: every share would floor to 0 (guards against a sum that
      // rounding took a hair below 0).
      if (left <= 0) return left;
      // Each round satisfies at least one queue, so a level of n siblings may take n rounds of
      // n queues each.
      if (poll_.Tick(static_cast<int64_t>(end - begin))) return left;
      active_.clear();
      double weight_sum = 0;
      for (size_t i = begin; i < end; ++i) {
        if (requestable_[i] - queues[groups[i]].fair_share[r] > 0) {
          active_.push_back(i);
          weight_sum += queues[groups[i]].over_quota_weight[r];
        }
      }
      if (weight_sum == 0) return left;
      portion_.resize(active_.size());
      double portion_sum = 0;
      for (size_t j = 0; j < active_.size(); ++j) {
        const int q = groups[active_[j]];
        const double normalised = queues[q].over_quota_weight[r] / weight_sum;
        const double usage = k_ > 0 ? usage_share_[q][r] : 0.0;
        portion_[j] = std::max(0.0, normalised + k_ * (normalised - usage));
        portion_sum += portion_[j];
      }
      if (portion_sum == 0) return left;
      const double amount = left;
      bool again = false;
      for (size_t j = 0; j < active_.size(); ++j) {
        const size_t i = active_[j];
        QueueAmounts& a = queues[groups[i]];
        if (!(a.over_quota_weight[r] > 0)) continue;
        // The ratio first, then the product, as KAI computes it: C·P/ΣP can differ by an ulp
        // and move the floor below (§2.2).
        const double share = amount * (portion_[j] / portion_sum);
        const double need = requestable_[i] - a.fair_share[r];
        if (need <= share) {
          a.fair_share[r] += need;
          left -= need;
          has_fraction_[i] = false;
          again = again || need < share;
        } else {
          const double whole = std::floor(share);
          a.fair_share[r] += whole;
          left -= whole;
          if (share - whole > 0) {
            fraction_[i] = share - whole;
            has_fraction_[i] = true;
          }
        }
      }
      if (!again || left == 0) return left;
    }
  }

  const KaiFairShare& shares_;
  const std::vector<std::vector<double>>& usage_share_;
  const double k_;
  CancelPoll& poll_;
  // Indexed by position in the priority-ordered sibling list.
  std::vector<double> requestable_;
  std::vector<double> fraction_;
  std::vector<char> has_fraction_;
  std::vector<size_t> active_;
  std::vector<double> portion_;
  std::vector<size_t> order_;
};

// U_q,r of §3: usage[q][r] / usage_capacity[r]; 0 without capacity or without a QueueUsage.
std::vector<std::vector<double>> UsageShares(const ValidatedSnapshot& request) {
  const int n = request.resources().size();
  std::vector<std::vector<double>> result(request.tree().size(), std::vector<double>(n, 0.0));
  std::vector<double> capacity(n, 0.0);
  for (const Amount& a : request.usage_capacity()) capacity[a.resource] = a.value;
  for (int i = 0; i < static_cast<int>(request.snapshot().usage.size()); ++i) {
    const int q = request.usage_queue(i);
    if (q < 0) continue;  // unreachable after validation
    for (const Amount& a : request.usage(i)) {
      if (capacity[a.resource] == 0) continue;
      result[q][a.resource] = a.value / capacity[a.resource];
    }
  }
  return result;
}

void DivideSiblings(const std::vector<int>& siblings, const std::vector<double>& total,
                    LevelDivider& divider, std::vector<int>& groups, std::vector<int>& ends,
                    KaiFairShare& shares) {
  if (siblings.empty()) return;
  groups = siblings;
  // Priority groups, highest first; the stable sort keeps name order within a group.
  auto higher_priority = [&](int a, int b) {
    return shares.tree().queue(a).priority > shares.tree().queue(b).priority;
  };
  if (!std::is_sorted(groups.begin(), groups.end(), higher_priority)) {
    std::stable_sort(groups.begin(), groups.end(), higher_priority);
  }
  ends.clear();
  for (size_t i = 1; i <= groups.size(); ++i) {
    if (i == groups.size() ||
        shares.tree().queue(groups[i]).priority != shares.tree().queue(groups[i - 1]).priority) {
      ends.push_back(static_cast<int>(i));
    }
  }
  for (int r = 0; r < shares.resources().size(); ++r) {
    divider.Divide(siblings, groups, ends, r, total[r], shares.queues);
  }
}

}  // namespace

bool FractionsTie(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

void DivideFairShares(const ValidatedSnapshot& request, KaiFairShare& shares, CancelPoll& poll) {
  const double k = request.policy().k_value > 0 ? request.policy().k_value : 0.0;
  std::vector<std::vector<double>> usage_share;
  if (k > 0) usage_share = UsageShares(request);
  LevelDivider divider(shares, usage_share, k, poll);
  std::vector<int> groups;
  std::vector<int> ends;
  DivideSiblings(shares.tree().roots(), shares.total, divider, groups, ends, shares);
  for (int q : shares.tree().top_down()) {
    if (poll.cancelled()) return;
    if (shares.tree().is_leaf(q)) continue;
    const Row row = shares.queues[q].fair_share;
    const std::vector<double> parent_share(row.begin(), row.end());
    DivideSiblings(shares.tree().children(q), parent_share, divider, groups, ends, shares);
  }
}

}  // namespace arbiter::kai
