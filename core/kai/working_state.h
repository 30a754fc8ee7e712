// The mutable state of one KAI cycle (SEMANTICS.md §4.1), with statements: a checkpoint, any
// number of binds, evictions and moves, then either a rollback that restores every value exactly
// (bit for bit, from a journal of old values) or a commit.
//
// Per node, over the node resources R_n (core/kai/cluster.h): `used` (RUNNING pods, pods bound
// now, and the part of a pipelined claim that had to come from idle), the requests of the pods
// that are releasing (RELEASING and evicted now), and the part of those that pipelined bindings
// have claimed. idle = allocatable - used - releasing pods; releasing() = releasing pods -
// claimed, the releasing capacity still unclaimed. A pod bound now is added to used; a pod bound
// with after_evictions (or moved) claims unclaimed releasing capacity first and only the
// shortfall from idle, whether or not it would fit now (§4.1: KAI's pipelining subtracts from
// releasing), so that two pods never claim the same releasing amount and idle + releasing() is
// always what the node will have free once its releasing pods are gone.
// Per queue: allocated and allocated_np over the subtree (§0.7), following the decisions.
// Per pod group: RUNNING, bound and moved counts, and a cursor over its PENDING pods in pod order.
//
// Not thread-safe. Every mutation is O(R · depth) plus a NodeIndex update, without allocation
// once the journal has grown.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "core/kai/capacity_tree.h"
#include "core/kai/cluster.h"
#include "core/kai/fair_share_rows.h"
#include "core/kai/node_index.h"

namespace arbiter::kai {

enum class PodState : int32_t {
  kPending = 0,    // waits for a node
  kRunning = 1,    // RUNNING in the input and still there
  kReleasing = 2,  // RELEASING in the input
  kBound = 3,      // bound in this response (see after_evictions)
  kEvicted = 4,    // RUNNING in the input, evicted in this response
  kMoved = 5,      // RUNNING in the input, evicted and re-placed in this response
};

// A device choice of §4.13.3 (C, in its order): a device slot to join, or kNewDevice to open.
inline constexpr int32_t kNewDevice = -1;
struct DeviceChoice {
  std::vector<int32_t> devices;
  bool now = false;
};

class WorkingState {
 public:
  // The state at the start of the cycle: nodes from the pods' phases, queues from `shares`
  // (allocated, allocated_np). Calls index->Update for every node when `index` is not null.
  // Everything must outlive this.
  WorkingState(const Cluster& cluster, const KaiFairShare& shares, NodeIndex* index);

  const Cluster& cluster() const { return cluster_; }
  int num_resources() const { return r_; }

  // ---- Nodes (k: a position in R_n; every resource outside R_n is 0 on every node) ----
  double idle(int node, int k) const {
    return cluster_.allocatable(node)[k] - used_[At(node, k)] - releasing_[At(node, k)];
  }
  // Releasing capacity not yet claimed by a pipelined binding.
  double releasing(int node, int k) const {
    return releasing_[At(node, k)] - claimed_[At(node, k)];
  }
  // idle + releasing: what the node has once its releasing pods are gone.
  double free(int node, int k) const { return idle(node, k) + releasing(node, k); }
  // req_k <= idle_k for every k with req_k > 0; `node_requests` over R_n.
  bool FitsNow(int node, const double* node_requests) const {
    for (int k = 0; k < rn_; ++k) {
      if (node_requests[k] > 0 && !(node_requests[k] <= idle(node, k))) return false;
    }
    return true;
  }
  // req_k <= idle_k + releasing_k for every k with req_k > 0; `node_requests` over R_n.
  bool FitsPipelined(int node, const double* node_requests) const {
    for (int k = 0; k < rn_; ++k) {
      if (node_requests[k] > 0 && !(node_requests[k] <= free(node, k))) return false;
    }
    return true;
  }

  // ---- Queues (subtree amounts) ----
  const double* allocated(int queue) const { return &allocated_[queue * r_]; }
  const double* allocated_np(int queue) const { return &allocated_np_[queue * r_]; }

  // ---- Pods ----
  PodState pod_state(int pod) const { return static_cast<PodState>(pod_state_[pod]); }
  // The node a pod holds or will hold: its input node, or the node it was bound or moved to.
  int pod_node(int pod) const { return pod_node_[pod]; }
  bool after_evictions(int pod) const { return after_evictions_[pod] != 0; }

  // ---- Pod groups ----
  int running(int group) const { return running_[group]; }
  int bound(int group) const { return bound_[group]; }          // bound now or pipelined
  int bound_now(int group) const { return bound_now_[group]; }  // without after_evictions
  int moved(int group) const { return moved_[group]; }
  int evicted(int group) const { return evicted_[group]; }
  // active(G) of §0.7: RUNNING pods plus pods bound (or moved) in this response.
  int active(int group) const { return running_[group] + bound_[group] + moved_[group]; }
  // The PENDING pods not yet bound, in pod order.
  int pending_left(int group) const { return pending_end_[group] - pending_next_[group]; }
  // The i-th PENDING pod not yet bound (0 = next).
  int pending_pod(int group, int i) const { return pending_pods_[pending_next_[group] + i]; }

  // ---- GPU devices (§4.13.2; state beside the nodes, journaled with them) ----
  // A device is a slot: the input devices are slots [0, cluster().num_input_devices()), numbered
  // as the Cluster numbers them; opened devices take further slots. A slot whose used and
  // releasing units are both 0 does not exist (it may be opened again).
  const std::vector<int>& node_devices(int node) const { return node_devices_[node]; }
  // The nodes that have, or once had, a device slot, in the order of their first: every node
  // outside holds no device (so a pod that shares uses it as a pod asking whole GPUs would).
  const std::vector<int>& device_nodes() const { return device_nodes_; }
  // The most units a pod could join on one active device of `node` once its releasing pods are
  // gone: max over its active devices of M_n - used_k (0 without an active device).
  int64_t device_room(int node) const {
    if (device_room_.empty()) return 0;
    if (room_dirty_[node] != 0) SumUpDeviceRoom(node);
    return device_room_[node];
  }
  // The nodes with device_room > 0, best placement score first: binpack, free GPUs ascending
  // (nodes without allocatable GPUs last); spread, free GPUs over allocatable descending; then
  // by node. Up to date with every change, rollbacks included, whenever it is read outside a
  // freeze (FreezeIndex): the nodes touched since the last read are brought up to date then (a
  // try touches a node many times). Kept only from its first read on (devices placed by BINPACK
  // read the tree alone).
  using NodeOrder = std::set<std::pair<double, int>>;
  const NodeOrder& joinable_nodes() const;
  // The same nodes in a capacity tree (same keys; every node a member, the others out of reach),
  // over R_n plus kJoinableColumns columns: the largest share of one active device a pod could
  // join, idle (idle_k / M_n) and once releasing pods are gone ((M_n - used_k) / M_n), then the
  // same in units where the devices' memory is known (-inf elsewhere), for memory pods. G's
  // column counts the devices a pod could take: the active devices plus the pool's idle G (now)
  // or its whole free GPUs (once releasing pods are gone). Read for BINPACK's device choice.
  static constexpr int kJoinableColumns = 2;
  const CapacityTree& joinable_tree() const {
    if (!joinable_frozen_) ApplyJoinable();
    return joinable_tree_;
  }
  int64_t device_used(int slot) const { return devices_[slot].used; }
  int64_t device_releasing(int slot) const { return devices_[slot].releasing; }
  int64_t device_idle(int slot) const {
    return cluster_.node(devices_[slot].node).device_units - devices_[slot].used -
           devices_[slot].releasing;
  }
  bool device_active(int slot) const { return devices_[slot].used > 0; }
  bool device_draining(int slot) const {
    return devices_[slot].used == 0 && devices_[slot].releasing > 0;
  }
  const std::string& device_key(int slot) const { return devices_[slot].key; }
  // The j-th device of a sharing pod that holds or will hold devices (RUNNING, RELEASING, bound,
  // moved, evicted: its last ones).
  int pod_device(int pod, int j) const { return pod_devices_[pod_device_begin_[pod] + j]; }

  // Work counters of GPU sharing (--timing): device choices weighed (choose(p, n) calls), and
  // devices joined and opened, rolled back or not. Counting never changes a decision.
  struct DeviceCounters {
    int64_t choices = 0;
    int64_t joined = 0;
    int64_t opened = 0;
  };
  DeviceCounters& device_counters() const { return device_counters_; }

  // ---- Mutations (journaled while a statement is open) ----
  // Binds a PENDING pod (the group's next one) to `node`. Without `after_evictions` the pod must
  // fit now and is added to used; with it, the pod claims releasing capacity first (§4.1). A pod
  // that shares takes the devices of `devices` (§4.13.3's commit; required for it, else unused).
  void Bind(int pod, int node, bool after_evictions, const DeviceChoice* devices = nullptr);
  // Turns a binding made now into a pipelined one (the gang rule of §4.5): the pod leaves used
  // and claims releasing capacity first, as KAI re-pipelines an allocated task on its node.
  void MarkPipelined(int pod);
  // Evicts a RUNNING pod: its requests move from used to releasing on its node; its queue and
  // ancestors stop counting it.
  void Evict(int pod);
  // Evicts RUNNING `pods` of one group, in order: the state Evict(pod) for each would leave, with
  // each queue amount journaled once (its sums are made in the same order, pod by pod).
  void EvictPods(int group, const std::vector<int>& pods);
  // Re-places a pod evicted in this response on `node` (pipelined, claiming releasing capacity
  // first): the pod is "moved" (§4.8) and counts for its queue again.
  void Relocate(int pod, int node, const DeviceChoice* devices = nullptr);
  // Undoes the eviction of a pod evicted in this response, for a victim re-placed on its own node
  // (§4.1): it is RUNNING there as before and counts for its queue again. A pipelined claim on
  // the node that its release had made room for takes the shortfall from idle instead.
  void Restore(int pod);

  // ---- The node index, frozen ----
  // Freezes the index (NodeIndex::Freeze): until ThawIndex, a node that changes is only noted,
  // and ThawIndex hands each noted node's amounts to the index once (NodeIndex::Update), instead
  // of at every change: a try changes its nodes many times and rolls them back. The index reads
  // no update while frozen, so what it answers is the same.
  // The joinable entries (joinable_tree, joinable_nodes) freeze too: brought up to date at the
  // freeze, then left as they are until ThawIndex. A node changed since, which the placer's
  // overlay holds stale, may have entries out of date there: the reader weighs it on its own.
  void FreezeIndex();
  void ThawIndex();

  // ---- The state a try starts from ----
  // Changes whenever the state outside the frozen try's statement may have changed: a change
  // outside any statement, and any statement ended, except those inside the frozen try and the
  // try's own rollback (which restores that state exactly). Equal generations: every node not
  // changed since the try's mark is as it was (what a reader remembers of such nodes holds).
  uint64_t base_generation() const { return base_generation_; }

  // ---- Monotonicity ----
  // Changes whenever some node's idle or free amount may have grown (an eviction); binds and
  // moves only shrink them. Facts of the form "this pod fits nowhere in these nodes" learnt while
  // clean() hold until the epoch changes.
  uint64_t capacity_epoch() const { return capacity_epoch_; }
  // True when no open statement has changed a node: the state is one that a rollback can only
  // shrink from, never grow beyond (while the epoch holds).
  bool clean() const { return node_journal_.empty(); }
  // Whether a statement is open.
  bool in_statement() const { return open_statements_ > 0; }

  // ---- Node stamps ----
  // A clock that advances whenever some node's amounts change (a rollback's restore included),
  // and per node the clock of its last change: a reader that copied the amounts of every node at
  // clock c has to read again only the nodes stamped after c (KeptRoom).
  uint64_t node_clock() const { return node_clock_; }
  uint64_t node_stamp(int node) const { return node_stamp_[node]; }

  // ---- Statements ----
  struct Mark {
    size_t doubles = 0;
    size_t ints = 0;
    size_t nodes = 0;
    size_t int64s = 0;
  };
  // Opens a statement. Statements nest; each must end with Rollback or Commit, innermost first.
  Mark Checkpoint();
  // Restores every value changed since `mark`, exactly, and closes the statement.
  void Rollback(const Mark& mark);
  // Keeps the changes since `mark` and closes the statement.
  void Commit(const Mark& mark);
  // The nodes whose amounts changed while a statement is open, in the order of the changes and
  // as often as they changed; a statement opened at `mark` changed those from `mark.nodes` on
  // (a node changed and changed back by an inner statement that rolled back is no longer there).
  const std::vector<int>& node_journal() const { return node_journal_; }
  // Advances whenever a node changes without a journal entry, or journal entries are taken away
  // (a rollback, or the outermost commit): while it stays, the nodes changed since the journal
  // had n entries are exactly its entries from n on.
  uint64_t journal_breaks() const { return journal_breaks_; }

 private:
  // Each journals the old value while a statement is open, then sets the new one.
  void SetDouble(double& slot, double value) {
    if (open_statements_ > 0) double_journal_.emplace_back(&slot, slot);
    slot = value;
  }
  void SetInt(int32_t& slot, int32_t value) {
    if (open_statements_ > 0) int_journal_.emplace_back(&slot, slot);
    slot = value;
  }
  void SetInt64(int64_t& slot, int64_t value) {
    if (open_statements_ > 0) int64_journal_.emplace_back(&slot, slot);
    slot = value;
  }
  void TouchNode(int node);
  // Gives the index `node`'s idle and free amounts (NodeIndex::Update).
  void HandToIndex(int node);
  // Queue amounts of `pod` on `node`: its requests, with a memory pod's G at that node (§4.13.1).
  const double* QueueRequests(int pod, int node);
  // §4.13.2's operations, each with its effect on the node's G pool.
  void LayOutDevices();
  void TakeDevices(int pod, int node, const DeviceChoice& choice, bool pipelined);
  int OpenDevice(int node, int64_t units, bool pipelined);
  void EvictDevices(int pod);
  void RestoreDevices(int pod);
  // The G pool's side of a device changing state: one unit of G moves as a pod's request of 1
  // would on eviction (active -> draining) or restore (draining -> active).
  void PoolEvictOne(int node);
  void PoolRestoreOne(int node);
  // `node`'s devices may have changed: its device_room is summed up again, and its joinable
  // entries brought up to date, when next read.
  void UpdateDeviceSummary(int node);
  // device_room for `node`, from its devices.
  void SumUpDeviceRoom(int node) const;
  // Brings the joinable entries of the nodes touched since the last call up to date: the order
  // and the tree are a function of the nodes' current state, so when they are updated does not
  // change what they hold.
  void ApplyJoinable() const;
  // The joinable entries of `node` from its devices and its pool; a node whose entries already
  // hold those values is left as it is.
  void ApplyJoinableNode(int node) const;
  void AddToQueues(int group, const double* requests, double sign);
  // Evict's change to `pod`'s node, devices and state, without its queues and group counts.
  void EvictFromNode(int pod);
  void OccupyNode(int node, const double* node_requests, bool pipelined);
  size_t At(int node, int k) const {
    return static_cast<size_t>(node) * static_cast<size_t>(rn_) + static_cast<size_t>(k);
  }

  const Cluster& cluster_;
  NodeIndex* index_;
  bool index_frozen_ = false;
  int frozen_depth_ = -1;                // FreezeIndex: the statements open then; -1: not frozen
  bool retouching_ = false;              // Rollback re-touches the nodes it restored
  uint32_t retouch_epoch_ = 0;           // Rollback: a node is re-touched once per rollback
  std::vector<uint32_t> retouch_stamp_;  // per node: the epoch it was last re-touched in
  uint64_t base_generation_ = 0;
  std::vector<char> noted_;           // per node: changed while the index is frozen
  std::vector<int> noted_nodes_;      // those nodes
  int r_;                             // |R|: queue amounts
  int rn_;                            // |R_n|: node amounts
  std::vector<double> used_;          // nodes × R_n
  std::vector<double> releasing_;     // nodes × R_n: requests of releasing pods
  std::vector<double> claimed_;       // nodes × R_n: releasing capacity claimed by pipelined pods
  std::vector<double> allocated_;     // queues × R
  std::vector<double> allocated_np_;  // queues × R
  std::vector<int32_t> pod_state_;
  std::vector<int32_t> pod_node_;
  std::vector<int32_t> after_evictions_;
  std::vector<int32_t> running_;
  std::vector<int32_t> bound_;
  std::vector<int32_t> bound_now_;
  std::vector<int32_t> moved_;
  std::vector<int32_t> evicted_;
  std::vector<int32_t> pending_next_;
  std::vector<int32_t> pending_end_;
  std::vector<int32_t> pending_pods_;

  struct DeviceSlot {
    int64_t used = 0;
    int64_t releasing = 0;
    int node = -1;
    std::string key;  // set when opened; a slot that exists never changes its key
  };
  std::deque<DeviceSlot> devices_;              // a deque: the journal holds pointers into it
  std::vector<std::vector<int>> node_devices_;  // per node: its slots (grows, never shrinks)
  std::vector<int> device_nodes_;
  mutable std::vector<int64_t> device_room_;  // per node, while not room_dirty_
  mutable std::vector<char> room_dirty_;      // per node: changed since device_room_ was summed
  // The joinable entries, a cache of the nodes' device state brought up to date when read.
  mutable std::vector<double> joinable_key_;   // per node: its entries' key, when reachable
  mutable std::vector<char> joinable_in_;      // per node: reachable (in joinable_nodes_ if kept)
  mutable std::vector<double> joinable_rows_;  // nodes × 2(R_n + kJoinableColumns): its tree row
  mutable std::vector<char> joinable_dirty_;   // per node: touched since the last ApplyJoinable
  mutable std::vector<int> joinable_dirty_list_;
  mutable NodeOrder joinable_nodes_;
  mutable bool joinable_order_kept_ = false;  // joinable_nodes_ read once, and kept since
  bool joinable_frozen_ = false;              // FreezeIndex: the entries as at the freeze
  mutable CapacityTree joinable_tree_;
  mutable std::vector<double> tree_row_;   // idle, then free: R_n + kJoinableColumns each
  bool spread_ = false;                    // the index's placement (joinable_nodes' order)
  std::vector<int32_t> pod_device_begin_;  // per pod: its first entry of pod_devices_
  std::vector<int32_t> pod_devices_;
  mutable DeviceCounters device_counters_;
  std::vector<double> queue_scratch_;  // QueueRequests' row
  std::vector<double> gpu_unit_;       // over R_n: 1 of G, 0 elsewhere

  uint64_t capacity_epoch_ = 0;
  uint64_t node_clock_ = 0;
  uint64_t journal_breaks_ = 0;
  std::vector<uint64_t> node_stamp_;  // per node
  // The journal: old values, restored in reverse order on rollback.
  int open_statements_ = 0;
  std::vector<std::pair<double*, double>> double_journal_;
  std::vector<std::pair<int32_t*, int32_t>> int_journal_;
  std::vector<std::pair<int64_t*, int64_t>> int64_journal_;
  std::vector<int> node_journal_;     // nodes whose free capacity changed (for the index)
  std::vector<double> free_scratch_;  // one node's idle, then free amounts, for the index
};

}  // namespace arbiter::kai
