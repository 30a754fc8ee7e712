#include "core/kueue/fair_preemption.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/echoed_name.h"
#include "core/kueue/dominant_resource_share.h"
#include "core/kueue/pending_reasons.h"
#include "core/kueue/preemption_order.h"

namespace arbiter::kueue {

using internal::CandidateFilter;
using internal::OrderingScope;
using internal::PreemptorPath;
using internal::RunTable;
using internal::TargetOrdering;

struct SearchBuffers {
  RunTable tables[3];
  internal::ShareCache shares;
  internal::PruneMarks marks;
  std::vector<double> removal;  // the feasibility bound: usage removed per node and resource
  std::vector<uint32_t> removal_stamp;
  uint32_t removal_current = 1;
  std::vector<std::vector<int>> by_depth;
};

std::shared_ptr<SearchBuffers> MakeSearchBuffers(const QuotaTree& tree) {
  auto buffers = std::make_shared<SearchBuffers>();
  const size_t n = static_cast<size_t>(tree.size());
  for (RunTable& table : buffers->tables) table.Resize(n);
  buffers->shares.Resize(n);
  buffers->marks.alive.assign(n, 0);
  buffers->removal.assign(n * static_cast<size_t>(tree.resource_count()), 0.0);
  buffers->removal_stamp.assign(n, 0);
  int max_depth = 0;
  for (int node = 0; node < tree.size(); ++node) {
    max_depth = std::max(max_depth, tree.queues().entry(node).depth);
  }
  buffers->by_depth.assign(max_depth + 1, {});
  return buffers;
}

namespace {

// A target as the search chose it; its sentence is written only if it survives fill-back.
struct TargetRecord {
  int workload = -1;
  EvictionReason reason = EvictionReason::kUnspecified;
  KueuePreemptionStrategy strategy = KueuePreemptionStrategy::kUnspecified;
  int target_queue = -1;
  int a_x = -1;  // the children of the lowest common ancestor on x's and the target's side
  int a_y = -1;
  double preemptor_new = 0;
  double target_old = 0;
  double target_new = 0;
};

// One search: the preemptor w in x, its contested resources F, the simulated tree and the
// targets found so far.
class Search {
 public:
  Search(const PreemptionContext& context, const Workload& preemptor,
         const std::vector<int>& contested)
      : tree_(*context.tree),
        workloads_(*context.workloads),
        index_(*context.index),
        strategies_(context.strategies),
        buffers_(*context.buffers),
        w_(preemptor),
        x_(w_.cq),
        path_(tree_, x_),
        contested_(contested),
        policy_(tree_.queues().queue(x_).kueue_preemption),
        is_candidate_(workloads_, *context.available, w_, policy_, contested,
                      tree_.resource_count()),
        poll_(context.poll != nullptr ? *context.poll : never_cancelled_),
        scope_{tree_, workloads_, index_, is_candidate_, path_, buffers_.shares, poll_} {}

  std::vector<PreemptionTarget> Run();

 private:
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
  // The queues that may give candidates (§5.5 step 1), as lazy runs over the index in `out`.
  // False when evicting every candidate still would not make w fit: then no target set exists.
  bool FindCandidates(RunTable* out);
  // Whether w could fit in x with `removal` taken off each touched queue (bubbled like
  // RemoveUsage, but summed per node first).
  bool CouldFitAfterRemoval(const std::vector<int>& touched_queues);
  // DRS(n) on the current tree, cached until an eviction below n.
  const DominantResourceShare& Drs(int node) { return buffers_.shares.Of(tree_, node); }
  bool FitsWithoutPreemptor();
  bool WithinNominal() const;
  void Evict(TargetRecord target);
  // The first-strategy pass (§5.5 steps 5 and 6) over `source`; fills `retry`. True when w fits.
  bool FirstPass(RunTable* source, RunTable* retry, bool* evicted_from_x);
  bool SecondPass(RunTable* retry);
  std::string Message(const TargetRecord& target) const;
  // Work units of one step that walks x's path (a simulated eviction, a share recomputed).
  int64_t path_work() const { return static_cast<int64_t>(path_.nodes().size()); }

  QuotaTree& tree_;
  const std::vector<Workload>& workloads_;
  const CandidateIndex& index_;
  const std::vector<KueuePreemptionStrategy>& strategies_;
  SearchBuffers& buffers_;
  const Workload& w_;
  int x_;
  PreemptorPath path_;
  const std::vector<int>& contested_;
  KueuePreemption policy_;
  CandidateFilter is_candidate_;
  CancelPoll never_cancelled_;
  CancelPoll& poll_;
  OrderingScope scope_;  // what the target orderings of this search read
  std::vector<TargetRecord> targets_;
};

bool Search::BorrowsContested(int cq) const {
  for (int r : contested_) {
    if (tree_.Borrows(cq, r)) return true;
  }
  return false;
}

bool Search::FindCandidates(RunTable* out) {
  // Bound first: take off each queue everything its candidates could free (the per-round sums of
  // the index cover a superset of them) and see whether w could fit at all.
  const int resource_count = tree_.resource_count();
  ++buffers_.removal_current;
  std::vector<int> target_queues;
  auto removal_row = [this, resource_count](int node) {
    double* row = buffers_.removal.data() + static_cast<size_t>(node) * resource_count;
    if (buffers_.removal_stamp[node] != buffers_.removal_current) {
      buffers_.removal_stamp[node] = buffers_.removal_current;
      for (int r : contested_) row[r] = 0;
    }
    return row;
  };
  if (MayPreemptInOwnQueue()) {
    for (int c : index_.of(x_)) {
      if (!is_candidate_(c)) continue;
      double* row = removal_row(x_);
      for (const ResourceAmount& amount : workloads_[c].usage) {
        if (is_candidate_.contested(amount.resource)) row[amount.resource] += amount.amount;
      }
      if (target_queues.empty()) target_queues.push_back(x_);
    }
  }
  if (MayReclaimFromOthers()) {
    const bool lower_only = policy_.reclaim_within_cohort == ReclaimWithinCohort::kLowerPriority;
    for (int cq : index_.leaves_under(path_.root())) {
      if (poll_.Tick()) return false;  // cancelled: no target set
      // A queue's own usage changes only by evictions from it, so whether it borrows is the same
      // here as when `next` first looks at it.
      if (cq == x_ || !BorrowsContested(cq)) continue;
      const double* sums = lower_only ? index_.SumBelow(cq, w_.priority) : index_.SumAll(cq);
      bool any = false;
      for (int r : contested_) any = any || sums[r] > 0;
      if (!any) continue;
      double* row = removal_row(cq);
      for (int r : contested_) row[r] += sums[r];
      target_queues.push_back(cq);
    }
  }
  if (target_queues.empty() || !CouldFitAfterRemoval(target_queues)) return false;
  out->Reset();
  for (int cq : target_queues) out->Touch(cq).from_index = true;
  return true;
}

bool Search::CouldFitAfterRemoval(const std::vector<int>& touched_queues) {
  const int resource_count = tree_.resource_count();
  auto row = [this, resource_count](int node) {
    return buffers_.removal.data() + static_cast<size_t>(node) * resource_count;
  };
  // Bubble the removals up, deepest nodes first: a node passes to its parent at most what it
  // stored there (Use − LQ), as RemoveUsage does for one removal at a time.
  for (std::vector<int>& level : buffers_.by_depth) level.clear();
  for (int cq : touched_queues) buffers_.by_depth[tree_.queues().entry(cq).depth].push_back(cq);
  for (int depth = static_cast<int>(buffers_.by_depth.size()) - 1; depth > 0; --depth) {
    for (size_t i = 0; i < buffers_.by_depth[depth].size(); ++i) {
      const int node = buffers_.by_depth[depth][i];
      const int parent = tree_.parent(node);
      const bool fresh = buffers_.removal_stamp[parent] != buffers_.removal_current;
      double* parent_row = row(parent);
      if (fresh) {
        buffers_.removal_stamp[parent] = buffers_.removal_current;
        for (int r : contested_) parent_row[r] = 0;
        buffers_.by_depth[depth - 1].push_back(parent);
      }
      for (int r : contested_) {
        const double stored = tree_.usage(node, r) - tree_.local_quota(node, r);
        if (stored > 0) parent_row[r] += std::min(row(node)[r], stored);
      }
    }
  }
  // Available(x) top down with the reduced usage on x's path.
  for (int r : contested_) {
    double avail = 0;
    for (auto it = path_.nodes().rbegin(); it != path_.nodes().rend(); ++it) {
      const int node = *it;
      double used = tree_.usage(node, r);
      if (buffers_.removal_stamp[node] == buffers_.removal_current) used -= row(node)[r];
      if (node == path_.root()) {
        avail = tree_.subtree_quota(node, r) - used;
        continue;
      }
      const double local = tree_.local_quota(node, r);
      if (tree_.has_borrowing_limit(node, r)) {
        avail = std::min(avail, tree_.subtree_quota(node, r) - local - std::max(0.0, used - local) +
                                    tree_.borrowing_limit(node, r));
      }
      avail += std::max(0.0, local - used);
    }
    // Summing per node groups the additions differently from the one-by-one simulation; a
    // relative margin far above rounding keeps this bound from ruling out a search that could
    // succeed.
    const double need = w_.Amount(r);
    const double can = std::max(0.0, avail);
    if (need - can > 1e-9 * std::max({1.0, std::abs(need), std::abs(can)})) return false;
  }
  return true;
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

void Search::Evict(TargetRecord target) {
  const int cq = workloads_[target.workload].cq;
  tree_.RemoveUsage(cq, workloads_[target.workload].usage);
  buffers_.shares.ClearPath(tree_, cq);
  targets_.push_back(target);
}

std::string Search::Message(const TargetRecord& target) const {
  const std::string preemptor = CappedName(w_.name());
  switch (target.reason) {
    case EvictionReason::kKueueInClusterQueue:
      return absl::StrCat("preempted within ", NodeLabel(tree_, x_), " for ", preemptor,
                          " (priority ", workloads_[target.workload].priority, " against ",
                          w_.priority, ")");
    case EvictionReason::kKueueInCohortReclamation: {
      std::vector<std::string> names;
      for (int r : contested_) names.push_back(tree_.CellName(r));
      return absl::StrCat("reclaimed for ", preemptor, ": ", NodeLabel(tree_, x_),
                          " stays within its nominal quota on ", absl::StrJoin(names, ", "),
                          " while ", NodeLabel(tree_, target.target_queue), " borrows");
    }
    default:
      break;
  }
  if (target.strategy == KueuePreemptionStrategy::kLessThanInitialShare) {
    return absl::StrCat("preempted for ", preemptor,
                        " by fair sharing: ", NodeLabel(tree_, target.a_y), " has share ",
                        FormatQuantity(target.target_old), " above ",
                        FormatQuantity(target.preemptor_new), " of ", NodeLabel(tree_, target.a_x),
                        " with the workload");
  }
  return absl::StrCat("preempted for ", preemptor,
                      " by fair sharing: ", NodeLabel(tree_, target.a_y), " keeps share ",
                      FormatQuantity(target.target_new), " without it, at least the ",
                      FormatQuantity(target.preemptor_new), " of ", NodeLabel(tree_, target.a_x),
                      " with the workload");
}

bool Search::FirstPass(RunTable* source, RunTable* retry, bool* evicted_from_x) {
  const KueuePreemptionStrategy strategy = strategies_.front();
  TargetOrdering ordering(scope_, source, &buffers_.marks);
  const bool within_nominal = WithinNominal();
  for (int y = ordering.Next(); y >= 0; y = ordering.Next()) {
    if (poll_.Tick(path_work())) return false;  // cancelled: Run undoes the simulation
    TargetRecord target;
    target.target_queue = y;
    if (y == x_) {
      target.workload = ordering.Pop(y);
      target.reason = EvictionReason::kKueueInClusterQueue;
      *evicted_from_x = true;
      Evict(target);
      if (FitsWithoutPreemptor()) return true;
      continue;
    }
    if (within_nominal) {
      target.workload = ordering.Pop(y);
      target.reason = EvictionReason::kKueueInCohortReclamation;
      Evict(target);
      if (FitsWithoutPreemptor()) return true;
      continue;
    }
    const int lca = tree_.queues().LowestCommonAncestor(x_, y);
    target.a_x = tree_.queues().ChildOnPath(lca, x_);
    target.a_y = tree_.queues().ChildOnPath(lca, y);
    const DominantResourceShare preemptor_new = Drs(target.a_x);
    const DominantResourceShare target_old = Drs(target.a_y);
    // Removing a candidate never raises y's side, so when w's side is already above it (or is a
    // zero-weight borrower while y's is not) no candidate of y can pass either strategy: keep
    // them all for a later pass without simulating each.
    if ((preemptor_new.ZeroWeightBorrower() && !target_old.ZeroWeightBorrower()) ||
        CompareDrs(preemptor_new, target_old) > 0) {
      // The same holds for every queue under a_y: `next` visits them all before leaving a_y.
      ordering.PruneSubtree(target.a_y, retry);
      continue;
    }
    for (int c = ordering.Pop(y); c >= 0; c = ordering.Pop(y)) {
      if (poll_.Tick(path_work())) return false;
      const size_t mark = tree_.Mark();
      tree_.RemoveUsage(y, workloads_[c].usage);
      const DominantResourceShare target_new = ComputeDrs(tree_, target.a_y);
      tree_.Rollback(mark);
      const bool passes = strategy == KueuePreemptionStrategy::kLessThanInitialShare
                              ? CompareDrs(preemptor_new, target_old) < 0
                              : CompareDrs(preemptor_new, target_new) <= 0;
      if (!passes) {
        retry->Touch(y).items.push_back(c);
        continue;
      }
      target.workload = c;
      target.reason = EvictionReason::kKueueInCohortFairSharing;
      target.strategy = strategy;
      target.preemptor_new = preemptor_new.weighted;
      target.target_old = target_old.weighted;
      target.target_new = target_new.weighted;
      Evict(target);
      if (FitsWithoutPreemptor()) return true;
      break;  // shares moved: pick the target queue again from the root
    }
  }
  return false;
}

bool Search::SecondPass(RunTable* retry) {
  TargetOrdering ordering(scope_, retry, &buffers_.marks);
  for (int y = ordering.Next(); y >= 0; y = ordering.Next()) {
    if (poll_.Tick(path_work())) return false;
    const int lca = tree_.queues().LowestCommonAncestor(x_, y);
    TargetRecord target;
    target.target_queue = y;
    target.a_x = tree_.queues().ChildOnPath(lca, x_);
    target.a_y = tree_.queues().ChildOnPath(lca, y);
    const DominantResourceShare preemptor_new = Drs(target.a_x);
    const DominantResourceShare target_old = Drs(target.a_y);
    if (CompareDrs(preemptor_new, target_old) >= 0) {
      // Fails for every queue under a_y alike; `next` would visit and drop them one by one.
      ordering.PruneSubtree(target.a_y, nullptr);
      continue;
    }
    target.workload = ordering.Pop(y);
    target.reason = EvictionReason::kKueueInCohortFairSharing;
    target.strategy = KueuePreemptionStrategy::kLessThanInitialShare;
    target.preemptor_new = preemptor_new.weighted;
    target.target_old = target_old.weighted;
    Evict(target);
    if (FitsWithoutPreemptor()) return true;
    ordering.Drop(y);  // at most one eviction per queue in this pass
  }
  return false;
}

std::vector<PreemptionTarget> Search::Run() {
  RunTable* candidates = &buffers_.tables[0];
  RunTable* retry = &buffers_.tables[1];
  RunTable* rerun_retry = &buffers_.tables[2];
  if (!FindCandidates(candidates)) return {};
  const size_t start = tree_.Mark();
  tree_.AddUsage(x_, w_.usage);  // every share below is "with w"
  buffers_.shares.Clear();
  retry->Reset();
  bool evicted_from_x = false;
  bool fits = FirstPass(candidates, retry, &evicted_from_x);
  if (!fits && evicted_from_x && !poll_.cancelled()) {
    // Kueue's later fix: x's share dropped, so the candidates the strategy refused may pass now.
    rerun_retry->Reset();
    bool unused = false;
    fits = FirstPass(retry, rerun_retry, &unused);
    std::swap(retry, rerun_retry);
  }
  if (!fits && strategies_.size() > 1 && !poll_.cancelled()) fits = SecondPass(retry);
  if (!fits || poll_.cancelled()) {
    tree_.Rollback(start);  // all or nothing
    return {};
  }
  // Fill back to a minimal set: without w, put targets back newest first (except the last one
  // evicted) and keep out only those w still needs.
  tree_.RemoveUsage(x_, w_.usage);
  std::vector<char> keep(targets_.size(), 1);
  for (int i = static_cast<int>(targets_.size()) - 2; i >= 0; --i) {
    if (poll_.Tick(path_work())) {
      tree_.Rollback(start);
      return {};
    }
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
    if (!keep[i]) continue;
    result.push_back(
        PreemptionTarget{targets_[i].workload, targets_[i].reason, Message(targets_[i])});
  }
  return result;
}

}  // namespace

std::vector<PreemptionTarget> FindFairSharingTargets(const PreemptionContext& context,
                                                     int preemptor,
                                                     const std::vector<int>& contested) {
  return FindFairSharingTargets(context, (*context.workloads)[preemptor], contested);
}

std::vector<PreemptionTarget> FindFairSharingTargets(const PreemptionContext& context,
                                                     const Workload& preemptor,
                                                     const std::vector<int>& contested) {
  Search search(context, preemptor, contested);
  return search.Run();
}

}  // namespace arbiter::kueue
