// Node choice for one pod (SEMANTICS.md §4.5). Request vectors and resources here are over the
// node resources R_n (core/kai/cluster.h).
//
// Nodes are ordered by descending score, then name: 100 (fits now) + 50 (every PreferNoSchedule
// taint tolerated) + 10 (the pod requests no nvidia.com/gpu and the node has none) + the placement
// score (0-9, on nvidia.com/gpu when the pod requests it, else on cpu). The pod takes the first
// node in that order where it fits now or pipelined. The bands never overlap, so the search runs
// band by band through the NodeIndex sets: the first pass looks for a node that fits now, the
// second (only if the first found none) for one that fits once releasing pods are gone.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "core/cancel_poll.h"
#include "core/kai/cluster.h"
#include "core/kai/feasibility.h"
#include "core/kai/gpu_devices.h"
#include "core/kai/node_index.h"
#include "core/kai/unit.h"
#include "core/kai/working_state.h"

namespace arbiter::kai {

// Binpack's placement score: 0 if allocatable == 0 or max == 0; 9 if max == min; else
// 9 · (1 − (free − min) / (max − min)), min and max of free over the feasible nodes with
// allocatable > 0.
double BinpackScore(double free, double allocatable, double min, double max);
// Spread's placement score: free / allocatable (0 if allocatable == 0).
double SpreadScore(double free, double allocatable);

struct NodeChoice {
  int node = -1;          // -1: the pod fits no feasible node, not even pipelined
  bool fits_now = false;  // false: fits only once releasing pods are gone
  DeviceChoice devices;   // a pod that shares (§4.13.3): the devices it takes on `node`
};

class Placer {
 public:
  // Everything must outlive the Placer; `state` must keep `index` up to date.
  Placer(const Cluster& cluster, Feasibility& feasibility, const NodeIndex& index,
         const WorkingState& state);

  // The node `pod` takes in the current state. O(bands · buckets · log n) plus the nodes skipped
  // because they lack some resource; no allocation after the first pod of each signature. A pod
  // that shares is placed by §4.13.4 (ChooseSharing).
  NodeChoice Choose(int pod);

  const WorkingState& state() const { return state_; }

  // A lower bound on u(p, n) / M_n over every node for a pod that shares (joinable_tree's device
  // column, and the count bound of solver_bounds.h): each node's own share is at least this, as
  // divisions round monotonically.
  double SmallestShare(int pod) const;

  // For a pod that shares (its pending message, §4.13.4): the largest free device share
  // (LargestFreeDeviceShare) over its feasible nodes whose devices could hold it, and the first
  // node in node order with that share; node -1 when there is none. Kept per pod shape (signature
  // and GPU memory) and brought up to date from the nodes changed since it was last asked.
  struct FreeShare {
    int node = -1;
    double share = 0;
  };
  FreeShare LargestFreeShare(int pod);

  // §4.13.3's DP: true for BINPACK (the default), false for SPREAD.
  void SetDeviceBinpack(bool binpack) { device_binpack_ = binpack; }
  // CycleHooks::reference_search: a pod that shares weighs every feasible node on its own
  // (ChooseSharingByScan) instead of searching the trees for the nodes without devices.
  void SetReference(bool reference) { reference_ = reference; }

  // Overlay reading (NodeIndex::Freeze): the index's trees hold the amounts of the state at
  // `base`, the checkpoint of a statement still open, and the nodes the working state changed
  // since are read from the working state instead. Choose then gives the node it gives on an
  // index brought up to date: it searches the trees past the changed nodes and weighs each
  // changed node on its own, with the binpack score's range taken over both. Each call costs
  // O(changed · (R + log changed)) more. nullptr ends it. `base` must outlive the overlay.
  void SetOverlay(const WorkingState::Mark* base);

  // Binpack's score range that Choose(pod) would use now (the smallest and largest key over the
  // pod's band groups' trees, their stale members as they are). For tests; spread: +inf, -inf.
  void ScoreRange(int pod, double* min, double* max);

 private:
  struct BucketRef {
    int node_class;
    NodeIndex::Bucket bucket;
  };
  struct BandGroup {
    int band;  // 50 + 10 bands of §4.5
    std::vector<BucketRef> buckets;
    std::vector<int> zero_buckets;  // the buckets (indices) with nodes in a zero list
  };
  struct Candidate {
    int node = -1;
    double score = 0;
  };
  const std::vector<BandGroup>& Bands(int pod);
  // §4.13.4: the nodes with a joinable device weighed on their own, in placement order until no
  // later one can score more; the others through the trees, as a pod asking d whole GPUs (where
  // the device choice is the same).
  NodeChoice ChooseSharing(int pod);
  // ChooseSharing's search so far: the pod, binpack's score range, the best node and its score.
  struct SharingSearch {
    int pod = -1;
    double min = std::numeric_limits<double>::infinity();
    double max = -std::numeric_limits<double>::infinity();
    NodeChoice best;
    double best_score = 0;
  };
  // Step 1: weighs one node with a joinable device; false when no later node in placement order
  // can score more than the best found, even in the best bands (`top_bands`).
  bool WeighJoinable(SharingSearch& search, int node, double top_bands);
  // The placement score (0-9 band) of `node` for the search's pod.
  double SharingPlacement(const SharingSearch& search, int node) const;
  void SearchJoinable(SharingSearch& search);
  // BINPACK: the tree's nodes in placement order, weighed until no later one can score more
  // (stale nodes passed over).
  void WalkJoinable(SharingSearch& search);
  // Overlay, BINPACK: the best node of the joinable tree for a pod, stale nodes passed over, kept
  // while the try's starting state (WorkingState::base_generation), the score range and the
  // pod's excluded nodes stay the same. Each node that was stale when it was found is weighed on
  // its own at every use; while `best` is not stale, it is the best of the others.
  struct JoinableAnswer {
    bool known = false;
    uint64_t generation = 0;
    double min = 0;
    double max = 0;
    std::vector<int> excluded;
    std::vector<int> unranked;  // the stale nodes when found
    NodeChoice best;
    double score = 0;
  };
  std::vector<JoinableAnswer> joinable_answers_;  // per pod, sized at first use
  // Step 2: the best node for the pod as one asking d whole GPUs, through the trees.
  void SearchWholeGpus(SharingSearch& search, const std::vector<BandGroup>& groups);
  // §4.13.4 as written: every feasible node weighed on its own. O(feasible nodes · devices).
  NodeChoice ChooseSharingByScan(int pod);
  // Per node class, for `pod`'s signature: -1 infeasible, 0 feasible, 1 feasible and preferred.
  const std::vector<int8_t>& ClassVerdicts(int pod);
  // §4.13.4's score of a sharing pod on `node`.
  double SharingScore(int node, bool joinable, bool now, bool preferred, double min,
                      double max) const;
  bool Fits(int node, const double* requests, bool now) const;
  // Overlay: takes in the nodes the working state changed since the last call. A node stays
  // stale for the rest of the overlay even when an inner statement restores it: weighing a node
  // on its own gives what its tree entry would.
  void RefreshStale();
  // Overlay: whether the tree entry of `node` may be out of date.
  bool Stale(int node) const { return overlay_ != nullptr && stale_stamp_[node] == stale_epoch_; }
  // The key `node` has now in the trees of `resource` (the pod's scoring resource).
  double CurrentKey(int node, int resource) const;
  // The band slot of `pod` (its signature, and whether it requests GPUs): Bands' cache key.
  size_t BandsSlot(int pod) const;
  // The smallest and largest keys over the trees of `groups`, the band slot `slot`'s (binpack's
  // score range), with the stale members' keys as they are. O(stale nodes) while the trees stay
  // as they are; O(trees) when a stale node holds an end of the range.
  void KeyRange(size_t slot, const std::vector<BandGroup>& groups, int resource, double* min,
                double* max);
  // The range of the keys of the entries of `slot`'s trees (those of `groups`) whose nodes are
  // not stale, as the trees hold them, widening [min, max]. Kept per slot while the overlay lasts
  // and found again only when a node holding an end has become stale since.
  void CurrentEntriesRange(size_t slot, const std::vector<BandGroup>& groups, double* min,
                           double* max);
  // Overlay: weighs the stale members of the trees of band group `group_index` of band slot
  // `slot` that can take the pod, keeping the better of each and `best` (and the key of the best,
  // for binpack). The best of a set of candidates does not depend on the order they are weighed
  // in (Better is a strict order on (score, node)). The members that can take the pod come from
  // stale_fits_ (ReadStaleFits).
  void WeighStaleOfGroup(size_t slot, int group_index, const double* requests, int resource,
                         bool now, double min, double max, Candidate* best, double* best_key);
  // Overlay: the stale members of one band group that can take one pod shape (its requests, the
  // pass, the scoring resource), each with its key, kept from one choice to the next while the
  // shape and the group stay the same. Whether a node takes a pod, and its key, change only when
  // its amounts do, and every change journals the node: the nodes the journal names since the
  // last reading are weighed again, and the others are not. A roll-back (journal_breaks) or
  // another shape reads every stale member afresh.
  struct StaleFits {
    uint64_t tag = 0;  // the shape and group, hashed: compared before the rest
    bool known = false;
    size_t slot = 0;
    int group = -1;
    bool now = false;
    int resource = -1;
    uint64_t used = 0;                            // stale_fits_clock_ when last read
    uint32_t epoch = 0;                           // stale_epoch_ when read
    uint64_t breaks = 0;                          // WorkingState::journal_breaks() when read
    size_t journal = 0;                           // the node journal's length when read
    std::vector<double> requests;                 // the shape's requests over R_n
    std::vector<std::pair<int, double>> fitting;  // (node, CurrentKey), no node twice
  };
  // The entry of stale_fits_ for the shape and group given, as it was last read (a new entry is
  // not `known`): a shape not kept takes the entry used least recently.
  StaleFits& StaleFitsEntry(size_t slot, int group_index, const double* requests, int resource,
                            bool now);
  // The entry of stale_fits_ for the shape and group given, brought up to date (see StaleFits).
  const StaleFits& ReadStaleFits(size_t slot, int group_index, const double* requests, int resource,
                                 bool now);
  // Whether `node` has an entry in one of the trees of band group `group_index` of `slot`.
  bool InBandGroup(size_t slot, int group_index, int node) const;
  // A choice reads the entries of both passes (now, pipelined) and of each band group it searches.
  static constexpr size_t kStaleFitsKept = 8;
  std::vector<StaleFits> stale_fits_;
  uint64_t stale_fits_clock_ = 0;
  std::vector<uint32_t> seen_;  // per node: seen_mark_ when already read by this reading
  uint32_t seen_mark_ = 0;
  // Overlay: the trees with a stale member, sorted into the band groups of one band slot; kept
  // while the overlay lasts (its trees with a stale member are only ever added to).
  struct StaleTreesByGroup {
    size_t slot = static_cast<size_t>(-1);
    uint32_t epoch = 0;                   // stale_epoch_ when sorted
    size_t sorted = 0;                    // the first `sorted` of stale_trees_ are in `trees`
    std::vector<std::vector<int>> trees;  // per band group
  };
  StaleTreesByGroup stale_by_group_;
  std::vector<std::vector<int>> group_of_tree_;  // per band slot, per tree: its band group or -1
  // one_pod_per_node: the nodes that hold another pod of `pod`'s group in the current state
  // become excluded_ (sorted), and every search skips them.
  void ExcludeGroupNodes(int pod);
  bool Excluded(int node) const;
  // tree.FindFirst, skipping excluded nodes and, with `skip_stale`, stale ones.
  CapacityTree::Found FindAllowed(const CapacityTree& tree, double bound_key, int bound_node,
                                  double max_key, const double* requests, bool now,
                                  bool skip_stale) const;
  // The best member of the trees of `group` that can take the pod (binpack: highest score, the
  // first in key order; spread: highest free share), by the trees' entries, past excluded nodes
  // and, with `skip_stale`, stale ones. Sets `best_key` to its key.
  Candidate SearchTrees(const BandGroup& group, const double* requests, int resource, bool now,
                        double min, double max, bool skip_stale, double* best_key);
  // The best node of band group `group_index` (of Bands(pod)) for `pod` in one pass: the trees'
  // best, the stale nodes weighed on their own, and binpack's nodes without the scoring resource.
  Candidate SearchGroup(int pod, int group_index, const BandGroup& group, const double* requests,
                        int resource, bool now, double min, double max);

  // Overlay: the best members of the trees by their entries (SearchTrees without skipping stale
  // nodes), best first, found as needed up to kRanked and remembered per pod, band group and
  // pass while the trees and binpack's score range stay as they were. The first of them that is
  // not stale is the best of the current entries.
  static constexpr int kRanked = 16;
  struct TreeAnswer {
    uint64_t version = 0;  // NodeIndex::version() when found
    double min = 0;
    double max = 0;
    bool now = false;
    int group = -1;
    int count = 0;           // members ranked so far
    bool exhausted = false;  // no member fits beyond those
    std::array<Candidate, kRanked> ranked;
    std::array<double, kRanked> keys;
  };
  TreeAnswer& RememberedAnswer(int pod, int group_index, bool now, double min, double max);

  // Request vectors known to fit nowhere in one tree (per pass): a pod asking at least as much
  // of every resource cannot fit there either, as long as capacity has not grown since.
  struct Failures {
    uint64_t epoch = 0;
    int count = 0;
    int next = 0;
    std::vector<double> requests;  // kMaxFailures × R
  };
  static constexpr int kMaxFailures = 8;
  bool KnownToFail(int tree, bool now, const double* requests);
  void RecordFailure(int tree, bool now, const double* requests);

  const Cluster& cluster_;
  Feasibility& feasibility_;
  const NodeIndex& index_;
  const WorkingState& state_;
  std::vector<std::vector<BandGroup>> bands_;  // per (signature, requests_gpu)
  std::vector<bool> bands_ready_;
  std::vector<Failures> failures_;  // per tree × {now, pipelined}
  std::vector<int> excluded_;       // nodes the current pod may not take (one_pod_per_node)
  const WorkingState::Mark* overlay_ = nullptr;
  size_t journal_read_ = 0;                       // overlay: node journal entries taken in so far
  size_t journal_start_ = 0;                      // overlay: the journal's length at its mark
  uint64_t breaks_read_ = 0;                      // WorkingState::journal_breaks() when read
  uint32_t stale_epoch_ = 0;                      // a node is stale when its stamp equals this
  std::vector<uint32_t> stale_stamp_;             // per node
  std::vector<std::vector<int>> stale_by_tree_;   // per tree: its stale members
  std::vector<std::vector<TreeAnswer>> answers_;  // per pod: remembered tree answers
  std::vector<int> stale_list_;                   // the stale nodes
  // Per band slot: the range of the keys of its trees' entries, and a member at each end.
  struct KeyRangeOfEntries {
    bool known = false;
    uint64_t version = 0;  // NodeIndex::version() when found
    double min = std::numeric_limits<double>::infinity();
    double max = -std::numeric_limits<double>::infinity();
    int min_node = -1;
    int max_node = -1;
  };
  std::vector<KeyRangeOfEntries> ranges_;
  // Per band slot, in the current overlay: CurrentEntriesRange's range, with a member holding
  // each end, as of the first `listed` stale nodes.
  struct CurrentEntries {
    uint32_t epoch = 0;  // stale_epoch_ when found; another overlay finds it afresh
    size_t listed = 0;
    double min = std::numeric_limits<double>::infinity();
    double max = -std::numeric_limits<double>::infinity();
    int min_node = -1;
    int max_node = -1;
  };
  std::vector<CurrentEntries> current_entries_;
  // Per band slot, in the current overlay: the smallest and largest current keys of the stale
  // members of its trees (a node holding each), as of node clock `clock` with the first `listed`
  // stale nodes weighed.
  struct StaleKeys {
    uint32_t epoch = 0;  // stale_epoch_ when started; another overlay starts afresh
    int resource = -1;
    uint64_t clock = 0;
    size_t listed = 0;
    bool started = false;  // folded at least once in this overlay
    size_t journal = 0;    // the working state's node journal entries when last folded
    uint64_t breaks = 0;   // and its journal_breaks() then
    double min = std::numeric_limits<double>::infinity();
    double max = -std::numeric_limits<double>::infinity();
    int min_node = -1;
    int max_node = -1;
    // Widens [min, max] to hold `key`, node's key, and remembers which node holds each end.
    void Widen(double key, int node) {
      if (min_node < 0 || key < min) {
        min = key;
        min_node = node;
      }
      if (max_node < 0 || key > max) {
        max = key;
        max_node = node;
      }
    }
  };
  std::vector<StaleKeys> stale_keys_;
  // Folds the keys the stale members of the slot's trees have now into [min, max], weighing again
  // only the stale nodes stamped since the slot's last fold (WorkingState::node_stamp): an
  // unchanged node's key is the one already folded. A node holding an end whose key moved inward
  // makes it weigh every stale node again. Same result as weighing every stale node each time.
  void FoldStaleKeys(size_t slot, int resource, double* min, double* max);
  std::vector<int> stale_trees_;  // the trees with a stale member
  bool device_binpack_ = true;
  bool reference_ = false;
  DeviceFit device_fit_;                  // ChooseSharing's scratch
  std::vector<double> virtual_requests_;  // ChooseSharing: the pod as one asking whole GPUs
  std::vector<double> device_request_;    // ChooseSharing: the pod over joinable_tree's columns
  std::vector<std::vector<int8_t>> class_verdicts_;  // per signature
  // LargestFreeShare's answers, by signature and GPU memory, with the node clock they hold at.
  struct KeptFreeShare {
    uint64_t clock = 0;
    FreeShare best;
  };
  std::map<std::pair<int, double>, KeptFreeShare> free_shares_;
  std::vector<int> device_scratch_;  // ChooseDevices' J
};

// Places the unit's pods one at a time, in pod order, each seeing the previous placements: each
// takes the node Choose picks, bound now if it fits now and pipelined otherwise, or pipelined in
// any case when `all_pipelined`. Stops at the first pod that fits nowhere, or when `poll` (may be
// null) reports the call cancelled, and returns the number of pods placed (== unit.pods.size()
// on success); the caller rolls back a partial unit.
int PlaceUnit(Placer& placer, WorkingState& state, const Unit& unit, bool all_pipelined,
              CancelPoll* poll = nullptr);

// The work units (core/cancel_poll.h) of placing one pod of `group`: binding it updates every
// queue from its leaf to the top.
int64_t PlacementWork(const Cluster& cluster, int group);

}  // namespace arbiter::kai
