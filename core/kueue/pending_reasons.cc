#include "core/kueue/pending_reasons.h"

#include "absl/strings/str_cat.h"
#include "core/echoed_name.h"

namespace arbiter::kueue {

std::string NodeLabel(const QuotaTree& tree, int node) {
  return absl::StrCat(tree.kind(node), " ", CappedName(tree.name(node)));
}

std::string ShortfallMessage(const QuotaTree& tree, int cq, int r, double amount) {
  const QuotaTree::Bound bound = tree.AvailableBound(cq, r);
  const double shortfall = amount - tree.Available(cq, r);
  const char* what = "its borrowing limit";
  if (!bound.borrowing_limit) what = tree.is_leaf(bound.node) ? "its nominal quota" : "its quota";
  return absl::StrCat(NodeLabel(tree, bound.node), " would exceed ", what, " on ", tree.CellName(r),
                      " by ", FormatQuantity(shortfall));
}

}  // namespace arbiter::kueue
