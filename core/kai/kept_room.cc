#include "core/kai/kept_room.h"

namespace arbiter::kai {

const std::vector<double>& KeptRoom::Free(const WorkingState& state) {
  const Cluster& cluster = state.cluster();
  const int nodes = cluster.num_nodes();
  const int rn = cluster.num_node_resources();
  if (free_valid_ && free_clock_ == state.node_clock()) return free_;
  if (!free_valid_) free_.assign(static_cast<size_t>(nodes) * rn, 0.0);
  for (int n = 0; n < nodes; ++n) {
    if (free_valid_ && state.node_stamp(n) <= free_clock_) continue;
    for (int k = 0; k < rn; ++k) free_[static_cast<size_t>(n) * rn + k] = state.free(n, k);
  }
  free_valid_ = true;
  free_clock_ = state.node_clock();
  return free_;
}

const KeptRoom::Counts& KeptRoom::CountsFor(const WorkingState& state, const Profile& profile,
                                            const CountFn& count) {
  const std::vector<double>& free = Free(state);
  const int nodes = state.cluster().num_nodes();
  const int rn = state.cluster().num_node_resources();
  ++asked_;
  Entry* entry = nullptr;
  for (Entry& e : entries_) {
    if (e.profile == profile) entry = &e;
  }
  bool fresh = entry == nullptr;
  if (fresh) {
    if (entries_.size() < kMaxEntries) {
      entries_.emplace_back();
      entry = &entries_.back();
    } else {
      entry = &entries_[0];
      for (Entry& e : entries_) {
        if (e.used < entry->used) entry = &e;
      }
    }
    entry->profile = profile;
    entry->counts.count.assign(nodes, 0);
    entry->counts.total = 0;
  }
  entry->used = asked_;
  if (!fresh && entry->clock == state.node_clock()) return entry->counts;
  Counts& counts = entry->counts;
  for (int n = 0; n < nodes; ++n) {
    if (!fresh && state.node_stamp(n) <= entry->clock) continue;
    const int c = count(n, free.data() + static_cast<size_t>(n) * rn);
    counts.total += c - counts.count[n];
    counts.count[n] = c;
  }
  entry->clock = state.node_clock();
  return counts;
}

void KeptRoom::BuildVictimNodes(const Cluster& cluster) {
  victims_first_.assign(cluster.num_nodes() + 1, 0);
  auto listed = [&](int p) {
    const ClusterPod& pod = cluster.pod(p);
    return pod.phase == PodPhase::kRunning && pod.node >= 0 && cluster.group(pod.group).preemptible;
  };
  for (int p = 0; p < cluster.num_pods(); ++p) {
    if (listed(p)) ++victims_first_[cluster.pod(p).node + 1];
  }
  for (int n = 0; n < cluster.num_nodes(); ++n) victims_first_[n + 1] += victims_first_[n];
  victims_on_.resize(victims_first_.back());
  std::vector<int> next(victims_first_.begin(), victims_first_.end() - 1);
  for (int p = 0; p < cluster.num_pods(); ++p) {
    if (listed(p)) victims_on_[next[cluster.pod(p).node]++] = p;
  }
  node_next_.assign(cluster.num_nodes(), -1);
  node_head_ = -1;
  int last = -1;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    if (victims_first_[n] == victims_first_[n + 1]) continue;
    (last < 0 ? node_head_ : node_next_[last]) = n;
    last = n;
  }
}

void KeptRoom::BuildCandidates(const Cluster& cluster) {
  next_.assign(cluster.num_groups(), -1);
  head_ = -1;
  int last = -1;
  for (int g = 0; g < cluster.num_groups(); ++g) {
    if (!cluster.group(g).preemptible) continue;
    (last < 0 ? head_ : next_[last]) = g;
    last = g;
  }
  candidates_valid_ = true;
}

}  // namespace arbiter::kai
