// Everything one KAI cycle works on (SEMANTICS.md §4.1), built once by ScheduleKai and handed to
// each action: the interned snapshot, the fair share computed at the start, the feasibility
// classes, the node index, the working state and the pending reasons.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cancel_poll.h"
#include "core/cycle_hooks.h"
#include "core/kai/cluster.h"
#include "core/kai/eviction_unit.h"
#include "core/kai/fair_share_rows.h"
#include "core/kai/feasibility.h"
#include "core/kai/kept_room.h"
#include "core/kai/node_index.h"
#include "core/kai/pending_reasons.h"
#include "core/kai/placement.h"
#include "core/kai/working_state.h"
#include "core/model.h"

namespace arbiter::kai {

// Why and for whom a pod was evicted (or moved) in this response.
struct EvictionNote {
  int pod = -1;
  EvictionReason reason = EvictionReason::kUnspecified;
  int preemptor = -1;  // the pod group the eviction makes room for
  std::string message;
};

// What one eviction action's victim search did (CycleHooks::phase_counters): reset by the
// action when it starts. Counting never changes a decision.
struct SearchCounters {
  int64_t candidates = 0;            // units the action took up
  int64_t placed = 0;                // units placed (with or without victims)
  int64_t failed = 0;                // units no victim set let fit
  int64_t tries = 0;                 // §4.8 tries run
  int64_t tries_skipped_count = 0;   // tries skipped: the nodes cannot hold the part (count bound)
  int64_t tries_skipped_quota = 0;   // tries skipped: a §4.4 breach no candidate lifts
  int64_t tries_skipped_repeat = 0;  // tries skipped: the same victims already tried in the part
  int64_t tries_skipped_moves = 0;   // tries skipped: the nodes cannot hold the part together
                                     // with the victims of R it must re-place (MustMovePods)
  int64_t tries_skipped_ranked = 0;  // tries skipped: the same, for victims of R ranked before P
                                     // that fit wherever the part fits (OrderedMoves)
  int64_t tries_cut_short = 0;       // tries stopped once the victims re-placed before P left
                                     // the nodes too little room for the part (among `tries`)
  int64_t tries_cut_rejected = 0;    // tries stopped once the victims that failed to be
                                     // re-placed made the validator's rejection certain
  int64_t victims_drawn = 0;         // eviction units drawn from victim orders
  int64_t victim_orders = 0;         // victim orders built (shared or per preemptor)
  int64_t explanations = 0;          // failed units searched again without min-runtime, to say
                                     // whether min-runtime protection is what stopped them
  int64_t explanation_tries = 0;     // the tries of those searches (not among `tries`)
  int64_t explanation_tries_replayed = 0;  // tries of those searches not made: the failed search
                                           // made them and they fail alike (Solver::Record)

  std::vector<std::pair<std::string_view, int64_t>> List() const {
    return {{"candidates", candidates},
            {"placed", placed},
            {"failed", failed},
            {"tries", tries},
            {"tries_skipped_count", tries_skipped_count},
            {"tries_skipped_quota", tries_skipped_quota},
            {"tries_skipped_repeat", tries_skipped_repeat},
            {"tries_skipped_moves", tries_skipped_moves},
            {"tries_skipped_ranked", tries_skipped_ranked},
            {"tries_cut_short", tries_cut_short},
            {"tries_cut_rejected", tries_cut_rejected},
            {"victims_drawn", victims_drawn},
            {"victim_orders", victim_orders},
            {"explanations", explanations},
            {"explanation_tries", explanation_tries},
            {"explanation_tries_replayed", explanation_tries_replayed}};
  }
};

class Session {
 public:
  // Builds the cycle's state over a fair share and the validated request it divided; both must
  // outlive the session, and so must `poll` (null: never cancelled). O(size · log size).
  explicit Session(const KaiFairShare& shares, CancelPoll* poll = nullptr);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Policy& policy() const { return policy_; }
  const KaiFairShare& shares() const { return shares_; }
  const Cluster& cluster() const { return cluster_; }
  Feasibility& feasibility() { return feasibility_; }
  WorkingState& state() { return *state_; }
  const WorkingState& state() const { return *state_; }
  Placer& placer() { return *placer_; }
  const NodeIndex& index() const { return index_; }
  PendingReasons& reasons() { return reasons_; }
  // Evictions and moves committed so far, one per pod.
  std::vector<EvictionNote>& evictions() { return evictions_; }
  // The call's cancellation: the actions' loops count their work here and stop, with the state
  // consistent, once it reports the call cancelled (the answer is then discarded).
  CancelPoll& poll() { return *poll_; }
  // Whether ALLOCATE has run in this cycle (set by Allocate when it finishes).
  bool allocate_ran() const { return allocate_ran_; }
  void set_allocate_ran() { allocate_ran_ = true; }
  // The current eviction action's search counters.
  SearchCounters& counters() { return counters_; }
  // CycleHooks::reference_search: tries re-key the node index instead of reading it frozen.
  bool reference_search() const { return reference_search_; }
  void set_reference_search(bool reference) { reference_search_ = reference; }
  // CycleHooks::unbounded_search: the victim search skips no try by the bounds.
  bool unbounded_search() const { return unbounded_search_; }
  void set_unbounded_search(bool unbounded) { unbounded_search_ = unbounded; }
  // CycleHooks::attempt: told of every attempt in order (null: nothing is told). The function
  // must outlive the session.
  void set_attempt_hook(const std::function<void(const AttemptTrace&)>* hook) {
    attempt_hook_ = hook != nullptr && *hook ? hook : nullptr;
  }
  // Tells the hook of an attempt on `group`'s unit of `pods` pods that ended in `outcome`; the
  // evictions and moves it committed are the notes from `first_note` on (evictions().size()
  // before the attempt), and `restored` (may be null) the victim pods its solution restored on
  // their own node. Nothing without a hook.
  void TraceAttempt(std::string_view action, int group, int pods, std::string_view outcome,
                    size_t first_note, const std::vector<int>* restored = nullptr) const {
    if (attempt_hook_ != nullptr) {
      CallAttemptHook(action, group, pods, outcome, first_note, restored);
    }
  }
  // The room bounds' base, kept across the searches of the cycle (solver_bounds.h).
  KeptRoom& kept_room() { return kept_room_; }
  RoomScratch& room_scratch() { return room_scratch_; }
  // The victim search's per-part scratch (Solver::FindVictimsForPart), shared by the cycle's
  // searches so that a part allocates nothing per node or group: per node, the indices of the
  // drawn units with a pod on it; per group, whether it is among the part's victim groups. Each
  // part leaves them as it found them (every list empty, every mark false).
  struct DrawScratch {
    std::vector<std::vector<int>> on_node;
    std::vector<std::vector<const EvictionUnit*>> units_on_node;
    std::vector<char> group_seen;
  };
  // The units of the search's draw sequence (solver.cc, DrawSequence): kept across searches, so
  // that a unit drawn is copied into an element that already has room for its pods. One
  // sequence at a time uses it (`in_use`); a deque, so that the addresses of the units already
  // drawn stay as it grows.
  struct SequenceUnits {
    std::deque<EvictionUnit> units;
    bool in_use = false;
  };
  SequenceUnits& sequence_units() { return sequence_units_; }
  DrawScratch& draw_scratch() { return draw_scratch_; }
  // Per group, whether min-runtime protects it from a victim search's preemptor on the state the
  // search starts from (Solver::Protects), valid where its stamp is the search's epoch: every
  // try of a search starts from that state, and the search commits nothing.
  struct VerdictScratch {
    std::vector<uint64_t> stamp;
    std::vector<int8_t> protects;
    uint64_t epoch = 0;
  };
  VerdictScratch& verdict_scratch() { return verdict_scratch_; }

 private:
  void CallAttemptHook(std::string_view action, int group, int pods, std::string_view outcome,
                       size_t first_note, const std::vector<int>* restored) const;

  const Policy& policy_;
  const KaiFairShare& shares_;
  CancelPoll never_cancelled_;
  CancelPoll* poll_;
  Cluster cluster_;
  Feasibility feasibility_;
  NodeIndex index_;
  std::unique_ptr<WorkingState> state_;
  std::unique_ptr<Placer> placer_;
  PendingReasons reasons_;
  std::vector<EvictionNote> evictions_;
  bool allocate_ran_ = false;
  SearchCounters counters_;
  bool reference_search_ = false;
  bool unbounded_search_ = false;
  KeptRoom kept_room_;
  RoomScratch room_scratch_;
  DrawScratch draw_scratch_;
  SequenceUnits sequence_units_;
  VerdictScratch verdict_scratch_;
  const std::function<void(const AttemptTrace&)>* attempt_hook_ = nullptr;
};

}  // namespace arbiter::kai
