// The victim search of CONSOLIDATE, RECLAIM and PREEMPT (SEMANTICS.md §4.8): KAI's incremental,
// per-node scenario search on statements of the working state.
//
//   solve(P): U = unit(P), R = {}
//     for i in 1..|U|: part = first i pods of U
//       try(part, R); then draw victims in a fresh order (skipping R), and after each draw u try
//       R plus the drawn units with a pod on n, for each node n of u's pods (name order)
//       none → fail; else R = the victims of the solution
//   try(part, S): evict S; in §4.3 order over {P} ∪ groups(S): P passes §4.4 and places part
//     (pipelined), or the try fails; every other group re-places its pods of S as one unit
//     (§4.4, pipelined) and is then "moved"; the action's validator judges the rest.
// Every try runs in a statement and is rolled back; the final solution is replayed and committed.
// Tries that provably cannot place the part are skipped by the bounds of solver_bounds.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/kai/eviction_action.h"
#include "core/kai/queue_order.h"
#include "core/kai/quota_check.h"
#include "core/kai/session.h"
#include "core/kai/solver_bounds.h"
#include "core/kai/unit.h"
#include "core/kai/victims.h"

namespace arbiter::kai {

class DrawSequence;  // solver.cc: the units a search's parts draw, drawn once
class RoomBound;     // solver_bounds.h: the room a part could find

class Solver {
 public:
  // The rows of OrderJobs' incremental picker (solver.cc), kept by the solver from one try to
  // the next; only the picker reads them.
  struct PickerScratch {
    std::vector<int> queues;
    std::vector<std::vector<int>> path_slots;
    std::vector<std::vector<int>> members;
    std::vector<int> pick;
    std::vector<int> roots;
    std::vector<char> alive;
    std::vector<std::pair<int, int>> by_depth;
  };

  // Searches victims by `action`'s rules. `chain` and `action` must outlive the solver.
  // `shared_order`: when the action shares its victim order (SharesVictimOrder), that order,
  // built with eligibility independent of the preemptor on the current state; the solver turns
  // it into the preemptor's fresh order (P excluded, PrepareSharedOrder applied, R counted as
  // drawn) and resets it after use. Null: a fresh order is built every time.
  // `place_without_victims`: whether a unit that fits with no victim is placed (pipelined,
  // nobody evicted) rather than answered kNeedsNoVictims; see RunEvictionAction for when.
  Solver(Session& session, const QueueChain& chain, const EvictionAction& action,
         VictimOrder* shared_order, bool place_without_victims);

  enum class Outcome {
    kPlaced,          // committed: the unit bound with after_evictions, victims evicted or moved
    kNeedsNoVictims,  // the unit fits as things are and place_without_victims is off
    kFailed,          // no victim set lets it fit; the state is unchanged
  };
  // Searches victims for `group`'s `unit`. `victims_out` receives the groups evicted or moved.
  Outcome Solve(int group, const Unit& unit, std::vector<int>* victims_out);
  // Solve's search alone: the state is left as it was, and on kPlaced `chosen` holds the victim
  // units the solution would take (R, §4.8), nothing committed.
  Outcome Search(int group, const Unit& unit, std::vector<EvictionUnit>* chosen);

  // After kPlaced: the groups whose state the committed solution changed (the preemptor and
  // every victim group, restored ones included), in no particular order.
  const std::vector<int>& touched() const { return touched_; }
  // After kPlaced: the victim pods the committed solution re-placed on their own node (restored,
  // so in no eviction note), in the order of its victims.
  const std::vector<int>& restored() const { return restored_; }

  // What a search did, part by part, so that a second search of the same unit on the same state
  // need not make again the tries the two share. RunEvictionAction keeps one for a search that
  // may fail and replays it in the search without min-runtime that explains the failure
  // (MinRuntimeOutcome): the two draw the same victims until a unit only the second may take,
  // and their tries get the same verdicts while no victim in them is protected.
  struct Record {
    const EvictionAction* action = nullptr;  // whose min-runtime judged the recorded tries
    size_t drawn = 0;  // the units its sequence drew; the session's sequence rows still hold them
    struct Part {
      int part = 0;
      std::vector<EvictionUnit> before;  // R as the part began
      size_t failed_below = 0;           // every try at a sequence index below this one failed
      bool found = false;                // the tries at failed_below placed it, R then `after`
      std::vector<EvictionUnit> after;
    };
    std::vector<Part> parts;  // the parts that drew victims, in order
  };
  // Before Search: keep what it does in `record` (null: nothing kept), or repeat `record`, kept
  // by a search of the same group and unit on this same state under `record->action`, which
  // must be this solver's action with min-runtime left out (null: nothing to repeat). Neither
  // applies to the reference search. Both must outlive the search.
  void KeepRecord(Record* record) { record_ = record; }
  void Replay(const Record* record) { replay_ = record; }

  // Allocations of every queue at the start of the current Solve (queues × R), for validators.
  const std::vector<double>& start_allocated() const { return start_allocated_; }
  const std::vector<double>& start_allocated_np() const { return start_allocated_np_; }

 private:
  // The room a try starts with, for stopping it early: `room` bounds from above the part's pods
  // that fit, summed over the nodes with each node's count capped at the part (RoomBound::Room),
  // once the try's victims are evicted; `bound` counts a node's pods (RoomBound::PodsNow).
  struct TryRoom {
    const RoomBound* bound;
    int room;
  };
  // One try with the first `part` pods of `unit` and victims `victims`; keeps the state when
  // `keep`, else rolls back. Fills `attempt` on success. `placed_out`, when given, is increased
  // by the number of P's pods placed before the try ended (P's quota check failing: none). With
  // `room`, the try stops, failing, once the victims re-placed before P have taken so much of it
  // that the part cannot fit: each pod re-placed lowers its node's count by what PodsNow reads
  // before and after it, and nothing in a try adds room after the evictions, so P would fail.
  bool Try(int group, const Unit& unit, int part, const std::vector<EvictionUnit>& victims,
           bool keep, Attempt* attempt, int* placed_out = nullptr, const TryRoom* room = nullptr);
  // The steps of Try, in order. GatherJobs: the try's jobs, P with the first `part` pods of
  // `unit` and then each victim group with its pods of `victims` (first draw order); each job's
  // pods in pod order and their summed requests (rows 0 .. jobs - 1 of `pods_out` and
  // `requests_out`, which may hold more).
  void GatherJobs(int group, const Unit& unit, int part, const std::vector<EvictionUnit>& victims,
                  std::vector<int>* groups_out, std::vector<std::vector<int>>* pods_out,
                  std::vector<std::vector<double>>* requests_out) const;
  // P's job: §4.4 on the job's `requests`, then each of `pods` bound pipelined where it fits.
  // False when the quota check or a pod fails, or the call is cancelled (the caller rolls back);
  // `placed_out` as in Try.
  bool PlacePreemptor(int group, const std::vector<int>& pods, const std::vector<double>& requests,
                      int* placed_out);
  // A victim group's job: its `pods` of S re-placed as one unit (§4.4, pipelined) in a statement
  // of its own, kept only when every pod found a node. Returns whether the group was moved.
  // With `room`, adds to `*taken` the room the kept pods took (TryRoom).
  bool ReplaceVictimGroup(int group, const std::vector<int>& pods,
                          const std::vector<double>& requests, const TryRoom* room = nullptr,
                          int* taken = nullptr);
  // Part way through a try: marks the units of victim group `failed` (its re-placement failed;
  // -1: none) as evicted whatever the jobs left do, in the scratch's `open`, and asks whether the
  // action's validator rejects every try that evicts the units so marked
  // (EvictionAction::RejectsEveryTryEvicting). O(|victims|) plus the action's test.
  bool RejectedWhateverFollows(int group, const Unit& unit,
                               const std::vector<EvictionUnit>& victims, int failed);
  // At a try's start: sets the scratch's `open` (every unit open when the action re-places
  // victims, none when it does not), and with `judge_early` and no re-placement asks
  // RejectedWhateverFollows once for all of S, counting a rejection as a stopped try.
  bool RejectedBeforeAnyJob(int group, const Unit& unit, const std::vector<EvictionUnit>& victims,
                            bool judge_early);
  // After P's job placed: fills `attempt`, then rejects the try when a group min-runtime
  // protects, evicted and not moved, is left below g active pods, else asks the action.
  bool JudgeAttempt(int group, const Unit& unit, const std::vector<EvictionUnit>& victims,
                    const std::vector<int>& protected_groups, const std::vector<int>& moved_groups,
                    Attempt* attempt) const;
  // Copies every queue's allocations into start_allocated_ and start_allocated_np_.
  void RecordStartAllocations();
  // The first part worth searching victims for: every shorter part fits with no victim (see
  // Solve). Returns early, with the poll cancelled, when a try is cancelled.
  int FirstPartNeedingVictims(int group, const Unit& unit, Attempt* attempt);
  // One step of solve(P) for a `part` that does not fit with R (`chosen`): reads the search's
  // victim sequence (`sequence`, R passed over) and, after each unit, tries R plus the units read
  // so far on each node of that unit.
  // On success sets `chosen` to the victims of the solution and returns true; false when no
  // drawn set fits or the call is cancelled. Tries the bounds rule out are skipped.
  bool FindVictimsForPart(int group, const Unit& unit, int part, DrawSequence* sequence,
                          std::vector<EvictionUnit>* chosen, Attempt* attempt);
  // The pods of R of the groups that every try able to place the part must re-place: the action
  // rejects every try that evicts one of them (RejectsEveryTryEvicting, judged with R alone
  // evicted; a try of the part evicts R and more, which only makes it stricter). Pods that share
  // GPUs or ask a resource no node has are left out. Grouped by shape (signature and requests),
  // each list in R's order. None when the action does not re-place victims, or when the call is
  // cancelled (it ticks the poll once per group judged).
  std::vector<std::vector<int>> MustMovePods(int group, const Unit& unit,
                                             const std::vector<EvictionUnit>& chosen);
  // R's groups that every try of `part` able to place it re-places before P, in the tries where
  // §4.3 ranks their side first. Such a try visits its jobs in that order, so it visits h before
  // P; and h fits wherever the part fits (FitsWhereThePartFits). Were h not placed at its turn,
  // the nodes that hold the part after it, with no more room then, could have held all of h's
  // pods, which take nodes greedily. So the try places h's pods of R and the part together, and a
  // MovesBound over h's pods of R, with the pods of the groups of other shapes it joins
  // (JoinedPlaces), rules out the tries where they cannot be held together, once
  // RanksFirstWithin finds h's side first on every state that try (or every try of a draw) may
  // see. A side not ranked first with nothing drawn never is later, so only the groups ranked
  // first then get a bound. None for a part that shares, or in the reference search, or when
  // the call is cancelled (it ticks the poll once per group of R, and per room it counts).
  // One group h of them: where its path and P's part.
  struct OrderedSide {
    int group;
    QueueRange x;                 // P's side; allocated_high: R evicted
    QueueRange y;                 // h's side, the same
    std::vector<double> x_drawn;  // Σ of the requests of the drawn units under x
    std::vector<double> y_drawn;  // and under y
  };
  // The groups of one shape and of the shapes it joins (JoinedPlaces), with a bound over all
  // their pods of R: it rules out a try only when every one of them is ranked first in it.
  struct OrderedMove {
    std::vector<OrderedSide> sides;
    MovesBound bound;
  };
  std::vector<OrderedMove> OrderedMoves(int group, const Unit& unit, int part,
                                        const std::vector<EvictionUnit>& chosen,
                                        const std::function<bool(int)>& eligible,
                                        const RoomBound& room);
  // Whether R's group `h` fits, at its turn in a try, wherever the part fits later in it: its
  // RUNNING pods (any of them may be in its job) are of one shape, none shares or asks a resource
  // no node has, the part's pod asks at least k times each resource they ask, they number at most
  // k · part, they may go on every node the part's pod may go, h does not keep one pod per node,
  // and no limit on h's queues can refuse them (each allocation starts below its limit, and at
  // h's turn has lost h's pods and got back at most what it lost; a memory pod re-placed may
  // count more of G than it gave back, so G's limits are trusted only without sharing pods).
  bool FitsWhereThePartFits(const Unit& unit, int part, int h);
  // The two queues where the paths of P (`group`) and `h` part, as `x` (P's) and `y` (h's);
  // false when they share a leaf.
  bool SidesOf(int group, int h, QueueRange* x, QueueRange* y) const;
  // The ranges of `x` and `y` with nothing drawn: the allocations once R is evicted (both rows);
  // P's unit is the part's; a job on h's side carries at most the largest of R's groups' pods of
  // R there (a job drawn later brings down the side's allocation by its whole unit).
  void QueueRangesFor(const Unit& unit, int part, const std::vector<EvictionUnit>& chosen,
                      QueueRange* x, QueueRange* y) const;
  // Adds to `sum` the requests of the pods of `units` whose group lies under `queue`.
  void TakeOffUnder(const std::vector<const EvictionUnit*>& units, int queue,
                    std::vector<double>* sum) const;
  // The same for one unit.
  void TakeOffUnder(const EvictionUnit& unit, int queue, std::vector<double>* sum) const;
  // RanksFirstWithin for `side` with its low rows the high rows less `x_taken` and `y_taken`.
  bool RanksFirstLess(OrderedSide& side, const std::vector<double>& x_taken,
                      const std::vector<double>& y_taken) const;
  // Per draw: each bound counts the drawn unit, and each side its requests.
  void AddDrawnToOrdered(std::vector<OrderedMove>& moves, const EvictionUnit& drawn,
                         const std::vector<int>& nodes) const;
  // The bounds a part's draws feed, and the units drawn while the replay ruled out their tries,
  // not yet counted by them (the sequence's units keep their addresses).
  struct DrawBounds {
    RoomBound& room;
    std::vector<MovesBound>& moves;
    std::vector<OrderedMove>& ordered;
    std::vector<const EvictionUnit*> uncounted;
    std::vector<int> nodes;  // scratch: the nodes of one of them
  };
  // After the sequence's unit walked_to_ (`next`, on `nodes`) is drawn for `group`: the counter
  // of the first reason that rules out every try after it, the replayed search having made them
  // and seen them fail (explanation_tries_replayed, ReplayedFailure; the bounds count the unit
  // later) or a bound (DrawRuledOut, once the bounds have counted every unit drawn so far); null
  // when none does.
  int64_t* CountDraw(int group, DrawSequence& sequence, const EvictionUnit& next,
                     const std::vector<int>& nodes, DrawBounds* bounds);
  // The counter of the first bound that rules out every try after the current draw: the room
  // (tries_skipped_count), the victims R must re-place (tries_skipped_moves), then `ordered`
  // (tries_skipped_ranked); null when none does.
  int64_t* DrawRuledOut(const RoomBound& room, const std::vector<MovesBound>& moves,
                        std::vector<OrderedMove>& ordered, SearchCounters& counters);
  // Replay: the recorded part the current part repeats (same part, same R, none of R
  // protected), or null; `cursor` walks the recorded parts, in part order, across calls.
  const Record::Part* RecordedPart(int group, int part, const std::vector<EvictionUnit>& chosen,
                                   size_t* cursor);
  // Replay: whether every try after the sequence's unit `index` is one the recorded search made
  // and saw fail: the part is replay_part_, the sequence agrees with the record up to `index`,
  // and none of its units up to there is protected from `group`.
  bool ReplayedFailure(int group, size_t index, DrawSequence& sequence);
  // Replay: whether the sequence's units up to `index` are the recorded ones, none of them
  // protected from `group`: a try after that unit is then one the recorded search made, with the
  // same verdict.
  bool AgreesUpTo(int group, size_t index, DrawSequence& sequence);
  // Replay: whether the first `count` units of the sequence are none of them protected.
  bool UnprotectedUpTo(int group, size_t count, DrawSequence& sequence);
  // The counter of the first of `moves` (tries_skipped_moves) and `ordered`
  // (tries_skipped_ranked) that rules out the try on `node` (arguments as RoomBound::MayHold);
  // null when neither does.
  int64_t* TryRuledOut(std::vector<MovesBound>& moves, std::vector<OrderedMove>& ordered, int node,
                       const std::vector<int>& indices,
                       const std::vector<const EvictionUnit*>& fresh);
  // Whether one of `moves` rules out every try after the current draw: its bound finds no room
  // with every drawn unit evicted, and its side ranks first even with them all evicted.
  bool OrderedRuleOutDraw(std::vector<OrderedMove>& moves) const;
  // Whether one of `moves` rules out the try on `node` (arguments as RoomBound::MayHold).
  bool OrderedRuleOutTry(std::vector<OrderedMove>& moves, int node, const std::vector<int>& indices,
                         const std::vector<const EvictionUnit*>& fresh);
  // One MovesBound for `pods` (of R, one shape): none when the part's pod does not ask each
  // resource they ask at least once over, or a room is not counted. Ticks the poll per room.
  // `others`: the places of that shape that more pods every such try re-places take as well
  // (JoinedPlaces), counted on top of `pods`.
  std::optional<MovesBound> MovesBoundFor(const Unit& unit, int part,
                                          const std::vector<EvictionUnit>& chosen,
                                          const std::function<bool(int)>& eligible,
                                          const std::vector<int>& pods, int others = 0);
  // The places of shape `base` of MustMovePods that the pods of its other shapes take: a pod
  // that asks at least k times each resource the base's pod asks takes k of the base's places
  // on whichever node it goes, as the part's pod does (MovesBound), when it may go only where the
  // base's pod may. The shapes that do not are left out. O(shapes · classes).
  // `joined`, when given, receives the indices of the shapes it counts.
  int JoinedPlaces(const std::vector<std::vector<int>>& shapes, int base,
                   std::vector<int>* joined = nullptr);
  // A try that places the part re-places those pods too: for each shape of them that the part's
  // pod asks at least once over in every resource they ask, a MovesBound (solver_bounds.h) over
  // the nodes where they may go, with the pods of the other shapes it can join counted in its
  // places (JoinedPlaces). None when `room` does not count tries or its part shares GPUs.
  // Ticks the poll for each room it counts (the caller checks it).
  std::vector<MovesBound> MovesBounds(int group, const Unit& unit, int part,
                                      const std::vector<EvictionUnit>& chosen,
                                      const std::function<bool(int)>& eligible,
                                      const RoomBound& room);
  // A try's victim set: R (`chosen`), then the drawn units `fresh`, in the solver's scratch.
  const std::vector<EvictionUnit>& Candidate(const std::vector<EvictionUnit>& chosen,
                                             const std::vector<const EvictionUnit*>& fresh);
  // After the committed try: the eviction notes of every victim pod evicted or moved, and the
  // victim groups touched in `victims_out`.
  void RecordEvictions(int group, const Attempt& attempt, std::vector<int>* victims_out);
  // Visits {P} ∪ groups(S) in §4.3 order on the current state (requests: each job's unit), one
  // job at a time: each is picked among the jobs not yet visited, on the state as `visit` left
  // it. Stops when `visit` returns false, without ordering the jobs left.
  void OrderJobs(const std::vector<int>& groups, const std::vector<std::vector<double>>& requests,
                 const std::function<bool(int job)>& visit);
  // The index (into groups) of the best of `jobs` (§4.3 from the top level); `paths[j]` lists
  // job j's queues from its root down to its leaf. O(Σ path lengths · log jobs).
  // `keys[j][d]`: the chain key of the queue at depth d on job j's path, with j's unit;
  // `job_keys[j]`: job j's key in its leaf. Both computed by OrderJobs on the state before the
  // first job is visited, so the order never reads the state `visit` changes.
  int BestJob(const std::vector<int>& jobs, const std::vector<std::vector<int>>& paths,
              const std::vector<std::vector<ChainKey>>& keys,
              const std::vector<JobKey>& job_keys) const;

  // Whether `preemptor` may take `victim`: never itself, else by the action's filter.
  bool MayEvict(int preemptor, int victim) const {
    return victim != preemptor && action_.MayEvict(preemptor, victim);
  }
  // Whether min-runtime protects `victim` from `preemptor` (EvictionAction::IsProtected) on the
  // state the search started from; asked of the action once per group in a search
  // (Session::VerdictScratch), `preemptor` being the search's.
  bool Protects(int preemptor, int victim) const;
  // Starts the verdicts of a new search: none known.
  void StartVerdicts();

  Session& session_;
  const QueueChain& chain_;
  const EvictionAction& action_;
  VictimOrder* shared_order_;
  bool place_without_victims_;
  std::vector<double> start_allocated_;
  std::vector<double> start_allocated_np_;
  std::vector<int> touched_;
  std::vector<int> restored_;
  std::vector<double> ordered_scratch_[2];  // OrderedRuleOutTry's rows
  // The victim set of a try (FindVictimsForPart): its elements keep their pod arrays from one try
  // to the next.
  std::vector<EvictionUnit> candidate_;
  // OrderJobs' rows (per job: its path, its chain keys, its job key), grown and never shrunk.
  std::vector<std::vector<int>> order_paths_;
  std::vector<std::vector<ChainKey>> order_keys_;
  std::vector<JobKey> order_job_keys_;
  PickerScratch picker_scratch_;
  // A try's rows (Try, GatherJobs), kept from one try to the next: `pods` and `requests` have a
  // row per job of the current try (the first groups.size()) and stale rows past them.
  struct TryScratch {
    std::vector<int> groups;
    std::vector<std::vector<int>> pods;
    std::vector<std::vector<double>> requests;
    std::vector<int> protected_groups;
    std::vector<int> moved_groups;
    std::vector<bool> open;  // per unit of S: not yet known to be evicted (RejectedWhateverFollows)
  };
  TryScratch try_scratch_;
  Record* record_ = nullptr;
  const Record* replay_ = nullptr;
  const Record::Part* replay_part_ = nullptr;  // the recorded part the current part repeats
  size_t unprotected_ = 0;       // the sequence's first units known not protected, this many
  bool protected_seen_ = false;  // and the next one is
  size_t walked_to_ = 0;         // FindVictimsForPart: the sequence index where it stopped
};

}  // namespace arbiter::kai
