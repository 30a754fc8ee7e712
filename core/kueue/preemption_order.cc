#include "core/kueue/preemption_order.h"

#include <vector>

namespace arbiter::kueue::internal {

TargetOrdering::TargetOrdering(const OrderingScope& scope, RunTable* source, PruneMarks* marks)
    : scope_(scope), source_(source), alive_(marks->alive), id_(++marks->current) {
  for (int cq : source->touched) {
    CandidateRun& run = source->runs[cq];
    if (run.empty()) continue;
    run.item_at = 0;
    run.index_at = run.index_from;
    for (int node = cq; node >= 0 && alive_[node] != id_; node = scope.tree.parent(node)) {
      alive_[node] = id_;
    }
  }
}

int TargetOrdering::Head(int cq) {
  CandidateRun* run = source_->Find(cq);
  if (run == nullptr) return -1;
  if (run->item_at < run->items.size()) return run->items[run->item_at];
  if (!run->from_index) return -1;
  const std::vector<int>& list = scope_.index.of(cq);
  while (run->index_at < list.size() && !scope_.is_candidate(list[run->index_at])) {
    ++run->index_at;
  }
  return run->index_at < list.size() ? list[run->index_at] : -1;
}

int TargetOrdering::Pop(int cq) {
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

void TargetOrdering::MoveRest(int cq, RunTable* out) {
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
    run->index_at = scope_.index.of(cq).size();
  }
}

void TargetOrdering::PruneSubtree(int top, RunTable* out) {
  if (out == nullptr) {
    alive_[top] = 0;  // nothing below a pruned node is reached again
    return;
  }
  std::vector<int> stack = {top};
  while (!stack.empty()) {
    const int node = stack.back();
    stack.pop_back();
    scope_.poll.Tick();  // a cancelled search stops at its pass's next step
    if (pruned(node)) continue;
    alive_[node] = 0;
    if (scope_.tree.is_leaf(node)) {
      const CandidateRun* run = source_->Find(node);
      if (run != nullptr && !run->empty() && Drs(node).borrowing) MoveRest(node, out);
      continue;
    }
    if (!Drs(node).borrowing) continue;  // `next` prunes it without descending
    const std::vector<int>& children = scope_.tree.queues().children(node);
    stack.insert(stack.end(), children.begin(), children.end());
  }
}

int TargetOrdering::Next() {
  const QuotaTree& tree = scope_.tree;
  const int x = scope_.path.x();
  if (tree.parent(x) < 0) return Head(x) >= 0 ? x : -1;
  const int root = scope_.path.root();
  while (!pruned(root)) {
    int cohort = root;
    while (true) {
      int best_cq = -1;
      int best_cohort = -1;
      for (int child : tree.queues().children(cohort)) {
        if (pruned(child)) continue;
        const DominantResourceShare& drs = Drs(child);
        if (tree.is_leaf(child)) {
          if ((!drs.borrowing && child != x) || Head(child) < 0) {
            alive_[child] = 0;
            continue;
          }
          if (best_cq < 0) {
            best_cq = child;
            continue;
          }
          const int order = CompareDrs(drs, Drs(best_cq));
          if (order > 0 || (order == 0 && CandidateBefore(scope_.workloads[Head(child)],
                                                          scope_.workloads[Head(best_cq)], x))) {
            best_cq = child;
          }
        } else {
          if (!drs.borrowing && !scope_.path.Contains(tree, child)) {
            alive_[child] = 0;
            continue;
          }
          // Children come in name order: an equal share keeps the smaller name.
          if (best_cohort < 0 || CompareDrs(drs, Drs(best_cohort)) > 0) {
            best_cohort = child;
          }
        }
      }
      if (best_cq < 0 && best_cohort < 0) {
        alive_[cohort] = 0;
        break;
      }
      if (best_cohort >= 0 && (best_cq < 0 || CompareDrs(Drs(best_cohort), Drs(best_cq)) >= 0)) {
        cohort = best_cohort;
        continue;
      }
      return best_cq;
    }
  }
  return -1;
}

}  // namespace arbiter::kueue::internal
