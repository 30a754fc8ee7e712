#include "clients/generator/kueue_quota.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"

namespace arbiter::generator {

namespace {

// One queue's quotas by flavor-resource key: nominal (listed keys only), borrowing and lending
// limits (-1 = none).
struct QuotaView {
  std::map<std::string, double> nominal;
  std::map<std::string, double> borrowing_limit;
  std::map<std::string, double> lending_limit;
};

QuotaView ViewOf(const Queue& q) {
  QuotaView view;
  if (q.resource_groups.empty()) {
    view.nominal.insert(q.deserved.begin(), q.deserved.end());
    view.borrowing_limit.insert(q.borrowing_limit.begin(), q.borrowing_limit.end());
    view.lending_limit.insert(q.lending_limit.begin(), q.lending_limit.end());
    return view;
  }
  for (const ResourceGroup& g : q.resource_groups) {
    for (const FlavorQuotas& f : g.flavors) {
      for (const auto& [r, quota] : f.resources) {
        const std::string key = FlavorResourceKey(f.flavor, r);
        view.nominal[key] = quota.nominal;
        if (quota.borrowing_limit) view.borrowing_limit[key] = *quota.borrowing_limit;
        if (quota.lending_limit) view.lending_limit[key] = *quota.lending_limit;
      }
    }
  }
  return view;
}

}  // namespace

std::string FlavorResourceKey(std::string_view flavor, std::string_view resource) {
  if (flavor.empty()) return std::string(resource);
  return std::string(flavor) + ":" + std::string(resource);
}

ResourceMap KueueCharge(const Queue& queue, const PodGroup& group) {
  ResourceMap charge;
  for (const Pod& p : group.pods) {
    if (queue.resource_groups.empty()) {
      for (const auto& [r, v] : p.requests) charge[r] += v;
      continue;
    }
    const PodSetFlavors* set = nullptr;
    for (const PodSetFlavors& s : group.flavors) {
      if (s.pod_set == p.pod_set) set = &s;
    }
    for (const auto& [r, v] : p.requests) {
      if (!(v > 0) || set == nullptr) continue;
      const auto f = set->flavors.find(r);
      if (f != set->flavors.end()) charge[FlavorResourceKey(f->second, r)] += v;
    }
  }
  return charge;
}

KueueQuotaTree KueueQuotaTree::Build(const Snapshot& snapshot) {
  KueueQuotaTree tree;
  std::vector<QuotaView> views;
  std::set<std::string> names;
  for (const Queue& q : snapshot.queues) {
    views.push_back(ViewOf(q));
    for (const auto& [r, v] : views.back().nominal) names.insert(r);
  }
  tree.resources_.assign(names.begin(), names.end());
  const int R = static_cast<int>(tree.resources_.size());
  std::map<std::string, int> index;
  for (const Queue& q : snapshot.queues) {
    index[q.name] = static_cast<int>(tree.nodes_.size());
    TreeNode node;
    node.name = q.name;
    node.covered.assign(R, false);
    node.sq.assign(R, 0);
    node.lq.assign(R, 0);
    node.bl.assign(R, -1);
    node.use.assign(R, 0);
    tree.nodes_.push_back(std::move(node));
  }
  for (size_t i = 0; i < snapshot.queues.size(); ++i) {
    const Queue& q = snapshot.queues[i];
    if (!q.parent.empty()) {
      tree.nodes_[i].parent = index.at(q.parent);
      tree.nodes_[tree.nodes_[i].parent].children.push_back(static_cast<int>(i));
    }
  }
  // Subtree quotas bottom up: a post-order walk from each root.
  std::vector<int> post;
  for (size_t i = 0; i < tree.nodes_.size(); ++i) {
    if (tree.nodes_[i].parent >= 0) continue;
    std::vector<std::pair<int, size_t>> stack = {{static_cast<int>(i), 0}};
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < tree.nodes_[n].children.size()) {
        const int child = tree.nodes_[n].children[next++];
        stack.push_back({child, 0});
      } else {
        post.push_back(n);
        stack.pop_back();
      }
    }
  }
  for (int n : post) {
    TreeNode& node = tree.nodes_[n];
    const QuotaView& q = views[n];
    for (int r = 0; r < R; ++r) {
      const std::string& name = tree.resources_[r];
      auto d = q.nominal.find(name);
      if (d != q.nominal.end()) {
        node.covered[r] = true;
        node.sq[r] = d->second;
      }
      for (int c : node.children) {
        const TreeNode& child = tree.nodes_[c];
        if (!child.covered[r]) continue;
        node.covered[r] = true;
        node.sq[r] += child.sq[r] - child.lq[r];
      }
      auto ll = q.lending_limit.find(name);
      if (ll != q.lending_limit.end() && ll->second != -1) {
        node.lq[r] = std::max(0.0, node.sq[r] - ll->second);
      }
      auto bl = q.borrowing_limit.find(name);
      if (bl != q.borrowing_limit.end() && bl->second != -1) node.bl[r] = bl->second;
    }
  }
  return tree;
}

int KueueQuotaTree::Find(std::string_view name) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int KueueQuotaTree::ResourceIndex(const std::string& name) const {
  auto it = std::lower_bound(resources_.begin(), resources_.end(), name);
  if (it == resources_.end() || *it != name) return -1;
  return static_cast<int>(it - resources_.begin());
}

double KueueQuotaTree::LocalAvailable(int node, int r) const {
  const TreeNode& n = nodes_[node];
  return std::max(0.0, n.lq[r] - n.use[r]);
}

double KueueQuotaTree::Available(int cq, int r) const {
  // avail(root) = SQ - Use; avail(n) = LA(n) + min(avail(P), SQ - LQ - max(0, Use - LQ) + BL).
  std::vector<int> path;
  for (int n = cq; n >= 0; n = nodes_[n].parent) path.push_back(n);
  double avail = 0;
  for (size_t i = path.size(); i > 0; --i) {
    const TreeNode& n = nodes_[path[i - 1]];
    if (n.parent < 0) {
      avail = n.sq[r] - n.use[r];
      continue;
    }
    double from_parent = avail;
    if (n.bl[r] >= 0) {
      const double own = n.sq[r] - n.lq[r] - std::max(0.0, n.use[r] - n.lq[r]) + n.bl[r];
      from_parent = std::min(from_parent, own);
    }
    avail = LocalAvailable(path[i - 1], r) + from_parent;
  }
  return std::max(0.0, avail);
}

bool KueueQuotaTree::Fits(int cq, const ResourceMap& request) const {
  for (const auto& [name, amount] : request) {
    if (!(amount > 0)) continue;
    const int r = ResourceIndex(name);
    if (r < 0 || !nodes_[cq].covered[r]) return false;
    if (amount > Available(cq, r)) return false;
  }
  return true;
}

void KueueQuotaTree::Add(int cq, const ResourceMap& request, double sign) {
  for (const auto& [name, amount] : request) {
    const int r = ResourceIndex(name);
    if (r < 0) {  // covered by no queue at all: CheckWithinLimits reports it
      if (sign > 0 && amount > 0 && uncovered_use_.empty()) {
        uncovered_use_ =
            absl::StrCat("queue ", nodes_[cq].name, " uses ", amount, " of uncovered ", name);
      }
      continue;
    }
    double v = amount;
    for (int n = cq; n >= 0 && v > 0; n = nodes_[n].parent) {
      TreeNode& node = nodes_[n];
      if (sign > 0) {
        const double la = LocalAvailable(n, r);
        node.use[r] += v;
        v = std::max(0.0, v - la);  // the part above the local quota bubbles up
      } else {
        // Removal mirrors the addition: what was above LQ leaves the parent first.
        const double above_before = std::max(0.0, node.use[r] - node.lq[r]);
        node.use[r] -= v;
        const double above_after = std::max(0.0, node.use[r] - node.lq[r]);
        v = above_before - above_after;
      }
    }
  }
}

absl::Status KueueQuotaTree::CheckWithinLimits() const {
  if (!uncovered_use_.empty()) return absl::FailedPreconditionError(uncovered_use_);
  for (const TreeNode& n : nodes_) {
    for (size_t r = 0; r < resources_.size(); ++r) {
      const std::string& name = resources_[r];
      if (!n.covered[r]) {
        if (n.use[r] > 0) {
          return absl::FailedPreconditionError(
              absl::StrCat("queue ", n.name, " uses ", n.use[r], " of uncovered ", name));
        }
        continue;
      }
      if (n.parent < 0 && n.use[r] > n.sq[r]) {
        return absl::FailedPreconditionError(absl::StrCat(
            "root ", n.name, " uses ", n.use[r], " of ", name, " above its quota ", n.sq[r]));
      }
      if (n.parent >= 0 && n.bl[r] >= 0 && n.use[r] > n.sq[r] + n.bl[r]) {
        return absl::FailedPreconditionError(absl::StrCat("queue ", n.name, " uses ", n.use[r],
                                                          " of ", name, " above quota ", n.sq[r],
                                                          " plus borrowing limit ", n.bl[r]));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace arbiter::generator
