// The two bounds by which the victim search of §4.8 (solver.h) skips tries that provably cannot
// place a part (SEMANTICS.md §4.8 allows it): a count of the room the nodes could make for the
// part's pods, node by node (RoomBound), and the §4.4 quota breach no victim set outside the
// breached queue can lift (QuotaBound). Neither decides an answer: each only rules out tries
// that would fail. Under CycleHooks::unbounded_search both rule nothing out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/kai/queue_order.h"
#include "core/kai/quota_check.h"
#include "core/kai/session.h"
#include "core/kai/unit.h"
#include "core/kai/victims.h"

namespace arbiter::kai {

// Per device slot, the units of it evicted in one count of the room (solver_bounds.cc).
using DrawnUnits = std::unordered_map<int, int64_t>;

// Σ of the requests (over R) of the `count` pods at `pods`, summed in that order.
std::vector<double> SumRequests(const Cluster& cluster, const int* pods, int count);
// The same sum written into `sum` (resized to R), which keeps its storage.
void SumRequestsInto(const Cluster& cluster, const int* pods, int count, std::vector<double>* sum);

// For a part of identical pods, k pods fit only if the nodes can hold k of them counted node by
// node: an upper bound, since re-placed victims only take room. The bound counts that room once R
// is evicted (the base), once R and every victim drawn so far are evicted, and once every
// eligible victim is evicted. For a part whose pods are not identical, or request nothing, it
// rules nothing out.
class RoomBound {
 public:
  // Counts the room for the first `part` pods of `unit` once `chosen` (R) is evicted, and once
  // every eligible victim (a preemptible group with RUNNING pods, none bound or moved, accepted
  // by `eligible`) is evicted too. `session` and `scratch` outlive the bound.
  // O(nodes · R_n + pods).
  // `one_leaf`: every eligible victim lies in the preemptor's leaf (PREEMPT); it decides only
  // how the count with every victim walks. `extra`: more pods of the same shape's room that every
  // try able to place the part must take as well (Solver::MovesBounds); the bound then counts
  // room for the part and those together, and every comparison below is with that sum.
  // `only_classes` (per node class), when given: only nodes of those classes count.
  RoomBound(Session& session, const Unit& unit, int part, const std::vector<EvictionUnit>& chosen,
            const std::function<bool(int group)>& eligible, RoomScratch* scratch,
            bool one_leaf = false, int extra = 0, const std::vector<char>* only_classes = nullptr);

  // The pods that fit once every eligible victim is evicted too, or any count of at least the
  // pods to hold once that many do; 0 when the part is not counted.
  int WithAllVictims() const { return counted_ ? with_all_victims_ : 0; }
  // The pods that fit once R alone is evicted, each node's count capped at the pods to hold (the
  // base: every other count of the bound is at least this one); 0 when the part is not counted.
  int WithR() const { return counted_ ? base_total_ : 0; }
  // The count DrawnMayHold compares: the pods that fit once R and every drawn victim are evicted,
  // each node's count capped at the pods to hold; 0 when the part is not counted.
  int WithDrawn() const { return counted_ ? drawn_total_ : 0; }
  bool counted() const { return counted_; }

  // False when evicting every eligible victim could not make the room: no try can place the part.
  bool AnyVictimSetMayHold() const { return !counted_ || with_all_victims_ >= part_; }
  // Counts the pods of a drawn `victim` as freed room; `nodes` are the nodes of its pods (sorted,
  // unique). O(|victim| · R_n + |nodes|).
  void AddDrawn(const EvictionUnit& victim, const std::vector<int>& nodes);
  // False when no try among the drawn victims can place the part: every try evicts R and some of
  // the drawn victims, so the count with all of them evicted bounds each try's from above
  // (PodsThatFit grows with free room). O(1).
  bool DrawnMayHold() const { return !counted_ || drawn_total_ >= part_; }
  // False when the part provably cannot fit once R and `fresh` (the drawn victims with a pod on
  // `node`) are evicted: only nodes holding a pod of `fresh` gain room over the base. `indices`:
  // the draw index of each of `fresh` (0 = the first AddDrawn). Within a part, the `fresh` of a
  // node only grows at its end (draw order): the rows of the other nodes are kept per node and
  // extended by the victims added since the last call. O(pods of the new fresh victims on other
  // nodes · R_n).
  bool MayHold(int node, const std::vector<int>& indices,
               const std::vector<const EvictionUnit*>& fresh);

  // Whether the bound counts the room of a try as it goes (Room, PodsNow): a part of identical
  // pods, sharing GPUs or not.
  bool TracksTries() const { return counted_; }
  // Whether the part's pods share GPUs: G counts GPUs of device room (§4.13.5).
  bool sharing() const { return sharing_; }
  // With TracksTries: Σ over nodes of the part's pods that fit, each node's count capped at the
  // part, once R and `fresh` are evicted (arguments as for MayHold): at least the same sum on the
  // state of the try on `node` before anything is re-placed, and below the part exactly when
  // MayHold is false (it is never below the base's count).
  int Room(int node, const std::vector<int>& indices,
           const std::vector<const EvictionUnit*>& fresh);
  // Room when it is at least the part; otherwise some count below the part and at least Room,
  // often found without folding the other nodes' rows (a bound by the drawn rows). For a caller
  // that only compares the count with the part, or uses it only when it is not below.
  int RoomOrBelow(int node, const std::vector<int>& indices,
                  const std::vector<const EvictionUnit*>& fresh);
  // With TracksTries: the part's pods that fit on `node` in the state as it is now, capped at
  // the part (0 where the pod may not go). For a part that shares, G is the pool's free GPUs plus
  // its active devices' free shares, each at 0 or more (ProvableDeviceRoom), with less slack than
  // the base rows take: at most the row Room counts for the node at the try's start, and at least
  // the room the pods could use. O(R_n + the node's devices).
  int PodsNow(int node) const;

 private:
  // Sets with_all_victims_ from the base: the pods that fit once every eligible victim (not in
  // R: `chosen_pods`) is evicted too, or any count of at least the part once it is reached.
  // `one_leaf`: the victims lie in the preemptor's leaf, few among the groups, so the count walks
  // the groups (CountGroupByGroup); otherwise it walks the nodes (CountNodeByNode).
  void CountWithAllVictims(const std::function<bool(int group)>& eligible,
                           const std::vector<int>& chosen_pods, bool one_leaf);
  void CountGroupByGroup(const std::function<bool(int group)>& eligible);
  void CountNodeByNode(const std::function<bool(int group)>& eligible);
  // Whether the first `part` pods of `unit` are identical and request something (a part that
  // shares: the same share of the same devices), so that a count bounds them; sets sharing_.
  bool Countable(const Unit& unit, int part);
  // A part that shares: adds each device node's free device share to its base row's G, and
  // returns those nodes.
  std::vector<int> AddDeviceRoom();
  // Sizes the scratch rows to the cluster's nodes the first time.
  void PrepareScratch();
  // Whether the part's pod may go to `node` (schedulable, selector, taints).
  bool MayGo(int node) const;
  // How many of the part's pods fit in `free` (R_n values) on `node`: 0 where the pod may not go
  // (MayGo), else by PodsThatFit, capped at the part.
  int PodsOn(int node, const double* free) const;
  // `node`'s row of free room once R and every drawn victim are evicted, made on first use.
  double* DrawnRow(int node);

  Session& session_;
  RoomScratch& scratch_;
  int part_;                              // the pods to hold: the part's, plus `extra`
  bool counted_ = false;                  // the part's pods are identical and request something
  bool sharing_ = false;                  // they share GPUs: G counts GPUs of device room
  std::vector<double> sharing_requests_;  // a sharing part's pod over R_n, G its least share
  int pod_ = -1;                          // the part's (identical) pod
  bool off_nodes_ = false;                // it requests a resource outside R_n: fits nowhere
  std::vector<char> may_go_;              // per node: schedulable and of a class the pod fits
  std::vector<double> base_free_;         // nodes × R_n: free once R is evicted
  DrawnUnits base_units_;                 // per device: R's units on it
  std::vector<int> base_count_;           // per node: pods that fit in base_free_
  int base_total_ = 0;
  int with_all_victims_ = 0;  // pods that fit once every eligible victim is evicted, or at least
                              // the part when that many do
  // Free once R and every drawn victim are evicted: the base row, copied into drawn_rows_ at the
  // node's first drawn victim (so a part that draws on few nodes copies few rows).
  std::vector<int> drawn_slot_;  // per node: its row in drawn_rows_ (R_n values), or -1
  std::vector<double> drawn_rows_;
  DrawnUnits drawn_units_;        // per device: the units of R and the drawn victims on it
  std::vector<int> drawn_count_;  // per node: pods that fit in its drawn row
  int drawn_total_ = 0;
  std::vector<char> drawn_on_one_node_;  // per draw index: all of its pods are on one node

  // MayHold's rows for one node n: each other node's base row plus the pods there of n's fresh
  // victims folded so far, and Σ over those nodes of (pods that fit in the row - base count).
  struct OtherRows {
    size_t folded = 0;  // the first `folded` of n's fresh victims are in the rows
    int gain = 0;
    std::vector<int> rows;   // its rows (indices), one per other node
    DrawnUnits units;        // per device: the units of R and of n's folded victims on it
    size_t seen = 0;         // the first `seen` of n's fresh victims have their nodes in `nodes`
    std::vector<int> nodes;  // the other nodes of those victims, each once
  };
  // The count of Room on `node`; unless `whole`, it may stop as soon as it reaches the part.
  // With `bound_first`, a count below the part may be any count below the part and at least the
  // count (RoomOrBelow).
  int Total(int node, const std::vector<int>& indices,
            const std::vector<const EvictionUnit*>& fresh, bool whole, bool bound_first);
  // Folds n's fresh victims from rows.folded on into its rows and brings rows.gain up to date.
  void Fold(int node, const std::vector<int>& indices,
            const std::vector<const EvictionUnit*>& fresh, OtherRows* rows);
  // Adds to rows.nodes the other nodes of n's fresh victims from rows.seen on.
  void See(int node, const std::vector<int>& indices, const std::vector<const EvictionUnit*>& fresh,
           OtherRows* rows);
  std::vector<OtherRows> other_rows_;    // made for a node n once a fresh victim of n spans nodes
  std::vector<int> other_slot_;          // per node n: its OtherRows in other_rows_, or -1
  std::vector<int> single_fresh_;        // per node n without rows: its first fresh victims all
                                         // lie on n alone, this many of them
  std::vector<double> row_free_;         // rows × R_n
  std::vector<int> row_node_;            // per row: its node
  std::vector<int> row_count_;           // per row: PodsOn of it, as counted last
  mutable std::vector<double> now_row_;  // PodsNow's row (R_n)
};

// A try that places the part must also re-place some victims of R (Solver::MustMovePods). For
// victims of one shape, asked `places` times over by the part's pod in every resource they ask:
// each pod of the part placed on a node where the victims may go takes `places` of their places
// there. With `v` victims, `p` pods in the part and at most `a` pods of the part fitting on the
// nodes where only the part may go, the nodes where the victims may go must hold
// v + places · max(0, p − a) of them. Each count is the room bounds' (an upper bound on the try's),
// and each test below compares the two counts as the room bounds' own tests do.
class MovesBound {
 public:
  // `victims`: the room for the victims, counting up to v + places · p; `elsewhere`: the room
  // for the part on the nodes where only it may go, counting up to p, or null when there are
  // none. Both counted (RoomBound::counted).
  MovesBound(std::unique_ptr<RoomBound> victims, std::unique_ptr<RoomBound> elsewhere, int count,
             int places, int part)
      : victims_(std::move(victims)),
        elsewhere_(std::move(elsewhere)),
        count_(count),
        places_(places),
        part_(part) {}

  bool AnyVictimSetMayHold() const {
    return victims_->WithAllVictims() >=
           Need(elsewhere_ != nullptr ? elsewhere_->WithAllVictims() : 0);
  }
  void AddDrawn(const EvictionUnit& victim, const std::vector<int>& nodes) {
    victims_->AddDrawn(victim, nodes);
    if (elsewhere_ != nullptr) elsewhere_->AddDrawn(victim, nodes);
  }
  bool DrawnMayHold() const {
    return victims_->WithDrawn() >= Need(elsewhere_ != nullptr ? elsewhere_->WithDrawn() : 0);
  }
  // Whether R alone evicted already makes the room: every count only grows from there, so the
  // bound then never rules a try out, and need not be kept.
  bool HoldsWithR() const {
    return victims_->WithR() >= Need(elsewhere_ != nullptr ? elsewhere_->WithR() : 0);
  }
  bool MayHold(int node, const std::vector<int>& indices,
               const std::vector<const EvictionUnit*>& fresh) {
    const int elsewhere = elsewhere_ != nullptr ? elsewhere_->Room(node, indices, fresh) : 0;
    return victims_->Room(node, indices, fresh) >= Need(elsewhere);
  }

 private:
  int Need(int elsewhere) const { return count_ + places_ * std::max(0, part_ - elsewhere); }

  std::unique_ptr<RoomBound> victims_;
  std::unique_ptr<RoomBound> elsewhere_;
  int count_;
  int places_;
  int part_;
};

// A queue's subtree allocation, and the unit of the job it carries, as the tries of one part may
// see them when §4.3 orders their jobs: each between its low and its high row (R values each).
struct QueueRange {
  int queue = -1;
  std::vector<double> allocated_low;
  std::vector<double> allocated_high;
  std::vector<double> unit_low;
  std::vector<double> unit_high;
};

// Whether §4.3 ranks `y` before `x` (siblings: two children of one queue, or two top-level
// queues) on every allocation and unit within their ranges: rules 1 to 5 in turn. A rule won by
// `y` on every such state decides; one that `y` wins on some states and ties on the others
// leaves those to the later rules, which are then asked over every state of the ranges (more
// than those, so no less strict). False as soon as a rule may go to `x`. Rules 1 to 4 read each
// resource against a margin, and rule 5 compares the largest share `y` may have with the smallest
// `x` may have, also with a margin, so that an allocation rounded otherwise in a try is still
// within the range. O(R).
bool RanksFirstWithin(const QueueChain& chain, const KaiFairShare& shares, const QueueRange& y,
                      const QueueRange& x);

// Evictions lower a queue's allocation only inside its subtree, and never its non-preemptible
// allocation. So while P's part breaches a §4.4 limit once R is evicted, only a victim set with a
// victim under the breached queue can lift it, and a non-preemptible breach no set lifts.
class QuotaBound {
 public:
  // The breach of P's (`group`'s) first `part` pods once `chosen` (R) is evicted, if any.
  // `session` outlives the bound.
  QuotaBound(Session& session, int group, const Unit& unit, int part,
             const std::vector<EvictionUnit>& chosen);

  // False when no victim set can lift the breach: it is non-preemptible, or no RUNNING
  // preemptible group that `eligible` accepts lies under the breached queue. O(groups · depth).
  bool AnyVictimSetMayLift(const std::function<bool(int group)>& eligible) const;
  // Cheap first: false when there is a breach and none of `fresh` lies under the breached queue.
  bool MayLift(const std::vector<const EvictionUnit*>& fresh) const;
  // False when there is a breach and it stays once every unit of `victims` is evicted. P's check
  // in a try sees those allocations plus whatever victims re-placed before P add back, so the try
  // cannot place the part then. O(pods of victims · depth · R).
  bool LiftedBy(const std::vector<EvictionUnit>& victims) const;
  // The breach once `victims` are evicted, if any: CheckQuota on P's queues' allocations less
  // the victims' requests, summed as evicting them would sum them, with nothing evicted.
  // O(pods of victims · depth · R).
  std::optional<QuotaBreach> BreachAfter(const std::vector<EvictionUnit>& victims) const;
  // MayLift(fresh) and LiftedBy(R then `fresh`), answered from rows kept per node: `fresh` are
  // the drawn victims with a pod on `node`, in draw order. Within a part, the `fresh` of a node
  // only grows at its end, and evicting R then `fresh` subtracts the same pods in the same order
  // as evicting R then a prefix of them and then the rest: so the node's rows, once R's, take off
  // only the victims added since the last call. O(pods of the new victims · depth · R) plus the
  // check of P's queues.
  bool MayLiftOn(int node, const std::vector<const EvictionUnit*>& fresh);

 private:
  // The allocated and allocatedNP rows of P's queues (path_) as they stand, into `rows` and
  // `rows_np` (path_.size() × R each).
  void StartRows(std::vector<double>* rows, std::vector<double>* rows_np) const;
  // Takes `victim`'s pods off the rows of P's queues above them, one pod at a time in pod order,
  // as WorkingState::Evict sums them.
  void TakeOff(const EvictionUnit& victim, std::vector<double>* rows,
               std::vector<double>* rows_np) const;
  // CheckQuota of the part on P's queues with these rows.
  std::optional<QuotaBreach> BreachOn(const std::vector<double>& rows,
                                      const std::vector<double>& rows_np) const;
  // Whether `victim` lies under the breached queue.
  bool UnderBreach(const EvictionUnit& victim) const;

  Session& session_;
  int group_;
  std::vector<double> requests_;  // the part's requests
  std::optional<QuotaBreach> breach_;
  std::vector<int> path_;  // P's queues, leaf first
  // BreachAfter's scratch rows.
  mutable std::vector<double> rows_;
  mutable std::vector<double> rows_np_;
  // MayLiftOn's rows for one node n: R's rows less n's fresh victims folded so far.
  struct NodeRows {
    size_t scanned = 0;  // the first `scanned` of n's fresh victims were asked UnderBreach
    bool under = false;  // one of them lies under the breached queue (MayLift)
    size_t folded = 0;   // the first `folded` are taken off the rows (made once `under`)
    std::vector<double> rows;
    std::vector<double> rows_np;
  };
  std::vector<double> base_rows_;  // R's rows (with a breach)
  std::vector<double> base_rows_np_;
  std::unordered_map<int, NodeRows> node_rows_;  // by node n
};

}  // namespace arbiter::kai
