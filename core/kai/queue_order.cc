#include "core/kai/queue_order.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace arbiter::kai {

bool operator<(const ChainKey& a, const ChainKey& b) {
  if (a.over != b.over) return !a.over;                          // rule 1
  if (a.starved != b.starved) return a.starved;                  // rule 2
  if (a.priority != b.priority) return a.priority > b.priority;  // rule 3
  if (a.penalised != b.penalised) return !a.penalised;           // rule 4
  if (a.share_with_unit != b.share_with_unit) return a.share_with_unit < b.share_with_unit;
  return a.share_without_unit < b.share_without_unit;  // rule 6
}

bool operator==(const ChainKey& a, const ChainKey& b) {
  return a.over == b.over && a.starved == b.starved && a.priority == b.priority &&
         a.penalised == b.penalised && a.share_with_unit == b.share_with_unit &&
         a.share_without_unit == b.share_without_unit;
}

QueueChain::QueueChain(const KaiFairShare& shares)
    : shares_(shares), r_(shares.resources().size()) {
  const int queues = shares.tree().size();
  share_base_.resize(static_cast<size_t>(queues) * r_);
  for (int q = 0; q < queues; ++q) {
    for (int r = 0; r < r_; ++r) {
      const double share = shares.queues[q].allocatable_share[r];
      share_base_[q * r_ + r] = std::isinf(share) ? shares.total[r] : share;
    }
  }
}

void QueueChain::DominantShares(int queue, const double* allocated, const double* rule5_allocated,
                                const double* unit_requests, double* with_unit,
                                double* without_unit) const {
  double with_best = 0;
  double without_best = 0;
  for (int r = 0; r < r_; ++r) {
    const double s = share_base_[queue * r_ + r];
    const double x = rule5_allocated[r] + (unit_requests != nullptr ? unit_requests[r] : 0.0);
    const double y = allocated[r] + 0.0;
    const double v = s == 0 ? x * 1000 : x / s;
    const double w = s == 0 ? y * 1000 : y / s;
    if (r == 0 || v > with_best) with_best = v;
    if (r == 0 || w > without_best) without_best = w;
  }
  *with_unit = with_best;
  *without_unit = without_best;
}

ChainKey QueueChain::Key(int queue, const double* allocated, const double* unit_requests,
                         const double* rule5_allocated) const {
  const QueueAmounts& amounts = shares_.queues[queue];
  ChainKey key;
  key.over = true;
  key.starved = true;
  for (int r = 0; r < r_; ++r) {
    const double unit = unit_requests != nullptr ? unit_requests[r] : 0.0;
    const double with_unit = allocated[r] + unit;
    if (!(amounts.fair_share[r] < allocated[r])) key.over = false;
    const double deserved = amounts.deserved[r];
    if (deserved != -1 && !(with_unit <= deserved)) key.starved = false;
    if (amounts.allocatable_share[r] == 0 && with_unit > 0) key.penalised = true;
  }
  key.priority = shares_.tree().queue(queue).priority;
  DominantShares(queue, allocated, rule5_allocated != nullptr ? rule5_allocated : allocated,
                 unit_requests, &key.share_with_unit, &key.share_without_unit);
  return key;
}

bool QueueChain::TieBreakBefore(int a, int b) const {
  const Row sa = shares_.queues[a].allocatable_share;
  const Row sb = shares_.queues[b].allocatable_share;
  bool a_le = true, a_lt = false, b_le = true, b_lt = false;
  for (int r = 0; r < r_; ++r) {
    if (!(sa[r] <= sb[r])) a_le = false;
    if (sa[r] < sb[r]) a_lt = true;
    if (!(sb[r] <= sa[r])) b_le = false;
    if (sb[r] < sa[r]) b_lt = true;
  }
  if (a_le && a_lt) return true;  // rule 7
  if (b_le && b_lt) return false;
  const Queue& qa = shares_.tree().queue(a);
  const Queue& qb = shares_.tree().queue(b);
  const Timestamp ca = qa.creation_time.value_or(Timestamp{});
  const Timestamp cb = qb.creation_time.value_or(Timestamp{});
  if (ca != cb) return ca < cb;  // rule 8
  return a < b;                  // index order is name order
}

bool operator<(const JobKey& a, const JobKey& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.elastic != b.elastic) return a.elastic < b.elastic;
  if (a.creation != b.creation) return a.creation < b.creation;
  return a.group < b.group;
}

JobKey MakeJobKey(const Cluster& cluster, const WorkingState& state, int group) {
  const ClusterGroup& info = cluster.group(group);
  JobKey key;
  key.priority = info.group->priority;
  const int active = state.active(group);
  key.elastic = active < info.gang ? 0 : active == info.gang ? 1 : 2;
  key.creation = info.group->creation_time.value_or(Timestamp{});
  key.group = group;
  return key;
}

QueueOrder::QueueOrder(const Cluster& cluster, const KaiFairShare& shares,
                       const WorkingState& state)
    : cluster_(cluster), state_(state), chain_(shares) {
  const QueueTree& tree = cluster.tree();
  const int queues = tree.size();
  parents_.resize(queues);
  for (int q = 0; q < queues; ++q) parents_[q] = tree.parent(q);
  children_.resize(queues);
  jobs_.resize(queues);
  best_job_.assign(queues, -1);
  queue_listed_.assign(queues, false);
  queue_it_.resize(queues);
  units_.resize(cluster.num_groups());
  group_listed_.assign(cluster.num_groups(), false);
  group_it_.resize(cluster.num_groups());
}

bool QueueOrder::Add(int group) {
  if (group_listed_[group]) return true;
  if (!NextUnit(cluster_, state_, group, &units_[group])) return false;
  group_it_[group] =
      jobs_[cluster_.group(group).queue].insert(MakeJobKey(cluster_, state_, group)).first;
  group_listed_[group] = true;
  RefreshPath(cluster_.group(group).queue);
  return true;
}

void QueueOrder::AddAll(const std::vector<int>& groups) {
  for (int group : groups) {
    if (group_listed_[group] || !NextUnit(cluster_, state_, group, &units_[group])) continue;
    group_it_[group] =
        jobs_[cluster_.group(group).queue].insert(MakeJobKey(cluster_, state_, group)).first;
    group_listed_[group] = true;
  }
  const std::vector<int>& top_down = cluster_.tree().top_down();
  for (auto it = top_down.rbegin(); it != top_down.rend(); ++it) Rekey(*it);
}

void QueueOrder::Update(int group, bool keep) {
  JobSet& jobs = jobs_[cluster_.group(group).queue];
  JobSet::node_type handle;
  if (group_listed_[group]) {
    handle = jobs.extract(group_it_[group]);
    group_listed_[group] = false;
  }
  if (keep && NextUnit(cluster_, state_, group, &units_[group])) {
    JobKey key = MakeJobKey(cluster_, state_, group);
    if (handle) {
      handle.value() = key;
      group_it_[group] = jobs.insert(std::move(handle)).position;
    } else {
      group_it_[group] = jobs.insert(key).first;
    }
    group_listed_[group] = true;
  }
  RefreshPath(cluster_.group(group).queue);
}

int QueueOrder::BestChild(const ChildSet& set) const {
  if (set.empty()) return -1;
  auto it = set.begin();
  const ChainKey& first = it->key;
  int best = it->queue;
  for (++it; it != set.end() && it->key == first; ++it) {
    if (chain_.TieBreakBefore(it->queue, best)) best = it->queue;
  }
  return best;
}

void QueueOrder::Rekey(int q) {
  if (cluster_.tree().is_leaf(q)) {
    best_job_[q] = jobs_[q].empty() ? -1 : jobs_[q].begin()->group;
  } else {
    const int child = BestChild(children_[q]);
    best_job_[q] = child < 0 ? -1 : best_job_[child];
  }
  ChildSet& container = Container(q);
  ChildSet::node_type handle;
  if (queue_listed_[q]) {
    handle = container.extract(queue_it_[q]);
    queue_listed_[q] = false;
  }
  if (best_job_[q] < 0) return;
  ChildEntry entry{chain_.Key(q, state_.allocated(q), units_[best_job_[q]].requests.data()), q};
  if (handle) {
    handle.value() = entry;
    queue_it_[q] = container.insert(std::move(handle)).position;
  } else {
    queue_it_[q] = container.insert(entry).first;
  }
  queue_listed_[q] = true;
}

void QueueOrder::RefreshPath(int leaf) {
  for (int q = leaf; q >= 0; q = parents_[q]) Rekey(q);
}

int QueueOrder::Next() const {
  const int best = BestChild(roots_);
  return best < 0 ? -1 : best_job_[best];
}

}  // namespace arbiter::kai
