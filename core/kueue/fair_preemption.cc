#include "core/kueue/fair_preemption.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/echoed_name.h"
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
// being enumerated). `item_at` and `index_at` are the pass's read positions.
struct CandidateRun {
  std::vector<int> items;
  bool from_index = false;
  size_t index_from = 0;
  size_t item_at = 0;
  size_t index_at = 0;
  bool empty() const { return items.empty() && !from_index; }
};

// Candidate runs per queue for one pass, reset in O(queues touched) by bumping a stamp.
struct RunTable {
  std::vector<CandidateRun> runs;
  std::vector<uint32_t> stamp;
  uint32_t current = 1;
  std::vector<int> touched;  // queues with a run under the current stamp

  void Reset() {
    ++current;
    touched.clear();
  }
  CandidateRun* Find(int cq) { return stamp[cq] == current ? &runs[cq] : nullptr; }
  CandidateRun& Touch(int cq) {
    CandidateRun& run = runs[cq];
    if (stamp[cq] != current) {
      stamp[cq] = current;
      run.items.clear();
      run.from_index = false;
      run.index_from = run.item_at = run.index_at = 0;
      touched.push_back(cq);
    }
    return run;
  }
};

}  // namespace

struct SearchBuffers {
  RunTable tables[3];
  std::vector<DominantResourceShare> drs;
  std::vector<uint32_t> drs_stamp;
  uint32_t drs_current = 1;
  std::vector<uint32_t> alive;  // ordering: a node is unpruned iff alive[node] == alive_current
  uint32_t alive_current = 1;
  std::vector<double> removal;  // the feasibility bound: usage removed per node and resource
  std::vector<uint32_t> removal_stamp;
  uint32_t removal_current = 1;
  std::vector<std::vector<int>> by_depth;
};

std::shared_ptr<SearchBuffers> MakeSearchBuffers(const QuotaTree& tree) {
  auto buffers = std::make_shared<SearchBuffers>();
  const size_t n = static_cast<size_t>(tree.size());
  for (RunTable& table : buffers->tables) {
    table.runs.assign(n, CandidateRun{});
    table.stamp.assign(n, 0);
  }
  buffers->drs.assign(n, DominantResourceShare{});
  buffers->drs_stamp.assign(n, 0);
  buffers->alive.assign(n, 0);
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
  Search(const PreemptionContext& context, int preemptor, const std::vector<int>& contested)
      : tree_(*context.tree),
        workloads_(*context.workloads),
        index_(*context.index),
        available_(*context.available),
        strategies_(context.strategies),
        buffers_(*context.buffers),
        w_(workloads_[preemptor]),
        x_(w_.cq),
        contested_(contested),
        policy_(tree_.queues().queue(x_).kueue_preemption),
        contested_mask_(tree_.resource_count(), 0),
        poll_(context.poll != nullptr ? *context.poll : never_cancelled_) {
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
    Ordering(Search& search, RunTable* source);
    int Next();  // the next target queue, -1 when every queue is pruned
    int Head(int cq);
    int Pop(int cq);
    // Moves every candidate of cq not popped yet to the end of `out`'s run for cq.
    void MoveRest(int cq, RunTable* out);
    // Prunes the subtree of `top`, first moving (when `out` is set) the rest of every queue that
    // `next` would still return from it: borrowing queues below borrowing, unpruned cohorts.
    // Used when every such queue would meet the same fate because the shares compared for it
    // are those of `top` itself, which nothing changes in the meantime.
    void PruneSubtree(int top, RunTable* out);
    void Drop(int cq) { alive_[cq] = 0; }

   private:
    bool pruned(int node) const { return alive_[node] != id_; }

    Search& search_;
    RunTable* source_;
    std::vector<uint32_t>& alive_;
    uint32_t id_;
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
  bool OnXPath(int node) const {
    const int depth = tree_.queues().entry(node).depth;
    return depth < static_cast<int>(x_path_.size()) && x_path_[x_path_.size() - 1 - depth] == node;
  }
  // The queues that may give candidates (§5.5 step 1), as lazy runs over the index in `out`.
  // False when evicting every candidate still would not make w fit: then no target set exists.
  bool FindCandidates(RunTable* out);
  // Whether w could fit in x with `removal` taken off each touched queue (bubbled like
  // RemoveUsage, but summed per node first).
  bool CouldFitAfterRemoval(const std::vector<int>& touched_queues);
  // DRS(n) on the current tree, cached until an eviction below n.
  const DominantResourceShare& Drs(int node);
  bool FitsWithoutPreemptor();
  bool WithinNominal() const;
  void Evict(TargetRecord target);
  // The first-strategy pass (§5.5 steps 5 and 6) over `source`; fills `retry`. True when w fits.
  bool FirstPass(RunTable* source, RunTable* retry, bool* evicted_from_x);
  bool SecondPass(RunTable* retry);
  std::string Message(const TargetRecord& target) const;

  QuotaTree& tree_;
  const std::vector<Workload>& workloads_;
  const CandidateIndex& index_;
  const std::vector<char>& available_;
  const std::vector<KueuePreemptionStrategy>& strategies_;
  SearchBuffers& buffers_;
  const Workload& w_;
  int x_;
  int root_ = -1;
  std::vector<int> x_path_;  // x, its parent, ..., the root
  const std::vector<int>& contested_;
  KueuePreemption policy_;
  std::vector<char> contested_mask_;
  CancelPoll never_cancelled_;
  CancelPoll& poll_;
  // Work units of one step that walks x's path (a simulated eviction, a share recomputed).
  int64_t path_work() const { return static_cast<int64_t>(x_path_.size()); }
  std::vector<TargetRecord> targets_;
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
      if (!IsCandidate(c)) continue;
      double* row = removal_row(x_);
      for (const ResourceAmount& amount : workloads_[c].usage) {
        if (contested_mask_[amount.resource]) row[amount.resource] += amount.amount;
      }
      if (target_queues.empty()) target_queues.push_back(x_);
    }
  }
  if (MayReclaimFromOthers()) {
    const bool lower_only = policy_.reclaim_within_cohort == ReclaimWithinCohort::kLowerPriority;
    for (int cq : index_.leaves_under(root_)) {
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
    for (auto it = x_path_.rbegin(); it != x_path_.rend(); ++it) {
      const int node = *it;
      double used = tree_.usage(node, r);
      if (buffers_.removal_stamp[node] == buffers_.removal_current) used -= row(node)[r];
      if (node == root_) {
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

const DominantResourceShare& Search::Drs(int node) {
  if (buffers_.drs_stamp[node] != buffers_.drs_current) {
    buffers_.drs[node] = ComputeDrs(tree_, node);
    buffers_.drs_stamp[node] = buffers_.drs_current;
  }
  return buffers_.drs[node];
}

Search::Ordering::Ordering(Search& search, RunTable* source)
    : search_(search),
      source_(source),
      alive_(search.buffers_.alive),
      id_(++search.buffers_.alive_current) {
  for (int cq : source->touched) {
    CandidateRun& run = source->runs[cq];
    if (run.empty()) continue;
    run.item_at = 0;
    run.index_at = run.index_from;
    for (int node = cq; node >= 0 && alive_[node] != id_; node = search.tree_.parent(node)) {
      alive_[node] = id_;
    }
  }
}

int Search::Ordering::Head(int cq) {
  CandidateRun* run = source_->Find(cq);
  if (run == nullptr) return -1;
  if (run->item_at < run->items.size()) return run->items[run->item_at];
  if (!run->from_index) return -1;
  const std::vector<int>& list = search_.index_.of(cq);
  while (run->index_at < list.size() && !search_.IsCandidate(list[run->index_at])) {
    ++run->index_at;
  }
  return run->index_at < list.size() ? list[run->index_at] : -1;
}

int Search::Ordering::Pop(int cq) {
  const int head = Head(cq);
  if (head < 0) return head;
  CandidateRun& run = *source_->Find(cq);
  if (run.item_at < run.items.size()) {
    ++run.item_at;
  } else {
    ++run.index_at;
  }
  return head;
}

void Search::Ordering::MoveRest(int cq, RunTable* out) {
  CandidateRun* run = source_->Find(cq);
  if (run == nullptr) return;
  CandidateRun& target = out->Touch(cq);
  for (; run->item_at < run->items.size(); ++run->item_at) {
    target.items.push_back(run->items[run->item_at]);
  }
  if (run->from_index) {
    // Nothing follows a queue's whole remainder in the same pass: the tail stays lazy.
    target.from_index = true;
    target.index_from = run->index_at;
    run->index_at = search_.index_.of(cq).size();
  }
}

void Search::Ordering::PruneSubtree(int top, RunTable* out) {
  if (out == nullptr) {
    alive_[top] = 0;  // nothing below a pruned node is reached again
    return;
  }
  std::vector<int> stack = {top};
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    search_.poll_.Tick();  // a cancelled search stops at its pass's next step
    if (pruned(node)) continue;
    alive_[node] = 0;
    if (search_.tree_.is_leaf(node)) {
      const CandidateRun* run = source_->Find(node);
      if (run != nullptr && !run->empty() && search_.Drs(node).borrowing) MoveRest(node, out);
      continue;
    }
    if (!search_.Drs(node).borrowing) continue;  // `next` prunes it without descending
    const std::vector<int>& children = search_.tree_.queues().children(node);
    stack.insert(stack.end(), children.begin(), children.end());
  }
}

int Search::Ordering::Next() {
  const QuotaTree& tree = search_.tree_;
  const int x = search_.x_;
  if (tree.parent(x) < 0) return Head(x) >= 0 ? x : -1;
  const int root = search_.root_;
  while (!pruned(root)) {
    int cohort = root;
    while (true) {
      int best_cq = -1;
      int best_cohort = -1;
      for (int child : tree.queues().children(cohort)) {
        if (pruned(child)) continue;
        const DominantResourceShare& drs = search_.Drs(child);
        if (tree.is_leaf(child)) {
          if ((!drs.borrowing && child != x) || Head(child) < 0) {
            alive_[child] = 0;
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
          if (!drs.borrowing && !search_.OnXPath(child)) {
            alive_[child] = 0;
            continue;
          }
          // Children come in name order: an equal share keeps the smaller name.
          if (best_cohort < 0 || CompareDrs(drs, search_.Drs(best_cohort)) > 0) {
            best_cohort = child;
          }
        }
      }
      if (best_cq < 0 && best_cohort < 0) {
        alive_[cohort] = 0;
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

void Search::Evict(TargetRecord target) {
  const int cq = workloads_[target.workload].cq;
  tree_.RemoveUsage(cq, workloads_[target.workload].usage);
  for (int node = cq; node >= 0; node = tree_.parent(node)) buffers_.drs_stamp[node] = 0;
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
      for (int r : contested_) names.push_back(CappedName(tree_.resources().name(r)));
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
  Ordering ordering(*this, source);
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
  Ordering ordering(*this, retry);
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
  ++buffers_.drs_current;
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

std::vector<PreemptionTarget> FindFairSharingTargets(const PreemptionContext& context,
                                                     int preemptor,
                                                     const std::vector<int>& contested) {
  Search search(context, preemptor, contested);
  return search.Run();
}

}  // namespace arbiter::kueue
