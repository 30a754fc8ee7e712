#include "core/kai/victims.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
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

void VictimOrder::Stream::Append(int32_t group, const int32_t* first, const int32_t* last,
                                 const ChainKey& key) {
  groups.push_back(group);
  pod_begin.push_back(static_cast<int32_t>(pods.size()));
  pods.insert(pods.end(), first, last);
  keys.push_back(key);
}

void VictimOrder::Stream::LetGo(size_t until) {
  const size_t count = until - base;
  if (count == 0) return;
  const int32_t pods_gone =
      count < pod_begin.size() ? pod_begin[count] : static_cast<int32_t>(pods.size());
  pods.erase(pods.begin(), pods.begin() + pods_gone);
  pod_begin.erase(pod_begin.begin(), pod_begin.begin() + static_cast<std::ptrdiff_t>(count));
  for (int32_t& begin : pod_begin) begin -= pods_gone;
  groups.erase(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(count));
  keys.erase(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(count));
  base = until;
}

void VictimOrder::Stream::Clear() {
  groups.clear();
  pod_begin.clear();
  pods.clear();
  keys.clear();
  base = 0;
  ended = false;
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
  leaf_out_.assign(tree.size(), false);
  leaf_groups_.resize(tree.size());
  leaf_drawn_.resize(tree.size());
  leaf_dirty_.assign(tree.size(), false);
  jobs_.resize(tree.size());
  job_listed_.assign(groups, false);
  job_it_.resize(groups);
  children_.resize(tree.size());
  streams_.resize(tree.size());
  taken_.assign(tree.size(), 0);
  advanced_.resize(tree.size());
  queue_listed_.assign(tree.size(), false);
  queue_it_.resize(tree.size());
  queue_marked_.assign(tree.size(), 0);
  depth_.resize(tree.size());
  for (int q = 0; q < tree.size(); ++q) depth_[q] = tree.entry(q).depth;
  scratch_.assign(r_, 0.0);
  MarkRecorded(recorded);
  // Cancelled: the order is left with what was built so far (an order of fewer victims, or none);
  // the action stops before it draws from it.
  CancelPoll& poll = session.poll();
  for (int g = 0; g < groups; ++g) {
    if (poll.Tick()) break;
    const ClusterGroup& info = cluster.group(g);
    leaf_groups_[info.queue].push_back(g);
    if (!Eligible(g)) continue;
    eligible_[g] = true;
    if (!ComputeUnit(g)) continue;
    JobKey key = MakeJobKey(cluster, state, g);
    const int active = state.active(g) - drawn_pods_[g];
    key.elastic = active < info.gang ? 0 : active == info.gang ? 1 : 2;
    job_it_[g] = jobs_[info.queue].insert(JobEntry{key}).first;
    job_listed_[g] = true;
  }
  // Deepest first: a parent's first entry is its children's.
  const std::vector<int>& top_down = tree.top_down();
  for (auto it = top_down.rbegin(); it != top_down.rend(); ++it) {
    if (poll.Tick()) break;
    Ensure(*it, 0);
    Show(*it);
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
  if (!eligible_[group] || leaf_out_[info.queue] || !ComputeUnit(group)) {
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

void VictimOrder::CountDrawn(const EvictionUnit& unit, int leaf) {
  const Cluster& cluster = session_.cluster();
  for (int pod : unit.pods) {
    pod_drawn_[pod] = true;
    ++drawn_pods_[unit.group];
    const double* requests = cluster.requests(pod);
    for (int r = 0; r < r_; ++r) drawn_[leaf * r_ + r] += requests[r];
  }
}

void VictimOrder::Extend(int queue) {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  const WorkingState& state = session_.state();
  // Each level takes the next entry of its child served last, and that child then needs its
  // next entry too, unless it has one or has ended: a chain down the tree, walked without
  // recursion (the tree may be any depth), then each child shown in its parent, deepest first.
  std::vector<int>& chain = extend_chain_;
  chain.clear();
  for (int q = queue;;) {
    Stream& stream = streams_[q];
    const double* allocated = state.allocated(q);
    for (int r = 0; r < r_; ++r) scratch_[r] = allocated[r] - drawn_[q * r_ + r];
    if (tree.is_leaf(q)) {
      // The job served last gives its unit, drawn at once: the leaf's rows follow its entries.
      if (jobs_[q].empty()) {
        stream.ended = true;
        break;
      }
      const int group = jobs_[q].begin()->key.group;
      const EvictionUnit& unit = units_[group];
      const std::vector<double>& requests = unit_requests_[group];
      stream.Append(group, unit.pods.data(), unit.pods.data() + unit.pods.size(),
                    chain_.Key(q, allocated, requests.data(), scratch_.data()));
      if (drawn_pods_[group] == 0) leaf_drawn_[q].push_back(group);
      CountDrawn(unit, q);
      RekeyJob(group);
      break;
    }
    const int child = LastServed(children_[q]);
    if (child < 0) {
      stream.ended = true;
      break;
    }
    Stream& from = streams_[child];
    const size_t i = taken_[child];
    const int32_t* first = from.first_pod(i);
    const int32_t* last = from.last_pod(i);
    // The entry's requests, summed pod by pod as the leaf summed its unit's (ComputeUnit), and
    // the rule-5 row, pod by pod as the leaf's is.
    std::vector<double>& requests = entry_requests_;
    requests.assign(r_, 0.0);
    for (const int32_t* pod = first; pod != last; ++pod) {
      const double* pod_requests = cluster.requests(*pod);
      for (int r = 0; r < r_; ++r) requests[r] += pod_requests[r];
    }
    stream.Append(from.group(i), first, last,
                  chain_.Key(q, allocated, requests.data(), scratch_.data()));
    for (const int32_t* pod = first; pod != last; ++pod) {
      const double* pod_requests = cluster.requests(*pod);
      for (int r = 0; r < r_; ++r) drawn_[q * r_ + r] += pod_requests[r];
    }
    if (taken_[child]++ == 0) advanced_[q].push_back(child);
    if (depth_[child] > kKeptDepth) from.LetGo(taken_[child]);
    chain.push_back(child);
    // The child had its entry before this one was taken: at most one more is needed.
    if (from.size() > taken_[child] || from.ended) break;
    q = child;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) Show(*it);
}

void VictimOrder::Ensure(int queue, size_t index) {
  Stream& stream = streams_[queue];
  while (stream.size() <= index && !stream.ended) Extend(queue);
}

void VictimOrder::Show(int queue) {
  const Stream& stream = streams_[queue];
  ChildSet& container = Container(queue);
  const size_t i = taken_[queue];
  if (i < stream.size()) {
    queue_it_[queue] =
        Place(container, queue_listed_[queue], queue_it_[queue], ChildEntry{stream.key(i), queue});
    queue_listed_[queue] = true;
    return;
  }
  if (queue_listed_[queue]) container.erase(queue_it_[queue]);
  queue_listed_[queue] = false;
}

void VictimOrder::DropPaths(const std::vector<int>& leaves, const std::vector<int>& groups) {
  // Their listing first (a drawn one is listed again once its draws are undone, below).
  session_.poll().Tick(1 + static_cast<int64_t>(groups.size()));
  for (int group : groups) RekeyJob(group);
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  size_t marked = 0;
  for (int leaf : leaves) {
    for (int q = leaf; q >= 0; q = tree.parent(q)) {
      if (queue_marked_[q]) break;  // so are the queues above it
      queue_marked_[q] = 1;
      const size_t depth = static_cast<size_t>(depth_[q]);
      if (queues_by_depth_.size() <= depth) queues_by_depth_.resize(depth + 1);
      queues_by_depth_[depth].push_back(q);
      ++marked;
    }
  }
  // A dropped queue takes its children from their first entries again: a child below kKeptDepth
  // that let go of some is dropped too, and so on down.
  std::vector<int>& below = drop_below_;
  below.clear();
  for (const std::vector<int>& level : queues_by_depth_) {
    for (int queue : level) {
      if (depth_[queue] >= kKeptDepth) below.push_back(queue);
    }
  }
  while (!below.empty()) {
    const int queue = below.back();
    below.pop_back();
    for (int child : tree.children(queue)) {
      if (queue_marked_[child] || streams_[child].base == 0) continue;
      queue_marked_[child] = 1;
      const size_t depth = static_cast<size_t>(depth_[child]);
      if (queues_by_depth_.size() <= depth) queues_by_depth_.resize(depth + 1);
      queues_by_depth_[depth].push_back(child);
      ++marked;
      below.push_back(child);
    }
  }
  session_.poll().Tick(1 + static_cast<int64_t>(marked));
  // Deepest first: a parent merges again from its children's first entries.
  for (auto level = queues_by_depth_.rbegin(); level != queues_by_depth_.rend(); ++level) {
    for (int queue : *level) {
      queue_marked_[queue] = 0;
      streams_[queue].Clear();
      std::fill(&drawn_[queue * r_], &drawn_[queue * r_] + r_, 0.0);
      if (tree.is_leaf(queue)) {
        // Only the groups its stream drew changed since it was merged (and `groups`, above).
        std::vector<int>& drawn = leaf_drawn_[queue];
        session_.poll().Tick(static_cast<int64_t>(drawn.size()));
        for (int group : drawn) {
          const ClusterGroup& info = cluster.group(group);
          for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
            pod_drawn_[p] = false;
          }
          drawn_pods_[group] = 0;
          RekeyJob(group);
        }
        drawn.clear();
      } else {
        // The children taken from, and the dropped ones (on the path), show their first entry.
        for (int child : advanced_[queue]) taken_[child] = 0;
        for (int child : advanced_[queue]) Show(child);
        advanced_[queue].clear();
      }
      // Its parent is dropped too (or it is a top-level queue): taken from the start again.
      taken_[queue] = 0;
      Ensure(queue, 0);
      Show(queue);
    }
    level->clear();
  }
}

void VictimOrder::MarkDirty(int leaf) {
  if (leaf_dirty_[leaf]) return;
  leaf_dirty_[leaf] = true;
  dirty_leaves_.push_back(leaf);
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
  // Each pass draws one unit; a recorded one is drawn and passed over, at most |R| passes.
  while (true) {
    const int top = LastServed(roots_);
    if (top < 0) return false;
    const Stream& stream = streams_[top];
    const size_t i = taken_[top];
    unit->group = stream.group(i);
    unit->pods.assign(stream.first_pod(i), stream.last_pod(i));
    if (taken_[top]++ == 0) tops_read_.push_back(top);
    Ensure(top, taken_[top]);
    Show(top);
    if (!Recorded(*unit)) return true;
    // A recorded unit is passed over: its draw is work the caller's poll does not see. Cancelled:
    // stop drawing; the caller sees the poll and stops too.
    if (session_.poll().Tick(1 + static_cast<int64_t>(unit->pods.size()))) return false;
  }
}

void VictimOrder::ExcludeLeaf(int leaf) {
  if (leaf_out_[leaf]) return;
  leaf_out_[leaf] = true;
  leaves_out_.push_back(leaf);
  MarkDirty(leaf);
  DropPaths({leaf}, leaf_groups_[leaf]);
}

void VictimOrder::ExcludeGroup(int group) {
  if (!eligible_[group]) return;
  const int leaf = session_.cluster().group(group).queue;
  eligible_[group] = false;
  excluded_.push_back(group);
  MarkDirty(leaf);
  DropPaths({leaf}, {group});
}

void VictimOrder::Reset() {
  // Cancelled: stop; the order is not used again (the action stops too).
  CancelPoll& poll = session_.poll();
  for (int pod : recorded_pods_) pod_recorded_[pod] = false;
  recorded_pods_.clear();
  // The top-level queues show their first entry again; their streams are kept.
  for (int top : tops_read_) {
    taken_[top] = 0;
    Show(top);
  }
  if (poll.Tick(1 + static_cast<int64_t>(tops_read_.size()))) return;
  tops_read_.clear();
  if (dirty_leaves_.empty()) return;
  std::vector<int> groups;
  groups.swap(excluded_);
  for (int group : groups) eligible_[group] = true;
  for (int leaf : leaves_out_) {
    leaf_out_[leaf] = false;
    groups.insert(groups.end(), leaf_groups_[leaf].begin(), leaf_groups_[leaf].end());
  }
  leaves_out_.clear();
  // The streams an exclusion dropped were merged without it: dropped again.
  std::vector<int> leaves;
  leaves.swap(dirty_leaves_);
  for (int leaf : leaves) leaf_dirty_[leaf] = false;
  DropPaths(leaves, groups);
}

void VictimOrder::Refresh(const std::vector<int>& groups) {
  const Cluster& cluster = session_.cluster();
  std::vector<int> leaves;
  for (int group : groups) {
    eligible_[group] = Eligible(group);
    leaves.push_back(cluster.group(group).queue);
  }
  DropPaths(leaves, groups);
}

}  // namespace arbiter::kai
