#include "core/kueue/dominant_resource_share.h"

#include <limits>

#include "absl/container/inlined_vector.h"

namespace arbiter::kueue {

namespace {

void SetWeighted(DominantResourceShare& drs) {
  if (drs.unweighted == 0) {
    drs.weighted = 0;
  } else if (drs.weight == 0) {
    drs.weighted = std::numeric_limits<double>::infinity();
  } else {
    drs.weighted = drs.unweighted / drs.weight;
  }
}

// DRS(n) across flavors (§5.8.4), with Use(n, cell) read through `usage_of(cell)`: per resource
// name, the borrowing of each of its flavors (unused quota of one flavor does not offset another)
// over what the parent could reach of all its flavors, both summed in flavor order.
template <typename UsageOf>
DominantResourceShare DrsAcrossFlavors(const QuotaTree& tree, int node, int parent,
                                       const UsageOf& usage_of, DominantResourceShare drs) {
  const FlavorCells& cells = tree.cells();
  const int names = cells.resource_count();
  absl::InlinedVector<double, 16> borrowed(names, 0.0);
  absl::InlinedVector<char, 16> borrows(names, 0);
  // Cells ascend by (flavor, resource): for one name, its flavors come in flavor order.
  for (int cell : tree.covered(node)) {
    const double over = usage_of(cell) - tree.subtree_quota(node, cell);
    if (!(over > 0)) continue;
    drs.borrowing = true;
    borrowed[cells.resource(cell)] += over;
    borrows[cells.resource(cell)] = 1;
  }
  if (!drs.borrowing) return drs;
  int root = parent;
  while (tree.parent(root) >= 0) root = tree.parent(root);
  absl::InlinedVector<double, 16> lendable(names, 0.0);
  for (int cell : tree.covered(root)) {
    if (borrows[cells.resource(cell)]) {
      lendable[cells.resource(cell)] += tree.PotentialAvailable(parent, cell);
    }
  }
  for (int r = 0; r < names; ++r) {
    if (!borrows[r] || !(lendable[r] > 0)) continue;
    const double ratio = borrowed[r] * 1000.0 / lendable[r];
    if (ratio > drs.unweighted) {
      drs.unweighted = ratio;
      drs.dominant_resource = r;
    }
  }
  SetWeighted(drs);
  return drs;
}

// DRS(n) with Use(n, r) read through `usage_of(r)`. Without flavors a cell is a resource name;
// `dominant_resource` is always a name's index in R.
template <typename UsageOf>
DominantResourceShare Drs(const QuotaTree& tree, int node, const UsageOf& usage_of) {
  DominantResourceShare drs;
  drs.weight = tree.weight(node);
  const int parent = tree.parent(node);
  if (parent < 0) return drs;
  if (tree.cells().has_flavors()) return DrsAcrossFlavors(tree, node, parent, usage_of, drs);
  for (int r : tree.covered(node)) {
    const double borrowed = usage_of(r) - tree.subtree_quota(node, r);
    if (!(borrowed > 0)) continue;
    drs.borrowing = true;
    // Every resource n covers is covered by its root, so the lendable amount is pot(P(n)).
    const double lendable = tree.PotentialAvailable(parent, r);
    if (!(lendable > 0)) continue;
    const double ratio = borrowed * 1000.0 / lendable;
    // Resources ascend by name, so a later equal ratio keeps the smaller name.
    if (ratio > drs.unweighted) {
      drs.unweighted = ratio;
      drs.dominant_resource = r;
    }
  }
  SetWeighted(drs);
  return drs;
}

}  // namespace

DominantResourceShare ComputeDrs(const QuotaTree& tree, int node) {
  return Drs(tree, node, [&tree, node](int r) { return tree.usage(node, r); });
}

DominantResourceShare ComputeDrsWithAdded(const QuotaTree& tree, int node, const Usage& usage,
                                          const std::vector<double>& added,
                                          bool* borrows_requested) {
  // Use(n) + the part that reaches n, summed as AddUsage sums it.
  auto usage_of = [&](int r) {
    double value = tree.usage(node, r);
    for (size_t i = 0; i < usage.size(); ++i) {
      if (usage[i].resource == r) {
        if (added[i] > 0) value = value + added[i];
        break;
      }
    }
    return value;
  };
  if (borrows_requested != nullptr) {
    *borrows_requested = false;
    for (size_t i = 0; i < usage.size(); ++i) {
      const int r = usage[i].resource;
      if (usage[i].amount > 0 && tree.covers(node, r) &&
          usage_of(r) > tree.subtree_quota(node, r)) {
        *borrows_requested = true;
        break;
      }
    }
  }
  return Drs(tree, node, usage_of);
}

bool BorrowsAnyOf(const QuotaTree& tree, int node, const Usage& request) {
  for (const ResourceAmount& amount : request) {
    if (amount.amount > 0 && tree.covers(node, amount.resource) &&
        tree.Borrows(node, amount.resource)) {
      return true;
    }
  }
  return false;
}

int CompareDrs(const DominantResourceShare& a, const DominantResourceShare& b) {
  const bool a_zero = a.ZeroWeightBorrower();
  const bool b_zero = b.ZeroWeightBorrower();
  double left = a.weighted;
  double right = b.weighted;
  if (a_zero && b_zero) {
    left = a.unweighted;
    right = b.unweighted;
  } else if (a_zero != b_zero) {
    return a_zero ? 1 : -1;
  }
  if (left < right) return -1;
  if (right < left) return 1;
  return 0;
}

DominantResourceShare DrsWith(QuotaTree& tree, int node, int cq, const Usage& usage,
                              bool* borrows_requested) {
  const size_t mark = tree.Mark();
  tree.AddUsage(cq, usage);
  DominantResourceShare drs = ComputeDrs(tree, node);
  if (borrows_requested != nullptr) *borrows_requested = BorrowsAnyOf(tree, node, usage);
  tree.Rollback(mark);
  return drs;
}

}  // namespace arbiter::kueue
