// Dominant resource share (SEMANTICS.md §5.3): how far a ClusterQueue or cohort borrows beyond its
// subtree quota, relative to what its parent could ever reach, divided by its fair-sharing weight.
#pragma once

#include <vector>

#include "core/kueue/quota_tree.h"

namespace arbiter::kueue {

struct DominantResourceShare {
  // max over borrowed resources of (Use − SQ)·1000 / pot(parent); 0 when none. With flavors
  // (§5.8.4), per resource name: Σ over its flavors of max(0, Use − SQ), over Σ of pot(parent).
  double unweighted = 0;
  // 0 when unweighted is 0; +∞ when the weight is 0; else unweighted / weight.
  double weighted = 0;
  double weight = 1;
  // The resource of the maximum ratio (smaller name on ties), an index of R (a name, not a cell),
  // -1 when there is none.
  int dominant_resource = -1;
  // Use > SQ on some covered cell, whether or not that cell adds a ratio.
  bool borrowing = false;

  // Weight 0 and a positive ratio: larger than any other share.
  bool ZeroWeightBorrower() const { return weight == 0 && unweighted > 0; }
};

// DRS(n) on the tree as it is. O(|covered(n)|).
DominantResourceShare ComputeDrs(const QuotaTree& tree, int node);

// DRS(n) with `added[i]` more of resource usage[i].resource at n (0: nothing reaches n), as if
// `usage` had been added at a ClusterQueue below n and bubbled up to n: the same sums as AddUsage
// makes, without changing the tree. `borrows_requested`, when given, receives BorrowsAnyOf(n,
// usage) on that tree. O(|covered(n)| · |usage|).
DominantResourceShare ComputeDrsWithAdded(const QuotaTree& tree, int node, const Usage& usage,
                                          const std::vector<double>& added,
                                          bool* borrows_requested);

// True iff n borrows (Use > SQ) some covered resource that `request` asks a positive amount of.
bool BorrowsAnyOf(const QuotaTree& tree, int node, const Usage& request);

// CompareDRS of §5.3: negative, 0 or positive as a is smaller, equal or larger. Exact: both zero-
// weight borrowers compare their unweighted ratios; one alone is larger; else the weighted shares.
int CompareDrs(const DominantResourceShare& a, const DominantResourceShare& b);

// "DRS of n with w": w's usage added at `cq` (bubbling), DRS(n) evaluated, the tree restored.
// `borrows_requested`, when given, receives BorrowsAnyOf(n, usage) on the same tree.
DominantResourceShare DrsWith(QuotaTree& tree, int node, int cq, const Usage& usage,
                              bool* borrows_requested = nullptr);

}  // namespace arbiter::kueue
