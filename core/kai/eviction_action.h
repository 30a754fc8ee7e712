// The rules of one eviction action (SEMANTICS.md §4.9-4.11): which groups CONSOLIDATE, RECLAIM
// or PREEMPT serves, which victims it may take, and how it judges a try. Each action implements
// EvictionAction (consolidate.cc, reclaim.cc, preempt.cc); the victim search (solver.h) and the
// loop every action shares (eviction_loop.h) ask it. Nothing here knows the search: the
// interface is the one thing both sides share, so their includes point one way.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/kai/session.h"
#include "core/kai/unit.h"
#include "core/kai/victims.h"
#include "core/model.h"

namespace arbiter::kai {

class Solver;

// One try, handed to the action's validator.
struct Attempt {
  int preemptor = -1;
  std::vector<double> unit_requests;  // unitReq(P) of the whole unit
  std::vector<EvictionUnit> victims;  // S, in draw order
  std::vector<bool> moved;            // per victim unit: its group was re-placed
  // Set by the validator for each victim unit that is evicted (not moved).
  std::vector<EvictionReason> reasons;
  std::vector<std::string> messages;
};

// The rules of one eviction action: which groups it serves, which victims it may take for them,
// and how it judges a try. Every method is a pure reading of the session's current state.
class EvictionAction {
 public:
  virtual ~EvictionAction() = default;

  // "consolidate", "reclaim", "preempt": prefixes pending outcomes.
  virtual std::string_view name() const = 0;
  // Whether a ready group with a unit is a candidate. Default: every one.
  virtual bool IsCandidate(int /*group*/) const { return true; }
  // Checked when the candidate comes up: nullopt to go on, else why it is skipped (appended to
  // an earlier pending reason, if any). Default: go on.
  virtual std::optional<std::string> Precheck(int /*group*/, const Unit& /*unit*/) const {
    return std::nullopt;
  }

  // The reason of an evicted victim, unless Validate sets another.
  virtual EvictionReason reason() const = 0;
  // Whether a victim group is re-placed where it fits (moved) rather than only evicted.
  virtual bool ReplacesVictims() const { return true; }
  // The most victim groups one solution may take; -1: no cap.
  virtual int max_victim_groups() const { return -1; }
  // Whether every victim the filter accepts lies in the preemptor's leaf (PREEMPT): a hint to the
  // room bound about how few the victims are, which moves no answer.
  virtual bool VictimsInOwnLeaf() const { return false; }
  // The action's victim filter: whether `preemptor` may take `victim`, on top of the generic
  // rules of §4.7 (min-runtime included, which the generic rules leave to the action).
  virtual bool MayEvict(int preemptor, int victim) const = 0;
  // Whether min-runtime protects `victim` from `preemptor`, judged on the state before a try: a
  // protected group evicted in a try must keep at least g active pods (§4.7).
  bool IsProtected(int preemptor, int victim) const {
    return ProtectedUntil(preemptor, victim).has_value();
  }
  // When the min-runtime that protects `victim` from `preemptor` ends; nullopt when it does not
  // protect it. Default: never protected.
  virtual std::optional<Timestamp> ProtectedUntil(int /*preemptor*/, int /*victim*/) const {
    return std::nullopt;
  }
  // MayEvict with min-runtime left out: whether `preemptor` could take `victim` if no min-runtime
  // protected it (for the pending reason that names the protection). Default: MayEvict.
  virtual bool MayEvictIgnoringMinRuntime(int preemptor, int victim) const {
    return MayEvict(preemptor, victim);
  }
  // Whether some min-runtime of the action could protect some group: false lets a failed
  // attempt skip asking whether min-runtime is what protects its victims. Default: none could.
  virtual bool MayProtect() const { return false; }
  // The queue field of the action's min-runtime ("reclaim_min_runtime"), for messages.
  virtual std::string_view min_runtime_field() const { return "min_runtime"; }

  // Whether MayEvict depends on the preemptor only through what PrepareSharedOrder takes out: then
  // one victim order over every group the generic rules accept is built per state and shared by
  // the candidates (rebuilt after every placed unit). Default: a fresh order per preemptor.
  virtual bool SharesVictimOrder() const { return false; }
  // With a shared order: takes out of it the victims `preemptor` may not take (the solver takes
  // out the preemptor itself). Undone by the order's Reset.
  virtual void PrepareSharedOrder(int /*preemptor*/, VictimOrder& /*order*/) const {}
  // The same for MayEvictIgnoringMinRuntime: takes out of a shared order the victims `preemptor`
  // could not take even if no min-runtime protected them. Default: PrepareSharedOrder.
  virtual void PrepareSharedOrderIgnoringMinRuntime(int preemptor, VictimOrder& order) const {
    PrepareSharedOrder(preemptor, order);
  }

  // The action's validator on a try: sets the reason and message of each victim unit evicted
  // (not moved), and returns false to reject the try. `solver` (solver.h) gives the allocations
  // at the start of the search. Default: accepts every try, reasons and messages as they are.
  virtual bool Validate(const Solver& /*solver*/, Attempt& /*attempt*/) const { return true; }
  // Whether Validate rejects every try of `preemptor` with victims `victims` (S, draw order) that
  // evicts at least the units `open` does not mark, whatever it does with the units `open` marks
  // (evicts or moves them). The search asks it part way through a try, once some victim groups
  // failed to be re-placed (their units are evicted whatever follows), and stops a try it says
  // yes to; it moves no answer. Default: it never knows.
  virtual bool RejectsEveryTryEvicting(const Solver& /*solver*/, int /*preemptor*/,
                                       const std::vector<double>& /*unit_requests*/,
                                       const std::vector<EvictionUnit>& /*victims*/,
                                       const std::vector<bool>& /*open*/) const {
    return false;
  }
};

}  // namespace arbiter::kai
