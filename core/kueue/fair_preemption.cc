#include "core/kueue/fair_preemption.h"

#include <algorithm>

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
        on_x_path_(tree_.size(), 0) {
    for (int node = x_; node >= 0; node = tree_.parent(node)) {
      on_x_path_[node] = 1;
      root_ = node;
    }
  }

  std::vector<PreemptionTarget> Run();

 private:
  enum class Source { kIndex, kRetry };

  // The candidates of each target queue for one pass, in order, popped from the front.
  class Ordering {
   public:
    Ordering(Search& search, Source source) : search_(search), source_(source) {
      const int n = search.tree_.size();
      pruned_.assign(n, 0);
      queue_state_.assign(n, 0);
      cursor_.assign(n, 0);
    }
    int Next();                 // the next target queue, -1 when every queue is pruned
    int Head(int cq);           // its first candidate left, -1 when none
    int Pop(int cq);            // removes and returns Head(cq)
    void Drop(int cq) { pruned_[cq] = 1; }
    std::vector<std::vector<int>>* retry_lists = nullptr;  // for Source::kRetry

   private:
    Search& search_;
    Source source_;
    std::vector<char> pruned_;
    std::vector<char> queue_state_;  // 0 unknown, 1 may give candidates, 2 gives none
    std::vector<size_t> cursor_;
  };

  bool QueueGivesCandidates(int cq) const;
  bool IsCandidate(int workload) const;
  bool FitsWithoutPreemptor();
  bool WithinNominal() const;
  void Evict(int workload, EvictionReason reason, std::string message);
  // The first-strategy pass (§5.5 steps 5 and 6); fills `retry`. True when w fits.
  bool FirstPass(Source source, std::vector<std::vector<int>>* retry_in,
                 std::vector<std::vector<int>>* retry_out, bool* evicted_from_x);
  bool SecondPass(std::vector<std::vector<int>>* retry);
  bool PassesStrategy(KueuePreemptionStrategy strategy, const DominantResourceShare& preemptor_new,
                      const DominantResourceShare& target_old,
                      const DominantResourceShare& target_new) const;
  std::string ContestedNames() const;

  QuotaTree& tree_;
  const std::vector<Workload>& workloads_;
  const CandidateIndex& index_;
  const std::vector<char>& available_;
  const std::vector<KueuePreemptionStrategy>& strategies_;
  const Workload& w_;
  int x_;
  int root_ = -1;
  const std::vector<int>& contested_;
  KueuePreemption policy_;
  std::vector<char> on_x_path_;
  std::vector<PreemptionTarget> targets_;
};

bool Search::QueueGivesCandidates(int cq) const {
  if (cq == x_) return policy_.within_cluster_queue != WithinClusterQueue::kUnspecified &&
                       policy_.within_cluster_queue != WithinClusterQueue::kNever;
  if (tree_.parent(x_) < 0) return false;
  if (policy_.reclaim_within_cohort == ReclaimWithinCohort::kUnspecified ||
      policy_.reclaim_within_cohort == ReclaimWithinCohort::kNever) {
    return false;
  }
  // Only x's root tree is visited. A queue's own usage changes only by evictions from it, which
  // come after this first look, so the answer is the one at the start of the search.
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
  for (int r : contested_) {
    if (c.Amount(r) > 0) {
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

int Search::Ordering::Head(int cq) {
  if (source_ == Source::kRetry) {
    const std::vector<int>& list = (*retry_lists)[cq];
    return cursor_[cq] < list.size() ? list[cursor_[cq]] : -1;
  }
  if (queue_state_[cq] == 0) queue_state_[cq] = search_.QueueGivesCandidates(cq) ? 1 : 2;
  if (queue_state_[cq] == 2) return -1;
  const std::vector<int>& list = search_.index_.of(cq);
  size_t& at = cursor_[cq];
  while (at < list.size() && !search_.IsCandidate(list[at])) ++at;
  return at < list.size() ? list[at] : -1;
}

int Search::Ordering::Pop(int cq) {
  const int head = Head(cq);
  if (head >= 0) ++cursor_[cq];
  return head;
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
      DominantResourceShare best_cq_drs;
      DominantResourceShare best_cohort_drs;
      for (int child : tree.queues().children(cohort)) {
        if (pruned_[child]) continue;
        const DominantResourceShare drs = ComputeDrs(tree, child);
        if (tree.is_leaf(child)) {
          if ((!drs.borrowing && child != x) || Head(child) < 0) {
            pruned_[child] = 1;
            continue;
          }
          if (best_cq < 0) {
            best_cq = child;
            best_cq_drs = drs;
            continue;
          }
          const int order = CompareDrs(drs, best_cq_drs);
          if (order > 0 || (order == 0 && CandidateBefore(search_.workloads_[Head(child)],
                                                          search_.workloads_[Head(best_cq)], x))) {
            best_cq = child;
            best_cq_drs = drs;
          }
        } else {
          if (!drs.borrowing && !search_.on_x_path_[child]) {
            pruned_[child] = 1;
            continue;
          }
          // Children come in name order: an equal share keeps the smaller name.
          if (best_cohort < 0 || CompareDrs(drs, best_cohort_drs) > 0) {
            best_cohort = child;
            best_cohort_drs = drs;
          }
        }
      }
      if (best_cq < 0 && best_cohort < 0) {
        pruned_[cohort] = 1;
        break;
      }
      if (best_cohort >= 0 && (best_cq < 0 || CompareDrs(best_cohort_drs, best_cq_drs) >= 0)) {
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
  tree_.RemoveUsage(workloads_[workload].cq, workloads_[workload].usage);
  targets_.push_back(PreemptionTarget{workload, reason, std::move(message)});
}

bool Search::PassesStrategy(KueuePreemptionStrategy strategy,
                            const DominantResourceShare& preemptor_new,
                            const DominantResourceShare& target_old,
                            const DominantResourceShare& target_new) const {
  if (strategy == KueuePreemptionStrategy::kLessThanInitialShare) {
    return CompareDrs(preemptor_new, target_old) < 0;
  }
  return CompareDrs(preemptor_new, target_new) <= 0;
}

std::string Search::ContestedNames() const {
  std::vector<std::string> names;
  for (int r : contested_) names.push_back(tree_.resources().name(r));
  return absl::StrJoin(names, ", ");
}

bool Search::FirstPass(Source source, std::vector<std::vector<int>>* retry_in,
                       std::vector<std::vector<int>>* retry_out, bool* evicted_from_x) {
  const KueuePreemptionStrategy strategy = strategies_.front();
  Ordering ordering(*this, source);
  ordering.retry_lists = retry_in;
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
    const DominantResourceShare preemptor_new = ComputeDrs(tree_, a_x);
    const DominantResourceShare target_old = ComputeDrs(tree_, a_y);
    if (preemptor_new.ZeroWeightBorrower() && !target_old.ZeroWeightBorrower()) {
      // No candidate of y can pass either strategy; keep them for a later pass.
      for (int c = ordering.Pop(y); c >= 0; c = ordering.Pop(y)) (*retry_out)[y].push_back(c);
      continue;
    }
    for (int c = ordering.Pop(y); c >= 0; c = ordering.Pop(y)) {
      const size_t mark = tree_.Mark();
      tree_.RemoveUsage(y, workloads_[c].usage);
      const DominantResourceShare target_new = ComputeDrs(tree_, a_y);
      tree_.Rollback(mark);
      if (!PassesStrategy(strategy, preemptor_new, target_old, target_new)) {
        (*retry_out)[y].push_back(c);
        continue;
      }
      std::string message =
          strategy == KueuePreemptionStrategy::kLessThanInitialShare
              ? absl::StrCat("preempted for ", w_.name(), " by fair sharing: ",
                             NodeLabel(tree_, a_y), " has share ",
                             FormatQuantity(target_old.weighted), " above ",
                             FormatQuantity(preemptor_new.weighted), " of ",
                             NodeLabel(tree_, a_x), " with the workload")
              : absl::StrCat("preempted for ", w_.name(), " by fair sharing: ",
                             NodeLabel(tree_, a_y), " keeps share ",
                             FormatQuantity(target_new.weighted), " without it, at least the ",
                             FormatQuantity(preemptor_new.weighted), " of ",
                             NodeLabel(tree_, a_x), " with the workload");
      Evict(c, EvictionReason::kKueueInCohortFairSharing, std::move(message));
      if (FitsWithoutPreemptor()) return true;
      break;  // shares moved: pick the target queue again from the root
    }
  }
  return false;
}

bool Search::SecondPass(std::vector<std::vector<int>>* retry) {
  Ordering ordering(*this, Source::kRetry);
  ordering.retry_lists = retry;
  for (int y = ordering.Next(); y >= 0; y = ordering.Next()) {
    const int lca = tree_.queues().LowestCommonAncestor(x_, y);
    const int a_x = tree_.queues().ChildOnPath(lca, x_);
    const int a_y = tree_.queues().ChildOnPath(lca, y);
    const DominantResourceShare preemptor_new = ComputeDrs(tree_, a_x);
    const DominantResourceShare target_old = ComputeDrs(tree_, a_y);
    const int c = ordering.Pop(y);
    if (CompareDrs(preemptor_new, target_old) < 0) {
      Evict(c, EvictionReason::kKueueInCohortFairSharing,
            absl::StrCat("preempted for ", w_.name(), " by fair sharing: ", NodeLabel(tree_, a_y),
                         " has share ", FormatQuantity(target_old.weighted), " above ",
                         FormatQuantity(preemptor_new.weighted), " of ", NodeLabel(tree_, a_x),
                         " with the workload"));
      if (FitsWithoutPreemptor()) return true;
    }
    ordering.Drop(y);  // at most one eviction per queue in this pass
  }
  return false;
}

std::vector<PreemptionTarget> Search::Run() {
  const size_t start = tree_.Mark();
  tree_.AddUsage(x_, w_.usage);  // every share below is "with w"
  const int n = tree_.size();
  std::vector<std::vector<int>> retry(n);
  bool evicted_from_x = false;
  bool fits = FirstPass(Source::kIndex, nullptr, &retry, &evicted_from_x);
  if (!fits && evicted_from_x) {
    // Kueue's later fix: x's share dropped, so the candidates the strategy refused may pass now.
    std::vector<std::vector<int>> rerun_retry(n);
    bool unused = false;
    fits = FirstPass(Source::kRetry, &retry, &rerun_retry, &unused);
    retry.swap(rerun_retry);
  }
  if (!fits && strategies_.size() > 1) fits = SecondPass(&retry);
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

CandidateIndex CandidateIndex::Build(const std::vector<Workload>& workloads, int queue_count) {
  CandidateIndex index;
  index.by_queue_.assign(queue_count, {});
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (workloads[i].admitted) index.by_queue_[workloads[i].cq].push_back(static_cast<int>(i));
  }
  for (std::vector<int>& list : index.by_queue_) {
    std::sort(list.begin(), list.end(), [&workloads](int a, int b) {
      return SameQueueBefore(workloads[a], workloads[b]);
    });
  }
  return index;
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
