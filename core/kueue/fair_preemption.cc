#include "core/kueue/fair_preemption.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/kueue/dominant_resource_share.h"
#include "core/kueue/pending_reasons.h"

namespace arbiter::kueue {
namespace {

// Order inside one queue: the preemptor criterion of CandidateBefore is constant there.
bool SameQueueBefore(const Workload& a, const Workload& b) {
  if (a.releasing != b.releasing) return a.releasing;
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.admission != b.admission) return b.admission < a.admission;
  return a.name() < b.name();
}

// The candidates of one queue for one pass, in candidate order: listed `items`, then, when
// `from_index` is set, the queue's index list from position `index_from` on, filtered lazily by
// the search's candidate test (a whole queue's remaining candidates move between passes without
// being enumerated).
struct CandidateRun {
  std::vector<int> items;
  bool from_index = false;
  size_t index_from = 0;
  bool empty() const { return items.empty() && !from_index; }
};
using Candidates = std::vector<CandidateRun>;  // per queue

// One search: the preemptor w in x, its contested resources F, the simulated tree and the
// targets found so far.
class Search {
 public:
  Search(const PreemptionContext& context, int preemptor, const std::vector<int>& contested)
      : tree_(*context.tree),
        workloads_(*context.workloads),
        index_(*context.index),
        available_(*context.available),
        strategies_(context.strategies),
        w_(workloads_[preemptor]),
        x_(w_.cq),
        contested_(contested),
        policy_(tree_.queues().queue(x_).kueue_preemption),
        contested_mask_(tree_.resource_count(), 0) {
    for (int r : contested) contested_mask_[r] = 1;
    for (int node = x_; node >= 0; node = tree_.parent(node)) {
      x_path_.push_back(node);
      root_ = node;
    }
  }

  std::vector<PreemptionTarget> Run();

 private:
  // Target queue ordering for one pass (§5.5 step 4) over `source`, popping candidates from the
  // front of each queue's run. Queues without candidates, and cohorts without such queues below
  // them, start pruned: `next` would prune them on its way without ever returning them.
  class Ordering {
   public:
    Ordering(Search& search, const Candidates* source);
    int Next();  // the next target queue, -1 when every queue is pruned
    int Head(int cq);
    int Pop(int cq) {
      const int head = Head(cq);
      if (head >= 0) Advance(cq);
      return head;
    }
    // Moves every candidate of cq not popped yet to the end of `out`'s run for cq.
    void MoveRest(int cq, Candidates* out);
    // Prunes the subtree of `top`, first moving (when `out` is set) the rest of every queue that
    // `next` would still return from it: borrowing queues below borrowing, unpruned cohorts.
    // Used when every such queue would meet the same fate because the shares compared for it
    // are those of `top` itself, which nothing changes in the meantime.
    void PruneSubtree(int top, Candidates* out);
    void Drop(int cq) { pruned_[cq] = 1; }

   private:
    void Advance(int cq);

    Search& search_;
    const Candidates* source_;
    std::vector<char> pruned_;
    std::vector<size_t> item_at_;   // per queue: position in items
    std::vector<size_t> index_at_;  // per queue: position in the index list
  };

  bool MayPreemptInOwnQueue() const {
    return policy_.within_cluster_queue != WithinClusterQueue::kUnspecified &&
           policy_.within_cluster_queue != WithinClusterQueue::kNever;
  }
  bool MayReclaimFromOthers() const {
    return tree_.parent(x_) >= 0 &&
           policy_.reclaim_within_cohort != ReclaimWithinCohort::kUnspecified &&
           policy_.reclaim_within_cohort != ReclaimWithinCohort::kNever;
  }
  bool BorrowsContested(int cq) const;
  bool IsCandidate(int workload) const;
  // The queues that may give candidates (§5.5 step 1), as runs over the index. False when
  // evicting every candidate still would not make w fit: then no target set exists.
  bool FindCandidates(Candidates* candidates);
  // DRS(n) on the current tree, cached until an eviction below n.
  const DominantResourceShare& Drs(int node);
  bool FitsWithoutPreemptor();
  bool WithinNominal() const;
  void Evict(int workload, EvictionReason reason, std::string message);
  // The first-strategy pass (§5.5 steps 5 and 6) over `source`; fills `retry`. True when w fits.
  bool FirstPass(const Candidates& source, Candidates* retry, bool* evicted_from_x);
  bool SecondPass(const Candidates& retry);
  std::string ContestedNames() const;
  std::string FairSharingMessage(KueuePreemptionStrategy strategy, int a_x, int a_y,
                                 const DominantResourceShare& preemptor_new,
                                 const DominantResourceShare& target_old,
                                 const DominantResourceShare& target_new) const;

  QuotaTree& tree_;
  const std::vector<Workload>& workloads_;
  const CandidateIndex& index_;
  const std::vector<char>& available_;
  const std::vector<KueuePreemptionStrategy>& strategies_;
  const Workload& w_;
  int x_;
  int root_ = -1;
  std::vector<int> x_path_;  // x, its parent, ..., the root
  const std::vector<int>& contested_;
  KueuePreemption policy_;
  std::vector<char> contested_mask_;
  std::vector<DominantResourceShare> drs_;
  std::vector<char> drs_valid_;
  std::vector<PreemptionTarget> targets_;
};

bool Search::BorrowsContested(int cq) const {
  for (int r : contested_) {
    if (tree_.Borrows(cq, r)) return true;
  }
  return false;
}

bool Search::IsCandidate(int index) const {
  if (!available_[index]) return false;
  const Workload& c = workloads_[index];
  if (!c.preemptible) return false;
  bool uses_contested = false;
  for (const ResourceAmount& amount : c.usage) {
    if (contested_mask_[amount.resource]) {
      uses_contested = true;
      break;
    }
  }
  if (!uses_contested) return false;
  if (c.cq == x_) {
    if (c.priority < w_.priority) return true;
    return policy_.within_cluster_queue == WithinClusterQueue::kLowerOrNewerEqualPriority &&
           c.priority == w_.priority && w_.creation < c.creation;
  }
  if (policy_.reclaim_within_cohort == ReclaimWithinCohort::kLowerPriority) {
    return c.priority < w_.priority;
  }
  return true;
}

bool Search::FindCandidates(Candidates* candidates) {
  // Bound first: remove from each queue everything its candidates could free (the per-round sums
  // of the index cover a superset of them) and see whether w could fit at all.
  const size_t mark = tree_.Mark();
  std::vector<int> target_queues;
  if (MayPreemptInOwnQueue()) {
    for (int c : index_.of(x_)) {
      if (!IsCandidate(c)) continue;
      tree_.RemoveUsage(x_, workloads_[c].usage);
      if (target_queues.empty()) target_queues.push_back(x_);
    }
  }
  if (MayReclaimFromOthers()) {
    const bool lower_only = policy_.reclaim_within_cohort == ReclaimWithinCohort::kLowerPriority;
    Usage bound;
    for (int cq : index_.leaves_under(root_)) {
      // A queue's own usage changes only by evictions from it, so whether it borrows is the same
      // here as when `next` first looks at it.
      if (cq == x_ || !BorrowsContested(cq)) continue;
      const double* sums = lower_only ? index_.SumBelow(cq, w_.priority) : index_.SumAll(cq);
      bound.clear();
      for (int r : contested_) {
        if (sums[r] > 0) bound.push_back(ResourceAmount{r, sums[r]});
      }
      if (bound.empty()) continue;
      tree_.RemoveUsage(cq, bound);
      target_queues.push_back(cq);
    }
  }
  bool feasible = !target_queues.empty();
  for (int r : contested_) {
    if (!feasible) break;
    // The sums group additions differently from the one-by-one simulation; a relative margin far
    // above rounding keeps this bound from ruling out a search that could succeed.
    const double need = w_.Amount(r);
    const double can = tree_.Available(x_, r);
    if (need - can > 1e-9 * std::max({1.0, std::abs(need), std::abs(can)})) feasible = false;
  }
  tree_.Rollback(mark);
  if (!feasible) return false;
  candidates->assign(tree_.size(), CandidateRun{});
  for (int cq : target_queues) (*candidates)[cq].from_index = true;
  return true;
}

const DominantResourceShare& Search::Drs(int node) {
  if (!drs_valid_[node]) {
    drs_[node] = ComputeDrs(tree_, node);
    drs_valid_[node] = 1;
  }
  return drs_[node];
}

Search::Ordering::Ordering(Search& search, const Candidates* source)
    : search_(search), source_(source) {
  const int n = search.tree_.size();
  pruned_.assign(n, 1);
  item_at_.assign(n, 0);
  index_at_.assign(n, 0);
  for (int cq = 0; cq < n; ++cq) {
    const CandidateRun& run = (*source)[cq];
    if (run.empty()) continue;
    index_at_[cq] = run.index_from;
    for (int node = cq; node >= 0 && pruned_[node]; node = search.tree_.parent(node)) {
      pruned_[node] = 0;
    }
  }
}

int Search::Ordering::Head(int cq) {
  const CandidateRun& run = (*source_)[cq];
  if (item_at_[cq] < run.items.size()) return run.items[item_at_[cq]];
  if (!run.from_index) return -1;
  const std::vector<int>& list = search_.index_.of(cq);
  size_t& at = index_at_[cq];
  while (at < list.size() && !search_.IsCandidate(list[at])) ++at;
  return at < list.size() ? list[at] : -1;
}

void Search::Ordering::Advance(int cq) {
  if (item_at_[cq] < (*source_)[cq].items.size()) {
    ++item_at_[cq];
  } else {
    ++index_at_[cq];
  }
}

void Search::Ordering::MoveRest(int cq, Candidates* out) {
  const CandidateRun& run = (*source_)[cq];
  CandidateRun& target = (*out)[cq];
  for (; item_at_[cq] < run.items.size(); ++item_at_[cq]) {
    target.items.push_back(run.items[item_at_[cq]]);
  }
  if (run.from_index) {
    // Nothing follows a queue's whole remainder in the same pass: the tail stays lazy.
    target.from_index = true;
    target.index_from = index_at_[cq];
    index_at_[cq] = search_.index_.of(cq).size();
  }
}

void Search::Ordering::PruneSubtree(int top, Candidates* out) {
  std::vector<int> stack = {top};
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    if (pruned_[node]) continue;
    pruned_[node] = 1;
    if (!search_.Drs(node).borrowing && node != search_.x_) continue;
    if (search_.tree_.is_leaf(node)) {
      if (out != nullptr) MoveRest(node, out);
      continue;
    }
    const std::vector<int>& children = search_.tree_.queues().children(node);
    stack.insert(stack.end(), children.begin(), children.end());
  }
}

int Search::Ordering::Next() {
  const QuotaTree& tree = search_.tree_;
  const int x = search_.x_;
  if (tree.parent(x) < 0) return Head(x) >= 0 ? x : -1;
  const int root = search_.root_;
  while (!pruned_[root]) {
    int cohort = root;
    while (true) {
      int best_cq = -1;
      int best_cohort = -1;
      for (int child : tree.queues().children(cohort)) {
        if (pruned_[child]) continue;
        const DominantResourceShare& drs = search_.Drs(child);
        if (tree.is_leaf(child)) {
          if ((!drs.borrowing && child != x) || Head(child) < 0) {
            pruned_[child] = 1;
            continue;
          }
          if (best_cq < 0) {
            best_cq = child;
            continue;
          }
          const int order = CompareDrs(drs, search_.Drs(best_cq));
          if (order > 0 || (order == 0 && CandidateBefore(search_.workloads_[Head(child)],
                                                          search_.workloads_[Head(best_cq)], x))) {
            best_cq = child;
          }
        } else {
          const bool on_x_path = std::find(search_.x_path_.begin(), search_.x_path_.end(),
                                           child) != search_.x_path_.end();
          if (!drs.borrowing && !on_x_path) {
            pruned_[child] = 1;
            continue;
          }
          // Children come in name order: an equal share keeps the smaller name.
          if (best_cohort < 0 || CompareDrs(drs, search_.Drs(best_cohort)) > 0) {
            best_cohort = child;
          }
        }
      }
      if (best_cq < 0 && best_cohort < 0) {
        pruned_[cohort] = 1;
        break;
      }
      if (best_cohort >= 0 &&
          (best_cq < 0 || CompareDrs(search_.Drs(best_cohort), search_.Drs(best_cq)) >= 0)) {
        cohort = best_cohort;
        continue;
      }
      return best_cq;
    }
  }
  return -1;
}

bool Search::FitsWithoutPreemptor() {
  const size_t mark = tree_.Mark();
  tree_.RemoveUsage(x_, w_.usage);
  const bool fits = tree_.Fits(x_, w_.usage);
  tree_.Rollback(mark);
  return fits;
}

bool Search::WithinNominal() const {
  for (int r : contested_) {
    if (tree_.usage(x_, r) > tree_.nominal(x_, r)) return false;
  }
  return true;
}

void Search::Evict(int workload, EvictionReason reason, std::string message) {
  const int cq = workloads_[workload].cq;
  tree_.RemoveUsage(cq, workloads_[workload].usage);
  for (int node = cq; node >= 0; node = tree_.parent(node)) drs_valid_[node] = 0;
  targets_.push_back(PreemptionTarget{workload, reason, std::move(message)});
}

std::string Search::ContestedNames() const {
  std::vector<std::string> names;
  for (int r : contested_) names.push_back(tree_.resources().name(r));
  return absl::StrJoin(names, ", ");
}

std::string Search::FairSharingMessage(KueuePreemptionStrategy strategy, int a_x, int a_y,
                                       const DominantResourceShare& preemptor_new,
                                       const DominantResourceShare& target_old,
                                       const DominantResourceShare& target_new) const {
  if (strategy == KueuePreemptionStrategy::kLessThanInitialShare) {
    return absl::StrCat("preempted for ", w_.name(), " by fair sharing: ", NodeLabel(tree_, a_y),
                        " has share ", FormatQuantity(target_old.weighted), " above ",
                        FormatQuantity(preemptor_new.weighted), " of ", NodeLabel(tree_, a_x),
                        " with the workload");
  }
  return absl::StrCat("preempted for ", w_.name(), " by fair sharing: ", NodeLabel(tree_, a_y),
                      " keeps share ", FormatQuantity(target_new.weighted),
                      " without it, at least the ", FormatQuantity(preemptor_new.weighted),
                      " of ", NodeLabel(tree_, a_x), " with the workload");
}

bool Search::FirstPass(const Candidates& source, Candidates* retry, bool* evicted_from_x) {
  const KueuePreemptionStrategy strategy = strategies_.front();
  Ordering ordering(*this, &source);
  const bool within_nominal = WithinNominal();
  for (int y = ordering.Next(); y >= 0; y = ordering.Next()) {
    if (y == x_) {
      const int c = ordering.Pop(y);
      *evicted_from_x = true;
      Evict(c, EvictionReason::kKueueInClusterQueue,
            absl::StrCat("preempted within ", NodeLabel(tree_, x_), " for ", w_.name(),
                         " (priority ", workloads_[c].priority, " against ", w_.priority, ")"));
      if (FitsWithoutPreemptor()) return true;
      continue;
    }
    if (within_nominal) {
      const int c = ordering.Pop(y);
      Evict(c, EvictionReason::kKueueInCohortReclamation,
            absl::StrCat("reclaimed for ", w_.name(), ": ", NodeLabel(tree_, x_),
                         " stays within its nominal quota on ", ContestedNames(), " while ",
                         NodeLabel(tree_, y), " borrows"));
      if (FitsWithoutPreemptor()) return true;
      continue;
    }
    const int lca = tree_.queues().LowestCommonAncestor(x_, y);
    const int a_x = tree_.queues().ChildOnPath(lca, x_);
    const int a_y = tree_.queues().ChildOnPath(lca, y);
    const DominantResourceShare preemptor_new = Drs(a_x);
    const DominantResourceShare target_old = Drs(a_y);
    // Removing a candidate never raises y's side, so when w's side is already above it (or is a
    // zero-weight borrower while y's is not) no candidate of y can pass either strategy: keep
    // them all for a later pass without simulating each.
    if ((preemptor_new.ZeroWeightBorrower() && !target_old.ZeroWeightBorrower()) ||
        CompareDrs(preemptor_new, target_old) > 0) {
      // The same holds for every queue under a_y: `next` visits them all before leaving a_y.
      ordering.PruneSubtree(a_y, retry);
      continue;
    }
    for (int c = ordering.Pop(y); c >= 0; c = ordering.Pop(y)) {
      const size_t mark = tree_.Mark();
      tree_.RemoveUsage(y, workloads_[c].usage);
      const DominantResourceShare target_new = ComputeDrs(tree_, a_y);
      tree_.Rollback(mark);
      const bool passes = strategy == KueuePreemptionStrategy::kLessThanInitialShare
                              ? CompareDrs(preemptor_new, target_old) < 0
                              : CompareDrs(preemptor_new, target_new) <= 0;
      if (!passes) {
        (*retry)[y].items.push_back(c);
        continue;
      }
      Evict(c, EvictionReason::kKueueInCohortFairSharing,
            FairSharingMessage(strategy, a_x, a_y, preemptor_new, target_old, target_new));
      if (FitsWithoutPreemptor()) return true;
      break;  // shares moved: pick the target queue again from the root
    }
  }
  return false;
}

bool Search::SecondPass(const Candidates& retry) {
  Ordering ordering(*this, &retry);
  for (int y = ordering.Next(); y >= 0; y = ordering.Next()) {
    const int lca = tree_.queues().LowestCommonAncestor(x_, y);
    const int a_x = tree_.queues().ChildOnPath(lca, x_);
    const int a_y = tree_.queues().ChildOnPath(lca, y);
    const DominantResourceShare preemptor_new = Drs(a_x);
    const DominantResourceShare target_old = Drs(a_y);
    if (CompareDrs(preemptor_new, target_old) >= 0) {
      // Fails for every queue under a_y alike; `next` would visit and drop them one by one.
      ordering.PruneSubtree(a_y, nullptr);
      continue;
    }
    Evict(ordering.Pop(y), EvictionReason::kKueueInCohortFairSharing,
          FairSharingMessage(KueuePreemptionStrategy::kLessThanInitialShare, a_x, a_y,
                             preemptor_new, target_old, target_old));
    if (FitsWithoutPreemptor()) return true;
    ordering.Drop(y);  // at most one eviction per queue in this pass
  }
  return false;
}

std::vector<PreemptionTarget> Search::Run() {
  Candidates candidates;
  if (!FindCandidates(&candidates)) return {};
  const int n = tree_.size();
  const size_t start = tree_.Mark();
  tree_.AddUsage(x_, w_.usage);  // every share below is "with w"
  drs_.assign(n, DominantResourceShare{});
  drs_valid_.assign(n, 0);
  Candidates retry(n);
  bool evicted_from_x = false;
  bool fits = FirstPass(candidates, &retry, &evicted_from_x);
  if (!fits && evicted_from_x) {
    // Kueue's later fix: x's share dropped, so the candidates the strategy refused may pass now.
    Candidates rerun_retry(n);
    bool unused = false;
    fits = FirstPass(retry, &rerun_retry, &unused);
    retry.swap(rerun_retry);
  }
  if (!fits && strategies_.size() > 1) fits = SecondPass(retry);
  if (!fits) {
    tree_.Rollback(start);  // all or nothing
    return {};
  }
  // Fill back to a minimal set: without w, put targets back newest first (except the last one
  // evicted) and keep out only those w still needs.
  tree_.RemoveUsage(x_, w_.usage);
  std::vector<char> keep(targets_.size(), 1);
  for (int i = static_cast<int>(targets_.size()) - 2; i >= 0; --i) {
    const size_t mark = tree_.Mark();
    const Workload& target = workloads_[targets_[i].workload];
    tree_.AddUsage(target.cq, target.usage);
    if (tree_.Fits(x_, w_.usage)) {
      keep[i] = 0;
    } else {
      tree_.Rollback(mark);
    }
  }
  tree_.Rollback(start);
  std::vector<PreemptionTarget> result;
  for (size_t i = 0; i < targets_.size(); ++i) {
    if (keep[i]) result.push_back(std::move(targets_[i]));
  }
  return result;
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
    std::sort(list.begin(), list.end(), [&workloads](int a, int b) {
      return SameQueueBefore(workloads[a], workloads[b]);
    });
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

std::vector<PreemptionTarget> FindFairSharingTargets(const PreemptionContext& context,
                                                     int preemptor,
                                                     const std::vector<int>& contested) {
  Search search(context, preemptor, contested);
  return search.Run();
}

}  // namespace arbiter::kueue
