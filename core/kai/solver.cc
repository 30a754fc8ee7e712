#include "core/kai/solver.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <utility>

#include "core/echoed_name.h"
#include "core/kai/placement.h"
#include "core/kai/quota_check.h"

namespace arbiter::kai {
namespace {

std::vector<double> SumRequests(const Cluster& cluster, const int* pods, int count) {
  std::vector<double> sum(cluster.num_resources(), 0.0);
  for (int i = 0; i < count; ++i) {
    const double* requests = cluster.requests(pods[i]);
    for (int r = 0; r < cluster.num_resources(); ++r) sum[r] += requests[r];
  }
  return sum;
}

}  // namespace

Solver::Solver(Session& session, const QueueChain& chain, SolverOptions options)
    : session_(session), chain_(chain), options_(std::move(options)) {}

namespace {

// The best child so far of one queue (or of the top level), children taken in name order.
struct Pick {
  int job = -1;
  int child = -1;
  ChainKey key;
};

}  // namespace

int Solver::BestJob(const std::vector<int>& jobs, const std::vector<int>& groups,
                    const std::vector<std::vector<double>>& requests,
                    const std::vector<std::vector<int>>& paths) {
  // §4.3's top-down pick over the queues on the jobs' paths, evaluated bottom up one depth at a
  // time (the depth is the caller's to choose, so nothing recurses per level). Every child of a
  // queue sits at the same depth and is folded into its parent's pick in name (index) order,
  // as the top-down scan over the children compares them.
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  const WorkingState& state = session_.state();
  size_t depth = 0;
  for (int j : jobs) depth = std::max(depth, paths[j].size());
  auto fold = [&](Pick& pick, int child, int job) {
    const ChainKey key = chain_.Key(child, state.allocated(child), requests[job].data());
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
          const JobKey key = MakeJobKey(cluster, state, groups[level[i].second]);
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
      for (; i < up.size() && up[i][0] == parent; ++i) fold(pick, up[i][1], up[i][2]);
      if (parent < 0) {
        top = pick;
      } else {
        below.emplace_back(parent, pick.job);
      }
    }
  }
  return top.job;
}

std::vector<int> Solver::OrderJobs(const std::vector<int>& groups,
                                   const std::vector<std::vector<double>>& requests) {
  const Cluster& cluster = session_.cluster();
  // Each job's queues from its root down to its leaf.
  std::vector<std::vector<int>> paths(groups.size());
  for (size_t j = 0; j < groups.size(); ++j) {
    cluster.tree().PathToRoot(cluster.group(groups[j]).queue, &paths[j]);
    std::reverse(paths[j].begin(), paths[j].end());
  }
  std::vector<int> remaining(groups.size());
  for (size_t j = 0; j < groups.size(); ++j) remaining[j] = static_cast<int>(j);
  std::vector<int> order;
  while (!remaining.empty()) {
    const int best = BestJob(remaining, groups, requests, paths);
    order.push_back(best);
    remaining.erase(std::find(remaining.begin(), remaining.end(), best));
  }
  return order;
}

bool Solver::Try(int group, const Unit& unit, int part, const std::vector<EvictionUnit>& victims,
                 bool keep, Attempt* attempt, int* placed_out) {
  const Cluster& cluster = session_.cluster();
  WorkingState& state = session_.state();
  Placer& placer = session_.placer();
  CancelPoll& poll = session_.poll();
  int64_t victim_pods = 0;
  for (const EvictionUnit& victim : victims)
    victim_pods += static_cast<int64_t>(victim.pods.size());
  if (poll.Tick(1 + victim_pods)) return false;  // cancelled: before anything changes
  ++session_.counters().tries;
  // Min-runtime protection is judged on the pods RUNNING before the try.
  std::vector<int> protected_groups;
  if (options_.is_protected) {
    for (const EvictionUnit& victim : victims) {
      if (options_.is_protected(victim.group)) protected_groups.push_back(victim.group);
    }
  }
  const WorkingState::Mark mark = state.Checkpoint();
  for (const EvictionUnit& victim : victims) {
    for (int pod : victim.pods) state.Evict(pod);
  }
  // The jobs: P with `part`, then each victim group with its pods of S.
  std::vector<int> groups{group};
  std::vector<std::vector<int>> pods{std::vector<int>(unit.pods.begin(), unit.pods.begin() + part)};
  for (const EvictionUnit& victim : victims) {
    auto it = std::find(groups.begin(), groups.end(), victim.group);
    if (it == groups.end()) {
      groups.push_back(victim.group);
      pods.emplace_back();
      it = groups.end() - 1;
    }
    std::vector<int>& list = pods[it - groups.begin()];
    list.insert(list.end(), victim.pods.begin(), victim.pods.end());
  }
  std::vector<std::vector<double>> requests;
  for (std::vector<int>& list : pods) {
    std::sort(list.begin(), list.end());  // pod order
    requests.push_back(SumRequests(cluster, list.data(), static_cast<int>(list.size())));
  }

  bool ok = true;
  std::vector<int> moved_groups;
  for (int j : OrderJobs(groups, requests)) {
    const int h = groups[j];
    if (h == group) {
      if (CheckQuota(cluster, session_.shares(), state, h, requests[j].data())) {
        ok = false;
        break;
      }
      const int64_t work = PlacementWork(cluster, h);
      for (int pod : pods[j]) {
        if (poll.Tick(work)) {
          ok = false;  // cancelled: the statement is rolled back below
          break;
        }
        const NodeChoice choice = placer.Choose(pod);
        if (choice.node < 0) {
          ok = false;
          break;
        }
        state.Bind(pod, choice.node, /*after_evictions=*/true);
        if (placed_out != nullptr) ++*placed_out;
      }
      if (!ok) break;
      continue;
    }
    if (!options_.replace_victims) continue;
    const WorkingState::Mark inner = state.Checkpoint();
    bool placed = !CheckQuota(cluster, session_.shares(), state, h, requests[j].data());
    const int64_t work = PlacementWork(cluster, h);
    for (size_t k = 0; placed && k < pods[j].size(); ++k) {
      if (poll.Tick(work)) {
        placed = false;
        break;
      }
      const NodeChoice choice = placer.Choose(pods[j][k]);
      if (choice.node < 0) {
        placed = false;
        break;
      }
      // A victim re-placed on its own node is restored there (§4.1), as KAI un-evicts it.
      if (choice.node == state.pod_node(pods[j][k])) {
        state.Restore(pods[j][k]);
      } else {
        state.Relocate(pods[j][k], choice.node);
      }
    }
    if (placed) {
      state.Commit(inner);
      moved_groups.push_back(h);
    } else {
      state.Rollback(inner);
    }
  }
  if (poll.cancelled()) ok = false;
  if (ok) {
    attempt->preemptor = group;
    attempt->unit_requests = unit.requests;
    attempt->victims = victims;
    attempt->moved.assign(victims.size(), false);
    for (size_t k = 0; k < victims.size(); ++k) {
      attempt->moved[k] = std::find(moved_groups.begin(), moved_groups.end(), victims[k].group) !=
                          moved_groups.end();
    }
    attempt->reasons.assign(victims.size(), options_.reason);
    attempt->messages.assign(victims.size(), "");
    for (int g : protected_groups) {
      const bool moved =
          std::find(moved_groups.begin(), moved_groups.end(), g) != moved_groups.end();
      if (!moved && state.active(g) < cluster.group(g).gang) ok = false;
    }
    if (ok && options_.validate) ok = options_.validate(*this, *attempt);
  }
  if (ok && keep) {
    state.Commit(mark);
  } else {
    state.Rollback(mark);
  }
  return ok;
}

namespace {

// How many pods of `node_requests` fit in `free` (both over the rn node resources), capped at
// `cap`; none when the pod requests a resource outside R_n (`off_nodes`), which no node has.
int PodsThatFit(const double* node_requests, bool off_nodes, const double* free, int rn, int cap) {
  if (off_nodes) return 0;
  int count = cap;
  for (int r = 0; r < rn; ++r) {
    if (!(node_requests[r] > 0)) continue;
    if (!(free[r] >= node_requests[r])) return 0;
    const double fit = std::floor(free[r] / node_requests[r]);
    if (fit < count) count = static_cast<int>(fit);
  }
  return count;
}

}  // namespace

int Solver::PartPodsOn(const PartCapacity& capacity, int node, const double* free, int part) {
  const Cluster& cluster = session_.cluster();
  if (cluster.node(node).node->unschedulable ||
      !capacity.feasible_class[session_.feasibility().node_class(node)]) {
    return 0;
  }
  return PodsThatFit(cluster.node_requests(capacity.pod), capacity.off_nodes, free,
                     cluster.num_node_resources(), part);
}

bool Solver::CountPart(const Unit& unit, int part, const std::vector<EvictionUnit>& chosen,
                       const std::function<bool(int)>& eligible, PartCapacity* capacity) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  Feasibility& feasibility = session_.feasibility();
  const int r_count = cluster.num_resources();
  const int pod = unit.pods[0];
  const double* requests = cluster.requests(pod);
  // Room is counted over the node resources; a pod that requests another fits nowhere.
  const int rn_count = cluster.num_node_resources();
  for (int k = 1; k < part; ++k) {
    const int other = unit.pods[k];
    if (feasibility.pod_signature(other) != feasibility.pod_signature(pod) ||
        !std::equal(requests, requests + r_count, cluster.requests(other))) {
      return false;  // not identical: no count bound
    }
  }
  bool requests_something = false;
  for (int r = 0; r < r_count; ++r) requests_something |= requests[r] > 0;
  if (!requests_something) return false;
  capacity->pod = pod;
  capacity->off_nodes = cluster.pod(pod).requests_off_nodes;
  capacity->feasible_class.assign(feasibility.num_classes(), false);
  for (const auto& c : feasibility.FeasibleClasses(feasibility.pod_signature(pod))) {
    capacity->feasible_class[c.node_class] = true;
  }
  // Free per node once R is evicted, and once every eligible victim is evicted too.
  const int nodes = cluster.num_nodes();
  capacity->base_free.assign(static_cast<size_t>(nodes) * rn_count, 0.0);
  std::vector<double> all_free(static_cast<size_t>(nodes) * rn_count, 0.0);
  for (int n = 0; n < nodes; ++n) {
    for (int k = 0; k < rn_count; ++k) {
      capacity->base_free[n * rn_count + k] = state.free(n, k);
    }
  }
  std::vector<bool> in_chosen(cluster.num_pods(), false);
  for (const EvictionUnit& victim : chosen) {
    for (int p : victim.pods) {
      in_chosen[p] = true;
      const double* victim_requests = cluster.node_requests(p);
      for (int k = 0; k < rn_count; ++k) {
        capacity->base_free[state.pod_node(p) * rn_count + k] += victim_requests[k];
      }
    }
  }
  all_free = capacity->base_free;
  for (int g = 0; g < cluster.num_groups(); ++g) {
    const ClusterGroup& info = cluster.group(g);
    if (!info.preemptible || state.running(g) == 0 || state.bound(g) > 0 || state.moved(g) > 0 ||
        !eligible(g)) {
      continue;
    }
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
      if (state.pod_state(p) != PodState::kRunning || in_chosen[p]) continue;
      const double* victim_requests = cluster.node_requests(p);
      for (int k = 0; k < rn_count; ++k) {
        all_free[state.pod_node(p) * rn_count + k] += victim_requests[k];
      }
    }
  }
  capacity->base_count.assign(nodes, 0);
  capacity->base_total = 0;
  capacity->with_all_victims = 0;
  for (int n = 0; n < nodes; ++n) {
    capacity->base_count[n] = PartPodsOn(*capacity, n, &capacity->base_free[n * rn_count], part);
    capacity->base_total += capacity->base_count[n];
    capacity->with_all_victims += PartPodsOn(*capacity, n, &all_free[n * rn_count], part);
  }
  return true;
}

bool Solver::MayHoldPart(const PartCapacity& capacity, int part, int node,
                         const std::vector<const EvictionUnit*>& fresh,
                         const std::vector<double>& drawn_free) {
  if (capacity.base_total >= part) return true;  // the count does not rule it out
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const int rn_count = cluster.num_node_resources();
  // On `node` itself, every drawn victim with a pod there is in `fresh`: its room is the base
  // plus everything drawn there, kept up to date by the caller. (An infeasible node counts 0
  // pods, in the base too.)
  int total = capacity.base_total - capacity.base_count[node] +
              PartPodsOn(capacity, node, &drawn_free[node * rn_count], part);
  // Gains are never negative: once the count reaches the part, the other nodes cannot undo it.
  if (total >= part) return true;
  // The other nodes of `fresh` (victims with pods on several nodes) gain only those victims'
  // pods there: each such node's room is the base plus those pods, summed in a scratch row per
  // node (in draw order, then pod order).
  const int nodes = cluster.num_nodes();
  if (other_stamp_.size() != static_cast<size_t>(nodes)) {
    other_stamp_.assign(nodes, 0);
    other_free_.reset(new double[static_cast<size_t>(nodes) * rn_count]);
    stamp_ = 0;
  }
  ++stamp_;
  std::vector<int>& others = others_;
  others.clear();
  for (const EvictionUnit* victim : fresh) {
    for (int p : victim->pods) {
      const int other = state.pod_node(p);
      if (other == node) continue;
      double* row = &other_free_[static_cast<size_t>(other) * rn_count];
      if (other_stamp_[other] != stamp_) {
        other_stamp_[other] = stamp_;
        others.push_back(other);
        std::copy(&capacity.base_free[other * rn_count],
                  &capacity.base_free[other * rn_count] + rn_count, row);
      }
      const double* victim_requests = cluster.node_requests(p);
      for (int k = 0; k < rn_count; ++k) row[k] += victim_requests[k];
    }
  }
  for (int other : others) {
    total +=
        PartPodsOn(capacity, other, &other_free_[static_cast<size_t>(other) * rn_count], part) -
        capacity.base_count[other];
  }
  return total >= part;
}

bool Solver::Under(int leaf, int queue) const {
  return session_.cluster().tree().InSubtree(leaf, queue);
}

std::optional<QuotaBreach> Solver::QuotaAfter(int group, const Unit& unit, int part,
                                              const std::vector<EvictionUnit>& victims) {
  const Cluster& cluster = session_.cluster();
  WorkingState& state = session_.state();
  const WorkingState::Mark mark = state.Checkpoint();
  for (const EvictionUnit& victim : victims) {
    for (int p : victim.pods) state.Evict(p);
  }
  const std::vector<double> requests = SumRequests(cluster, unit.pods.data(), part);
  std::optional<QuotaBreach> breach =
      CheckQuota(cluster, session_.shares(), state, group, requests.data());
  state.Rollback(mark);
  return breach;
}

Solver::Outcome Solver::Solve(int group, const Unit& unit, std::vector<int>* victims_out) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const int queues = cluster.tree().size();
  const int r_count = cluster.num_resources();
  start_allocated_.resize(static_cast<size_t>(queues) * r_count);
  start_allocated_np_.resize(static_cast<size_t>(queues) * r_count);
  for (int q = 0; q < queues; ++q) {
    std::copy(state.allocated(q), state.allocated(q) + r_count, &start_allocated_[q * r_count]);
    std::copy(state.allocated_np(q), state.allocated_np(q) + r_count,
              &start_allocated_np_[q * r_count]);
  }
  auto eligible = [this, group](int g) { return g != group && options_.eligible(g); };
  // Cancelled (here or in a try): every statement is closed, the state is as it was; the caller
  // sees kFailed and, checking the poll, records nothing.
  CancelPoll& poll = session_.poll();
  if (poll.Tick(queues)) return Outcome::kFailed;

  std::vector<EvictionUnit> chosen;  // R
  Attempt attempt;
  const int size = static_cast<int>(unit.pods.size());
  // The parts that fit with no victim at all are skipped: the loop below would try each of them
  // with R empty and go on, which costs O(|U|²) placements for a gang that (nearly) fits as it
  // is. With no victim, try(part) evicts nothing and P is the only job: P's §4.4 check passes
  // for a part whenever it passes for a longer one (requests are not negative), the part's pods
  // are placed one by one exactly as the first pods of the longer part, and the validator judges
  // victims (with none, every part gets the same verdict). So if the first k pods place and
  // try(k) passes, every try(i) with i <= k passes too.
  int first_part = 1;
  {
    int placed = 0;
    const bool whole = Try(group, unit, size, chosen, false, &attempt, &placed);
    if (poll.cancelled()) return Outcome::kFailed;
    if (whole) {
      first_part = size + 1;
    } else if (placed > 1 && placed < size) {
      const bool prefix = Try(group, unit, placed, chosen, false, &attempt);
      if (poll.cancelled()) return Outcome::kFailed;
      if (prefix) first_part = placed + 1;
    }
  }
  for (int part = first_part; part <= size; ++part) {
    const bool fits = Try(group, unit, part, chosen, false, &attempt);
    if (poll.cancelled()) return Outcome::kFailed;
    if (fits) continue;
    // §4.8 allows skipping a try that provably cannot place the part. For a part of identical
    // pods, k pods fit only if the nodes can hold k of them counted node by node (an upper bound,
    // since re-placed victims only take room): give up at once if evicting every eligible victim
    // could not make that room, and skip tries whose freed nodes cannot make up the shortfall.
    PartCapacity capacity;
    const bool counted = CountPart(unit, part, chosen, eligible, &capacity);
    if (poll.Tick(cluster.num_nodes() + cluster.num_pods())) return Outcome::kFailed;
    if (counted && capacity.with_all_victims < part) return Outcome::kFailed;
    // The same for §4.4: evictions lower a queue's allocation only inside its subtree, and never
    // its non-preemptible allocation. While P's part breaches a limit once R is evicted, only a
    // set with a victim under the breached queue can lift it.
    const std::optional<QuotaBreach> breach = QuotaAfter(group, unit, part, chosen);
    if (breach.has_value()) {
      if (breach->kind == QuotaBreach::kNonPreemptible) return Outcome::kFailed;
      bool any = false;
      for (int g = 0; g < cluster.num_groups() && !any; ++g) {
        any = cluster.group(g).preemptible && state.running(g) > 0 &&
              Under(cluster.group(g).queue, breach->queue) && eligible(g);
      }
      if (!any) return Outcome::kFailed;
    }
    std::unique_ptr<VictimOrder> own;
    VictimOrder* order = options_.shared_order;
    if (order == nullptr) {
      own = std::make_unique<VictimOrder>(session_, chain_, eligible, chosen);
      order = own.get();
      ++session_.counters().victim_orders;
      if (poll.Tick(cluster.num_groups() + cluster.tree().size())) return Outcome::kFailed;
    }
    struct ResetOnExit {
      VictimOrder* order;
      bool shared;
      ~ResetOnExit() {
        if (shared) order->Reset();
      }
    } reset{order, own == nullptr};
    if (own == nullptr) {
      // The shared order becomes this preemptor's fresh order: P itself out, its own filter
      // applied, R counted as drawn.
      order->ExcludeGroup(group);
      if (options_.prepare_shared_order) options_.prepare_shared_order(*order);
      if (!chosen.empty()) order->MarkDrawn(chosen);
    }
    std::vector<EvictionUnit> drawn;
    // Per node × R: free once R and every drawn victim are evicted (when `counted`).
    std::vector<double> drawn_free;
    // Per node: pods of the part that fit in drawn_free, and their sum over the nodes. Every try
    // evicts R and some of the drawn victims, so the count with all of them drawn bounds every
    // try's count from above (PodsThatFit grows with free room): while the sum is below the
    // part, MayHoldPart fails for every node and is not asked.
    std::vector<int> drawn_count;
    int drawn_total = 0;
    if (counted) {
      drawn_free = capacity.base_free;
      drawn_count = capacity.base_count;
      drawn_total = capacity.base_total;
    }
    std::map<int, std::vector<int>> drawn_on_node;  // node -> indices into drawn, draw order
    std::vector<bool> group_seen(cluster.num_groups(), false);
    int groups_seen = 0;
    for (const EvictionUnit& v : chosen) {
      if (!group_seen[v.group]) {
        group_seen[v.group] = true;
        ++groups_seen;
      }
    }
    bool found = false;
    EvictionUnit next;
    std::vector<int> nodes;
    std::vector<const EvictionUnit*> fresh;
    while (!found && order->Next(&next)) {
      if (poll.Tick(1 + static_cast<int64_t>(next.pods.size()))) return Outcome::kFailed;
      ++session_.counters().victims_drawn;
      if (!group_seen[next.group]) {
        if (options_.max_victim_groups >= 0 && groups_seen >= options_.max_victim_groups) break;
        group_seen[next.group] = true;
        ++groups_seen;
      }
      const int index = static_cast<int>(drawn.size());
      drawn.push_back(next);
      if (counted) {
        const int rn_count = cluster.num_node_resources();
        for (int pod : next.pods) {
          const double* victim_requests = cluster.node_requests(pod);
          double* into = &drawn_free[state.pod_node(pod) * rn_count];
          for (int k = 0; k < rn_count; ++k) into[k] += victim_requests[k];
        }
      }
      nodes.clear();
      for (int pod : next.pods) nodes.push_back(state.pod_node(pod));
      std::sort(nodes.begin(), nodes.end());
      nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
      for (int node : nodes) drawn_on_node[node].push_back(index);
      if (counted) {
        const int rn_count = cluster.num_node_resources();
        for (int node : nodes) {
          const int count = PartPodsOn(capacity, node, &drawn_free[node * rn_count], part);
          drawn_total += count - drawn_count[node];
          drawn_count[node] = count;
        }
      }
      for (int node : nodes) {
        if (counted && drawn_total < part) {
          ++session_.counters().tries_skipped_count;
          continue;
        }
        fresh.clear();
        for (int k : drawn_on_node[node]) fresh.push_back(&drawn[k]);
        if (counted && !MayHoldPart(capacity, part, node, fresh, drawn_free)) {
          ++session_.counters().tries_skipped_count;
          continue;
        }
        if (breach.has_value()) {
          // Cheap first: without a victim under the breached queue the breach cannot move.
          bool lifts = false;
          for (const EvictionUnit* v : fresh) {
            lifts = lifts || Under(cluster.group(v->group).queue, breach->queue);
          }
          if (!lifts) {
            ++session_.counters().tries_skipped_quota;
            continue;
          }
        }
        std::vector<EvictionUnit> candidate = chosen;
        for (const EvictionUnit* v : fresh) candidate.push_back(*v);
        // P's §4.4 check in the try sees the allocations once the candidates are evicted, plus
        // whatever victims re-placed before P add back: a breach with every candidate evicted
        // stays a breach, so the try cannot place the part.
        if (breach.has_value() && QuotaAfter(group, unit, part, candidate).has_value()) {
          ++session_.counters().tries_skipped_quota;
          continue;
        }
        const bool fits_with_candidate = Try(group, unit, part, candidate, false, &attempt);
        if (poll.cancelled()) return Outcome::kFailed;
        if (fits_with_candidate) {
          chosen = std::move(candidate);
          found = true;
          break;
        }
      }
    }
    if (!found) return Outcome::kFailed;
  }
  if (chosen.empty() && !options_.place_without_victims) return Outcome::kNeedsNoVictims;
  if (!Try(group, unit, size, chosen, true, &attempt)) return Outcome::kFailed;
  touched_.assign(1, group);
  for (const EvictionUnit& victim : attempt.victims) touched_.push_back(victim.group);

  std::vector<EvictionNote>& notes = session_.evictions();
  for (size_t k = 0; k < attempt.victims.size(); ++k) {
    const EvictionUnit& victim = attempt.victims[k];
    bool touched = false;  // some pod of the victim was evicted or moved, not restored
    for (int pod : victim.pods) {
      if (state.pod_state(pod) == PodState::kRunning) continue;  // restored on its own node
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
  return Outcome::kPlaced;
}

}  // namespace arbiter::kai
