#include "core/kai/solver.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "core/echoed_name.h"
#include "core/kai/placement.h"
#include "core/kai/quota_check.h"

namespace arbiter::kai {
Solver::Solver(Session& session, const QueueChain& chain, const EvictionAction& action,
               VictimOrder* shared_order, bool place_without_victims)
    : session_(session),
      chain_(chain),
      action_(action),
      shared_order_(shared_order),
      place_without_victims_(place_without_victims) {}

namespace {

// The best child so far of one queue (or of the top level), children taken in name order.
struct Pick {
  int job = -1;
  int child = -1;
  ChainKey key;
};

}  // namespace

int Solver::BestJob(const std::vector<int>& jobs, const std::vector<std::vector<int>>& paths,
                    const std::vector<std::vector<ChainKey>>& keys,
                    const std::vector<JobKey>& job_keys) const {
  // §4.3's top-down pick over the queues on the jobs' paths, evaluated bottom up one depth at a
  // time (the depth is the caller's to choose, so nothing recurses per level). Every child of a
  // queue sits at the same depth and is folded into its parent's pick in name (index) order,
  // as the top-down scan over the children compares them.
  const QueueTree& tree = session_.cluster().tree();
  size_t depth = 0;
  for (int j : jobs) depth = std::max(depth, paths[j].size());
  auto fold = [&](Pick& pick, int child, int job, size_t d) {
    const ChainKey& key = keys[job][d];
    if (pick.child < 0 || key < pick.key ||
        (key == pick.key && chain_.TieBreakBefore(child, pick.child))) {
      pick = Pick{job, child, key};
    }
  };
  Pick top;
  std::vector<std::pair<int, int>> level;  // (queue, job) at one depth, sorted
  std::vector<std::pair<int, int>> below;  // (queue, its pick) one depth deeper, by queue
  std::vector<std::array<int, 3>> up;      // (parent, queue, the queue's pick)
  for (size_t d = depth; d-- > 0;) {
    level.clear();
    for (int j : jobs) {
      if (paths[j].size() > d) level.emplace_back(paths[j][d], j);
    }
    std::sort(level.begin(), level.end());
    up.clear();
    size_t at = 0;  // cursor into `below`, which holds the non-leaf queues of this depth
    for (size_t i = 0; i < level.size();) {
      const int queue = level[i].first;
      int best = -1;
      if (tree.is_leaf(queue)) {
        JobKey best_key;
        for (; i < level.size() && level[i].first == queue; ++i) {
          const JobKey& key = job_keys[level[i].second];
          if (best < 0 || key < best_key) {
            best = level[i].second;
            best_key = key;
          }
        }
      } else {
        while (below[at].first < queue) ++at;  // its children were folded one depth deeper
        best = below[at].second;
        while (i < level.size() && level[i].first == queue) ++i;
      }
      up.push_back({tree.parent(queue), queue, best});
    }
    // Each parent folds its children in name (index) order; the roots fold into `top`.
    std::sort(up.begin(), up.end());
    below.clear();
    for (size_t i = 0; i < up.size();) {
      const int parent = up[i][0];
      Pick pick;
      for (; i < up.size() && up[i][0] == parent; ++i) fold(pick, up[i][1], up[i][2], d);
      if (parent < 0) {
        top = pick;
      } else {
        below.emplace_back(parent, pick.job);
      }
    }
  }
  return top.job;
}

namespace {

// §4.13.5: a victim that shares is restored only onto exactly its own devices, as a set.
bool SameDevices(const WorkingState& state, int pod, const DeviceChoice& choice) {
  const ClusterPod& info = state.cluster().pod(pod);
  if (!info.shares()) return true;
  std::vector<int32_t> own;
  for (int j = 0; j < info.gpu_devices; ++j) own.push_back(state.pod_device(pod, j));
  std::vector<int32_t> chosen = choice.devices;
  std::sort(own.begin(), own.end());
  std::sort(chosen.begin(), chosen.end());
  return own == chosen;
}

// §4.3's top-down pick over a fixed set of jobs whose keys do not change (those of one ordering,
// computed up front), one job at a time: every queue on the jobs' paths keeps its current pick,
// and taking a job out re-picks only the queues on that job's path. Each pick is the one
// Solver::BestJob makes over the jobs left: a leaf takes its first job (index order) with the
// smallest job key, a queue folds its children in index order by their picks' chain keys with
// the tie-break, and the top level folds the roots the same way. O(depth · children) per job.
class JobPicker {
 public:
  using Scratch = Solver::PickerScratch;
  // Jobs 0 .. jobs - 1 of `paths`, `keys` and `job_keys` (which may hold more). The picker's
  // rows live in `scratch`, grown and never shrunk, so that building one allocates nothing once
  // a search has built a picker as large.
  JobPicker(const QueueTree& tree, const QueueChain& chain, size_t jobs,
            const std::vector<std::vector<int>>& paths,
            const std::vector<std::vector<ChainKey>>& keys, const std::vector<JobKey>& job_keys,
            Scratch& scratch)
      : tree_(tree),
        chain_(chain),
        keys_(keys),
        job_keys_(job_keys),
        queues_(scratch.queues),
        path_slots_(scratch.path_slots),
        members_(scratch.members),
        pick_(scratch.pick),
        roots_(scratch.roots),
        alive_(scratch.alive) {
    queues_.clear();
    for (size_t j = 0; j < jobs; ++j)
      queues_.insert(queues_.end(), paths[j].begin(), paths[j].end());
    std::sort(queues_.begin(), queues_.end());
    queues_.erase(std::unique(queues_.begin(), queues_.end()), queues_.end());
    if (members_.size() < queues_.size()) members_.resize(queues_.size());
    for (size_t slot = 0; slot < queues_.size(); ++slot) members_[slot].clear();
    pick_.assign(queues_.size(), -1);
    alive_.assign(jobs, 1);
    // Members in index order: a leaf's jobs, a queue's children (queues_ is sorted, so slot
    // order is index order). Queues are named by their slots from here on.
    if (path_slots_.size() < jobs) path_slots_.resize(jobs);
    for (size_t j = 0; j < jobs; ++j) {
      std::vector<int>& slots = path_slots_[j];
      slots.clear();
      for (int queue : paths[j]) slots.push_back(static_cast<int>(Slot(queue)));
      members_[slots.back()].push_back(static_cast<int>(j));
    }
    roots_.clear();
    for (size_t slot = 0; slot < queues_.size(); ++slot) {
      const int parent = tree_.parent(queues_[slot]);
      if (parent < 0) {
        roots_.push_back(static_cast<int>(slot));
      } else {
        members_[Slot(parent)].push_back(static_cast<int>(slot));
      }
    }
    std::vector<std::pair<int, int>>& by_depth = scratch.by_depth;  // (-depth, slot)
    by_depth.clear();
    for (size_t slot = 0; slot < queues_.size(); ++slot) {
      by_depth.emplace_back(-tree_.entry(queues_[slot]).depth, static_cast<int>(slot));
    }
    std::sort(by_depth.begin(), by_depth.end());
    for (const auto& entry : by_depth) Repick(entry.second);
    top_ = Fold(roots_);
  }

  // The next job in the order; -1 when none is left.
  int Best() const { return top_; }
  // Takes `job` out and re-picks the queues on its path.
  void Remove(int job) {
    alive_[job] = 0;
    const std::vector<int>& path = path_slots_[job];
    for (size_t d = path.size(); d-- > 0;) Repick(path[d]);
    top_ = Fold(roots_);
  }

 private:
  size_t Slot(int queue) const {
    return std::lower_bound(queues_.begin(), queues_.end(), queue) - queues_.begin();
  }
  // Re-picks the queue at `slot`.
  void Repick(int slot) {
    if (!tree_.is_leaf(queues_[slot])) {
      pick_[slot] = Fold(members_[slot]);
      return;
    }
    int best = -1;
    for (int job : members_[slot]) {
      if (alive_[job] && (best < 0 || job_keys_[job] < job_keys_[best])) best = job;
    }
    pick_[slot] = best;
  }
  // The pick among `children` (slots of queues, index order), each carrying its own pick's key.
  int Fold(const std::vector<int>& children) const {
    int best_child = -1;
    int best_job = -1;
    const ChainKey* best_key = nullptr;
    for (int slot : children) {
      const int job = pick_[slot];
      if (job < 0) continue;
      const int child = queues_[slot];
      const ChainKey& key = keys_[job][tree_.entry(child).depth];
      if (best_child < 0 || key < *best_key ||
          (key == *best_key && chain_.TieBreakBefore(child, best_child))) {
        best_child = child;
        best_job = job;
        best_key = &key;
      }
    }
    return best_job;
  }

  const QueueTree& tree_;
  const QueueChain& chain_;
  const std::vector<std::vector<ChainKey>>& keys_;
  const std::vector<JobKey>& job_keys_;
  std::vector<int>& queues_;                   // the queues on the jobs' paths, ascending
  std::vector<std::vector<int>>& path_slots_;  // per job: the slots of its path's queues
  std::vector<std::vector<int>>& members_;     // per slot: its jobs (leaf) or its children's slots
  std::vector<int>& pick_;                     // per slot: its current pick, -1 when none is left
  std::vector<int>& roots_;                    // the slots of the top-level queues, ascending
  std::vector<char>& alive_;                   // per job: not yet taken out
  int top_ = -1;
};

}  // namespace

void Solver::OrderJobs(const std::vector<int>& groups,
                       const std::vector<std::vector<double>>& requests,
                       const std::function<bool(int job)>& visit) {
  const Cluster& cluster = session_.cluster();
  const size_t jobs = groups.size();
  // The solver's scratch, grown and never shrunk, so that a try allocates no path or key rows:
  // only the first `jobs` of each are this call's.
  std::vector<std::vector<int>>& paths = order_paths_;
  std::vector<std::vector<ChainKey>>& keys = order_keys_;
  std::vector<JobKey>& job_keys = order_job_keys_;
  if (paths.size() < jobs) {
    paths.resize(jobs);
    keys.resize(jobs);
    job_keys.resize(jobs);
  }
  // Each job's queues from its root down to its leaf.
  for (size_t j = 0; j < jobs; ++j) {
    cluster.tree().PathToRoot(cluster.group(groups[j]).queue, &paths[j]);
    std::reverse(paths[j].begin(), paths[j].end());
  }
  // Every key the order compares, on the state before the first visit: §4.3 orders the try's jobs
  // once, on the simulated state after the evictions, and `visit` changes that state. A queue's
  // key with a job's unit does not depend on the other jobs, so computing each once up front gives
  // the keys a full ordering before any visit would compare.
  const WorkingState& state = session_.state();
  for (size_t j = 0; j < jobs; ++j) {
    keys[j].clear();
    for (int queue : paths[j]) {
      keys[j].push_back(chain_.Key(queue, state.allocated(queue), requests[j].data()));
    }
    job_keys[j] = MakeJobKey(cluster, state, groups[j]);
  }
  // A few jobs are ordered faster by fresh picks than by building the picker; the reference
  // search always picks afresh.
  constexpr size_t kPickerFrom = 6;
  if (session_.reference_search() || jobs < kPickerFrom) {
    std::vector<int> remaining(jobs);
    for (size_t j = 0; j < jobs; ++j) remaining[j] = static_cast<int>(j);
    while (!remaining.empty()) {
      const int best = BestJob(remaining, paths, keys, job_keys);
      if (!visit(best)) return;
      remaining.erase(std::find(remaining.begin(), remaining.end(), best));
    }
    return;
  }
  JobPicker picker(cluster.tree(), chain_, jobs, paths, keys, job_keys, picker_scratch_);
  for (int best = picker.Best(); best >= 0; best = picker.Best()) {
    if (!visit(best)) return;
    picker.Remove(best);
  }
}

bool Solver::Try(int group, const Unit& unit, int part, const std::vector<EvictionUnit>& victims,
                 bool keep, Attempt* attempt, int* placed_out, const TryRoom* room) {
  WorkingState& state = session_.state();
  CancelPoll& poll = session_.poll();
  int64_t victim_pods = 0;
  for (const EvictionUnit& victim : victims)
    victim_pods += static_cast<int64_t>(victim.pods.size());
  if (poll.Tick(1 + victim_pods)) return false;  // cancelled: before anything changes
  ++session_.counters().tries;
  // Min-runtime protection is judged on the pods RUNNING before the try.
  std::vector<int>& protected_groups = try_scratch_.protected_groups;
  protected_groups.clear();
  for (const EvictionUnit& victim : victims) {
    if (Protects(group, victim.group)) protected_groups.push_back(victim.group);
  }
  // The try reads the node index frozen, through the placer's overlay: its changes, rolled back
  // (or committed) at the end, never re-key a tree.
  const bool overlay = !session_.reference_search();
  if (overlay) state.FreezeIndex();
  const WorkingState::Mark mark = state.Checkpoint();
  if (overlay) session_.placer().SetOverlay(&mark);
  for (const EvictionUnit& victim : victims) state.EvictPods(victim.group, victim.pods);
  // The try's jobs, in the solver's scratch: the first groups.size() rows of pods and requests.
  std::vector<int>& groups = try_scratch_.groups;
  std::vector<std::vector<int>>& pods = try_scratch_.pods;
  std::vector<std::vector<double>>& requests = try_scratch_.requests;
  GatherJobs(group, unit, part, victims, &groups, &pods, &requests);

  std::vector<int>& moved_groups = try_scratch_.moved_groups;
  moved_groups.clear();
  // The units of the victim groups not re-placed so far are evicted whatever follows; once the
  // action rejects every try that evicts them, the try stops (the reference and unbounded
  // searches run it to its end).
  const bool judge_early = !session_.reference_search() && !session_.unbounded_search();
  const bool replaces = action_.ReplacesVictims();
  bool ok = !RejectedBeforeAnyJob(group, unit, victims, judge_early);
  // With `room`: the room the victims re-placed before P took; once P is placed, nothing.
  const TryRoom* tracked = room;
  int taken = 0;
  // Once P fails the try fails, whatever the jobs after it would do: they are not ordered.
  if (ok) {
    OrderJobs(groups, requests, [&](int j) {
      const int h = groups[j];
      if (h == group) {
        ok = PlacePreemptor(h, pods[j], requests[j], placed_out);
        tracked = nullptr;
        return ok;
      }
      if (replaces && ReplaceVictimGroup(h, pods[j], requests[j], tracked, &taken)) {
        moved_groups.push_back(h);
      } else if (judge_early && replaces && RejectedWhateverFollows(group, unit, victims, h)) {
        // The validator would reject the try, whatever the jobs left do.
        ++session_.counters().tries_cut_rejected;
        ok = false;
        return false;
      }
      if (tracked != nullptr && tracked->room - taken < part) {
        // P comes later and cannot fit: re-placing only takes room.
        ++session_.counters().tries_cut_short;
        ok = false;
        return false;
      }
      return true;
    });
  }
  if (poll.cancelled()) ok = false;
  if (ok) ok = JudgeAttempt(group, unit, victims, protected_groups, moved_groups, attempt);
  if (ok && keep) {
    state.Commit(mark);
  } else {
    state.Rollback(mark);
  }
  if (overlay) {
    session_.placer().SetOverlay(nullptr);
    state.ThawIndex();
  }
  return ok;
}

void Solver::GatherJobs(int group, const Unit& unit, int part,
                        const std::vector<EvictionUnit>& victims, std::vector<int>* groups_out,
                        std::vector<std::vector<int>>* pods_out,
                        std::vector<std::vector<double>>* requests_out) const {
  const Cluster& cluster = session_.cluster();
  std::vector<int>& groups = *groups_out;
  std::vector<std::vector<int>>& pods = *pods_out;
  // The jobs: P with `part`, then each victim group with its pods of S. `pods` and `requests`
  // keep their rows from one try to the next: row j is job j's, the rows past the jobs are stale.
  groups.assign(1, group);
  if (pods.empty()) pods.resize(1);
  pods[0].assign(unit.pods.begin(), unit.pods.begin() + part);
  for (const EvictionUnit& victim : victims) {
    auto it = std::find(groups.begin(), groups.end(), victim.group);
    if (it == groups.end()) {
      groups.push_back(victim.group);
      if (pods.size() < groups.size()) pods.resize(groups.size());
      pods[groups.size() - 1].clear();
      it = groups.end() - 1;
    }
    std::vector<int>& list = pods[it - groups.begin()];
    list.insert(list.end(), victim.pods.begin(), victim.pods.end());
  }
  std::vector<std::vector<double>>& requests = *requests_out;
  if (requests.size() < groups.size()) requests.resize(groups.size());
  for (size_t j = 0; j < groups.size(); ++j) {
    std::vector<int>& list = pods[j];
    std::sort(list.begin(), list.end());  // pod order
    SumRequestsInto(cluster, list.data(), static_cast<int>(list.size()), &requests[j]);
  }
}

bool Solver::PlacePreemptor(int group, const std::vector<int>& pods,
                            const std::vector<double>& requests, int* placed_out) {
  const Cluster& cluster = session_.cluster();
  WorkingState& state = session_.state();
  CancelPoll& poll = session_.poll();
  if (CheckQuota(cluster, session_.shares(), state, group, requests.data())) return false;
  const int64_t work = PlacementWork(cluster, group);
  for (int pod : pods) {
    if (poll.Tick(work)) return false;  // cancelled: the try's statement is rolled back
    const NodeChoice choice = session_.placer().Choose(pod);
    if (choice.node < 0) return false;
    state.Bind(pod, choice.node, /*after_evictions=*/true, &choice.devices);
    if (placed_out != nullptr) ++*placed_out;
  }
  return true;
}

bool Solver::ReplaceVictimGroup(int group, const std::vector<int>& pods,
                                const std::vector<double>& requests, const TryRoom* room,
                                int* taken) {
  const Cluster& cluster = session_.cluster();
  WorkingState& state = session_.state();
  CancelPoll& poll = session_.poll();
  const WorkingState::Mark inner = state.Checkpoint();
  bool placed = !CheckQuota(cluster, session_.shares(), state, group, requests.data());
  const int64_t work = PlacementWork(cluster, group);
  int took = 0;
  for (size_t k = 0; placed && k < pods.size(); ++k) {
    if (poll.Tick(work)) {
      placed = false;
      break;
    }
    const NodeChoice choice = session_.placer().Choose(pods[k]);
    if (choice.node < 0) {
      placed = false;
      break;
    }
    const int before = room != nullptr ? room->bound->PodsNow(choice.node) : 0;
    // A victim re-placed on its own node is restored there (§4.1), as KAI un-evicts it; one
    // that shares only with the same devices (§4.13.5).
    if (choice.node == state.pod_node(pods[k]) && SameDevices(state, pods[k], choice.devices)) {
      state.Restore(pods[k]);
    } else {
      state.Relocate(pods[k], choice.node, &choice.devices);
    }
    if (room != nullptr) took += before - room->bound->PodsNow(choice.node);
  }
  if (placed) {
    state.Commit(inner);
    if (taken != nullptr) *taken += took;
  } else {
    state.Rollback(inner);
  }
  return placed;
}

bool Solver::RejectedBeforeAnyJob(int group, const Unit& unit,
                                  const std::vector<EvictionUnit>& victims, bool judge_early) {
  // Without re-placement every unit is evicted from the start.
  const bool replaces = action_.ReplacesVictims();
  try_scratch_.open.assign(victims.size(), replaces);
  if (!judge_early || replaces || !RejectedWhateverFollows(group, unit, victims, -1)) return false;
  ++session_.counters().tries_cut_rejected;
  return true;
}

bool Solver::RejectedWhateverFollows(int group, const Unit& unit,
                                     const std::vector<EvictionUnit>& victims, int failed) {
  std::vector<bool>& open = try_scratch_.open;
  for (size_t k = 0; k < victims.size(); ++k) {
    if (victims[k].group == failed) open[k] = false;
  }
  return action_.RejectsEveryTryEvicting(*this, group, unit.requests, victims, open);
}

bool Solver::JudgeAttempt(int group, const Unit& unit, const std::vector<EvictionUnit>& victims,
                          const std::vector<int>& protected_groups,
                          const std::vector<int>& moved_groups, Attempt* attempt) const {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  attempt->preemptor = group;
  attempt->unit_requests = unit.requests;
  attempt->victims = victims;
  attempt->moved.assign(victims.size(), false);
  for (size_t k = 0; k < victims.size(); ++k) {
    attempt->moved[k] =
        std::find(moved_groups.begin(), moved_groups.end(), victims[k].group) != moved_groups.end();
  }
  attempt->reasons.assign(victims.size(), action_.reason());
  attempt->messages.assign(victims.size(), "");
  bool ok = true;
  for (int g : protected_groups) {
    const bool moved = std::find(moved_groups.begin(), moved_groups.end(), g) != moved_groups.end();
    if (!moved && state.active(g) < cluster.group(g).gang) ok = false;
  }
  if (ok) ok = action_.Validate(*this, *attempt);
  return ok;
}

void Solver::RecordStartAllocations() {
  const WorkingState& state = session_.state();
  const int queues = session_.cluster().tree().size();
  const int r_count = session_.cluster().num_resources();
  start_allocated_.resize(static_cast<size_t>(queues) * r_count);
  start_allocated_np_.resize(static_cast<size_t>(queues) * r_count);
  for (int q = 0; q < queues; ++q) {
    std::copy(state.allocated(q), state.allocated(q) + r_count, &start_allocated_[q * r_count]);
    std::copy(state.allocated_np(q), state.allocated_np(q) + r_count,
              &start_allocated_np_[q * r_count]);
  }
}

int Solver::FirstPartNeedingVictims(int group, const Unit& unit, Attempt* attempt) {
  // solve(P) would try each part that fits with no victim at all with R empty and go on, which
  // costs O(|U|²) placements for a gang that (nearly) fits as it is. With no victim, try(part)
  // evicts nothing and P is the only job: P's §4.4 check passes for a part whenever it passes
  // for a longer one (requests are not negative), the part's pods are placed one by one exactly
  // as the first pods of the longer part, and the validator judges victims (with none, every
  // part gets the same verdict). So if the first k pods place and try(k) passes, every try(i)
  // with i <= k passes too.
  const int size = static_cast<int>(unit.pods.size());
  const std::vector<EvictionUnit> no_victims;
  int placed = 0;
  if (Try(group, unit, size, no_victims, false, attempt, &placed)) return size + 1;
  if (session_.poll().cancelled()) return 1;
  if (placed > 1 && placed < size && Try(group, unit, placed, no_victims, false, attempt)) {
    return placed + 1;
  }
  return 1;
}

namespace {

// The preemptor's fresh victim order for one part ("draw victims in a fresh order, skipping
// R"): the action's shared order made the preemptor's (P itself out, the action's own filter
// applied, R marked to be skipped in its turn) and reset when the part is done, or an order built
// for it.
class FreshVictimOrder {
 public:
  // Building an order of its own ticks the poll; the caller checks it.
  FreshVictimOrder(Session& session, const QueueChain& chain, const EvictionAction& action,
                   VictimOrder* shared, int group, const std::function<bool(int)>& eligible,
                   const std::vector<EvictionUnit>& chosen)
      : shared_(shared) {
    if (shared_ == nullptr) {
      own_ = std::make_unique<VictimOrder>(session, chain, eligible, chosen);
      ++session.counters().victim_orders;
      session.poll().Tick(session.cluster().num_groups() + session.cluster().tree().size());
      return;
    }
    shared_->ExcludeGroup(group);
    action.PrepareSharedOrder(group, *shared_);
    if (!chosen.empty()) shared_->MarkRecorded(chosen);
  }
  FreshVictimOrder(const FreshVictimOrder&) = delete;
  FreshVictimOrder& operator=(const FreshVictimOrder&) = delete;
  ~FreshVictimOrder() {
    if (shared_ != nullptr) shared_->Reset();
  }

  VictimOrder* operator->() { return shared_ != nullptr ? shared_ : own_.get(); }

 private:
  VictimOrder* shared_;
  std::unique_ptr<VictimOrder> own_;
};

}  // namespace

// The sequence of eviction units a search's parts draw (§4.8, "The victim order of a part"):
// every part walks the same sequence, because the working state does not change between parts
// and R's units are drawn in their turn like any other (they are only not yielded). So the
// sequence is drawn once per search, from one fresh order with nothing recorded, and each part
// reads it from the start, passing over its own R; a part that reads past what earlier parts
// drew draws on from the same order. The order is built at the first read and reset when the
// search ends.
class DrawSequence {
 public:
  // `recorded`: the units a recorded search of the same group drew into the session's sequence
  // rows (Solver::Record); each is compared with the unit drawn in its place (agreed).
  DrawSequence(Session& session, const QueueChain& chain, const EvictionAction& action,
               VictimOrder* shared, int group, std::function<bool(int)> eligible,
               size_t recorded = 0)
      : session_(session),
        chain_(chain),
        action_(action),
        shared_(shared),
        group_(group),
        eligible_(std::move(eligible)),
        units_(session.sequence_units()),
        recorded_(recorded) {
    assert(!units_.in_use);  // one sequence at a time: searches do not nest
    units_.in_use = true;
  }
  ~DrawSequence() {
    // The order first: a shared one is reset before the next sequence draws from it.
    order_.reset();
    units_.in_use = false;
  }
  DrawSequence(const DrawSequence&) = delete;
  DrawSequence& operator=(const DrawSequence&) = delete;

  // Sets `unit` to the i-th unit of the sequence (0-based), drawing it if no part has yet; false
  // when the sequence has fewer units or the call is cancelled (the caller checks the poll).
  // Reads must ask for each i in turn from 0, as the loop of a part does.
  bool At(size_t i, const EvictionUnit** unit) {
    if (order_ == nullptr) {
      const std::vector<EvictionUnit> none;
      order_ = std::make_unique<FreshVictimOrder>(session_, chain_, action_, shared_, group_,
                                                  eligible_, none);
      if (session_.poll().cancelled()) exhausted_ = true;
    }
    std::deque<EvictionUnit>& units = units_.units;
    while (i >= drawn_) {
      if (exhausted_) return false;
      if (drawn_ == units.size()) units.emplace_back();
      // Copied into an element kept from an earlier search, which has room for its pods; the
      // recorded search's unit there is read first.
      EvictionUnit& slot = units[drawn_];
      const bool compare = agreed_ == drawn_ && drawn_ < recorded_;
      if (compare) prior_ = slot;
      if (!(*order_)->Next(&slot)) {
        exhausted_ = true;
        return false;
      }
      if (compare && SameUnit(slot, prior_)) agreed_ = drawn_ + 1;
      ++drawn_;
    }
    *unit = &units[i];
    return true;
  }
  // The units drawn so far.
  size_t drawn() const { return drawn_; }
  // The first units, this many, are those the recorded search drew, in its order.
  size_t agreed() const { return agreed_; }

 private:
  Session& session_;
  const QueueChain& chain_;
  const EvictionAction& action_;
  VictimOrder* shared_;
  int group_;
  std::function<bool(int)> eligible_;
  std::unique_ptr<FreshVictimOrder> order_;
  Session::SequenceUnits& units_;  // the first drawn_ are this sequence's
  size_t drawn_ = 0;
  bool exhausted_ = false;
  size_t recorded_;
  size_t agreed_ = 0;
  EvictionUnit prior_;  // the recorded unit in the row being drawn
};

namespace {

// The victims drawn for one part: in draw order, by node, and the groups they and R come from,
// for the cap on victim groups. The units are those of the search's sequence (whose addresses do
// not change while it grows); the per-node lists and group marks are the session's scratch
// (Session::DrawScratch), left empty and unmarked again when the part ends.
class Draws {
 public:
  // `max_groups` -1: no cap. The scratch's lists and marks are borrowed until the destructor.
  Draws(const Cluster& cluster, Session::DrawScratch& scratch,
        const std::vector<EvictionUnit>& chosen, int max_groups)
      : on_node_(scratch.on_node),
        units_on_node_(scratch.units_on_node),
        group_seen_(scratch.group_seen),
        max_groups_(max_groups) {
    on_node_.resize(cluster.num_nodes());
    units_on_node_.resize(cluster.num_nodes());
    group_seen_.resize(cluster.num_groups(), 0);
    for (const EvictionUnit& unit : chosen) Count(unit.group);
  }
  ~Draws() {
    for (int node : nodes_used_) {
      on_node_[node].clear();
      units_on_node_[node].clear();
    }
    for (int group : groups_) group_seen_[group] = 0;
  }
  Draws(const Draws&) = delete;
  Draws& operator=(const Draws&) = delete;

  // Counts `group` among the victim groups; false when it is a new one and the cap is reached.
  bool Admits(int group) {
    if (group_seen_[group]) return true;
    if (max_groups_ >= 0 && static_cast<int>(groups_.size()) >= max_groups_) return false;
    Count(group);
    return true;
  }
  // Adds the drawn `unit` (an element of the search's sequence), whose pods are on `nodes`.
  void Add(const EvictionUnit& unit, const std::vector<int>& nodes) {
    const int index = drawn_++;
    for (int node : nodes) {
      if (on_node_[node].empty()) nodes_used_.push_back(node);
      on_node_[node].push_back(index);
      units_on_node_[node].push_back(&unit);
    }
  }
  // The drawn units with a pod on `node`, in draw order.
  const std::vector<const EvictionUnit*>& On(int node) const { return units_on_node_[node]; }
  // The indices (draw order) of the drawn units with a pod on `node`.
  const std::vector<int>& IndicesOn(int node) const { return on_node_[node]; }

 private:
  void Count(int group) {
    if (group_seen_[group]) return;
    group_seen_[group] = 1;
    groups_.push_back(group);
  }

  int drawn_ = 0;                           // units added
  std::vector<std::vector<int>>& on_node_;  // per node: draw indices of its units, draw order
  std::vector<std::vector<const EvictionUnit*>>& units_on_node_;  // per node: those units
  std::vector<char>& group_seen_;
  std::vector<int> nodes_used_;  // the nodes with a nonempty list
  std::vector<int> groups_;      // the groups marked seen
  int max_groups_;
};

// The nodes of `unit`'s pods, ascending, each once. A unit's pods are few and on fewer nodes,
// so each goes into place in the short list (a large unit is sorted instead).
void NodesOf(const WorkingState& state, const EvictionUnit& unit, std::vector<int>* nodes) {
  nodes->clear();
  constexpr size_t kInsertUpTo = 16;
  if (unit.pods.size() > kInsertUpTo) {
    for (int pod : unit.pods) nodes->push_back(state.pod_node(pod));
    std::sort(nodes->begin(), nodes->end());
    nodes->erase(std::unique(nodes->begin(), nodes->end()), nodes->end());
    return;
  }
  for (int pod : unit.pods) {
    const int node = state.pod_node(pod);
    auto at = std::lower_bound(nodes->begin(), nodes->end(), node);
    if (at == nodes->end() || *at != node) nodes->insert(at, node);
  }
}

// R's units are drawn in their turn but not yielded. R is made of units of the part's own
// sequence (each part's solution takes R and drawn units), so a unit is in R whole or not at all,
// and its first pod tells which: the first pods of R's units, sorted.
std::vector<int> FirstPods(const std::vector<EvictionUnit>& chosen) {
  std::vector<int> first;
  for (const EvictionUnit& victim : chosen) first.push_back(victim.pods.front());
  std::sort(first.begin(), first.end());
  return first;
}

// Whether two lists of eviction units are the same units in the same order.
bool SameUnits(const std::vector<EvictionUnit>& a, const std::vector<EvictionUnit>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), SameUnit);
}

// Whether pods a and b have one shape: the same signature and the same requests.
bool SameShape(const Cluster& cluster, const Feasibility& feasibility, int a, int b) {
  return feasibility.pod_signature(a) == feasibility.pod_signature(b) &&
         std::equal(cluster.requests(a), cluster.requests(a) + cluster.num_resources(),
                    cluster.requests(b));
}

// How many times over pod `big` asks each node resource pod `small` asks: the least, over the
// resources `small` asks, of floor(big / small). Infinite when `small` asks nothing of the nodes.
double PlacesPerPod(const Cluster& cluster, int big, int small) {
  const double* large = cluster.node_requests(big);
  const double* requests = cluster.node_requests(small);
  double places = std::numeric_limits<double>::infinity();
  for (int k = 0; k < cluster.num_node_resources(); ++k) {
    if (requests[k] > 0) places = std::min(places, std::floor(large[k] / requests[k]));
  }
  return places;
}

// Whether every bound of `bounds` says it may hold, by `test`.
bool AllMayHold(const std::vector<MovesBound>& bounds, bool (MovesBound::*test)() const) {
  return std::all_of(bounds.begin(), bounds.end(),
                     [test](const MovesBound& bound) { return (bound.*test)(); });
}

// Whether every bound of `bounds` says the try on `node` may hold (MovesBound::MayHold).
bool AllMayHoldOn(std::vector<MovesBound>& bounds, int node, const std::vector<int>& indices,
                  const std::vector<const EvictionUnit*>& fresh) {
  return std::all_of(bounds.begin(), bounds.end(),
                     [&](MovesBound& bound) { return bound.MayHold(node, indices, fresh); });
}

// Whether the try that takes R and the drawn units `indices` repeats one already made after the
// current draw (`tried`, cleared at each draw); if not, it is added. A gang's draw tries each of
// its nodes, and the drawn units on two of them may be the same: the state does not change between
// the tries of a part, so the same victims in the same order fail again. Only the tries of the
// same draw can repeat one another: a try after draw t takes R and the drawn units on a node of
// draw t, whose last one is draw t itself, so its victims differ from those of every try after an
// earlier draw. The drawn units of a part are disjoint and each nonempty, so two tries take the
// same pods in the same order exactly when they take the same drawn units (R is common to both).
bool RepeatsATry(const std::vector<int>& indices, std::vector<const std::vector<int>*>* tried) {
  for (const std::vector<int>* other : *tried) {
    if (*other == indices) return true;
  }
  tried->push_back(&indices);
  return false;
}

}  // namespace

std::vector<MovesBound> Solver::MovesBounds(int group, const Unit& unit, int part,
                                            const std::vector<EvictionUnit>& chosen,
                                            const std::function<bool(int)>& eligible,
                                            const RoomBound& room) {
  std::vector<MovesBound> bounds;
  // The reference search runs without them, so the differential test compares the two.
  if (!room.TracksTries() || room.sharing() || session_.reference_search()) return bounds;
  const std::vector<std::vector<int>> shapes = MustMovePods(group, unit, chosen);
  // A try re-places all of them, and the part, on the same nodes: each shape's count, with the
  // shapes it can join counted in its places, needs more of the same room than its own alone.
  for (size_t s = 0; s < shapes.size(); ++s) {
    // Joining reads every other shape and its classes. Cancelled: no more bounds (the caller
    // checks the poll).
    if (session_.poll().Tick(static_cast<int64_t>(shapes.size()) +
                             session_.feasibility().num_classes())) {
      break;
    }
    std::optional<MovesBound> bound = MovesBoundFor(unit, part, chosen, eligible, shapes[s],
                                                    JoinedPlaces(shapes, static_cast<int>(s)));
    if (bound.has_value() && !bound->HoldsWithR()) bounds.push_back(std::move(*bound));
  }
  return bounds;
}

int Solver::JoinedPlaces(const std::vector<std::vector<int>>& shapes, int base,
                         std::vector<int>* joined) {
  const Cluster& cluster = session_.cluster();
  Feasibility& feasibility = session_.feasibility();
  std::vector<char> base_classes(feasibility.num_classes(), 0);
  for (const Feasibility::FeasibleClass& feasible :
       feasibility.FeasibleClasses(feasibility.pod_signature(shapes[base][0]))) {
    base_classes[feasible.node_class] = 1;
  }
  int64_t others = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    if (static_cast<int>(s) == base) continue;
    const double places = PlacesPerPod(cluster, shapes[s][0], shapes[base][0]);
    if (!(places >= 1) || std::isinf(places)) continue;
    const std::vector<Feasibility::FeasibleClass>& where =
        feasibility.FeasibleClasses(feasibility.pod_signature(shapes[s][0]));
    if (!std::all_of(where.begin(), where.end(), [&](const Feasibility::FeasibleClass& c) {
          return base_classes[c.node_class] != 0;
        })) {
      continue;
    }
    if (joined != nullptr) joined->push_back(static_cast<int>(s));
    // Past 1,024 places per pod, and a million in all, the count says less than it could, never
    // more.
    others +=
        static_cast<int64_t>(std::min(places, 1024.0)) * static_cast<int64_t>(shapes[s].size());
  }
  return static_cast<int>(std::min<int64_t>(others, 1 << 20));
}

std::optional<MovesBound> Solver::MovesBoundFor(const Unit& unit, int part,
                                                const std::vector<EvictionUnit>& chosen,
                                                const std::function<bool(int)>& eligible,
                                                const std::vector<int>& pods, int others) {
  const Cluster& cluster = session_.cluster();
  Feasibility& feasibility = session_.feasibility();
  const int shape = unit.pods[0];
  const int64_t count_work = cluster.num_nodes() + cluster.num_pods();
  // The victims' places each of the part's pods takes: every resource they ask, the part's pod
  // asks at least `places` times as much. A victim asking nothing of the nodes takes no place;
  // past 1,024 places per pod the count says less than it could, never more.
  double places = PlacesPerPod(cluster, shape, pods[0]);
  if (!(places >= 1) || std::isinf(places)) return std::nullopt;
  places = std::min(places, 1024.0);
  // The node classes where the part's pod may go and the victims may not.
  std::vector<char> outside(feasibility.num_classes(), 0);
  for (const Feasibility::FeasibleClass& feasible :
       feasibility.FeasibleClasses(feasibility.pod_signature(shape))) {
    outside[feasible.node_class] = 1;
  }
  for (const Feasibility::FeasibleClass& feasible :
       feasibility.FeasibleClasses(feasibility.pod_signature(pods[0]))) {
    outside[feasible.node_class] = 0;
  }
  const int count = static_cast<int>(pods.size());
  Unit victims;
  victims.pods = pods;
  auto victims_room = std::make_unique<RoomBound>(
      session_, victims, count, chosen, eligible, &session_.room_scratch(),
      action_.VictimsInOwnLeaf(), others + static_cast<int>(places) * part);
  session_.poll().Tick(count_work);
  std::unique_ptr<RoomBound> elsewhere;
  if (std::find(outside.begin(), outside.end(), 1) != outside.end()) {
    elsewhere = std::make_unique<RoomBound>(session_, unit, part, chosen, eligible,
                                            &session_.room_scratch(), action_.VictimsInOwnLeaf(), 0,
                                            &outside);
    session_.poll().Tick(count_work);
  }
  if (!victims_room->counted() || (elsewhere != nullptr && !elsewhere->counted())) {
    return std::nullopt;
  }
  return MovesBound(std::move(victims_room), std::move(elsewhere), count + others,
                    static_cast<int>(places), part);
}

std::vector<Solver::OrderedMove> Solver::OrderedMoves(int group, const Unit& unit, int part,
                                                      const std::vector<EvictionUnit>& chosen,
                                                      const std::function<bool(int)>& eligible,
                                                      const RoomBound& room) {
  std::vector<OrderedMove> moves;
  if (!action_.ReplacesVictims() || !room.TracksTries() || room.sharing() ||
      session_.reference_search()) {
    return moves;
  }
  const Cluster& cluster = session_.cluster();
  const Feasibility& feasibility = session_.feasibility();
  const int r_count = cluster.num_resources();
  // The groups ranked first, by shape: their sides and their pods of R.
  std::vector<std::pair<std::vector<OrderedSide>, std::vector<int>>> shapes;
  std::vector<int> seen;
  for (const EvictionUnit& victim : chosen) {
    const int h = victim.group;
    if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    // Each group reads R and its own pods. Cancelled: no bound (the caller checks the poll).
    if (session_.poll().Tick(1 + static_cast<int64_t>(chosen.size()) +
                             cluster.group(h).pod_count)) {
      return {};
    }
    OrderedSide side{h, {}, {}, std::vector<double>(r_count), std::vector<double>(r_count)};
    if (!FitsWhereThePartFits(unit, part, h) || !SidesOf(group, h, &side.x, &side.y)) continue;
    // With nothing drawn the ranges are at their narrowest: a side not ranked first now never is.
    QueueRangesFor(unit, part, chosen, &side.x, &side.y);
    if (!RanksFirstWithin(chain_, session_.shares(), side.y, side.x)) continue;
    std::vector<int> pods;
    for (const EvictionUnit& of_h : chosen) {
      if (of_h.group == h) pods.insert(pods.end(), of_h.pods.begin(), of_h.pods.end());
    }
    auto it = std::find_if(shapes.begin(), shapes.end(), [&](const auto& entry) {
      return SameShape(cluster, feasibility, entry.second[0], pods[0]);
    });
    if (it == shapes.end()) it = shapes.emplace(shapes.end());
    it->first.push_back(std::move(side));
    it->second.insert(it->second.end(), pods.begin(), pods.end());
  }
  // Each shape's pods, sorted, in shape order (JoinedPlaces reads them so).
  std::vector<std::vector<int>> lists;
  for (auto& [sides, pods] : shapes) {
    std::sort(pods.begin(), pods.end());
    lists.push_back(std::move(pods));
  }
  // Every group of a shape and of the shapes it joins is placed in a try that places the part,
  // so each shape's count takes the others' pods in its places (JoinedPlaces), as MovesBounds
  // does; the bound then rules a try out only when all of them rank first in it.
  std::vector<int> joined;
  for (size_t s = 0; s < shapes.size(); ++s) {
    // Joining reads every other shape and its classes. Cancelled: no bound (the caller checks
    // the poll).
    if (session_.poll().Tick(static_cast<int64_t>(shapes.size()) + feasibility.num_classes())) {
      return {};
    }
    joined.clear();
    const int others = JoinedPlaces(lists, static_cast<int>(s), &joined);
    std::optional<MovesBound> bound = MovesBoundFor(unit, part, chosen, eligible, lists[s], others);
    if (!bound.has_value() || bound->HoldsWithR()) continue;
    std::vector<OrderedSide> sides = shapes[s].first;
    for (int j : joined) sides.insert(sides.end(), shapes[j].first.begin(), shapes[j].first.end());
    moves.push_back(OrderedMove{std::move(sides), std::move(*bound)});
  }
  return moves;
}

void Solver::TakeOffUnder(const std::vector<const EvictionUnit*>& units, int queue,
                          std::vector<double>* sum) const {
  for (const EvictionUnit* unit : units) TakeOffUnder(*unit, queue, sum);
}

void Solver::TakeOffUnder(const EvictionUnit& unit, int queue, std::vector<double>* sum) const {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  const int r_count = cluster.num_resources();
  int q = cluster.group(unit.group).queue;
  while (q >= 0 && q != queue) q = tree.parent(q);
  if (q < 0) return;
  for (int pod : unit.pods) {
    const double* requests = cluster.requests(pod);
    for (int r = 0; r < r_count; ++r) (*sum)[r] += requests[r];
  }
}

bool Solver::RanksFirstLess(OrderedSide& side, const std::vector<double>& x_taken,
                            const std::vector<double>& y_taken) const {
  const size_t r_count = x_taken.size();
  for (size_t r = 0; r < r_count; ++r) {
    side.x.allocated_low[r] = side.x.allocated_high[r] - x_taken[r];
    side.y.allocated_low[r] = side.y.allocated_high[r] - y_taken[r];
  }
  return RanksFirstWithin(chain_, session_.shares(), side.y, side.x);
}

void Solver::AddDrawnToOrdered(std::vector<OrderedMove>& moves, const EvictionUnit& drawn,
                               const std::vector<int>& nodes) const {
  for (OrderedMove& move : moves) {
    move.bound.AddDrawn(drawn, nodes);
    for (OrderedSide& side : move.sides) {
      TakeOffUnder(drawn, side.x.queue, &side.x_drawn);
      TakeOffUnder(drawn, side.y.queue, &side.y_drawn);
    }
  }
}

int64_t* Solver::CountDraw(int group, DrawSequence& sequence, const EvictionUnit& next,
                           const std::vector<int>& nodes, DrawBounds* bounds) {
  SearchCounters& counters = session_.counters();
  // While the replayed search rules out every try, no bound is read: the bounds count the units
  // drawn meanwhile, in draw order, at the first draw whose tries they may judge.
  if (ReplayedFailure(group, walked_to_, sequence)) {
    bounds->uncounted.push_back(&next);
    return &counters.explanation_tries_replayed;
  }
  const auto count = [&](const EvictionUnit& unit, const std::vector<int>& on) {
    bounds->room.AddDrawn(unit, on);
    for (MovesBound& bound : bounds->moves) bound.AddDrawn(unit, on);
    AddDrawnToOrdered(bounds->ordered, unit, on);
  };
  for (const EvictionUnit* earlier : bounds->uncounted) {
    NodesOf(session_.state(), *earlier, &bounds->nodes);
    count(*earlier, bounds->nodes);
  }
  bounds->uncounted.clear();
  count(next, nodes);
  return DrawRuledOut(bounds->room, bounds->moves, bounds->ordered, counters);
}

int64_t* Solver::DrawRuledOut(const RoomBound& room, const std::vector<MovesBound>& moves,
                              std::vector<OrderedMove>& ordered, SearchCounters& counters) {
  if (!room.DrawnMayHold()) return &counters.tries_skipped_count;
  if (!AllMayHold(moves, &MovesBound::DrawnMayHold)) return &counters.tries_skipped_moves;
  if (OrderedRuleOutDraw(ordered)) return &counters.tries_skipped_ranked;
  return nullptr;
}

int64_t* Solver::TryRuledOut(std::vector<MovesBound>& moves, std::vector<OrderedMove>& ordered,
                             int node, const std::vector<int>& indices,
                             const std::vector<const EvictionUnit*>& fresh) {
  SearchCounters& counters = session_.counters();
  if (!AllMayHoldOn(moves, node, indices, fresh)) return &counters.tries_skipped_moves;
  if (OrderedRuleOutTry(ordered, node, indices, fresh)) return &counters.tries_skipped_ranked;
  return nullptr;
}

bool Solver::OrderedRuleOutDraw(std::vector<OrderedMove>& moves) const {
  return std::any_of(moves.begin(), moves.end(), [&](OrderedMove& move) {
    return !move.bound.DrawnMayHold() &&
           std::all_of(move.sides.begin(), move.sides.end(), [&](OrderedSide& side) {
             return RanksFirstLess(side, side.x_drawn, side.y_drawn);
           });
  });
}

bool Solver::OrderedRuleOutTry(std::vector<OrderedMove>& moves, int node,
                               const std::vector<int>& indices,
                               const std::vector<const EvictionUnit*>& fresh) {
  std::vector<double>& x_taken = ordered_scratch_[0];
  std::vector<double>& y_taken = ordered_scratch_[1];
  for (OrderedMove& move : moves) {
    if (move.bound.MayHold(node, indices, fresh)) continue;
    const bool first = std::all_of(move.sides.begin(), move.sides.end(), [&](OrderedSide& side) {
      x_taken.assign(side.x_drawn.size(), 0.0);
      y_taken.assign(side.y_drawn.size(), 0.0);
      TakeOffUnder(fresh, side.x.queue, &x_taken);
      TakeOffUnder(fresh, side.y.queue, &y_taken);
      return RanksFirstLess(side, x_taken, y_taken);
    });
    if (first) return true;
  }
  return false;
}

std::vector<std::vector<int>> Solver::MustMovePods(int group, const Unit& unit,
                                                   const std::vector<EvictionUnit>& chosen) {
  std::vector<std::vector<int>> shapes;
  if (!action_.ReplacesVictims() || chosen.empty()) return shapes;
  const Cluster& cluster = session_.cluster();
  const Feasibility& feasibility = session_.feasibility();
  std::vector<bool> open(chosen.size());
  std::vector<int> judged;  // R's groups judged so far
  for (const EvictionUnit& first : chosen) {
    const int g = first.group;
    if (std::find(judged.begin(), judged.end(), g) != judged.end()) continue;
    judged.push_back(g);
    // Each judgement reads R once. Cancelled: no bound (the caller checks the poll).
    if (session_.poll().Tick(1 + static_cast<int64_t>(chosen.size()))) return {};
    for (size_t k = 0; k < chosen.size(); ++k) open[k] = chosen[k].group != g;
    if (!action_.RejectsEveryTryEvicting(*this, group, unit.requests, chosen, open)) continue;
    for (size_t k = 0; k < chosen.size(); ++k) {
      if (open[k]) continue;
      for (int pod : chosen[k].pods) {
        const ClusterPod& info = cluster.pod(pod);
        if (info.shares() || info.requests_off_nodes) continue;
        auto it = std::find_if(shapes.begin(), shapes.end(), [&](const std::vector<int>& list) {
          return SameShape(cluster, feasibility, list[0], pod);
        });
        if (it == shapes.end()) {
          shapes.emplace_back(1, pod);
        } else {
          it->push_back(pod);
        }
      }
    }
  }
  return shapes;
}

void Solver::QueueRangesFor(const Unit& unit, int part, const std::vector<EvictionUnit>& chosen,
                            QueueRange* x, QueueRange* y) const {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const QueueTree& tree = cluster.tree();
  const int r_count = cluster.num_resources();
  for (QueueRange* range : {x, y}) {
    const double* allocated = state.allocated(range->queue);
    range->allocated_high.assign(allocated, allocated + r_count);
    range->unit_low.assign(r_count, 0.0);
    range->unit_high.assign(r_count, 0.0);
  }
  SumRequestsInto(cluster, unit.pods.data(), part, &x->unit_low);
  x->unit_high = x->unit_low;
  // R's pods come off the allocations above them; on y's side each group's pods of R sum to the
  // unit its job may carry.
  std::vector<std::pair<int, std::vector<double>>> units;  // R's groups under y: their sums
  for (const EvictionUnit& victim : chosen) {
    const int leaf = cluster.group(victim.group).queue;
    bool under_y = false;
    for (int q = leaf; q >= 0; q = tree.parent(q)) {
      for (QueueRange* range : {x, y}) {
        if (q != range->queue) continue;
        for (int pod : victim.pods) {
          const double* requests = cluster.requests(pod);
          for (int r = 0; r < r_count; ++r) range->allocated_high[r] -= requests[r];
        }
        under_y = under_y || range == y;
      }
    }
    if (!under_y) continue;
    auto it = std::find_if(units.begin(), units.end(),
                           [&](const auto& entry) { return entry.first == victim.group; });
    if (it == units.end())
      it = units.emplace(units.end(), victim.group, std::vector<double>(r_count));
    for (int pod : victim.pods) {
      const double* requests = cluster.requests(pod);
      for (int r = 0; r < r_count; ++r) it->second[r] += requests[r];
    }
  }
  for (const auto& [g, sum] : units) {
    for (int r = 0; r < r_count; ++r) y->unit_high[r] = std::max(y->unit_high[r], sum[r]);
  }
  x->allocated_low = x->allocated_high;
  y->allocated_low = y->allocated_high;
}

bool Solver::FitsWhereThePartFits(const Unit& unit, int part, int h) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  Feasibility& feasibility = session_.feasibility();
  const ClusterGroup& info = cluster.group(h);
  if (info.group->one_pod_per_node) return false;
  // h's RUNNING pods: any of them may be in its job. One shape, none sharing, each on the nodes.
  const int r_count = cluster.num_resources();
  int first = -1;
  int count = 0;
  for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
    if (state.pod_state(p) != PodState::kRunning) continue;
    const ClusterPod& pod = cluster.pod(p);
    if (pod.shares() || pod.requests_off_nodes) return false;
    if (first < 0) {
      first = p;
    } else if (!SameShape(cluster, feasibility, p, first)) {
      return false;
    }
    ++count;
  }
  if (first < 0) return false;
  // The part's pod asks each resource of h's pod at least k times over.
  const int shape = unit.pods[0];
  const double places = PlacesPerPod(cluster, shape, first);
  if (!(places >= 1) || std::isinf(places) || count > places * part) return false;
  // h's pods may go wherever the part's pod may.
  std::vector<char> victim_classes(feasibility.num_classes(), 0);
  for (const Feasibility::FeasibleClass& c :
       feasibility.FeasibleClasses(feasibility.pod_signature(first))) {
    victim_classes[c.node_class] = 1;
  }
  for (const Feasibility::FeasibleClass& c :
       feasibility.FeasibleClasses(feasibility.pod_signature(shape))) {
    if (victim_classes[c.node_class] == 0) return false;
  }
  // No limit refuses h: at its turn each of its queues has lost h's pods and at most got back
  // what it lost. A memory pod re-placed may count more of G than it gave back, so G's limits
  // are trusted only without sharing pods.
  const QueueTree& tree = cluster.tree();
  const double* requests = cluster.requests(first);
  for (int q = info.queue; q >= 0; q = tree.parent(q)) {
    const Row limit = session_.shares().queues[q].limit;
    for (int r = 0; r < r_count; ++r) {
      if (!(requests[r] > 0) || limit[r] == -1) continue;
      if (r == cluster.gpu() && cluster.any_sharing()) return false;
      const double start = start_allocated_[static_cast<size_t>(q) * r_count + r];
      if (!(start + 1e-9 * (1 + std::fabs(limit[r])) <= limit[r])) return false;
    }
  }
  return true;
}

bool Solver::SidesOf(int group, int h, QueueRange* x, QueueRange* y) const {
  const QueueTree& tree = session_.cluster().tree();
  std::vector<int> p_path;
  std::vector<int> h_path;
  tree.PathToRoot(session_.cluster().group(group).queue, &p_path);
  tree.PathToRoot(session_.cluster().group(h).queue, &h_path);
  std::reverse(p_path.begin(), p_path.end());
  std::reverse(h_path.begin(), h_path.end());
  size_t d = 0;
  while (d < p_path.size() && d < h_path.size() && p_path[d] == h_path[d]) ++d;
  if (d == p_path.size() || d == h_path.size()) return false;  // one leaf: jobs by job order
  x->queue = p_path[d];
  y->queue = h_path[d];
  return true;
}

const std::vector<EvictionUnit>& Solver::Candidate(const std::vector<EvictionUnit>& chosen,
                                                   const std::vector<const EvictionUnit*>& fresh) {
  // The scratch's elements keep their pod arrays from one try to the next.
  candidate_.resize(chosen.size() + fresh.size());
  std::copy(chosen.begin(), chosen.end(), candidate_.begin());
  for (size_t k = 0; k < fresh.size(); ++k) candidate_[chosen.size() + k] = *fresh[k];
  return candidate_;
}

bool Solver::FindVictimsForPart(int group, const Unit& unit, int part, DrawSequence* sequence,
                                std::vector<EvictionUnit>* chosen, Attempt* attempt) {
  const Cluster& cluster = session_.cluster();
  CancelPoll& poll = session_.poll();
  SearchCounters& counters = session_.counters();
  const std::function<bool(int)> eligible = [this, group](int g) { return MayEvict(group, g); };
  // Give up at once when no victim set can make the room or lift the quota breach; below, skip
  // the tries either bound rules out (solver_bounds.h).
  RoomBound room(session_, unit, part, *chosen, eligible, &session_.room_scratch(),
                 action_.VictimsInOwnLeaf());
  if (poll.Tick(cluster.num_nodes() + cluster.num_pods())) return false;
  if (!room.AnyVictimSetMayHold()) return false;
  QuotaBound quota(session_, group, unit, part, *chosen);
  if (!quota.AnyVictimSetMayLift(eligible)) return false;
  std::vector<MovesBound> moves = MovesBounds(group, unit, part, *chosen, eligible, room);
  if (poll.cancelled() || !AllMayHold(moves, &MovesBound::AnyVictimSetMayHold)) return false;
  std::vector<OrderedMove> ordered = OrderedMoves(group, unit, part, *chosen, eligible, room);

  const std::vector<int> recorded = FirstPods(*chosen);
  Draws draws(cluster, session_.draw_scratch(), *chosen, action_.max_victim_groups());
  // The victim sets tried after the current draw, each as the draw indices of its drawn units.
  std::vector<const std::vector<int>*> tried;
  const EvictionUnit* drawn = nullptr;
  std::vector<int> nodes;
  DrawBounds bounds{room, moves, ordered, {}, {}};
  for (walked_to_ = 0; sequence->At(walked_to_, &drawn); ++walked_to_) {
    // Cancelled: stop. A unit of R is drawn in its turn, not yielded.
    if (poll.Tick(1 + static_cast<int64_t>(drawn->pods.size()))) return false;
    if (std::binary_search(recorded.begin(), recorded.end(), drawn->pods.front())) continue;
    const EvictionUnit& next = *drawn;
    tried.clear();
    ++counters.victims_drawn;
    if (!draws.Admits(next.group)) return false;  // one victim group too many
    NodesOf(session_.state(), next, &nodes);
    draws.Add(next, nodes);
    if (int64_t* skipped = CountDraw(group, *sequence, next, nodes, &bounds)) {
      *skipped += static_cast<int64_t>(nodes.size());
      continue;
    }
    // try(R plus the drawn units with a pod on n), for each node n of the drawn unit's pods.
    for (int node : nodes) {
      const std::vector<const EvictionUnit*>& fresh = draws.On(node);
      // A try counts its room as it re-places victims (TryRoom); that count, taken whole, is the
      // skip test too (Room < part exactly when MayHold fails). The reference makes every try.
      std::optional<TryRoom> try_room;
      if (room.TracksTries() && !session_.reference_search()) {
        try_room = TryRoom{&room, room.RoomOrBelow(node, draws.IndicesOn(node), fresh)};
      }
      if (try_room ? try_room->room < part : !room.MayHold(node, draws.IndicesOn(node), fresh)) {
        ++counters.tries_skipped_count;
        continue;
      }
      // The quota bound keeps each node's rows (MayLiftOn); the reference search sums them
      // afresh for every try, so the differential test compares the two.
      if (session_.reference_search()
              ? !quota.MayLift(fresh) || !quota.LiftedBy(Candidate(*chosen, fresh))
              : !quota.MayLiftOn(node, fresh)) {
        ++counters.tries_skipped_quota;
        continue;
      }
      if (int64_t* skipped = TryRuledOut(moves, ordered, node, draws.IndicesOn(node), fresh)) {
        ++*skipped;
        continue;
      }
      if (RepeatsATry(draws.IndicesOn(node), &tried)) {
        ++counters.tries_skipped_repeat;
        continue;
      }
      const std::vector<EvictionUnit>& candidate = Candidate(*chosen, fresh);
      const bool fits = Try(group, unit, part, candidate, false, attempt, nullptr,
                            try_room ? &*try_room : nullptr);
      if (poll.cancelled()) return false;
      if (fits) {
        *chosen = candidate;
        return true;
      }
    }
  }
  return false;
}

Solver::Outcome Solver::Solve(int group, const Unit& unit, std::vector<int>* victims_out) {
  std::vector<EvictionUnit> chosen;  // R
  const Outcome outcome = Search(group, unit, &chosen);
  if (outcome != Outcome::kPlaced) return outcome;
  Attempt attempt;
  if (!Try(group, unit, static_cast<int>(unit.pods.size()), chosen, true, &attempt)) {
    return Outcome::kFailed;
  }
  RecordEvictions(group, attempt, victims_out);
  return Outcome::kPlaced;
}

void Solver::StartVerdicts() {
  Session::VerdictScratch& verdicts = session_.verdict_scratch();
  const size_t groups = static_cast<size_t>(session_.cluster().num_groups());
  if (verdicts.stamp.size() != groups) {
    verdicts.stamp.assign(groups, 0);
    verdicts.protects.assign(groups, 0);
  }
  ++verdicts.epoch;
}

// Whether min-runtime protects `victim`: 0 until asked in the current search, then 1 (no) or
// 2 (yes).
bool Solver::Protects(int preemptor, int victim) const {
  // The reference search asks every time, so the differential test compares the kept verdicts
  // with fresh ones.
  if (session_.reference_search()) return action_.IsProtected(preemptor, victim);
  Session::VerdictScratch& verdicts = session_.verdict_scratch();
  if (verdicts.stamp[victim] != verdicts.epoch) {
    verdicts.stamp[victim] = verdicts.epoch;
    verdicts.protects[victim] = action_.IsProtected(preemptor, victim) ? 2 : 1;
  }
  return verdicts.protects[victim] == 2;
}

const Solver::Record::Part* Solver::RecordedPart(int group, int part,
                                                 const std::vector<EvictionUnit>& chosen,
                                                 size_t* cursor) {
  // The recorded parts come in part order, as this search's do.
  const std::vector<Record::Part>& parts = replay_->parts;
  while (*cursor < parts.size() && parts[*cursor].part < part) ++*cursor;
  if (*cursor == parts.size()) return nullptr;
  const Record::Part& recorded = parts[*cursor];
  if (recorded.part != part || !SameUnits(recorded.before, chosen)) return nullptr;
  for (const EvictionUnit& victim : chosen) {
    if (replay_->action->IsProtected(group, victim.group)) return nullptr;
  }
  return &recorded;
}

bool Solver::ReplayedFailure(int group, size_t index, DrawSequence& sequence) {
  if (replay_part_ == nullptr || index >= replay_part_->failed_below) return false;
  return AgreesUpTo(group, index, sequence);
}

bool Solver::AgreesUpTo(int group, size_t index, DrawSequence& sequence) {
  // UnprotectedUpTo draws the sequence up to `index` first, so `agreed` has seen it.
  return UnprotectedUpTo(group, index + 1, sequence) && index < sequence.agreed();
}

bool Solver::UnprotectedUpTo(int group, size_t count, DrawSequence& sequence) {
  // Each unit is drawn and asked once per search. Cancelled: false, and the caller's walk stops
  // at its own poll.
  const EvictionUnit* unit = nullptr;
  CancelPoll& poll = session_.poll();
  while (!protected_seen_ && unprotected_ < count && sequence.At(unprotected_, &unit)) {
    if (poll.Tick(1 + static_cast<int64_t>(unit->pods.size()))) return false;
    if (replay_->action->IsProtected(group, unit->group)) {
      protected_seen_ = true;
    } else {
      ++unprotected_;
    }
  }
  return count <= unprotected_;
}

Solver::Outcome Solver::Search(int group, const Unit& unit, std::vector<EvictionUnit>* chosen_out) {
  StartVerdicts();
  RecordStartAllocations();
  // Cancelled (here or in a try): every statement is closed, the state is as it was; the caller
  // sees kFailed and, checking the poll, records nothing.
  CancelPoll& poll = session_.poll();
  if (poll.Tick(session_.cluster().tree().size())) return Outcome::kFailed;

  Attempt attempt;
  const int first_part = FirstPartNeedingVictims(group, unit, &attempt);
  if (poll.cancelled()) return Outcome::kFailed;
  std::vector<EvictionUnit>& chosen = *chosen_out;
  chosen.clear();
  const int size = static_cast<int>(unit.pods.size());
  // One sequence for every part; the reference search (CycleHooks::reference_search) draws a
  // fresh one for each part instead, as §4.8's text reads.
  std::unique_ptr<DrawSequence> sequence;
  const bool reference = session_.reference_search();
  if (record_ != nullptr) *record_ = Record{&action_, 0, {}};
  const Record* replay = reference ? nullptr : replay_;
  size_t cursor = 0;  // in replay's parts
  unprotected_ = 0;
  protected_seen_ = false;
  for (int part = first_part; part <= size; ++part) {
    const bool fits = Try(group, unit, part, chosen, false, &attempt);
    if (poll.cancelled()) return Outcome::kFailed;
    if (fits) continue;
    if (sequence == nullptr || reference) {
      sequence.reset();  // resets the shared order before the next one draws from it
      sequence = std::make_unique<DrawSequence>(
          session_, chain_, action_, shared_order_, group,
          [this, group](int g) { return MayEvict(group, g); },
          replay != nullptr ? replay->drawn : 0);
    }
    // Replaying: a recorded part whose successful try is provably this part's first is taken as
    // it is; otherwise its failed tries are skipped (ReplayedFailure).
    replay_part_ = replay != nullptr ? RecordedPart(group, part, chosen, &cursor) : nullptr;
    if (replay_part_ != nullptr && replay_part_->found &&
        AgreesUpTo(group, replay_part_->failed_below, *sequence)) {
      chosen = replay_part_->after;
      continue;
    }
    const bool keep = record_ != nullptr && !reference;
    std::vector<EvictionUnit> before = keep ? chosen : std::vector<EvictionUnit>{};
    walked_to_ = 0;  // a part given up before its first draw made no try
    const bool found = FindVictimsForPart(group, unit, part, sequence.get(), &chosen, &attempt);
    if (keep && !poll.cancelled()) {
      record_->parts.push_back(Record::Part{part, std::move(before), walked_to_, found,
                                            found ? chosen : std::vector<EvictionUnit>{}});
      record_->drawn = sequence->drawn();
    }
    if (!found) return Outcome::kFailed;
  }
  if (chosen.empty() && !place_without_victims_) return Outcome::kNeedsNoVictims;
  return Outcome::kPlaced;
}

void Solver::RecordEvictions(int group, const Attempt& attempt, std::vector<int>* victims_out) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  touched_.assign(1, group);
  for (const EvictionUnit& victim : attempt.victims) touched_.push_back(victim.group);
  restored_.clear();

  std::vector<EvictionNote>& notes = session_.evictions();
  for (size_t k = 0; k < attempt.victims.size(); ++k) {
    const EvictionUnit& victim = attempt.victims[k];
    bool touched = false;  // some pod of the victim was evicted or moved, not restored
    for (int pod : victim.pods) {
      if (state.pod_state(pod) == PodState::kRunning) {  // restored on its own node
        restored_.push_back(pod);
        continue;
      }
      touched = true;
      if (attempt.moved[k]) {
        notes.push_back(
            EvictionNote{pod, EvictionReason::kConsolidation, group,
                         "moved to make room for " + CappedName(cluster.group_name(group))});
      } else {
        notes.push_back(EvictionNote{pod, attempt.reasons[k], group, attempt.messages[k]});
      }
    }
    if (touched && victims_out != nullptr &&
        std::find(victims_out->begin(), victims_out->end(), victim.group) == victims_out->end()) {
      victims_out->push_back(victim.group);
    }
  }
}

}  // namespace arbiter::kai
