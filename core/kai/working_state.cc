#include "core/kai/working_state.h"

#include <algorithm>
#include <cassert>

namespace arbiter::kai {

WorkingState::WorkingState(const Cluster& cluster, const KaiFairShare& shares, NodeIndex* index)
    : cluster_(cluster),
      index_(index),
      r_(cluster.num_resources()),
      rn_(cluster.num_node_resources()) {
  const int nodes = cluster.num_nodes();
  const int pods = cluster.num_pods();
  const int groups = cluster.num_groups();
  used_.assign(static_cast<size_t>(nodes) * rn_, 0.0);
  releasing_.assign(static_cast<size_t>(nodes) * rn_, 0.0);
  claimed_.assign(static_cast<size_t>(nodes) * rn_, 0.0);
  free_scratch_.assign(2 * static_cast<size_t>(rn_), 0.0);
  node_stamp_.assign(nodes, 0);
  retouch_stamp_.assign(nodes, 0);
  const int queues = cluster.tree().size();
  allocated_.assign(static_cast<size_t>(queues) * r_, 0.0);
  allocated_np_.assign(static_cast<size_t>(queues) * r_, 0.0);
  for (int q = 0; q < queues; ++q) {
    const QueueAmounts& amounts = shares.queues[q];
    // data() + offset: with no resource the rows are empty, and [] of an empty vector is not
    // defined.
    std::copy(amounts.allocated.begin(), amounts.allocated.end(),
              allocated_.data() + static_cast<size_t>(q) * r_);
    std::copy(amounts.allocated_np.begin(), amounts.allocated_np.end(),
              allocated_np_.data() + static_cast<size_t>(q) * r_);
  }

  pod_state_.assign(pods, 0);
  pod_node_.assign(pods, -1);
  after_evictions_.assign(pods, 0);
  running_.assign(groups, 0);
  bound_.assign(groups, 0);
  bound_now_.assign(groups, 0);
  moved_.assign(groups, 0);
  evicted_.assign(groups, 0);
  pending_next_.assign(groups, 0);
  pending_end_.assign(groups, 0);
  pending_pods_.reserve(pods);
  for (int g = 0; g < groups; ++g) {
    const ClusterGroup& group = cluster.group(g);
    pending_next_[g] = static_cast<int32_t>(pending_pods_.size());
    for (int p = group.first_pod; p < group.first_pod + group.pod_count; ++p) {
      const ClusterPod& pod = cluster.pod(p);
      // A pod on a node requests nothing outside R_n (that is how R_n is chosen).
      const double* requests = cluster.node_requests(p);
      pod_node_[p] = pod.node;
      switch (pod.phase) {
        case PodPhase::kRunning:
          pod_state_[p] = static_cast<int32_t>(PodState::kRunning);
          ++running_[g];
          for (int k = 0; k < rn_; ++k) used_[At(pod.node, k)] += requests[k];
          break;
        case PodPhase::kReleasing:
          pod_state_[p] = static_cast<int32_t>(PodState::kReleasing);
          for (int k = 0; k < rn_; ++k) releasing_[At(pod.node, k)] += requests[k];
          break;
        default:
          pod_state_[p] = static_cast<int32_t>(PodState::kPending);
          pending_pods_.push_back(p);
          break;
      }
    }
    pending_end_[g] = static_cast<int32_t>(pending_pods_.size());
  }
  if (cluster.any_sharing()) LayOutDevices();
  if (index_ != nullptr) {
    for (int n = 0; n < nodes; ++n) TouchNode(n);
  }
}

void WorkingState::TouchNode(int node) {
  node_stamp_[node] = ++node_clock_;
  if (!device_room_.empty()) UpdateDeviceSummary(node);
  // Journaled with or without an index: a rollback re-touches the node, which stamps it again.
  if (open_statements_ > 0) {
    node_journal_.push_back(node);
  } else {
    ++journal_breaks_;
    if (!retouching_) ++base_generation_;
  }
  if (index_ == nullptr) return;
  if (index_frozen_) {
    if (!noted_[node]) {
      noted_[node] = 1;
      noted_nodes_.push_back(node);
    }
    return;
  }
  HandToIndex(node);
}

void WorkingState::HandToIndex(int node) {
  for (int k = 0; k < rn_; ++k) {
    free_scratch_[k] = idle(node, k);
    free_scratch_[rn_ + k] = free(node, k);
  }
  index_->Update(node, free_scratch_.data(), free_scratch_.data() + rn_);
}

void WorkingState::FreezeIndex() {
  frozen_depth_ = open_statements_;
  if (!device_room_.empty()) {
    ApplyJoinable();
    joinable_frozen_ = true;
  }
  if (index_ == nullptr) return;
  index_->Freeze();
  index_frozen_ = true;
  if (noted_.empty()) noted_.assign(cluster_.num_nodes(), 0);
}

void WorkingState::ThawIndex() {
  frozen_depth_ = -1;
  joinable_frozen_ = false;  // the nodes changed since the freeze are brought up to date when read
  if (index_ == nullptr) return;
  index_frozen_ = false;
  index_->Thaw();
  for (int node : noted_nodes_) {
    noted_[node] = 0;
    HandToIndex(node);
  }
  noted_nodes_.clear();
}

void WorkingState::AddToQueues(int group, const double* requests, double sign) {
  const ClusterGroup& info = cluster_.group(group);
  const QueueTree& tree = cluster_.tree();
  for (int q = info.queue; q >= 0; q = tree.parent(q)) {
    for (int r = 0; r < r_; ++r) {
      if (requests[r] == 0) continue;
      double& slot = allocated_[q * r_ + r];
      SetDouble(slot, slot + sign * requests[r]);
      if (!info.preemptible) {
        double& np = allocated_np_[q * r_ + r];
        SetDouble(np, np + sign * requests[r]);
      }
    }
  }
}

void WorkingState::OccupyNode(int node, const double* node_requests, bool pipelined) {
  for (int k = 0; k < rn_; ++k) {
    if (!(node_requests[k] > 0)) continue;
    double& used = used_[At(node, k)];
    if (!pipelined) {
      SetDouble(used, used + node_requests[k]);
      continue;
    }
    double& claimed = claimed_[At(node, k)];
    const double claim = std::min(node_requests[k], std::max(releasing(node, k), 0.0));
    if (claim > 0) SetDouble(claimed, claimed + claim);
    if (node_requests[k] - claim > 0) SetDouble(used, used + (node_requests[k] - claim));
  }
  TouchNode(node);
}

void WorkingState::Bind(int pod, int node, bool after_evictions, const DeviceChoice* devices) {
  const int group = cluster_.pod(pod).group;
  // Units are taken in pod order, so the pod bound is always the group's next PENDING pod.
  assert(pending_left(group) > 0 && pending_pod(group, 0) == pod);
  // Only a pod that fits a node is bound, so it requests nothing outside R_n.
  OccupyNode(node, cluster_.node_requests(pod), after_evictions);
  if (cluster_.pod(pod).shares()) {
    assert(devices != nullptr);
    TakeDevices(pod, node, *devices, after_evictions);
  }
  AddToQueues(group, QueueRequests(pod, node), +1);
  SetInt(pod_state_[pod], static_cast<int32_t>(PodState::kBound));
  SetInt(pod_node_[pod], node);
  SetInt(after_evictions_[pod], after_evictions ? 1 : 0);
  SetInt(bound_[group], bound_[group] + 1);
  if (!after_evictions) SetInt(bound_now_[group], bound_now_[group] + 1);
  SetInt(pending_next_[group], pending_next_[group] + 1);
}

void WorkingState::MarkPipelined(int pod) {
  if (after_evictions_[pod] != 0) return;
  const int group = cluster_.pod(pod).group;
  const int node = pod_node_[pod];
  const double* node_requests = cluster_.node_requests(pod);
  for (int k = 0; k < rn_; ++k) {
    if (!(node_requests[k] > 0)) continue;
    double& used = used_[At(node, k)];
    SetDouble(used, used - node_requests[k]);
  }
  OccupyNode(node, node_requests, /*pipelined=*/true);
  SetInt(after_evictions_[pod], 1);
  SetInt(bound_now_[group], bound_now_[group] - 1);
}

void WorkingState::Evict(int pod) {
  const int group = cluster_.pod(pod).group;
  EvictFromNode(pod);
  AddToQueues(group, cluster_.requests(pod), -1);
  SetInt(running_[group], running_[group] - 1);
  SetInt(evicted_[group], evicted_[group] + 1);
}

void WorkingState::EvictPods(int group, const std::vector<int>& pods) {
  for (int pod : pods) EvictFromNode(pod);
  // Each queue amount takes off the pods' requests one at a time in pod order, as Evict's calls
  // would, and is journaled once.
  const ClusterGroup& info = cluster_.group(group);
  const QueueTree& tree = cluster_.tree();
  for (int q = info.queue; q >= 0; q = tree.parent(q)) {
    for (int r = 0; r < r_; ++r) {
      double& slot = allocated_[q * r_ + r];
      double& np_slot = allocated_np_[q * r_ + r];
      double value = slot;
      double np = np_slot;
      bool changed = false;
      for (int pod : pods) {
        const double request = cluster_.requests(pod)[r];
        if (request == 0) continue;
        changed = true;
        value = value + -1.0 * request;
        np = np + -1.0 * request;
      }
      if (!changed) continue;
      SetDouble(slot, value);
      if (!info.preemptible) SetDouble(np_slot, np);
    }
  }
  const int count = static_cast<int>(pods.size());
  SetInt(running_[group], running_[group] - count);
  SetInt(evicted_[group], evicted_[group] + count);
}

void WorkingState::EvictFromNode(int pod) {
  assert(pod_state(pod) == PodState::kRunning);
  ++capacity_epoch_;
  const int node = pod_node_[pod];
  const double* node_requests = cluster_.node_requests(pod);
  for (int k = 0; k < rn_; ++k) {
    if (node_requests[k] == 0) continue;
    double& used = used_[At(node, k)];
    double& releasing = releasing_[At(node, k)];
    SetDouble(used, used - node_requests[k]);
    SetDouble(releasing, releasing + node_requests[k]);
  }
  TouchNode(node);
  if (cluster_.pod(pod).shares()) EvictDevices(pod);
  SetInt(pod_state_[pod], static_cast<int32_t>(PodState::kEvicted));
}

void WorkingState::Relocate(int pod, int node, const DeviceChoice* devices) {
  assert(pod_state(pod) == PodState::kEvicted);
  const int group = cluster_.pod(pod).group;
  OccupyNode(node, cluster_.node_requests(pod), /*pipelined=*/true);
  if (cluster_.pod(pod).shares()) {
    assert(devices != nullptr);
    TakeDevices(pod, node, *devices, /*pipelined=*/true);
  }
  AddToQueues(group, QueueRequests(pod, node), +1);
  SetInt(pod_state_[pod], static_cast<int32_t>(PodState::kMoved));
  SetInt(pod_node_[pod], node);
  SetInt(after_evictions_[pod], 1);
  SetInt(evicted_[group], evicted_[group] - 1);
  SetInt(moved_[group], moved_[group] + 1);
}

void WorkingState::Restore(int pod) {
  assert(pod_state(pod) == PodState::kEvicted);
  const int group = cluster_.pod(pod).group;
  const int node = pod_node_[pod];
  const double* node_requests = cluster_.node_requests(pod);
  for (int k = 0; k < rn_; ++k) {
    if (node_requests[k] == 0) continue;
    double& used = used_[At(node, k)];
    double& releasing = releasing_[At(node, k)];
    double& claimed = claimed_[At(node, k)];
    const double back = releasing - node_requests[k];
    SetDouble(used, used + node_requests[k]);
    SetDouble(releasing, back);
    // Claims beyond what still releases on the node come from idle.
    const double still = std::max(back, 0.0);
    if (claimed > still) {
      SetDouble(used, used + (claimed - still));
      SetDouble(claimed, still);
    }
  }
  TouchNode(node);
  if (cluster_.pod(pod).shares()) RestoreDevices(pod);
  AddToQueues(group, cluster_.requests(pod), +1);
  SetInt(pod_state_[pod], static_cast<int32_t>(PodState::kRunning));
  SetInt(running_[group], running_[group] + 1);
  SetInt(evicted_[group], evicted_[group] - 1);
}

WorkingState::Mark WorkingState::Checkpoint() {
  ++open_statements_;
  return Mark{double_journal_.size(), int_journal_.size(), node_journal_.size(),
              int64_journal_.size()};
}

void WorkingState::Rollback(const Mark& mark) {
  for (size_t i = double_journal_.size(); i > mark.doubles; --i) {
    *double_journal_[i - 1].first = double_journal_[i - 1].second;
  }
  for (size_t i = int_journal_.size(); i > mark.ints; --i) {
    *int_journal_[i - 1].first = int_journal_[i - 1].second;
  }
  for (size_t i = int64_journal_.size(); i > mark.int64s; --i) {
    *int64_journal_[i - 1].first = int64_journal_[i - 1].second;
  }
  double_journal_.resize(mark.doubles);
  int_journal_.resize(mark.ints);
  int64_journal_.resize(mark.int64s);
  // Re-key the touched nodes from their restored values, without journaling the re-keying.
  ++journal_breaks_;
  // The frozen try's own statement is at depth frozen_depth_ + 1: rolling it back restores the
  // state it started from; an outer one changes that state.
  if (frozen_depth_ < 0 || open_statements_ <= frozen_depth_) ++base_generation_;
  --open_statements_;
  const int saved = open_statements_;
  open_statements_ = 0;
  // A node journaled many times is re-touched once: its amounts are restored by then.
  retouching_ = true;
  if (++retouch_epoch_ == 0) {  // the stamps wrapped: start them again
    std::fill(retouch_stamp_.begin(), retouch_stamp_.end(), 0);
    retouch_epoch_ = 1;
  }
  for (size_t i = mark.nodes; i < node_journal_.size(); ++i) {
    const int node = node_journal_[i];
    if (retouch_stamp_[node] == retouch_epoch_) continue;
    retouch_stamp_[node] = retouch_epoch_;
    TouchNode(node);
  }
  retouching_ = false;
  open_statements_ = saved;
  node_journal_.resize(mark.nodes);
}

void WorkingState::Commit(const Mark& mark) {
  (void)mark;
  // Committing the frozen try's statement, or an outer one, changes the state the next try
  // starts from; a statement inside the try changes only the try.
  if (frozen_depth_ < 0 || open_statements_ <= frozen_depth_ + 1) ++base_generation_;
  --open_statements_;
  if (open_statements_ == 0) {
    ++journal_breaks_;
    double_journal_.clear();
    int_journal_.clear();
    int64_journal_.clear();
    node_journal_.clear();
  }
}

}  // namespace arbiter::kai
