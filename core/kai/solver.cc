#include "core/kai/solver.h"

#include <algorithm>
#include <utility>

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

int Solver::BestJob(int queue, const std::vector<int>& jobs, const std::vector<int>& groups,
                    const std::vector<std::vector<double>>& requests) {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  const WorkingState& state = session_.state();
  if (queue >= 0 && tree.is_leaf(queue)) {
    int best = -1;
    JobKey best_key;
    for (int j : jobs) {
      const JobKey key = MakeJobKey(cluster, state, groups[j]);
      if (best < 0 || key < best_key) {
        best = j;
        best_key = key;
      }
    }
    return best;
  }
  const std::vector<int>& children = queue < 0 ? tree.roots() : tree.children(queue);
  int best = -1;
  int best_child = -1;
  ChainKey best_key;
  std::vector<int> sub;
  for (int child : children) {
    sub.clear();
    for (int j : jobs) {
      if (tree.ChildOnPath(queue, cluster.group(groups[j]).queue) == child) sub.push_back(j);
    }
    if (sub.empty()) continue;
    const int j = BestJob(child, sub, groups, requests);
    const ChainKey key = chain_.Key(child, state.allocated(child), requests[j].data());
    if (best_child < 0 || key < best_key ||
        (key == best_key && chain_.TieBreakBefore(child, best_child))) {
      best = j;
      best_child = child;
      best_key = key;
    }
  }
  return best;
}

std::vector<int> Solver::OrderJobs(const std::vector<int>& groups,
                                   const std::vector<std::vector<double>>& requests) {
  std::vector<int> remaining(groups.size());
  for (size_t j = 0; j < groups.size(); ++j) remaining[j] = static_cast<int>(j);
  std::vector<int> order;
  while (!remaining.empty()) {
    const int best = BestJob(-1, remaining, groups, requests);
    order.push_back(best);
    remaining.erase(std::find(remaining.begin(), remaining.end(), best));
  }
  return order;
}

bool Solver::Try(int group, const Unit& unit, int part, const std::vector<EvictionUnit>& victims,
                 bool keep, Attempt* attempt) {
  const Cluster& cluster = session_.cluster();
  WorkingState& state = session_.state();
  Placer& placer = session_.placer();
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
      for (int pod : pods[j]) {
        const NodeChoice choice = placer.Choose(pod);
        if (choice.node < 0) {
          ok = false;
          break;
        }
        state.Bind(pod, choice.node, choice.fits_now, /*after_evictions=*/true);
      }
      if (!ok) break;
      continue;
    }
    if (!options_.replace_victims) continue;
    const WorkingState::Mark inner = state.Checkpoint();
    bool placed = !CheckQuota(cluster, session_.shares(), state, h, requests[j].data());
    for (size_t k = 0; placed && k < pods[j].size(); ++k) {
      const NodeChoice choice = placer.Choose(pods[j][k]);
      if (choice.node < 0) {
        placed = false;
        break;
      }
      state.Relocate(pods[j][k], choice.node, choice.fits_now);
    }
    if (placed) {
      state.Commit(inner);
      moved_groups.push_back(h);
    } else {
      state.Rollback(inner);
    }
  }
  if (ok) {
    attempt->preemptor = group;
    attempt->unit_requests = unit.requests;
    attempt->victims = victims;
    attempt->moved.assign(victims.size(), false);
    for (size_t k = 0; k < victims.size(); ++k) {
      attempt->moved[k] = std::find(moved_groups.begin(), moved_groups.end(),
                                    victims[k].group) != moved_groups.end();
    }
    attempt->reasons.assign(victims.size(), options_.reason);
    attempt->messages.assign(victims.size(), "");
    for (int g : protected_groups) {
      const bool moved = std::find(moved_groups.begin(), moved_groups.end(), g) != moved_groups.end();
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

  std::vector<EvictionUnit> chosen;  // R
  Attempt attempt;
  const int size = static_cast<int>(unit.pods.size());
  for (int part = 1; part <= size; ++part) {
    if (Try(group, unit, part, chosen, false, &attempt)) continue;
    VictimOrder order(session_, chain_, eligible, chosen);
    std::vector<EvictionUnit> drawn;
    std::vector<int> groups_seen;
    for (const EvictionUnit& v : chosen) {
      if (std::find(groups_seen.begin(), groups_seen.end(), v.group) == groups_seen.end()) {
        groups_seen.push_back(v.group);
      }
    }
    bool found = false;
    EvictionUnit next;
    while (!found && order.Next(&next)) {
      if (std::find(groups_seen.begin(), groups_seen.end(), next.group) == groups_seen.end()) {
        if (options_.max_victim_groups >= 0 &&
            static_cast<int>(groups_seen.size()) >= options_.max_victim_groups) {
          break;
        }
        groups_seen.push_back(next.group);
      }
      drawn.push_back(next);
      std::vector<int> nodes;
      for (int pod : next.pods) nodes.push_back(state.pod_node(pod));
      std::sort(nodes.begin(), nodes.end());
      nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
      for (int node : nodes) {
        std::vector<EvictionUnit> candidate = chosen;
        for (const EvictionUnit& v : drawn) {
          const bool on_node = std::any_of(v.pods.begin(), v.pods.end(), [&](int pod) {
            return state.pod_node(pod) == node;
          });
          if (on_node) candidate.push_back(v);
        }
        if (Try(group, unit, part, candidate, false, &attempt)) {
          chosen = std::move(candidate);
          found = true;
          break;
        }
      }
    }
    if (!found) return Outcome::kFailed;
  }
  // Only listed actions run: a unit that fits without victims is left to ALLOCATE (§4.1).
  if (chosen.empty()) return Outcome::kNeedsNoVictims;
  if (!Try(group, unit, size, chosen, true, &attempt)) return Outcome::kFailed;

  std::vector<EvictionNote>& notes = session_.evictions();
  for (size_t k = 0; k < attempt.victims.size(); ++k) {
    const EvictionUnit& victim = attempt.victims[k];
    for (int pod : victim.pods) {
      if (attempt.moved[k]) {
        notes.push_back(EvictionNote{pod, EvictionReason::kConsolidation, group,
                                     "moved to make room for " + cluster.group_name(group)});
      } else {
        notes.push_back(EvictionNote{pod, attempt.reasons[k], group, attempt.messages[k]});
      }
    }
    if (victims_out != nullptr &&
        std::find(victims_out->begin(), victims_out->end(), victim.group) == victims_out->end()) {
      victims_out->push_back(victim.group);
    }
  }
  return Outcome::kPlaced;
}

}  // namespace arbiter::kai
