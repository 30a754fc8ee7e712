#include "core/kai/victims.h"

#include <utility>

namespace arbiter::kai {

bool Protected(const Session& session, int group, const std::optional<Duration>& duration) {
  if (!duration.has_value()) return false;
  const Cluster& cluster = session.cluster();
  const ClusterGroup& info = cluster.group(group);
  const WorkingState& state = session.state();
  std::optional<Timestamp> start;
  for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
    if (state.pod_state(p) != PodState::kRunning) continue;
    const std::optional<Timestamp>& t = cluster.pod(p).pod->start_time;
    if (t.has_value() && (!start.has_value() || *t < *start)) start = t;
  }
  if (!start.has_value()) return false;
  const Timestamp now = cluster.snapshot().now.value_or(Timestamp{});
  return now < AddDuration(*start, *duration);
}

std::optional<Duration> PreemptMinRuntime(const Session& session, int leaf) {
  const QueueTree& tree = session.cluster().tree();
  for (int q = leaf; q >= 0; q = tree.parent(q)) {
    if (tree.queue(q).preempt_min_runtime.has_value()) return tree.queue(q).preempt_min_runtime;
  }
  return std::nullopt;
}

std::optional<Duration> ReclaimMinRuntime(const Session& session, int reclaimer_leaf,
                                          int victim_leaf) {
  const QueueTree& tree = session.cluster().tree();
  const int lca = tree.LowestCommonAncestor(reclaimer_leaf, victim_leaf);
  for (int q = tree.ChildOnPath(lca, victim_leaf); q >= 0; q = tree.parent(q)) {
    if (tree.queue(q).reclaim_min_runtime.has_value()) return tree.queue(q).reclaim_min_runtime;
  }
  return std::nullopt;
}

VictimOrder::VictimOrder(Session& session, const QueueChain& chain,
                         std::function<bool(int group)> eligible,
                         const std::vector<EvictionUnit>& drawn_already)
    : session_(session), chain_(chain) {
  const Cluster& cluster = session.cluster();
  const WorkingState& state = session.state();
  const QueueTree& tree = cluster.tree();
  const int r_count = cluster.num_resources();
  by_leaf_.resize(tree.size());
  victims_in_subtree_.assign(tree.size(), 0);
  drawn_pods_.assign(cluster.num_groups(), 0);
  pod_drawn_.assign(cluster.num_pods(), false);
  drawn_.assign(static_cast<size_t>(tree.size()) * r_count, 0.0);
  for (const EvictionUnit& unit : drawn_already) {
    for (int pod : unit.pods) {
      pod_drawn_[pod] = true;
      ++drawn_pods_[unit.group];
      const double* requests = cluster.requests(pod);
      for (int q = cluster.group(unit.group).queue; q >= 0; q = tree.parent(q)) {
        for (int r = 0; r < r_count; ++r) drawn_[q * r_count + r] += requests[r];
      }
    }
  }
  for (int g = 0; g < cluster.num_groups(); ++g) {
    const ClusterGroup& info = cluster.group(g);
    if (!info.preemptible || state.running(g) == 0) continue;
    if (state.bound(g) > 0 || state.moved(g) > 0) continue;  // no eviction unit (§4.7)
    if (!eligible(g)) continue;
    by_leaf_[info.queue].push_back(g);
    if (RemainingRunning(g) > 0) {
      for (int q = info.queue; q >= 0; q = tree.parent(q)) ++victims_in_subtree_[q];
    }
  }
}

int VictimOrder::RemainingRunning(int group) const {
  return session_.state().running(group) - drawn_pods_[group];
}

void VictimOrder::UnitOf(int group, EvictionUnit* unit) const {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const ClusterGroup& info = cluster.group(group);
  unit->group = group;
  unit->pods.clear();
  const int active = state.active(group) - drawn_pods_[group];
  for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
    if (state.pod_state(p) == PodState::kRunning && !pod_drawn_[p]) unit->pods.push_back(p);
  }
  if (active > info.gang && !unit->pods.empty()) {
    const int last = unit->pods.back();  // elastic shrink: the last RUNNING pod in pod order
    unit->pods.assign(1, last);
  }
}

int VictimOrder::BestVictim(int queue, std::vector<double>* unit_requests) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const QueueTree& tree = cluster.tree();
  const int r_count = cluster.num_resources();
  int best = -1;
  if (tree.is_leaf(queue)) {
    // Reversed job order: the job that would be served last gives first.
    JobKey best_key;
    for (int g : by_leaf_[queue]) {
      if (RemainingRunning(g) == 0) continue;
      JobKey key = MakeJobKey(cluster, state, g);
      const int active = state.active(g) - drawn_pods_[g];
      const int gang = cluster.group(g).gang;
      key.elastic = active < gang ? 0 : active == gang ? 1 : 2;
      if (best < 0 || best_key < key) {
        best = g;
        best_key = key;
      }
    }
  } else {
    int best_child = -1;
    ChainKey best_key;
    std::vector<double> child_requests;
    for (int child : tree.children(queue)) {
      if (victims_in_subtree_[child] == 0) continue;
      const int victim = BestVictim(child, &child_requests);
      if (victim < 0) continue;
      std::vector<double> allocated(state.allocated(child), state.allocated(child) + r_count);
      for (int r = 0; r < r_count; ++r) allocated[r] -= drawn_[child * r_count + r];
      const ChainKey key = chain_.Key(child, allocated.data(), child_requests.data());
      // Keep the child served last: replace the incumbent when it would be served first.
      const bool served_later =
          best_child < 0 || best_key < key ||
          (!(key < best_key) && chain_.TieBreakBefore(best_child, child));
      if (served_later) {
        best_child = child;
        best_key = key;
        best = victim;
      }
    }
  }
  if (best >= 0) {
    EvictionUnit unit;
    UnitOf(best, &unit);
    unit_requests->assign(r_count, 0.0);
    for (int pod : unit.pods) {
      const double* requests = cluster.requests(pod);
      for (int r = 0; r < r_count; ++r) (*unit_requests)[r] += requests[r];
    }
  }
  return best;
}

bool VictimOrder::Next(EvictionUnit* unit) {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  const WorkingState& state = session_.state();
  const int r_count = cluster.num_resources();
  // The top level is compared like siblings under a virtual root.
  int best = -1;
  int best_root = -1;
  ChainKey best_key;
  std::vector<double> requests;
  for (int root : tree.roots()) {
    if (victims_in_subtree_[root] == 0) continue;
    const int victim = BestVictim(root, &requests);
    if (victim < 0) continue;
    std::vector<double> allocated(state.allocated(root), state.allocated(root) + r_count);
    for (int r = 0; r < r_count; ++r) allocated[r] -= drawn_[root * r_count + r];
    const ChainKey key = chain_.Key(root, allocated.data(), requests.data());
    const bool served_later = best_root < 0 || best_key < key ||
                              (!(key < best_key) && chain_.TieBreakBefore(best_root, root));
    if (served_later) {
      best_root = root;
      best_key = key;
      best = victim;
    }
  }
  if (best < 0) return false;
  UnitOf(best, unit);
  for (int pod : unit->pods) {
    pod_drawn_[pod] = true;
    ++drawn_pods_[best];
    const double* pod_requests = cluster.requests(pod);
    for (int q = cluster.group(best).queue; q >= 0; q = tree.parent(q)) {
      for (int r = 0; r < r_count; ++r) drawn_[q * r_count + r] += pod_requests[r];
    }
  }
  if (RemainingRunning(best) == 0) {
    for (int q = cluster.group(best).queue; q >= 0; q = tree.parent(q)) --victims_in_subtree_[q];
  }
  return true;
}

}  // namespace arbiter::kai
