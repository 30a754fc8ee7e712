#include "core/kueue/preemption_candidates.h"

#include <algorithm>

namespace arbiter::kueue {
namespace {

// Order inside one queue: the preemptor criterion of CandidateBefore is constant there.
bool SameQueueBefore(const Workload& a, const Workload& b) {
  if (a.releasing != b.releasing) return a.releasing;
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.admission != b.admission) return b.admission < a.admission;
  return a.name() < b.name();
}

}  // namespace

CandidateIndex CandidateIndex::Build(const std::vector<Workload>& workloads,
                                     const QueueTree& queues, int resource_count) {
  const int queue_count = queues.size();
  CandidateIndex index;
  index.leaves_under_.assign(queue_count, {});
  for (int root : queues.roots()) {
    std::vector<int> stack = {root};
    while (!stack.empty()) {
      const int node = stack.back();
      stack.pop_back();
      if (queues.is_leaf(node)) index.leaves_under_[root].push_back(node);
      const std::vector<int>& children = queues.children(node);
      stack.insert(stack.end(), children.rbegin(), children.rend());
    }
  }
  index.resource_count_ = resource_count;
  index.by_queue_.assign(queue_count, {});
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (workloads[i].admitted) index.by_queue_[workloads[i].cq].push_back(static_cast<int>(i));
  }
  index.by_priority_.assign(queue_count, {});
  index.levels_.assign(queue_count, {});
  index.prefix_.assign(queue_count, {});
  for (int cq = 0; cq < queue_count; ++cq) {
    std::vector<int>& list = index.by_queue_[cq];
    std::sort(list.begin(), list.end(),
              [&workloads](int a, int b) { return SameQueueBefore(workloads[a], workloads[b]); });
    std::vector<int>& by_priority = index.by_priority_[cq];
    by_priority = list;
    std::stable_sort(by_priority.begin(), by_priority.end(), [&workloads](int a, int b) {
      return workloads[a].priority < workloads[b].priority;
    });
    for (int w : by_priority) {
      if (index.levels_[cq].empty() || index.levels_[cq].back() != workloads[w].priority) {
        index.levels_[cq].push_back(workloads[w].priority);
      }
    }
    index.prefix_[cq].assign((index.levels_[cq].size() + 1) * resource_count, 0.0);
  }
  return index;
}

void CandidateIndex::RefreshSums(const std::vector<Workload>& workloads,
                                 const std::vector<char>& available,
                                 const std::vector<int>& queues) {
  const size_t r_count = static_cast<size_t>(resource_count_);
  std::vector<int> all;
  if (queues.empty()) {
    for (size_t cq = 0; cq < by_priority_.size(); ++cq) all.push_back(static_cast<int>(cq));
  }
  for (int cq : queues.empty() ? all : queues) {
    std::vector<double>& prefix = prefix_[cq];
    std::fill(prefix.begin(), prefix.end(), 0.0);
    const std::vector<int32_t>& levels = levels_[cq];
    // Row k + 1 first sums the workloads of priority levels[k] alone ...
    size_t level = 0;
    for (int w : by_priority_[cq]) {
      while (levels[level] != workloads[w].priority) ++level;
      if (!available[w] || !workloads[w].preemptible) continue;
      for (const ResourceAmount& amount : workloads[w].usage) {
        prefix[(level + 1) * r_count + amount.resource] += amount.amount;
      }
    }
    // ... then every row adds the rows below: row k sums the priorities below levels[k].
    for (size_t k = 1; k <= levels.size(); ++k) {
      for (size_t r = 0; r < r_count; ++r) prefix[k * r_count + r] += prefix[(k - 1) * r_count + r];
    }
  }
}

const double* CandidateIndex::SumBelow(int cq, int32_t priority) const {
  const std::vector<int32_t>& levels = levels_[cq];
  const size_t k = std::lower_bound(levels.begin(), levels.end(), priority) - levels.begin();
  return prefix_[cq].data() + k * static_cast<size_t>(resource_count_);
}

const double* CandidateIndex::SumAll(int cq) const {
  return prefix_[cq].data() + levels_[cq].size() * static_cast<size_t>(resource_count_);
}

bool CandidateBefore(const Workload& a, const Workload& b, int preemptor_cq) {
  if (a.releasing != b.releasing) return a.releasing;
  const bool a_own = a.cq == preemptor_cq;
  const bool b_own = b.cq == preemptor_cq;
  if (a_own != b_own) return b_own;
  return SameQueueBefore(a, b);
}

}  // namespace arbiter::kueue
