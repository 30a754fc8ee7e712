#include "core/kai/solver_bounds.h"

#include <algorithm>
#include <cmath>

#include "core/kai/gpu_devices.h"

namespace arbiter::kai {

std::vector<double> SumRequests(const Cluster& cluster, const int* pods, int count) {
  std::vector<double> sum;
  SumRequestsInto(cluster, pods, count, &sum);
  return sum;
}

void SumRequestsInto(const Cluster& cluster, const int* pods, int count, std::vector<double>* sum) {
  sum->assign(cluster.num_resources(), 0.0);
  double* out = sum->data();
  for (int i = 0; i < count; ++i) {
    const double* requests = cluster.requests(pods[i]);
    for (int r = 0; r < cluster.num_resources(); ++r) out[r] += requests[r];
  }
}

namespace {

// Adds the room a victim pod frees on its node to `row` (over R_n): its requests, and for a pod
// that shares, its devices' room (§4.13.5). A device drains, and gives the pool one GPU, only
// when every unit on it is evicted: `drawn` counts the units of each device evicted in this count
// so far (the count's victims, each once), and the device's GPU is added when they reach the
// device's used units. The working state must be the one the tries start from.
//
// For a part that shares (`sharing`), the G column counts device room in GPUs (§4.13.5's room):
// the base holds each active device's free share, and a sharing victim frees its units on each
// of its devices, units / M_n. A device all of whose units are evicted then counts
// (free + used) / M_n = 1, the GPU its draining gives the pool, so the drain adds nothing more.
void AddVictimRoom(const WorkingState& state, int pod, bool sharing, DrawnUnits* drawn,
                   double* row) {
  const Cluster& cluster = state.cluster();
  const double* requests = cluster.node_requests(pod);
  for (int k = 0; k < cluster.num_node_resources(); ++k) row[k] += requests[k];
  const ClusterPod& info = cluster.pod(pod);
  if (!info.shares() || cluster.node_gpu() < 0) return;
  const int node = state.pod_node(pod);
  const int64_t units = cluster.DeviceUnits(pod, node);
  const double device_units = static_cast<double>(cluster.node(node).device_units);
  for (int j = 0; j < info.gpu_devices; ++j) {
    if (sharing) {
      // The slack keeps a drained device at 1 or more whatever the rounding.
      row[cluster.node_gpu()] += static_cast<double>(units) / device_units + 1e-9;
      continue;
    }
    const int slot = state.pod_device(pod, j);
    const int64_t used = state.device_used(slot);
    int64_t& evicted = (*drawn)[slot];
    const bool drains = evicted < used && evicted + units >= used;
    evicted += units;
    if (drains || used <= 0) row[cluster.node_gpu()] += 1.0;
  }
}

// Whether group g may be a victim now: preemptible, with RUNNING pods, none bound or moved, and
// accepted by `eligible` (RoomBound's count with every victim).
bool MayBeVictim(const WorkingState& state, int g, const std::function<bool(int group)>& eligible) {
  return state.cluster().group(g).preemptible && state.running(g) > 0 && state.bound(g) == 0 &&
         state.moved(g) == 0 && eligible(g);
}

// Whether two pods that share ask for the same devices and units on every node.
bool SameShare(const ClusterPod& a, const ClusterPod& b) {
  return a.gpu_devices == b.gpu_devices && a.gpu_fraction == b.gpu_fraction &&
         a.gpu_memory == b.gpu_memory;
}

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

RoomBound::RoomBound(Session& session, const Unit& unit, int part,
                     const std::vector<EvictionUnit>& chosen,
                     const std::function<bool(int group)>& eligible, RoomScratch* scratch,
                     bool one_leaf, int extra, const std::vector<char>* only_classes)
    : session_(session), scratch_(*scratch), part_(part + extra) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  Feasibility& feasibility = session_.feasibility();
  const int r_count = cluster.num_resources();
  const int pod = unit.pods[0];
  const double* requests = cluster.requests(pod);
  const int rn_count = cluster.num_node_resources();
  if (session_.unbounded_search() || !Countable(unit, part)) return;
  counted_ = true;
  pod_ = pod;
  off_nodes_ = cluster.pod(pod).requests_off_nodes;
  std::vector<char> feasible_class(feasibility.num_classes(), false);
  for (const auto& c : feasibility.FeasibleClasses(feasibility.pod_signature(pod))) {
    feasible_class[c.node_class] = only_classes == nullptr || (*only_classes)[c.node_class] != 0;
  }
  may_go_.resize(static_cast<size_t>(cluster.num_nodes()));
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    may_go_[n] = !cluster.node(n).node->unschedulable && feasible_class[feasibility.node_class(n)];
  }
  // Free per node once R is evicted: the kept rows of the state (KeptRoom), plus R's pods.
  KeptRoom& kept = session_.kept_room();
  base_free_ = kept.Free(state);
  std::vector<int> chosen_pods;
  std::vector<int> chosen_nodes;
  for (const EvictionUnit& victim : chosen) {
    for (int p : victim.pods) {
      chosen_pods.push_back(p);
      const int node = state.pod_node(p);
      chosen_nodes.push_back(node);
      AddVictimRoom(state, p, sharing_, &base_units_, &base_free_[node * rn_count]);
    }
  }
  const std::vector<int> device_nodes = AddDeviceRoom();
  // The kept counts hold PodsOn over the state's rows on every node; only R's nodes (and a
  // sharing part's device nodes) differ.
  std::vector<double> profile_requests(requests, requests + r_count);
  if (sharing_) profile_requests[cluster.gpu()] = sharing_requests_[cluster.node_gpu()];
  const KeptRoom::Profile profile{feasibility.pod_signature(pod), part_,
                                  std::move(profile_requests),
                                  only_classes != nullptr ? *only_classes : std::vector<char>{}};
  const KeptRoom::Counts& counts = kept.CountsFor(
      state, profile, [this](int node, const double* free) { return PodsOn(node, free); });
  base_count_ = counts.count;
  base_total_ = counts.total;
  chosen_nodes.insert(chosen_nodes.end(), device_nodes.begin(), device_nodes.end());
  std::sort(chosen_nodes.begin(), chosen_nodes.end());
  chosen_nodes.erase(std::unique(chosen_nodes.begin(), chosen_nodes.end()), chosen_nodes.end());
  for (int n : chosen_nodes) {
    const int count = PodsOn(n, &base_free_[n * rn_count]);
    base_total_ += count - base_count_[n];
    base_count_[n] = count;
  }
  CountWithAllVictims(eligible, chosen_pods, one_leaf);
  drawn_slot_.assign(cluster.num_nodes(), -1);
  other_slot_.assign(cluster.num_nodes(), -1);
  single_fresh_.assign(cluster.num_nodes(), 0);
  drawn_units_ = base_units_;
  drawn_count_ = base_count_;
  drawn_total_ = base_total_;
}

bool RoomBound::Countable(const Unit& unit, int part) {
  const Cluster& cluster = session_.cluster();
  const Feasibility& feasibility = session_.feasibility();
  const int r_count = cluster.num_resources();
  const int pod = unit.pods[0];
  const double* requests = cluster.requests(pod);
  // Room is counted over the node resources; a pod that requests another fits nowhere.
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
  // A part that shares counts G in GPUs of room (§4.13.5): the pool's free GPUs plus each active
  // device's free share, and needs at least d times the smallest share of a device the pod takes
  // on any node. The reference formulation counts no bound for it.
  sharing_ = cluster.pod(pod).shares();
  for (int k = 1; k < part; ++k) {
    const ClusterPod& other = cluster.pod(unit.pods[k]);
    if (other.shares() != sharing_ || (sharing_ && !SameShare(other, cluster.pod(pod)))) {
      return false;
    }
  }
  if (!sharing_) return true;
  if (session_.reference_search() || cluster.node_gpu() < 0) return false;
  const double* node_requests = cluster.node_requests(pod);
  sharing_requests_.assign(node_requests, node_requests + cluster.num_node_resources());
  sharing_requests_[cluster.node_gpu()] =
      cluster.pod(pod).gpu_devices * session_.placer().SmallestShare(pod);
  return true;
}

std::vector<int> RoomBound::AddDeviceRoom() {
  // The nodes with devices add their devices' free shares to G, with slack against rounding (a
  // bound may only count too much room). An over-committed node's debts count as 0 (§4.13.6): a
  // device above M_n (ProvableDeviceRoom) and a pool with more devices than GPUs. The pool's
  // debt is lifted from the row, which already holds R's room on top of it: evicting a pod
  // raises the pool and each device term, taken at 0 or more, by at most what AddVictimRoom adds.
  std::vector<int> device_nodes;
  if (!sharing_) return device_nodes;
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const int rn_count = cluster.num_node_resources();
  const int gpu = cluster.node_gpu();
  for (int node : state.device_nodes()) {
    const double debt = std::max(0.0, -state.free(node, gpu));
    base_free_[node * rn_count + gpu] += debt + ProvableDeviceRoom(state, node) + 1e-6;
    device_nodes.push_back(node);
  }
  return device_nodes;
}

// The count is only compared with the part (AnyVictimSetMayHold), and it only grows as victims
// are added: PodsOn never decreases when free room grows, since requests are not negative. So it
// may stop once it reaches the part: the full count would too. Both walks add the same victims
// onto the same base rows, each node's in pod order (pods are numbered through the groups in
// group order), so every row, its count and its devices' evicted units come out the same, and
// when the part is not reached either gives the full count. They differ in what they pass over.
void RoomBound::CountWithAllVictims(const std::function<bool(int group)>& eligible,
                                    const std::vector<int>& chosen_pods, bool one_leaf) {
  with_all_victims_ = base_total_;
  if (with_all_victims_ >= part_) return;
  PrepareScratch();
  for (int p : chosen_pods) scratch_.in_chosen[p] = 1;  // cleared below
  if (one_leaf) {
    CountGroupByGroup(eligible);
  } else {
    CountNodeByNode(eligible);
  }
  for (int p : chosen_pods) scratch_.in_chosen[p] = 0;
}

void RoomBound::CountGroupByGroup(const std::function<bool(int group)>& eligible) {
  // Victims are added group by group, the nodes they touch re-counted after the 1st, 2nd, 4th,
  // ... 64th group and at the end. A touched node's row starts from its base row in the scratch.
  // It passes over the groups that may not be victims without reading their pods.
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const int rn_count = cluster.num_node_resources();
  ++scratch_.current;
  std::vector<int>& dirty_nodes = scratch_.nodes;
  dirty_nodes.clear();
  DrawnUnits all_units = base_units_;
  auto recount = [&]() {
    for (int node : dirty_nodes) {
      const int count = PodsOn(node, &scratch_.free[static_cast<size_t>(node) * rn_count]);
      with_all_victims_ += count - scratch_.count[node];
      scratch_.count[node] = count;
      scratch_.dirty[node] = 0;
    }
    dirty_nodes.clear();
    return with_all_victims_ >= part_;
  };
  int added = 0;  // groups added
  // Every group that may be a victim, in group order (the others add nothing).
  session_.kept_room().WalkVictimCandidates(state, [&](int g) {
    if (!MayBeVictim(state, g, eligible)) return true;
    const ClusterGroup& info = cluster.group(g);
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
      if (state.pod_state(p) != PodState::kRunning || scratch_.in_chosen[p] != 0) continue;
      const int node = state.pod_node(p);
      double* row = &scratch_.free[static_cast<size_t>(node) * rn_count];
      if (scratch_.stamp[node] != scratch_.current) {
        scratch_.stamp[node] = scratch_.current;
        std::copy(&base_free_[node * rn_count], &base_free_[node * rn_count] + rn_count, row);
        scratch_.count[node] = base_count_[node];
      }
      AddVictimRoom(state, p, sharing_, &all_units, row);
      if (scratch_.dirty[node] == 0) {
        scratch_.dirty[node] = 1;
        dirty_nodes.push_back(node);
      }
    }
    ++added;
    return !(added <= 64 && (added & (added - 1)) == 0 && recount());
  });
  recount();
}

void RoomBound::CountNodeByNode(const std::function<bool(int group)>& eligible) {
  // Nodes are visited in index order, each node's victims added to its base row at once, so the
  // count stops at the first nodes that hold the part once emptied. A node where the part may
  // not go counts none whatever is evicted, and is passed over.
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const int rn_count = cluster.num_node_resources();
  const uint64_t stamp = ++scratch_.current;
  // MayBeVictim, asked once per group in this count.
  auto may_be_victim = [&](int g) {
    if (scratch_.group_stamp[g] != stamp) {
      scratch_.group_stamp[g] = stamp;
      scratch_.group_ok[g] = MayBeVictim(state, g, eligible);
    }
    return scratch_.group_ok[g] != 0;
  };
  DrawnUnits all_units = base_units_;
  std::vector<double>& row = scratch_.row;
  row.resize(rn_count);
  session_.kept_room().WalkVictimNodes(
      state, [&](int node, absl::Span<const int> pods, bool* none_running) {
        if (!MayGo(node)) return true;
        bool running = false;
        bool added = false;
        for (int p : pods) {
          if (state.pod_state(p) != PodState::kRunning) continue;
          running = true;
          if (scratch_.in_chosen[p] != 0 || !may_be_victim(cluster.pod(p).group)) continue;
          if (!added) {
            std::copy(&base_free_[node * rn_count], &base_free_[node * rn_count] + rn_count,
                      row.begin());
            added = true;
          }
          AddVictimRoom(state, p, sharing_, &all_units, row.data());
        }
        *none_running = !running;
        if (!added) return true;
        with_all_victims_ += PodsOn(node, row.data()) - base_count_[node];
        return with_all_victims_ < part_;
      });
}

void RoomBound::PrepareScratch() {
  const int nodes = session_.cluster().num_nodes();
  if (scratch_.stamp.size() == static_cast<size_t>(nodes)) return;
  scratch_.stamp.assign(nodes, 0);
  scratch_.free.reset(
      new double[static_cast<size_t>(nodes) * session_.cluster().num_node_resources()]);
  scratch_.count.assign(nodes, 0);
  scratch_.dirty.assign(nodes, 0);
  scratch_.slot.assign(nodes, 0);
  scratch_.in_chosen.assign(session_.cluster().num_pods(), 0);
  scratch_.group_stamp.assign(session_.cluster().num_groups(), 0);
  scratch_.group_ok.assign(session_.cluster().num_groups(), 0);
  scratch_.current = 0;
}

bool RoomBound::MayGo(int node) const { return may_go_[node] != 0; }

int RoomBound::PodsOn(int node, const double* free) const {
  const Cluster& cluster = session_.cluster();
  if (!MayGo(node)) return 0;
  const double* requests = sharing_ ? sharing_requests_.data() : cluster.node_requests(pod_);
  return PodsThatFit(requests, off_nodes_, free, cluster.num_node_resources(), part_);
}

void RoomBound::AddDrawn(const EvictionUnit& victim, const std::vector<int>& nodes) {
  if (!counted_) return;
  drawn_on_one_node_.push_back(nodes.size() == 1 ? 1 : 0);
  // A node where the part's pod may not go counts no pod whatever it frees: its row is not kept.
  const WorkingState& state = session_.state();
  if (nodes.size() == 1) {  // one row for every pod
    if (!MayGo(nodes.front())) return;
    double* row = DrawnRow(nodes.front());
    for (int pod : victim.pods) AddVictimRoom(state, pod, sharing_, &drawn_units_, row);
  } else {
    for (int pod : victim.pods) {
      const int node = state.pod_node(pod);
      if (MayGo(node)) AddVictimRoom(state, pod, sharing_, &drawn_units_, DrawnRow(node));
    }
  }
  for (int node : nodes) {
    if (!MayGo(node)) continue;
    const int count = PodsOn(node, DrawnRow(node));
    drawn_total_ += count - drawn_count_[node];
    drawn_count_[node] = count;
  }
}

double* RoomBound::DrawnRow(int node) {
  const size_t rn_count = static_cast<size_t>(session_.cluster().num_node_resources());
  int& slot = drawn_slot_[node];
  if (slot < 0) {
    slot = static_cast<int>(drawn_rows_.size() / std::max<size_t>(rn_count, 1));
    const double* base = base_free_.data() + static_cast<size_t>(node) * rn_count;
    drawn_rows_.insert(drawn_rows_.end(), base, base + rn_count);
  }
  return drawn_rows_.data() + static_cast<size_t>(slot) * rn_count;
}

bool RoomBound::MayHold(int node, const std::vector<int>& indices,
                        const std::vector<const EvictionUnit*>& fresh) {
  if (!counted_) return true;
  if (base_total_ >= part_) return true;  // the count does not rule it out
  return Total(node, indices, fresh, /*whole=*/false, /*bound_first=*/true) >= part_;
}

int RoomBound::PodsNow(int node) const {
  const WorkingState& state = session_.state();
  const int rn_count = session_.cluster().num_node_resources();
  now_row_.resize(static_cast<size_t>(rn_count));
  for (int k = 0; k < rn_count; ++k) now_row_[k] = state.free(node, k);
  if (sharing_) {
    // The slack, a tenth of the base rows', goes only with an active device: no device is
    // active at the try's start on a node the base rows gave none, and a device opened by a
    // re-placement rolled back is inactive again, so the count moves only with what is kept.
    const int gpu = session_.cluster().node_gpu();
    bool active = false;
    const double devices = ProvableDeviceRoom(state, node, &active);
    now_row_[gpu] = std::max(0.0, now_row_[gpu]);
    if (active) now_row_[gpu] += devices + 1e-7;
  }
  return PodsOn(node, now_row_.data());
}

int RoomBound::Room(int node, const std::vector<int>& indices,
                    const std::vector<const EvictionUnit*>& fresh) {
  return Total(node, indices, fresh, /*whole=*/true, /*bound_first=*/false);
}

int RoomBound::RoomOrBelow(int node, const std::vector<int>& indices,
                           const std::vector<const EvictionUnit*>& fresh) {
  return Total(node, indices, fresh, /*whole=*/true, /*bound_first=*/true);
}

int RoomBound::Total(int node, const std::vector<int>& indices,
                     const std::vector<const EvictionUnit*>& fresh, bool whole, bool bound_first) {
  // On `node` itself, every drawn victim with a pod there is in `fresh`: its room is the base
  // plus everything drawn there, counted by AddDrawn as it keeps that row. (An infeasible node
  // counts 0 pods, in the base too.)
  int total = base_total_ - base_count_[node] + drawn_count_[node];
  // Gains are never negative: once the count reaches the part, the other nodes cannot undo it.
  if (!whole && total >= part_) return total;
  // The other nodes of `fresh` (victims with pods on several nodes) gain only those victims'
  // pods there: each such node's room is the base plus those pods, summed in a row per node (in
  // draw order, then pod order), kept for `node` and extended as its fresh victims grow.
  // Until one of them has a pod on another node, no other node gains: the rows are made then.
  int& slot = other_slot_[node];
  if (slot < 0) {
    int& single = single_fresh_[node];
    while (static_cast<size_t>(single) < fresh.size() && drawn_on_one_node_[indices[single]] != 0) {
      ++single;
    }
    if (static_cast<size_t>(single) == fresh.size()) return total;
    slot = static_cast<int>(other_rows_.size());
    other_rows_.emplace_back();
    other_rows_.back().folded = static_cast<size_t>(single);
    other_rows_.back().units = base_units_;
  }
  OtherRows& rows = other_rows_[slot];
  if (bound_first) {
    // A bound by the drawn rows: every drawn victim is evicted there, n's fresh ones among them,
    // so each other node's count there is at least its count with n's fresh victims (sums of
    // more non-negative terms, in the same order, round no lower). Below the part, so is the
    // count; the rows are folded only when it is not.
    See(node, indices, fresh, &rows);
    int bound = total;
    for (int other : rows.nodes) bound += drawn_count_[other] - base_count_[other];
    if (bound < part_) return bound;
  }
  Fold(node, indices, fresh, &rows);
  return total + rows.gain;
}

void RoomBound::See(int node, const std::vector<int>& indices,
                    const std::vector<const EvictionUnit*>& fresh, OtherRows* rows) {
  const WorkingState& state = session_.state();
  size_t first = rows->seen;
  while (first < fresh.size() && drawn_on_one_node_[indices[first]] != 0) ++first;
  rows->seen = fresh.size();
  if (first == fresh.size()) return;
  PrepareScratch();
  const uint64_t stamp = ++scratch_.current;
  for (int other : rows->nodes) scratch_.stamp[other] = stamp;
  for (size_t i = first; i < fresh.size(); ++i) {
    if (drawn_on_one_node_[indices[i]] != 0) continue;
    for (int p : fresh[i]->pods) {
      const int other = state.pod_node(p);
      // A node where the part's pod may not go gains no pod: it is left out.
      if (other == node || scratch_.stamp[other] == stamp || !MayGo(other)) continue;
      scratch_.stamp[other] = stamp;
      rows->nodes.push_back(other);
    }
  }
}

void RoomBound::Fold(int node, const std::vector<int>& indices,
                     const std::vector<const EvictionUnit*>& fresh, OtherRows* rows) {
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  const int rn_count = cluster.num_node_resources();
  size_t first = rows->folded;
  // A victim with every pod on `node` (the node of its pod there) adds nothing elsewhere.
  while (first < fresh.size() && drawn_on_one_node_[indices[first]] != 0) ++first;
  rows->folded = fresh.size();
  if (first == fresh.size()) return;
  // The row of each other node already kept for `node`, by node, in the scratch.
  PrepareScratch();
  const uint64_t stamp = ++scratch_.current;
  for (int row : rows->rows) {
    scratch_.stamp[row_node_[row]] = stamp;
    scratch_.slot[row_node_[row]] = row;
  }
  std::vector<int>& touched = scratch_.nodes;
  touched.clear();
  for (size_t i = first; i < fresh.size(); ++i) {
    if (drawn_on_one_node_[indices[i]] != 0) continue;
    for (int p : fresh[i]->pods) {
      const int other = state.pod_node(p);
      if (other == node || !MayGo(other)) continue;  // no pod goes there: no row
      if (scratch_.stamp[other] != stamp) {
        scratch_.stamp[other] = stamp;
        scratch_.slot[other] = static_cast<int>(row_node_.size());
        rows->rows.push_back(static_cast<int>(row_node_.size()));
        row_node_.push_back(other);
        row_count_.push_back(base_count_[other]);
        row_free_.insert(row_free_.end(), &base_free_[other * rn_count],
                         &base_free_[other * rn_count] + rn_count);
      }
      const int row = scratch_.slot[other];
      AddVictimRoom(state, p, sharing_, &rows->units,
                    &row_free_[static_cast<size_t>(row) * rn_count]);
      touched.push_back(row);
    }
  }
  for (int row : touched) {  // a row twice: the second count changes nothing
    const int count = PodsOn(row_node_[row], &row_free_[static_cast<size_t>(row) * rn_count]);
    rows->gain += count - row_count_[row];
    row_count_[row] = count;
  }
}

namespace {

// A margin for comparing an amount with a bound: rounding in a try's sums stays far below it.
double Margin(double bound) { return 1e-9 * (1 + std::fabs(bound)); }

// What one rule of §4.3 may say of a queue within its range: certainly good (not over, starved,
// not penalised), certainly bad, or either.
struct Verdict {
  bool good = false;
  bool bad = false;
};

// 0: `y` wins the rule on every state of the ranges; 1: `y` wins it or ties on every state, and
// ties on some (the later rules decide those); -1: `x` may win it.
int Compare(const Verdict& y, const Verdict& x) {
  if (y.good && x.bad) return 0;
  if (y.good || x.bad) return 1;
  return -1;
}

// Rule 1: over means fair share < allocated in every resource.
Verdict NotOver(const QueueAmounts& amounts, const QueueRange& range, int r_count) {
  Verdict verdict{false, true};
  for (int r = 0; r < r_count; ++r) {
    const double fs = amounts.fair_share[r];
    if (range.allocated_high[r] <= fs - Margin(fs)) verdict.good = true;
    if (!(fs + Margin(fs) < range.allocated_low[r])) verdict.bad = false;
  }
  return verdict;
}

// Rule 2: starved means allocated + unit <= deserved in every resource (-1: no bound).
Verdict Starved(const QueueAmounts& amounts, const QueueRange& range, int r_count) {
  Verdict verdict{true, false};
  for (int r = 0; r < r_count; ++r) {
    const double deserved = amounts.deserved[r];
    if (deserved == -1) continue;
    if (!(range.allocated_high[r] + range.unit_high[r] + Margin(deserved) <= deserved)) {
      verdict.good = false;
    }
    if (range.allocated_low[r] + range.unit_low[r] > deserved + Margin(deserved)) {
      verdict.bad = true;
    }
  }
  return verdict;
}

// Rule 4: penalised means allocatableShare == 0 and allocated + unit > 0 in some resource. A
// queue with no such resource is certainly not penalised; one whose low sum there is above the
// margin certainly is.
Verdict NotPenalised(const QueueAmounts& amounts, const QueueRange& range, int r_count) {
  Verdict verdict{true, false};
  for (int r = 0; r < r_count; ++r) {
    if (amounts.allocatable_share[r] != 0) continue;
    verdict.good = false;
    if (range.allocated_low[r] + range.unit_low[r] > Margin(0)) verdict.bad = true;
  }
  return verdict;
}

}  // namespace

bool RanksFirstWithin(const QueueChain& chain, const KaiFairShare& shares, const QueueRange& y,
                      const QueueRange& x) {
  const int r_count = static_cast<int>(y.allocated_low.size());
  const QueueAmounts& ya = shares.queues[y.queue];
  const QueueAmounts& xa = shares.queues[x.queue];
  for (const auto& verdict : {NotOver, Starved}) {
    const int said = Compare(verdict(ya, y, r_count), verdict(xa, x, r_count));
    if (said != 1) return said == 0;
  }
  const int32_t y_priority = shares.tree().queue(y.queue).priority;
  const int32_t x_priority = shares.tree().queue(x.queue).priority;
  if (y_priority != x_priority) return y_priority > x_priority;  // rule 3
  const int penalised = Compare(NotPenalised(ya, y, r_count), NotPenalised(xa, x, r_count));
  if (penalised != 1) return penalised == 0;
  // Rule 5 grows with the allocation and the unit: y's share at its highest against x's at its
  // lowest.
  const double y_share =
      chain.Key(y.queue, y.allocated_high.data(), y.unit_high.data()).share_with_unit;
  const double x_share =
      chain.Key(x.queue, x.allocated_low.data(), x.unit_low.data()).share_with_unit;
  return y_share + Margin(y_share) < x_share - Margin(x_share);
}

QuotaBound::QuotaBound(Session& session, int group, const Unit& unit, int part,
                       const std::vector<EvictionUnit>& chosen)
    : session_(session),
      group_(group),
      requests_(SumRequests(session.cluster(), unit.pods.data(), part)) {
  const QueueTree& tree = session.cluster().tree();
  for (int q = session.cluster().group(group).queue; q >= 0; q = tree.parent(q)) {
    path_.push_back(q);
  }
  if (session.unbounded_search()) return;
  StartRows(&base_rows_, &base_rows_np_);
  for (const EvictionUnit& victim : chosen) TakeOff(victim, &base_rows_, &base_rows_np_);
  breach_ = BreachOn(base_rows_, base_rows_np_);
}

void QuotaBound::StartRows(std::vector<double>* rows, std::vector<double>* rows_np) const {
  const WorkingState& state = session_.state();
  const int r_count = session_.cluster().num_resources();
  rows->resize(path_.size() * r_count);
  rows_np->resize(path_.size() * r_count);
  for (size_t i = 0; i < path_.size(); ++i) {
    std::copy_n(state.allocated(path_[i]), r_count, &(*rows)[i * r_count]);
    std::copy_n(state.allocated_np(path_[i]), r_count, &(*rows_np)[i * r_count]);
  }
}

void QuotaBound::TakeOff(const EvictionUnit& victim, std::vector<double>* rows,
                         std::vector<double>* rows_np) const {
  const Cluster& cluster = session_.cluster();
  const QueueTree& tree = cluster.tree();
  const int r_count = cluster.num_resources();
  // The victim's queues on P's path are the common ancestors: the path from the first one up.
  const ClusterGroup& info = cluster.group(victim.group);
  size_t common = path_.size();
  for (int q = info.queue; q >= 0 && common == path_.size(); q = tree.parent(q)) {
    common = static_cast<size_t>(std::find(path_.begin(), path_.end(), q) - path_.begin());
  }
  for (int pod : victim.pods) {
    const double* requests = cluster.requests(pod);
    for (size_t i = common; i < path_.size(); ++i) {
      for (int r = 0; r < r_count; ++r) {
        if (requests[r] == 0) continue;
        double& slot = (*rows)[i * r_count + r];
        slot = slot + -1.0 * requests[r];
        if (!info.preemptible) {
          double& np = (*rows_np)[i * r_count + r];
          np = np + -1.0 * requests[r];
        }
      }
    }
  }
}

std::optional<QuotaBreach> QuotaBound::BreachOn(const std::vector<double>& rows,
                                                const std::vector<double>& rows_np) const {
  const int r_count = session_.cluster().num_resources();
  const auto row_of = [this, r_count](const std::vector<double>& of, int q) {
    const size_t i = static_cast<size_t>(std::find(path_.begin(), path_.end(), q) - path_.begin());
    return &of[i * r_count];
  };
  return CheckQuotaOn(
      session_.cluster(), session_.shares(), group_, requests_.data(),
      [&](int q) { return row_of(rows, q); }, [&](int q) { return row_of(rows_np, q); });
}

std::optional<QuotaBreach> QuotaBound::BreachAfter(const std::vector<EvictionUnit>& victims) const {
  // Each victim pod leaves every queue above it, one pod at a time in the victims' order: the
  // sums WorkingState::Evict makes on these rows, in its order, without evicting anything.
  StartRows(&rows_, &rows_np_);
  for (const EvictionUnit& victim : victims) TakeOff(victim, &rows_, &rows_np_);
  return BreachOn(rows_, rows_np_);
}

bool QuotaBound::UnderBreach(const EvictionUnit& victim) const {
  const Cluster& cluster = session_.cluster();
  return cluster.tree().InSubtree(cluster.group(victim.group).queue, breach_->queue);
}

bool QuotaBound::MayLiftOn(int node, const std::vector<const EvictionUnit*>& fresh) {
  if (!breach_.has_value()) return true;
  NodeRows& kept = node_rows_[node];
  // MayLift first: the rows are made only once a victim under the breached queue is drawn.
  for (; kept.scanned < fresh.size() && !kept.under; ++kept.scanned) {
    kept.under = UnderBreach(*fresh[kept.scanned]);
  }
  if (!kept.under) return false;
  if (kept.rows.empty()) {
    kept.rows = base_rows_;
    kept.rows_np = base_rows_np_;
  }
  for (; kept.folded < fresh.size(); ++kept.folded) {
    TakeOff(*fresh[kept.folded], &kept.rows, &kept.rows_np);
  }
  return !BreachOn(kept.rows, kept.rows_np).has_value();
}

bool QuotaBound::AnyVictimSetMayLift(const std::function<bool(int group)>& eligible) const {
  if (!breach_.has_value()) return true;
  if (breach_->kind == QuotaBreach::kNonPreemptible) return false;
  const Cluster& cluster = session_.cluster();
  const WorkingState& state = session_.state();
  for (int g = 0; g < cluster.num_groups(); ++g) {
    if (cluster.group(g).preemptible && state.running(g) > 0 &&
        cluster.tree().InSubtree(cluster.group(g).queue, breach_->queue) && eligible(g)) {
      return true;
    }
  }
  return false;
}

bool QuotaBound::MayLift(const std::vector<const EvictionUnit*>& fresh) const {
  if (!breach_.has_value()) return true;
  for (const EvictionUnit* victim : fresh) {
    if (UnderBreach(*victim)) return true;
  }
  return false;
}

bool QuotaBound::LiftedBy(const std::vector<EvictionUnit>& victims) const {
  return !breach_.has_value() || !BreachAfter(victims).has_value();
}

}  // namespace arbiter::kai
