// CycleHooks: what a caller of the core may supply to one call, cancellation and phase
// observation. On the ground floor, so that both models and the entry points above them read it
// without any arrow pointing up.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace arbiter {

// One attempt an action made on a pod group's next unit (CycleHooks::attempt). The views are
// valid only during the call.
struct AttemptTrace {
  std::string_view action;     // "allocate", "consolidate", "reclaim" or "preempt"
  std::string_view pod_group;  // the group whose unit was tried
  int pods = 0;                // the unit's pods
  // "placed"; "pending" (it stays pending after this attempt); "refused" (the action's
  // precheck turned it away before any search); "fits without victims" (an eviction action
  // leaves it to ALLOCATE, §4.1)
  std::string_view outcome;
  std::vector<std::string_view> evicted;  // pods the attempt evicted, in the order committed
  std::vector<std::string_view> moved;    // pods the attempt moved to another node
  // Victim pods the attempt's solution took and re-placed on their own node (§4.8): restored,
  // so in neither list of the answer, yet part of the victim set the search tried.
  std::vector<std::string_view> restored;
};

// Hooks a caller may supply; the core calls them between the phases of a call.
struct CycleHooks {
  // Asked between phases, and inside the long loops of a phase every few milliseconds of work
  // (core/cancel_poll.h); true aborts the call with absl::CancelledError naming the phase that
  // was about to start or was running. The server supplies its client's deadline here. Once it
  // has returned true it should keep doing so.
  std::function<bool()> cancelled;
  // Called when a phase ends, with its name: "validate", "fair_share", "allocate",
  // "consolidate", "reclaim", "preempt", "admission", "respond". For timing breakdowns.
  std::function<void(std::string_view phase)> phase_done;
  // Called just before phase_done for the eviction actions ("consolidate", "reclaim",
  // "preempt") with the victim search's counters, named and in a fixed order: "candidates",
  // "placed", "failed", "tries", "tries_skipped_count", "tries_skipped_quota",
  // "tries_skipped_repeat", "tries_skipped_moves", "tries_skipped_ranked", "tries_cut_short",
  // "tries_cut_rejected", "victims_drawn", "victim_orders", "explanations", "explanation_tries"
  // (the searches run again without min-runtime for a failed unit's pending reason, and their
  // tries, which `tries` leaves out), "explanation_tries_replayed" (the tries those searches did
  // not make because the failed search made them and they fail alike), then, with GPU sharing,
  // the device counters. For explaining a slow cycle; they never change
  // an answer.
  std::function<void(std::string_view phase,
                     const std::vector<std::pair<std::string_view, int64_t>>& counters)>
      phase_counters;
  // Runs the victim search (SEMANTICS.md §4.8) in its reference formulation: tries on a node
  // index brought up to date after every change (not a frozen index read through an overlay,
  // Placer::SetOverlay), a fresh victim order drawn for every part (not one sequence per search),
  // every pick of a try's order made anew, and every try run to its end (not stopped once the
  // victims re-placed before the preemptor have taken the room it needs); and a pod that shares
  // GPUs placed by weighing every feasible node on its own (SEMANTICS.md §4.13.4 as written). Same
  // answers, slower: for the test that proves the two agree.
  bool reference_search = false;
  // Makes every try of the victim search that the room and quota bounds would skip, and runs
  // every try to its end (core/kai/solver_bounds.h). Same answers, slower: for the test that
  // proves the bounds skip and stop only tries that would fail.
  bool unbounded_search = false;
  // Called after every attempt of the KAI actions, in the order they were made (SEMANTICS.md
  // §4.3's order of each action). For following a cycle's decisions one by one, as a scheduler's
  // log does; it never changes an answer. Unset: nothing is recorded.
  std::function<void(const AttemptTrace&)> attempt;

  // CancelledError naming `next_phase` when `cancelled` says so; OK otherwise.
  absl::Status CheckCancelled(std::string_view next_phase) const {
    if (cancelled && cancelled()) {
      return absl::CancelledError(absl::StrCat("cancelled before phase ", std::string(next_phase)));
    }
    return absl::OkStatus();
  }
  void PhaseDone(std::string_view phase) const {
    if (phase_done) phase_done(phase);
  }
  void PhaseCounters(std::string_view phase,
                     const std::vector<std::pair<std::string_view, int64_t>>& counters) const {
    if (phase_counters) phase_counters(phase, counters);
  }
};

}  // namespace arbiter
