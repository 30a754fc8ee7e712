#include "core/kai/victims.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <iterator>
#include <utility>

namespace arbiter::kai {

bool Protected(const Session& session, int group, const std::optional<Duration>& duration) {
  return ProtectedUntil(session, group, duration).has_value();
}

std::optional<Timestamp> ProtectedUntil(const Session& session, int group,
                                        const std::optional<Duration>& duration) {
  if (!duration.has_value()) return std::nullopt;
  const Cluster& cluster = session.cluster();
  const ClusterGroup& info = cluster.group(group);
  const WorkingState& state = session.state();
  if (info.earliest_start_pod < 0) return std::nullopt;  // no pod has a start time
  std::optional<Timestamp> start;
  if (state.pod_state(info.earliest_start_pod) == PodState::kRunning) {
    // The earliest start of all the group's pods, held by a RUNNING one: the earliest among the
    // RUNNING pods too (a minimum over a superset, reached inside the subset).
    start = cluster.pod(info.earliest_start_pod).pod->start_time;
  } else {
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
      if (state.pod_state(p) != PodState::kRunning) continue;
      const std::optional<Timestamp>& t = cluster.pod(p).pod->start_time;
      if (t.has_value() && (!start.has_value() || *t < *start)) start = t;
    }
  }
  if (!start.has_value()) return std::nullopt;
  const Timestamp now = cluster.snapshot().now.value_or(Timestamp{});
  const Timestamp until = AddDuration(*start, *duration);
  if (!(now < until)) return std::nullopt;
  return until;
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
                         const std::vector<EvictionUnit>& recorded)
    : session_(session),
      chain_(chain),
      eligible_filter_(std::move(eligible)),
      r_(session.cluster().num_resources()) {
  const Cluster& cluster = session.cluster();
  const WorkingState& state = session.state();
  const QueueTree& tree = cluster.tree();
  const int groups = cluster.num_groups();
  drawn_pods_.assign(groups, 0);
  pod_drawn_.assign(cluster.num_pods(), false);
  pod_recorded_.assign(cluster.num_pods(), false);
  drawn_.assign(static_cast<size_t>(tree.size()) * r_, 0.0);
  units_.resize(groups);
  unit_requests_.resize(groups);
  eligible_.assign(groups, false);
  jobs_.resize(tree.size());
  job_listed_.assign(groups, false);
  job_it_.resize(groups);
  children_.resize(tree.size());
  best_.assign(tree.size(), -1);
  best_child_.assign(tree.size(), -1);
  depth_.resize(tree.size());
  stream_of_.assign(tree.size(), -1);
  streams_.resize(tree.size());
  top_drawn_.assign(tree.size(), false);
  for (int q : tree.top_down()) {
    depth_[q] = tree.entry(q).depth;
    if (depth_[q] == 1) stream_of_[q] = q;
    if (depth_[q] > 1) stream_of_[q] = stream_of_[tree.parent(q)];
  }
  queue_listed_.assign(tree.size(), false);
  queue_it_.resize(tree.size());
  scratch_.assign(r_, 0.0);
  MarkRecorded(recorded);
  // Cancelled: the order is left with what was built so far (an order of fewer victims, or none);
  // the action stops before it draws from it.
  CancelPoll& poll = session.poll();
  for (int g = 0; g < groups; ++g) {
    if (poll.Tick()) break;
    const ClusterGroup& info = cluster.group(g);
    if (!Eligible(g)) continue;
    eligible_[g] = true;
    if (!ComputeUnit(g)) continue;
    JobKey key = MakeJobKey(cluster, state, g);
    const int active = state.active(g) - drawn_pods_[g];
    key.elastic = active < info.gang ? 0 : active == info.gang ? 1 : 2;
    job_it_[g] = jobs_[info.queue].insert(JobEntry{key}).first;
    job_listed_[g] = true;
  }
  const std::vector<int>& top_down = tree.top_down();
  for (auto it = top_down.rbegin(); it != top_down.rend(); ++it) {
    if (poll.Tick()) break;
    Rekey(*it);
  }
}

bool VictimOrder::Eligible(int group) const {
  const WorkingState& state = session_.state();
  if (!session_.cluster().group(group).preemptible || state.running(group) == 0) return false;
  if (state.bound(group) > 0 || state.moved(group) > 0) return false;  // no eviction unit (§4.7)
  return eligible_filter_(group);
}

int VictimOrder::RemainingRunning(int group) const {
  return session_.state().running(group) - drawn_pods_[group];
}

bool VictimOrder::ComputeUnit(int group) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const ClusterGroup& info = cluster.group(group);
  EvictionUnit& unit = units_[group];
  unit.group = group;
  unit.pods.clear();
  // Every RUNNING pod drawn (a whole gang once its unit is drawn): no unit, and no pod to read.
  if (RemainingRunning(group) <= 0) return false;
  const int active = state.active(group) - drawn_pods_[group];
  const auto takes = [&](int p) {
    return state.pod_state(p) == PodState::kRunning && !pod_drawn_[p];
  };
  if (active > info.gang) {
    // Elastic shrink: the last RUNNING pod in pod order, found from the end, so that drawing a
    // large elastic group pod by pod does not walk its pods at every draw.
    for (int p = info.first_pod + info.pod_count - 1; p >= info.first_pod; --p) {
      if (takes(p)) {
        unit.pods.push_back(p);
        break;
      }
    }
  } else {
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
      if (takes(p)) unit.pods.push_back(p);
    }
  }
  if (unit.pods.empty()) return false;
  std::vector<double>& requests = unit_requests_[group];
  requests.assign(r_, 0.0);
  for (int pod : unit.pods) {
    const double* pod_requests = cluster.requests(pod);
    for (int r = 0; r < r_; ++r) requests[r] += pod_requests[r];
  }
  return true;
}

namespace {

// Puts `entry` in `set`, in place of the entry at `it` when `listed`, and returns its position.
// An entry still between its neighbours keeps its place, its key set in place (the keys are
// mutable for this); otherwise the set's node is taken out and put back re-keyed, so re-keying
// allocates nothing.
template <typename Set>
typename Set::iterator Place(Set& set, bool listed, typename Set::iterator it,
                             const typename Set::value_type& entry) {
  if (!listed) return set.insert(entry).first;
  if ((it == set.begin() || *std::prev(it) < entry) &&
      (std::next(it) == set.end() || entry < *std::next(it))) {
    it->key = entry.key;
    return it;
  }
  typename Set::node_type node = set.extract(it);
  node.value() = entry;
  return set.insert(std::move(node)).position;
}

}  // namespace

void VictimOrder::RekeyJob(int group) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const ClusterGroup& info = cluster.group(group);
  JobSet& jobs = jobs_[info.queue];
  if (!eligible_[group] || !ComputeUnit(group)) {
    if (job_listed_[group]) jobs.erase(job_it_[group]);
    job_listed_[group] = false;
    return;
  }
  JobKey key = MakeJobKey(cluster, state, group);
  const int active = state.active(group) - drawn_pods_[group];
  key.elastic = active < info.gang ? 0 : active == info.gang ? 1 : 2;
  job_it_[group] = Place(jobs, job_listed_[group], job_it_[group], JobEntry{key});
  job_listed_[group] = true;
}

VictimOrder::ChildSet& VictimOrder::Container(int queue) {
  const int parent = session_.cluster().tree().parent(queue);
  return parent < 0 ? roots_ : children_[parent];
}

int VictimOrder::LastServed(const ChildSet& set) const {
  if (set.empty()) return -1;
  auto it = set.begin();
  const ChainKey& first = it->key;
  int best = it->queue;
  // Among equal keys, keep the child served last: replace the incumbent when it goes first.
  for (++it; it != set.end() && it->key == first; ++it) {
    if (chain_.TieBreakBefore(best, it->queue)) best = it->queue;
  }
  return best;
}

const double* VictimOrder::BestRequests(int queue) const {
  if (depth_[queue] == 1) return &streams_[queue].requests[streams_[queue].read * r_];
  if (depth_[queue] == 0 && best_child_[queue] >= 0) return BestRequests(best_child_[queue]);
  return unit_requests_[best_[queue]].data();
}

void VictimOrder::Rekey(int queue) {
  const QueueTree& tree = session_.cluster().tree();
  const WorkingState& state = session_.state();
  int best = -1;
  int child = -1;
  if (tree.is_leaf(queue)) {
    best = jobs_[queue].empty() ? -1 : jobs_[queue].begin()->key.group;
  } else {
    child = LastServed(children_[queue]);
    best = child < 0 ? -1 : best_[child];
  }
  const double* allocated = state.allocated(queue);
  if (depth_[queue] == 1) {
    // The subtree's next unit is the stream's new head.
    Stream& stream = streams_[queue];
    if (stream.headed) {
      stream.groups.pop_back();
      stream.pod_end.pop_back();
      stream.pods.resize(stream.pod_end.empty() ? 0 : stream.pod_end.back());
      stream.requests.resize(stream.requests.size() - r_);
      stream.keys.pop_back();
      stream.headed = false;
    }
    stream.ended = best < 0;
    if (best >= 0) {
      for (int r = 0; r < r_; ++r) scratch_[r] = allocated[r] - drawn_[queue * r_ + r];
      const std::vector<double>& requests = unit_requests_[best];
      stream.keys.push_back(chain_.Key(queue, allocated, requests.data(), scratch_.data()));
      stream.groups.push_back(best);
      stream.pods.insert(stream.pods.end(), units_[best].pods.begin(), units_[best].pods.end());
      stream.pod_end.push_back(static_cast<int32_t>(stream.pods.size()));
      stream.requests.insert(stream.requests.end(), requests.begin(), requests.end());
      stream.headed = true;
    }
    ShowRead(queue);
    return;
  }
  best_[queue] = best;
  if (depth_[queue] == 0) best_child_[queue] = child;
  ChildSet& container = Container(queue);
  if (best < 0) {
    if (queue_listed_[queue]) container.erase(queue_it_[queue]);
    queue_listed_[queue] = false;
    return;
  }
  for (int r = 0; r < r_; ++r) scratch_[r] = allocated[r] - drawn_[queue * r_ + r];
  const ChainKey key = chain_.Key(queue, allocated, BestRequests(queue), scratch_.data());
  queue_it_[queue] =
      Place(container, queue_listed_[queue], queue_it_[queue], ChildEntry{key, queue});
  queue_listed_[queue] = true;
}

void VictimOrder::ShowRead(int stream_queue) {
  Stream& stream = streams_[stream_queue];
  ChildSet& container = Container(stream_queue);
  if (stream.read < stream.size()) {
    best_[stream_queue] = stream.groups[stream.read];
    queue_it_[stream_queue] = Place(container, queue_listed_[stream_queue], queue_it_[stream_queue],
                                    ChildEntry{stream.keys[stream.read], stream_queue});
    queue_listed_[stream_queue] = true;
    return;
  }
  best_[stream_queue] = -1;
  if (queue_listed_[stream_queue]) container.erase(queue_it_[stream_queue]);
  queue_listed_[stream_queue] = false;
}

void VictimOrder::CountDrawn(int group, const int32_t* pods, size_t count, int top) {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  for (size_t i = 0; i < count; ++i) {
    const int pod = pods[i];
    pod_drawn_[pod] = true;
    ++drawn_pods_[group];
    const double* requests = cluster.requests(pod);
    for (int q = cluster.group(group).queue;; q = tree.parent(q)) {
      for (int r = 0; r < r_; ++r) drawn_[q * r_ + r] += requests[r];
      if (q == top) break;
    }
  }
}

void VictimOrder::DrawHead(int stream_queue) {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  Stream& stream = streams_[stream_queue];
  const int group = stream.groups.back();
  stream.headed = false;  // the head becomes a drawn entry
  stream.touched.push_back(group);
  const std::vector<int>& pods = units_[group].pods;
  CountDrawn(group, pods.data(), pods.size(), stream_queue);
  RekeyJob(group);
  for (int q = cluster.group(group).queue; q != stream_queue; q = tree.parent(q)) Rekey(q);
  Rekey(stream_queue);
}

void VictimOrder::Drop(int stream_queue, std::vector<int>* groups) {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  Stream& stream = streams_[stream_queue];
  for (int group : stream.touched) {
    const ClusterGroup& info = cluster.group(group);
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) pod_drawn_[p] = false;
    drawn_pods_[group] = 0;
    for (int q = info.queue;; q = tree.parent(q)) {
      std::fill(&drawn_[q * r_], &drawn_[q * r_] + r_, 0.0);
      if (q == stream_queue) break;
    }
    groups->push_back(group);
  }
  stream.touched.clear();
  stream.groups.clear();
  stream.pod_end.clear();
  stream.pods.clear();
  stream.requests.clear();
  stream.keys.clear();
  stream.headed = false;
  stream.ended = false;
  stream.read = 0;
}

void VictimOrder::Activate(int stream_queue) {
  Stream& stream = streams_[stream_queue];
  if (stream.active) return;
  stream.active = true;
  active_streams_.push_back(stream_queue);
}

void VictimOrder::PrepareExclusion(int leaf) {
  const int stream_queue = stream_of_[leaf];
  if (stream_queue < 0) return;
  Stream& stream = streams_[stream_queue];
  Activate(stream_queue);
  stream.dirty = true;
  if (stream.touched.empty()) return;  // at the subtree's first unit already
  std::vector<int> groups;
  Drop(stream_queue, &groups);
  RekeyGroupsAndQueues(groups, {stream_queue});
}

void VictimOrder::MarkRecorded(const std::vector<EvictionUnit>& units) {
  for (const EvictionUnit& unit : units) {
    for (int pod : unit.pods) {
      pod_recorded_[pod] = true;
      recorded_pods_.push_back(pod);
    }
  }
}

bool VictimOrder::Recorded(const EvictionUnit& unit) const {
  // R is made of units of this same sequence: the recorded marks do not change the order, and the
  // working state does not change between parts, so every part draws the same units. A unit is
  // therefore recorded whole or not at all.
  const bool recorded = pod_recorded_[unit.pods.front()];
  assert(std::all_of(unit.pods.begin(), unit.pods.end(),
                     [&](int pod) { return pod_recorded_[pod] == recorded; }));
  return recorded;
}

bool VictimOrder::Next(EvictionUnit* unit) {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  // Each pass draws one unit; a recorded one is drawn and passed over, at most |R| passes.
  while (true) {
    const int root = LastServed(roots_);
    if (root < 0) return false;
    if (tree.is_leaf(root)) {
      const int group = best_[root];
      *unit = units_[group];
      touched_.push_back(group);
      CountDrawn(group, unit->pods.data(), unit->pods.size(), root);
      RekeyJob(group);
    } else {
      const int stream_queue = best_child_[root];
      Stream& stream = streams_[stream_queue];
      Activate(stream_queue);
      const size_t i = stream.read;
      unit->group = stream.groups[i];
      unit->pods.assign(stream.pods.begin() + (i == 0 ? 0 : stream.pod_end[i - 1]),
                        stream.pods.begin() + stream.pod_end[i]);
      ++stream.read;
      if (i == stream.live()) {
        DrawHead(stream_queue);  // past what the stream kept: drawn in the subtree
      } else {
        ShowRead(stream_queue);
      }
      // The top-level queue's rule-5 row, pod by pod as a draw in its subtree adds it.
      if (!top_drawn_[root]) {
        top_drawn_[root] = true;
        tops_drawn_.push_back(root);
      }
      for (int pod : unit->pods) {
        const double* requests = cluster.requests(pod);
        for (int r = 0; r < r_; ++r) drawn_[root * r_ + r] += requests[r];
      }
    }
    Rekey(root);
    if (!Recorded(*unit)) return true;
    // A recorded unit is passed over: its draw is work the caller's poll does not see. Cancelled:
    // stop drawing; the caller sees the poll and stops too.
    if (session_.poll().Tick(1 + static_cast<int64_t>(unit->pods.size()))) return false;
  }
}

void VictimOrder::ExcludeLeaf(int leaf) {
  const QueueTree& tree = session_.cluster().tree();
  PrepareExclusion(leaf);
  std::vector<int> groups;
  for (const JobEntry& entry : jobs_[leaf]) groups.push_back(entry.key.group);
  session_.poll().Tick(1 + static_cast<int64_t>(groups.size()));
  for (int group : groups) {
    eligible_[group] = false;
    excluded_.push_back(group);
    RekeyJob(group);
  }
  for (int q = leaf; q >= 0; q = tree.parent(q)) Rekey(q);
}

void VictimOrder::ExcludeGroup(int group) {
  if (!eligible_[group]) return;
  const QueueTree& tree = session_.cluster().tree();
  const int leaf = session_.cluster().group(group).queue;
  PrepareExclusion(leaf);
  eligible_[group] = false;
  excluded_.push_back(group);
  RekeyJob(group);
  for (int q = leaf; q >= 0; q = tree.parent(q)) Rekey(q);
}

void VictimOrder::Reset() {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  // Cancelled: stop; the order is not used again (the action stops too).
  CancelPoll& poll = session_.poll();
  std::vector<int>& groups = reset_groups_;
  std::vector<int>& queues = reset_queues_;
  groups.assign(touched_.begin(), touched_.end());
  queues.clear();
  // The draws of top-level leaves, undone.
  for (int group : touched_) {
    const ClusterGroup& info = cluster.group(group);
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) pod_drawn_[p] = false;
    drawn_pods_[group] = 0;
    std::fill(&drawn_[info.queue * r_], &drawn_[info.queue * r_] + r_, 0.0);
  }
  touched_.clear();
  for (int queue : tops_drawn_) {
    std::fill(&drawn_[queue * r_], &drawn_[queue * r_] + r_, 0.0);
    top_drawn_[queue] = false;
    queues.push_back(queue);
  }
  tops_drawn_.clear();
  for (int pod : recorded_pods_) pod_recorded_[pod] = false;
  recorded_pods_.clear();
  for (int group : excluded_) {
    eligible_[group] = true;
    groups.push_back(group);
  }
  excluded_.clear();
  // The streams read from are rewound; those drawn with an exclusion are dropped.
  for (int stream_queue : active_streams_) {
    Stream& stream = streams_[stream_queue];
    stream.active = false;
    if (stream.dirty) {
      stream.dirty = false;
      Drop(stream_queue, &groups);
      queues.push_back(stream_queue);
      continue;
    }
    stream.read = 0;
    ShowRead(stream_queue);
    queues.push_back(tree.parent(stream_queue));
  }
  active_streams_.clear();
  if (poll.Tick(1 + static_cast<int64_t>(groups.size() + queues.size()))) return;
  // Each group and each queue above them is re-keyed once, however often it was drawn from: the
  // keys are those of the undrawn state either way.
  RekeyGroupsAndQueues(groups, queues);
}

void VictimOrder::Refresh(const std::vector<int>& groups) {
  const Cluster& cluster = session_.cluster();
  std::vector<int> all(groups.begin(), groups.end());
  std::vector<int> queues;
  for (int group : groups) {
    eligible_[group] = Eligible(group);
    const int stream_queue = stream_of_[cluster.group(group).queue];
    if (stream_queue < 0) continue;
    Stream& stream = streams_[stream_queue];
    if (stream.size() == 0 && !stream.ended) continue;  // dropped already
    Drop(stream_queue, &all);
    queues.push_back(stream_queue);
  }
  RekeyGroupsAndQueues(all, queues);
}

void VictimOrder::RekeyGroupsAndQueues(const std::vector<int>& groups,
                                       const std::vector<int>& queues) {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  group_marked_.resize(cluster.num_groups(), 0);
  queue_marked_.resize(tree.size(), 0);
  size_t marked = 0;
  const auto mark_path = [&](int from) {
    for (int q = from; q >= 0; q = tree.parent(q)) {
      if (queue_marked_[q]) break;  // so are the queues above it
      queue_marked_[q] = 1;
      const size_t depth = static_cast<size_t>(depth_[q]);
      if (queues_by_depth_.size() <= depth) queues_by_depth_.resize(depth + 1);
      queues_by_depth_[depth].push_back(q);
      ++marked;
    }
  };
  for (int group : groups) {
    if (group_marked_[group]) continue;
    group_marked_[group] = 1;
    RekeyJob(group);
    mark_path(cluster.group(group).queue);
  }
  for (int queue : queues) mark_path(queue);
  for (int group : groups) group_marked_[group] = 0;
  session_.poll().Tick(1 + static_cast<int64_t>(marked));
  // Deepest first: a queue's key reads the best of its children.
  for (auto level = queues_by_depth_.rbegin(); level != queues_by_depth_.rend(); ++level) {
    for (int queue : *level) {
      queue_marked_[queue] = 0;
      Rekey(queue);
    }
    level->clear();
  }
}

}  // namespace arbiter::kai
