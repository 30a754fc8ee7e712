#include "core/kueue/quota_tree.h"

#include <algorithm>
#include <limits>

#include "absl/container/inlined_vector.h"

namespace arbiter::kueue {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

QuotaTree QuotaTree::Build(const ValidatedSnapshot& request, CancelPoll* poll) {
  const QueueTree& queues = request.tree();
  const ResourceSet& resources = request.resources();
  CancelPoll never;
  CancelPoll& cancel = poll != nullptr ? *poll : never;
  QuotaTree tree;
  tree.cells_ = std::make_shared<const FlavorCells>(FlavorCells::Build(request));
  const int64_t row_work = 1 + tree.cells_->size();
  tree.queues_ = &queues;
  tree.resources_ = &resources;
  tree.resource_count_ = tree.cells_->size();
  const int n = queues.size();
  const size_t cells = static_cast<size_t>(n) * static_cast<size_t>(tree.resource_count_);
  tree.covered_.assign(n, {});
  tree.covers_.assign(cells, 0);
  tree.weight_.assign(n, 1.0);
  tree.nominal_.assign(cells, 0.0);
  tree.subtree_quota_.assign(cells, 0.0);
  tree.local_quota_.assign(cells, 0.0);
  tree.borrowing_limit_.assign(cells, kInfinity);
  tree.potential_.assign(cells, 0.0);
  tree.usage_.assign(cells, 0.0);

  std::vector<double> lending_limit(cells, kInfinity);
  for (int node = 0; node < n; ++node) {
    if (cancel.Tick(row_work)) return tree;  // incomplete: the caller discards it
    const Queue& queue = queues.queue(node);
    if (queue.fair_sharing_weight.has_value()) tree.weight_[node] = *queue.fair_sharing_weight;
    if (!queue.resource_groups.empty()) {
      tree.ReadFlavorQuotas(node, queue, &lending_limit);
      continue;
    }
    for (const Amount& a : request.deserved(node)) {
      tree.covers_[tree.At(node, a.resource)] = 1;
      tree.nominal_[tree.At(node, a.resource)] = a.value;
    }
    // Limits have no effect on top-level queues (§5.1); -1 means no limit.
    if (queues.parent(node) < 0) continue;
    for (const Amount& a : request.borrowing_limit(node)) {
      if (a.value != -1) tree.borrowing_limit_[tree.At(node, a.resource)] = a.value;
    }
    for (const Amount& a : request.lending_limit(node)) {
      if (a.value != -1) lending_limit[tree.At(node, a.resource)] = a.value;
    }
  }

  // Bottom up (children by name): heights, covered keys, subtree quota, local quota.
  const std::vector<int>& top_down = queues.top_down();
  tree.height_.assign(n, 0);
  for (auto it = top_down.rbegin(); it != top_down.rend(); ++it) {
    const int node = *it;
    if (cancel.Tick(row_work)) return tree;
    if (!queues.is_leaf(node)) {
      int height = 1;
      for (int child : queues.children(node)) {
        if (!queues.is_leaf(child)) height = std::max(height, 1 + tree.height_[child]);
      }
      tree.height_[node] = height;
    }
    for (int r = 0; r < tree.resource_count_; ++r) {
      double quota = tree.nominal_[tree.At(node, r)];
      for (int child : queues.children(node)) {
        quota += tree.subtree_quota_[tree.At(child, r)] - tree.local_quota_[tree.At(child, r)];
        if (tree.covers_[tree.At(child, r)]) tree.covers_[tree.At(node, r)] = 1;
      }
      tree.subtree_quota_[tree.At(node, r)] = quota;
      const double limit = lending_limit[tree.At(node, r)];
      if (limit != kInfinity) tree.local_quota_[tree.At(node, r)] = std::max(0.0, quota - limit);
      if (tree.covers_[tree.At(node, r)]) tree.covered_[node].push_back(r);
    }
  }

  tree.ComputePotential(cancel, row_work);
  return tree;
}

void QuotaTree::ComputePotential(CancelPoll& cancel, int64_t row_work) {
  // Top down: potential available.
  for (int node : queues_->top_down()) {
    if (cancel.Tick(row_work)) return;
    const int parent = queues_->parent(node);
    for (int r = 0; r < resource_count_; ++r) {
      const size_t at = At(node, r);
      if (parent < 0) {
        potential_[at] = subtree_quota_[at];
        continue;
      }
      double potential = local_quota_[at] + potential_[At(parent, r)];
      if (borrowing_limit_[at] != kInfinity) {
        potential = std::min(potential, subtree_quota_[at] + borrowing_limit_[at]);
      }
      potential_[at] = potential;
    }
  }
}

void QuotaTree::ReadFlavorQuotas(int node, const Queue& queue, std::vector<double>* lending_limit) {
  const bool top_level = queues_->parent(node) < 0;
  for (const ResourceGroup& group : queue.resource_groups) {
    for (const std::string& name : group.covered_resources) {
      const int resource = resources_->Find(name);
      for (const FlavorQuotas& flavor : group.flavors) {
        const int cell = cells_->Find(flavor.flavor, resource);
        const auto quota = flavor.resources.find(name);
        if (cell < 0 || quota == flavor.resources.end()) continue;  // refused by validation
        const size_t at = At(node, cell);
        covers_[at] = 1;
        nominal_[at] = quota->second.nominal;
        // As for the legacy maps: no effect on top-level queues, and -1 means no limit.
        if (top_level) continue;
        const std::optional<double>& borrowing = quota->second.borrowing_limit;
        if (borrowing.has_value() && *borrowing != -1) borrowing_limit_[at] = *borrowing;
        const std::optional<double>& lending = quota->second.lending_limit;
        if (lending.has_value() && *lending != -1) (*lending_limit)[at] = *lending;
      }
    }
  }
}

bool QuotaTree::has_borrowing_limit(int node, int r) const {
  return borrowing_limit_[At(node, r)] != kInfinity;
}

double QuotaTree::LocalAvailable(int node, int r) const {
  return std::max(0.0, local_quota_[At(node, r)] - usage_[At(node, r)]);
}

double QuotaTree::Avail(int node, int r, Bound* bound) const {
  // avail(n) = LA(n) + min(avail(P(n)), cap(n)) is evaluated from the root down n's path. The
  // depth is the caller's to choose, so the path is collected first rather than recursed on.
  absl::InlinedVector<int, 32> path;
  for (int at = node; at >= 0; at = queues_->parent(at)) path.push_back(at);
  const int root = path.back();
  if (bound != nullptr) *bound = Bound{root, false};
  double avail = subtree_quota_[At(root, r)] - usage_[At(root, r)];
  for (auto it = path.rbegin() + 1; it != path.rend(); ++it) {
    const int at_node = *it;
    const size_t at = At(at_node, r);
    if (borrowing_limit_[at] != kInfinity) {
      const double local = local_quota_[at];
      const double stored_in_parent = subtree_quota_[at] - local;
      const double used_in_parent = std::max(0.0, usage_[at] - local);
      const double cap = stored_in_parent - used_in_parent + borrowing_limit_[at];
      if (cap < avail) {
        avail = cap;
        if (bound != nullptr) *bound = Bound{at_node, true};
      }
    }
    avail = LocalAvailable(at_node, r) + avail;
  }
  return avail;
}

double QuotaTree::Available(int node, int r) const {
  return std::max(0.0, Avail(node, r, nullptr));
}

QuotaTree::Bound QuotaTree::AvailableBound(int node, int r) const {
  Bound bound;
  Avail(node, r, &bound);
  return bound;
}

bool QuotaTree::Fits(int cq, const Usage& request) const {
  for (const ResourceAmount& amount : request) {
    if (amount.amount > 0 && amount.amount > Available(cq, amount.resource)) return false;
  }
  return true;
}

void QuotaTree::SetUsage(size_t index, double value) {
  journal_.emplace_back(index, usage_[index]);
  usage_[index] = value;
}

void QuotaTree::AddUsage(int node, const Usage& usage) {
  for (const ResourceAmount& amount : usage) {
    const int r = amount.resource;
    double value = amount.amount;
    int at_node = node;
    while (true) {
      const size_t at = At(at_node, r);
      const double local_available = LocalAvailable(at_node, r);
      SetUsage(at, usage_[at] + value);
      const int parent = queues_->parent(at_node);
      if (parent < 0 || value <= local_available) break;
      value -= local_available;
      at_node = parent;
    }
  }
}

void QuotaTree::RemoveUsage(int node, const Usage& usage) {
  for (const ResourceAmount& amount : usage) {
    const int r = amount.resource;
    double value = amount.amount;
    int at_node = node;
    while (true) {
      const size_t at = At(at_node, r);
      const double stored_in_parent = usage_[at] - local_quota_[at];
      SetUsage(at, usage_[at] - value);
      const int parent = queues_->parent(at_node);
      if (parent < 0 || stored_in_parent <= 0) break;
      value = std::min(value, stored_in_parent);
      at_node = parent;
    }
  }
}

void QuotaTree::SetLeafUsage(const std::vector<double>& leaf_usage) {
  journal_.clear();
  const std::vector<int>& top_down = queues_->top_down();
  for (auto it = top_down.rbegin(); it != top_down.rend(); ++it) {
    const int node = *it;
    for (int r = 0; r < resource_count_; ++r) {
      const size_t at = At(node, r);
      if (queues_->is_leaf(node)) {
        usage_[at] = leaf_usage[at];
        continue;
      }
      double sum = 0;
      for (int child : queues_->children(node)) {
        const size_t child_at = At(child, r);
        sum += std::max(0.0, usage_[child_at] - local_quota_[child_at]);
      }
      usage_[at] = sum;
    }
  }
}

void QuotaTree::Rollback(size_t mark) {
  while (journal_.size() > mark) {
    usage_[journal_.back().first] = journal_.back().second;
    journal_.pop_back();
  }
}

}  // namespace arbiter::kueue
