// The Kueue quota tree (SEMANTICS.md §5.2): subtree quota, local (never lent) quota, usage that
// bubbles up through lending limits, and what a cluster queue can still take or could ever take
// through the borrowing limits on its path.
//
// Nodes are the queues of a QueueTree (same indices: name order); a leaf is a ClusterQueue, a
// non-leaf a cohort. Every per-resource value is dense over the request's flavor-resources, its
// cells (flavor_cells.h, §5.8.1): "resource r" below is a cell, which for a request without
// flavors is the resource of R with the same index. The
// usage can change (admissions, simulated evictions); every change is journaled so that a
// simulation is undone exactly (Mark / Rollback), without floating-point drift.
//
// Not thread-safe; cheap to copy (a few vectors of |queues|·|R| doubles).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cancel_poll.h"
#include "core/kueue/flavor_cells.h"
#include "core/queue_tree.h"
#include "core/resources.h"
#include "core/validated_snapshot.h"

namespace arbiter::kueue {

// An amount of one cell (a flavor-resource; for a request without flavors, a resource of R), by
// index.
struct ResourceAmount {
  int resource = 0;
  double amount = 0;
};

// A workload's usage or request: one entry per resource with a positive amount, resource order.
using Usage = std::vector<ResourceAmount>;

class QuotaTree {
 public:
  // Which constraint decides how much of a resource a cluster queue can still take: the
  // borrowing limit of `node`, or (borrowing_limit false) the quota of the root `node`.
  struct Bound {
    int node = -1;
    bool borrowing_limit = false;
  };

  QuotaTree() = default;

  // The request's cells (FlavorCells::Build) and the quotas of its queues over them (§5.2, per
  // flavor-resource §5.8.2), with zero usage: a legacy queue's maps are the implicit flavor's
  // cells, a flavored queue's resource groups its flavors' cells. The request must outlive the
  // tree. O(|queues|·|cells|). When `poll` (may be null) reports the call cancelled, the tree is
  // returned incomplete: the caller checks poll->cancelled() and discards it.
  static QuotaTree Build(const ValidatedSnapshot& request, CancelPoll* poll = nullptr);

  const QueueTree& queues() const { return *queues_; }
  // R: the resource names (each cell's resource is an index of it).
  const ResourceSet& resources() const { return *resources_; }
  const FlavorCells& cells() const { return *cells_; }
  // How messages name cell `r`: "cpu", or "cpu in flavor spot".
  std::string CellName(int r) const { return CellLabel(*cells_, *resources_, r); }
  int size() const { return queues_->size(); }
  int resource_count() const { return resource_count_; }
  int parent(int node) const { return queues_->parent(node); }
  bool is_leaf(int node) const { return queues_->is_leaf(node); }
  const std::string& name(int node) const { return queues_->queue(node).name; }
  // "cluster queue" for a leaf, "cohort" otherwise: how messages name a node.
  const char* kind(int node) const { return is_leaf(node) ? "cluster queue" : "cohort"; }

  // The resources n covers (its SQ keys): its own `deserved` keys and, for a cohort, every key
  // of its children. Ascending.
  const std::vector<int>& covered(int node) const { return covered_[node]; }
  bool covers(int node, int r) const { return covers_[At(node, r)] != 0; }

  double weight(int node) const { return weight_[node]; }
  // Kueue's height of a node (§5.8.6): 0 for a leaf, else 1 + the largest height of its cohort
  // children (1 for a cohort of leaves).
  int height(int node) const { return height_[node]; }
  double nominal(int node, int r) const { return nominal_[At(node, r)]; }
  double subtree_quota(int node, int r) const { return subtree_quota_[At(node, r)]; }
  double local_quota(int node, int r) const { return local_quota_[At(node, r)]; }
  double usage(int node, int r) const { return usage_[At(node, r)]; }
  // The borrowing limit, +∞ when none applies (unset, -1, or a top-level node).
  double borrowing_limit(int node, int r) const { return borrowing_limit_[At(node, r)]; }
  bool has_borrowing_limit(int node, int r) const;

  // LA(n) = max(0, LQ(n) − Use(n)): protected quota not yet used.
  double LocalAvailable(int node, int r) const;
  // avail(n) of §5.2, negative after over-admission.
  double RawAvailable(int node, int r) const { return Avail(node, r, nullptr); }
  // Available(cq) = max(0, avail(cq)); every ancestor's limits apply. O(depth).
  double Available(int node, int r) const;
  // The constraint that decides RawAvailable(node, r).
  Bound AvailableBound(int node, int r) const;
  // pot(n) of §5.2: the most n could reach with zero usage. O(1), precomputed.
  double PotentialAvailable(int node, int r) const { return potential_[At(node, r)]; }

  // Fits(w in cq): every resource with a positive request is at most Available(cq).
  bool Fits(int cq, const Usage& request) const;
  // n borrows r: Use(n) > SQ(n) (for a cluster queue SQ is its nominal quota).
  bool Borrows(int node, int r) const { return usage(node, r) > subtree_quota(node, r); }

  // Adds `usage` at `node` and bubbles the part above LA(n) to the parent, level by level.
  void AddUsage(int node, const Usage& usage);
  // Mirrors AddUsage: the parent loses at most what n stored in it (Use(n) − LQ(n) before).
  void RemoveUsage(int node, const Usage& usage);
  // Resets every usage: leaves take `leaf_usage` (|queues|·|R|, row per node, non-leaf rows
  // ignored); cohorts sum max(0, Use(c) − LQ(c)) over their children in name order. Clears the
  // journal.
  void SetLeafUsage(const std::vector<double>& leaf_usage);

  // The journal: Rollback(Mark()) undoes every usage change made since the mark, exactly.
  size_t Mark() const { return journal_.size(); }
  void Rollback(size_t mark);

 private:
  size_t At(int node, int r) const {
    return static_cast<size_t>(node) * static_cast<size_t>(resource_count_) +
           static_cast<size_t>(r);
  }
  double Avail(int node, int r, Bound* bound) const;
  // pot(n) of every node and cell, top down (§5.2); stops early when `cancel` says so.
  void ComputePotential(CancelPoll& cancel, int64_t row_work);
  // A flavored queue's quotas (§5.8.2): each flavor of each group, for each covered resource.
  void ReadFlavorQuotas(int node, const Queue& queue, std::vector<double>* lending_limit);
  void SetUsage(size_t index, double value);

  const QueueTree* queues_ = nullptr;
  const ResourceSet* resources_ = nullptr;
  std::shared_ptr<const FlavorCells> cells_;  // shared by copies
  int resource_count_ = 0;                    // |cells|
  std::vector<std::vector<int>> covered_;
  std::vector<char> covers_;
  std::vector<double> weight_;
  std::vector<int> height_;
  std::vector<double> nominal_;
  std::vector<double> subtree_quota_;
  std::vector<double> local_quota_;
  std::vector<double> borrowing_limit_;
  std::vector<double> potential_;
  std::vector<double> usage_;
  std::vector<std::pair<size_t, double>> journal_;  // (usage index, value before the change)
};

}  // namespace arbiter::kueue
