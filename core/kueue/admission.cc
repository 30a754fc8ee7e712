#include "core/kueue/admission.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/echoed_name.h"
#include "core/kueue/fair_preemption.h"
#include "core/kueue/nomination.h"
#include "core/kueue/pending_reasons.h"
#include "core/kueue/tournament.h"

namespace arbiter::kueue {
namespace {

class Rounds {
 public:
  Rounds(QuotaTree& tree, std::vector<Workload>& workloads,
         const std::vector<KueuePreemptionStrategy>& strategies, CancelPoll& poll)
      : tree_(tree), workloads_(workloads), poll_(poll) {
    const int n = tree.size();
    const size_t count = workloads.size();
    holds_.assign(count, 0);
    admitted_now_.assign(count, 0);
    evicted_.assign(count, 0);
    set_aside_.assign(count, 0);
    no_fit_.assign(count, 0);
    waited_.assign(count, 0);
    ever_head_.assign(count, 0);
    available_.assign(count, 0);
    claimed_by_.assign(count, -1);
    reason_.assign(count, "");
    cells_.assign(count, {});
    message_.assign(count, "");
    pending_order_.assign(n, {});
    members_.assign(n, {});
    for (size_t i = 0; i < count; ++i) {
      holds_[i] = workloads[i].admitted ? 1 : 0;
      available_[i] = holds_[i];
      members_[workloads[i].cq].push_back(static_cast<int>(i));
      if (!workloads[i].admitted && workloads[i].has_pods) {
        pending_order_[workloads[i].cq].push_back(static_cast<int>(i));
      }
    }
    for (std::vector<int>& order : pending_order_) {
      std::sort(order.begin(), order.end(), [&workloads](int a, int b) {
        return AdmissionOrderBefore(workloads[a], workloads[b]);
      });
    }
    root_of_.assign(n, -1);
    for (int node : tree.queues().top_down()) {
      const int parent = tree.parent(node);
      root_of_[node] = parent < 0 ? node : root_of_[parent];
    }
    index_ = CandidateIndex::Build(workloads, tree.queues(), tree.resource_count());
    leaf_usage_ = LeafUsage(workloads, holds_, n, tree.resource_count());
    index_.RefreshSums(workloads, available_, {});
    slot_of_.assign(count, -1);
    context_.tree = &tree_;
    context_.workloads = &workloads_;
    context_.index = &index_;
    context_.available = &available_;
    context_.strategies = strategies;
    buffers_ = MakeSearchBuffers(tree);
    context_.buffers = buffers_.get();
    context_.poll = &poll_;
  }

  absl::StatusOr<AdmissionOutcome> Run(const CycleHooks& hooks, int max_rounds);

 private:
  struct Claim {
    int target;
    int preemptor;
    EvictionReason reason;
    std::string message;
  };

  // The tree of the admitted workloads (§5.4 step 1). Only the queues in `changed_` are summed
  // again (their workloads in name order, as LeafUsage does); cohorts are always re-summed.
  void RebuildTree();
  // One Kueue cycle; true when it admitted, evicted or set aside something.
  bool RunRound();
  // §5.4 step 5 for one entry; true when it admitted, claimed targets or was set aside.
  bool Process(int w, Nomination nomination);
  // Whether w fits once the targets claimed so far and `targets` are gone; when it does not,
  // `shortfall` names the first resource short. The tree is left as it was.
  bool FitsAfterEvictions(int w, const std::vector<PreemptionTarget>& targets,
                          std::string* shortfall);
  // The end of Process for an entry that fits: claims its targets (moving their messages out of
  // `nomination`) and takes its usage; admits it when it needed no preemption, else records
  // that it waits for its victims. True.
  bool ClaimTargets(int w, Nomination& nomination, bool fits_before_evictions);
  bool OverlapsClaims(const std::vector<PreemptionTarget>& targets) const;
  std::string ClaimersOf(const std::vector<PreemptionTarget>& targets) const;
  void Record(int w, const char* reason, std::string message) {
    reason_[w] = reason;
    message_[w] = std::move(message);
  }
  void SetAside(int w, const std::string& reason, std::string message) {
    set_aside_[w] = 1;
    reason_[w] = reason;
    message_[w] = std::move(message);
  }
  void Reserve(int w);
  // A flavored queue's nomination: the workload takes its assignment's usage (§5.8.7).
  void TakeAssignment(int w, Nomination& nomination) {
    if (!nomination.assigned) return;
    workloads_[w].usage = nomination.usage;
    cells_[w] = std::move(nomination.cells);
  }
  PendingDecision Pending(int w) const;

  QuotaTree& tree_;
  std::vector<Workload>& workloads_;
  CancelPoll& poll_;
  CandidateIndex index_;
  PreemptionContext context_;
  std::shared_ptr<SearchBuffers> buffers_;
  std::vector<int> root_of_;
  std::vector<std::vector<int>> pending_order_;  // per ClusterQueue, admission order
  std::vector<std::vector<int>> members_;        // per ClusterQueue, its workloads, name order
  std::vector<double> leaf_usage_;               // per ClusterQueue, Use of what it holds
  std::vector<int> changed_;                     // queues whose holdings changed last round
  std::vector<int> slot_of_;                     // workload -> its nomination this round
  // Per workload.
  std::vector<char> holds_;         // holds quota now (admitted, not evicted)
  std::vector<char> admitted_now_;  // admitted in this call
  std::vector<char> evicted_;       // evicted in this call
  std::vector<char> set_aside_;
  std::vector<char> no_fit_;  // this round: nominated NoFit (takes part with no usage)
  std::vector<char> waited_;  // was waiting for evictions made in this call
  std::vector<char> ever_head_;
  std::vector<char> available_;  // may be a preemption target now
  std::vector<int> claimed_by_;  // this round: the preemptor that claimed it, or -1
  std::vector<std::string> reason_;
  std::vector<std::string> message_;
  std::vector<PodSetCells> cells_;  // a flavored queue's workload: its latest assignment
  // This round.
  std::vector<int> claimed_;
  std::vector<Claim> claims_;
  // The call.
  std::vector<AdmissionDecision> admissions_;
  std::vector<EvictionDecision> evictions_;
};

bool Rounds::OverlapsClaims(const std::vector<PreemptionTarget>& targets) const {
  for (const PreemptionTarget& target : targets) {
    if (claimed_by_[target.workload] >= 0) return true;
  }
  return false;
}

std::string Rounds::ClaimersOf(const std::vector<PreemptionTarget>& targets) const {
  std::vector<int> claimers;
  for (const PreemptionTarget& target : targets) {
    if (claimed_by_[target.workload] >= 0) claimers.push_back(claimed_by_[target.workload]);
  }
  std::sort(claimers.begin(), claimers.end());
  claimers.erase(std::unique(claimers.begin(), claimers.end()), claimers.end());
  std::vector<std::string> names;
  for (int claimer : claimers) names.push_back(CappedName(workloads_[claimer].name()));
  return absl::StrJoin(names, ", ");
}

void Rounds::Reserve(int w) {
  const Workload& workload = workloads_[w];
  const int x = workload.cq;
  bool would_borrow = false;
  for (const ResourceAmount& request : workload.usage) {
    if (tree_.usage(x, request.resource) + request.amount > tree_.nominal(x, request.resource)) {
      would_borrow = true;
    }
  }
  Usage reservation;
  for (const ResourceAmount& request : workload.usage) {
    const int r = request.resource;
    const double used = tree_.usage(x, r);
    const double nominal = tree_.nominal(x, r);
    double amount = 0;
    if (would_borrow) {
      amount = tree_.has_borrowing_limit(x, r)
                   ? std::min(request.amount, nominal + tree_.borrowing_limit(x, r) - used)
                   : request.amount;
    } else {
      amount = std::min(request.amount, nominal - used);
    }
    // Over-admitted queues reserve nothing rather than hand quota back.
    if (amount > 0) reservation.push_back(ResourceAmount{r, amount});
  }
  tree_.AddUsage(x, reservation);
}

bool Rounds::Process(int w, Nomination nomination) {
  const Workload& workload = workloads_[w];
  const int x = workload.cq;
  bool deferred = false;
  if (nomination.mode == NominationMode::kPreempt && OverlapsClaims(nomination.targets)) {
    const std::string claimers = ClaimersOf(nomination.targets);
    const size_t mark = tree_.Mark();
    for (int c : claimed_) tree_.RemoveUsage(workloads_[c].cq, workloads_[c].usage);
    // A re-nomination never switches flavors (§5.8.7 step 3).
    const FlavorPin pin = std::move(nomination.pin);
    nomination = Nominate(context_, w, workload.flavored ? &pin : nullptr);
    tree_.Rollback(mark);
    TakeAssignment(w, nomination);
    if (nomination.mode == NominationMode::kFit) {
      deferred = true;
      nomination.message = claimers;
    }
  }
  if (nomination.mode == NominationMode::kNoFit) {
    SetAside(w, nomination.reason, std::move(nomination.message));
    return true;
  }
  if (nomination.mode == NominationMode::kPreempt && nomination.targets.empty()) {
    SetAside(w, nomination.reason, std::move(nomination.message));
    if (tree_.queues().queue(x).kueue_preemption.reclaim_within_cohort !=
        ReclaimWithinCohort::kAny) {
      Reserve(w);
    }
    return true;
  }
  if (deferred) {
    tree_.AddUsage(x, workload.usage);
    waited_[w] = 1;
    Record(w, kWaitingForPreemptions,
           absl::StrCat("fits once the workloads preempted for ", nomination.message,
                        " in this cycle are gone"));
    return false;
  }
  if (OverlapsClaims(nomination.targets)) {
    Record(w, kOverlappingPreemptionTargets,
           absl::StrCat("its preemption targets are already claimed by ",
                        ClaimersOf(nomination.targets)));
    return false;
  }
  const bool fits_before_evictions = tree_.Fits(x, workload.usage);
  std::string shortfall;
  if (!FitsAfterEvictions(w, nomination.targets, &shortfall)) {
    Record(w, kNoLongerFits,
           absl::StrCat("no longer fits after earlier workloads of this cycle: ", shortfall));
    return false;
  }
  return ClaimTargets(w, nomination, fits_before_evictions);
}

bool Rounds::FitsAfterEvictions(int w, const std::vector<PreemptionTarget>& targets,
                                std::string* shortfall) {
  const Workload& workload = workloads_[w];
  const int x = workload.cq;
  const size_t mark = tree_.Mark();
  for (int c : claimed_) tree_.RemoveUsage(workloads_[c].cq, workloads_[c].usage);
  for (const PreemptionTarget& target : targets) {
    tree_.RemoveUsage(workloads_[target.workload].cq, workloads_[target.workload].usage);
  }
  const bool fits = tree_.Fits(x, workload.usage);
  if (!fits) {
    for (const ResourceAmount& request : workload.usage) {
      if (request.amount > tree_.Available(x, request.resource)) {
        *shortfall = ShortfallMessage(tree_, x, request.resource, request.amount);
        break;
      }
    }
  }
  tree_.Rollback(mark);
  return fits;
}

bool Rounds::ClaimTargets(int w, Nomination& nomination, bool fits_before_evictions) {
  const Workload& workload = workloads_[w];
  const int x = workload.cq;
  std::vector<std::string> victims;
  for (PreemptionTarget& target : nomination.targets) {
    claimed_by_[target.workload] = w;
    available_[target.workload] = 0;
    claimed_.push_back(target.workload);
    victims.push_back(CappedName(workloads_[target.workload].name()));
    claims_.push_back(Claim{target.workload, w, target.reason, std::move(target.message)});
  }
  tree_.AddUsage(x, workload.usage);
  if (nomination.mode == NominationMode::kFit) {
    holds_[w] = 1;
    admitted_now_[w] = 1;
    changed_.push_back(x);
    admissions_.push_back(
        AdmissionDecision{w, waited_[w] != 0 || !fits_before_evictions, std::move(cells_[w])});
    reason_[w].clear();
    message_[w].clear();
    return true;
  }
  waited_[w] = 1;
  Record(w, kWaitingForPreemptions,
         absl::StrCat("waiting for ",
                      Counted(static_cast<int64_t>(victims.size()), "preempted workload"),
                      " to release quota: ", absl::StrJoin(victims, ", ")));
  return true;
}

void Rounds::RebuildTree() {
  const int resource_count = tree_.resource_count();
  std::sort(changed_.begin(), changed_.end());
  changed_.erase(std::unique(changed_.begin(), changed_.end()), changed_.end());
  for (int cq : changed_) {
    double* row = leaf_usage_.data() + static_cast<size_t>(cq) * resource_count;
    std::fill(row, row + resource_count, 0.0);
    for (int w : members_[cq]) {
      if (!holds_[w]) continue;
      for (const ResourceAmount& amount : workloads_[w].usage)
        row[amount.resource] += amount.amount;
    }
  }
  changed_.clear();
  tree_.SetLeafUsage(leaf_usage_);
}

bool Rounds::RunRound() {
  RebuildTree();
  const int n = tree_.size();
  // Cancelled: the round stops between entries; Run returns the error, not the outcome.
  if (poll_.Tick(n)) return false;
  bool changed = false;
  std::vector<int> heads;
  for (int cq = 0; cq < n; ++cq) {
    for (int w : pending_order_[cq]) {
      if (holds_[w] || evicted_[w] || set_aside_[w]) continue;
      heads.push_back(w);
      ever_head_[w] = 1;
      break;
    }
  }
  // Claims became evictions at the end of the last round: nothing is claimed any more, and what
  // is available (held since before the call, not evicted) only lost the evicted workloads.
  for (int c : claimed_) claimed_by_[c] = -1;
  claimed_.clear();
  claims_.clear();

  // Nominate every head on the round's starting tree. A NoFit entry still takes part in the
  // tournament, with no usage (§5.4 step 4): while it waits, it may be what represents its
  // cohort one level up. It is set aside when it is processed.
  std::vector<Nomination> nominations;
  nominations.reserve(heads.size());
  std::vector<std::vector<int>> entries_of_root(n);
  for (int w : heads) {
    if (poll_.Tick(1 + tree_.queues().entry(workloads_[w].cq).depth)) return false;
    Nomination nomination = Nominate(context_, w);
    TakeAssignment(w, nomination);
    no_fit_[w] = nomination.mode == NominationMode::kNoFit ? 1 : 0;
    slot_of_[w] = static_cast<int>(nominations.size());
    nominations.push_back(std::move(nomination));
    entries_of_root[root_of_[workloads_[w].cq]].push_back(w);
  }
  for (int root : tree_.queues().roots()) {
    if (entries_of_root[root].empty()) continue;
    Tournament tournament(&tree_, &workloads_, root, entries_of_root[root], &no_fit_);
    while (!tournament.empty()) {
      const int w = tournament.Winner();
      if (poll_.Tick(1 + tree_.queues().entry(workloads_[w].cq).depth)) return false;
      if (Process(w, std::move(nominations[slot_of_[w]]))) changed = true;
      tournament.Remove(w);
    }
  }

  if (!claims_.empty()) {
    std::vector<int> evicted_from;
    for (Claim& claim : claims_) {
      evicted_[claim.target] = 1;
      holds_[claim.target] = 0;
      evicted_from.push_back(workloads_[claim.target].cq);
      changed_.push_back(workloads_[claim.target].cq);
      evictions_.push_back(
          EvictionDecision{claim.target, claim.preemptor, claim.reason, std::move(claim.message)});
    }
    std::fill(set_aside_.begin(), set_aside_.end(), 0);  // capacity was released
    std::sort(evicted_from.begin(), evicted_from.end());
    evicted_from.erase(std::unique(evicted_from.begin(), evicted_from.end()), evicted_from.end());
    index_.RefreshSums(workloads_, available_, evicted_from);
    changed = true;
  }
  return changed;
}

PendingDecision Rounds::Pending(int w) const {
  const Workload& workload = workloads_[w];
  if (!workload.has_pods) return PendingDecision{w, kGangIncomplete, "the workload has no pods"};
  if (!ever_head_[w]) {
    int ahead = 0;
    for (int other : pending_order_[workload.cq]) {
      if (other == w) break;
      if (!holds_[other] && !evicted_[other]) ++ahead;
    }
    return PendingDecision{w, kNotReached,
                           absl::StrCat("never at the head of ", NodeLabel(tree_, workload.cq),
                                        " in this cycle: ", Counted(ahead, "pending workload"), " ",
                                        IsOrAre(ahead), " ahead of it")};
  }
  return PendingDecision{w, reason_[w], message_[w]};
}

absl::StatusOr<AdmissionOutcome> Rounds::Run(const CycleHooks& hooks, int max_rounds) {
  AdmissionOutcome outcome;
  while (true) {
    if (hooks.cancelled && hooks.cancelled()) {
      return absl::CancelledError(
          absl::StrCat("cancelled in phase admission after ", outcome.rounds, " rounds"));
    }
    ++outcome.rounds;
    const bool changed = RunRound();
    if (poll_.cancelled()) {
      return absl::CancelledError(
          absl::StrCat("cancelled in phase admission in round ", outcome.rounds));
    }
    if (!changed || outcome.rounds == max_rounds) break;
  }
  RebuildTree();
  std::sort(admissions_.begin(), admissions_.end(),
            [](const AdmissionDecision& a, const AdmissionDecision& b) {
              return a.workload < b.workload;
            });
  std::sort(
      evictions_.begin(), evictions_.end(),
      [](const EvictionDecision& a, const EvictionDecision& b) { return a.workload < b.workload; });
  for (size_t i = 0; i < workloads_.size(); ++i) {
    if (holds_[i] || evicted_[i]) continue;
    outcome.pending.push_back(Pending(static_cast<int>(i)));
  }
  outcome.admissions = std::move(admissions_);
  outcome.evictions = std::move(evictions_);
  outcome.holds_quota = holds_;
  return outcome;
}

}  // namespace

absl::StatusOr<AdmissionOutcome> RunAdmission(
    QuotaTree& tree, std::vector<Workload>& workloads,
    const std::vector<KueuePreemptionStrategy>& strategies, const CycleHooks& hooks,
    int max_rounds) {
  CancelPoll poll(&hooks.cancelled);
  poll.set_phase("admission");
  Rounds rounds(tree, workloads, strategies, poll);
  return rounds.Run(hooks, max_rounds);
}

}  // namespace arbiter::kueue
