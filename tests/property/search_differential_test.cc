// The victim search (SEMANTICS.md §4.8) reads the node index frozen during its tries, through the
// placer's overlay (core/kai/placement.h), instead of re-keying the index after every eviction,
// placement and roll-back; it draws each search's victim sequence once for all its parts, and
// picks a try's jobs incrementally (core/kai/solver.cc). The reference formulation
// (CycleHooks::reference_search) re-keys the index, draws a fresh order for every part and makes
// every pick of a try's order anew, and runs every try to its end (the search stops a try once
// the victims re-placed before the preemptor leave too little room, and once the victims that
// could not be re-placed make the validator's rejection certain). The two must give the same
// answers, byte for byte: this test runs both over generated KAI requests and compares them.
//
// `make test` runs 400 cases; ARBITER_SEARCH_CASES=N runs N (the README gives the command for
// the long run, thousands of cases).
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/generator/random.h"
#include "core/api/arbiter.h"
#include "gtest/gtest.h"
#include "tests/property/property_support.h"

namespace arbiter::testing {
namespace {

using generator::GeneratorModel;

constexpr int kDefaultCases = 400;

int Cases() { return CasesFromEnvironment("ARBITER_SEARCH_CASES", kDefaultCases); }

// Every case runs the four actions; the policy varies as the eviction properties vary it, and
// one case in four spreads instead of packing.
Policy CasePolicy(uint64_t index, Policy policy) {
  generator::Rng rng(index * 7919 + 11);
  policy.actions.clear();
  switch (rng.Below(4)) {
    case 1:
      policy.reclaimer_utilization_multiplier = 1.5;
      break;
    case 2:
      policy.consolidating_reclaim = false;
      break;
    default:
      break;
  }
  if (rng.Below(4) == 0) policy.placement = Placement::kSpread;
  return policy;
}

// What one case's two searches did, for the checks over many cases.
struct CaseTally {
  int evicting = 0;       // cases whose answer evicts or moves: the tries decided something
  int64_t cut_short = 0;  // tries the frozen search stopped early (the reference runs each whole)
  int64_t cut_rejected = 0;    // ... and those it stopped once their rejection was certain
  int64_t skipped_moves = 0;   // tries it skipped for the victims of R they must re-place
  int64_t skipped_ranked = 0;  // ... and for the victims of R ranked before the preemptor
  int64_t replayed = 0;        // explanation tries not made: the failed search made them
  int64_t devices_joined = 0;  // devices the eviction actions' placements joined (sharing cases)
};

// What a case's snapshot is made of.
enum class Variant {
  kPlain,
  kObstructed,  // Obstructed's snapshot
  kSharing,     // 20% to 100% of the pods share GPUs (§4.13), devices packed or spread
};

// The snapshot with what Solver::FitsWhereThePartFits checks of a victim put in its way, at
// random per seed: a leaf queue's limit at its allocation (so a re-placed victim meets its limit
// exactly), a group that keeps one pod per node, an elastic group (gang of 1, so that its later
// units join its job), and a group whose pods may go only on every other node.
Snapshot Obstructed(Snapshot snapshot, uint64_t seed) {
  generator::Rng rng(seed * 104729 + 7);
  for (size_t n = 0; n < snapshot.nodes.size(); n += 2) {
    snapshot.nodes[n].labels["arbiter.test/half"] = "yes";
  }
  std::map<std::string, ResourceMap> allocated;  // per leaf: its RUNNING pods' requests
  for (const PodGroup& group : snapshot.pod_groups) {
    for (const Pod& pod : group.pods) {
      if (pod.phase != PodPhase::kRunning) continue;
      for (const auto& [resource, amount] : pod.requests)
        allocated[group.queue][resource] += amount;
    }
  }
  for (Queue& queue : snapshot.queues) {
    auto it = allocated.find(queue.name);
    if (it == allocated.end() || rng.Below(3) != 0) continue;
    for (const auto& [resource, amount] : it->second) {
      if (amount > 0) queue.limit[resource] = amount;
    }
  }
  for (PodGroup& group : snapshot.pod_groups) {
    switch (rng.Below(6)) {
      case 0:
        group.one_pod_per_node = true;
        break;
      case 1:
        group.min_member = 1;
        break;
      case 2:
        for (Pod& pod : group.pods) pod.node_selector["arbiter.test/half"] = "yes";
        break;
      default:
        break;
    }
  }
  return snapshot;
}

// Runs case `index` both ways and compares the answers (fatal failures on a difference), on the
// snapshot `variant` gives.
void CompareCase(int index, CaseTally* tally, Variant variant = Variant::kPlain) {
  const uint64_t seed = static_cast<uint64_t>(index);
  generator::GeneratorOptions options = PropertyCaseOptions(seed, GeneratorModel::kKai);
  if (variant == Variant::kSharing) options.gpu_sharing = 20 + static_cast<double>(seed % 5) * 20;
  generator::GeneratedRequest request = generator::Generate(options);
  if (variant == Variant::kObstructed) {
    request.snapshot = Obstructed(std::move(request.snapshot), seed);
  }
  Policy policy = CasePolicy(seed, request.policy);
  if (variant == Variant::kSharing && seed % 3 == 0) {
    policy.gpu_device_placement = seed % 2 == 0 ? Placement::kSpread : Placement::kBinpack;
  }
  CycleHooks reference_hooks;
  reference_hooks.reference_search = true;
  const absl::StatusOr<ScheduleResult> reference =
      Schedule(request.snapshot, policy, reference_hooks);
  CycleHooks hooks;
  hooks.phase_counters = [tally](
                             std::string_view phase,
                             const std::vector<std::pair<std::string_view, int64_t>>& counters) {
    for (const auto& [name, value] : counters) {
      if (name == "devices_joined" && phase != "allocate") tally->devices_joined += value;
      if (name == "tries_cut_short") tally->cut_short += value;
      if (name == "tries_cut_rejected") tally->cut_rejected += value;
      if (name == "tries_skipped_moves") tally->skipped_moves += value;
      if (name == "tries_skipped_ranked") tally->skipped_ranked += value;
      if (name == "explanation_tries_replayed") tally->replayed += value;
    }
  };
  const absl::StatusOr<ScheduleResult> frozen = Schedule(request.snapshot, policy, hooks);
  const std::string what = DescribeCase(seed, options);
  ASSERT_EQ(reference.ok(), frozen.ok()) << what;
  if (!reference.ok()) {
    EXPECT_EQ(reference.status(), frozen.status()) << what;
    return;
  }
  const std::string diff = DiffResults(*reference, *frozen);
  ASSERT_EQ(diff, "") << what;
  if (!reference->evictions.empty()) ++tally->evicting;
}

TEST(SearchDifferential, TheFrozenIndexSearchAnswersAsTheReferenceSearch) {
  const int cases = Cases();
  CaseTally tally;
  for (int i = 0; i < cases; ++i) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(i, &tally));
  }
  // The comparison means something only where the search ran tries that decided an answer.
  EXPECT_GE(tally.evicting, cases / 4)
      << "cases whose answer evicts: " << tally.evicting << " of " << cases;
  EXPECT_GT(tally.cut_short, 0);
  EXPECT_GT(tally.cut_rejected, 0);
  EXPECT_GT(tally.skipped_moves, 0);
  RecordProperty("evicting_cases", tally.evicting);
  RecordProperty("tries_cut_short", static_cast<int>(tally.cut_short));
  RecordProperty("tries_cut_rejected", static_cast<int>(tally.cut_rejected));
  RecordProperty("tries_skipped_moves", static_cast<int>(tally.skipped_moves));
  RecordProperty("tries_skipped_ranked", static_cast<int>(tally.skipped_ranked));
}

// Pods that share GPUs (§4.13): the frozen search reads the joinable devices as they were at the
// try's start and weighs the nodes the try changed on their own (Placer::SearchJoinable); the
// reference scans every node's devices as they are. A quarter as many cases as the plain ones.
TEST(SearchDifferential, SharingCasesAnswerAsTheReferenceSearch) {
  const int cases = std::max(1, Cases() / 4);
  CaseTally tally;
  for (int i = 0; i < cases; ++i) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(i, &tally, Variant::kSharing));
  }
  EXPECT_GE(tally.evicting, cases / 4)
      << "cases whose answer evicts: " << tally.evicting << " of " << cases;
  EXPECT_GT(tally.devices_joined, 0);
  RecordProperty("evicting_cases", tally.evicting);
  RecordProperty("devices_joined", static_cast<int>(tally.devices_joined));
}

// A try is skipped when the nodes cannot hold its part together with the pods of R's groups it
// must re-place, those whose eviction the validator rejects (Solver::MovesBounds: each pod of the
// part takes some of their places where they may go, and the rest of the part may go elsewhere).
// These cases skip many such tries, and must answer as the reference search, which makes every
// try. Each tells a wrong count apart: 3795 one victim too many, 207 every group of R whatever
// the validator says, 30 one place too many per pod of the part, 3045 no room elsewhere.
TEST(SearchDifferential, TriesSkippedForTheVictimsTheyMustReplaceWouldFail) {
  CaseTally tally;
  for (int index : {30, 207, 1375, 2439, 3045, 3795, 4170}) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(index, &tally));
  }
  EXPECT_GE(tally.skipped_moves, 200);
}

// The pods of R a try must re-place, of several shapes, are also counted together: each shape's
// count takes the pods of the shapes it can join in its places (Solver::JoinedPlaces), since a
// pod of another shape takes at least as many of those places as it asks times over, wherever it
// goes, as long as it may go only where they may. These cases skip tries only those counts rule
// out, and must answer as the reference search. Each tells a wrong count apart: 707 and 1753
// (obstructed) one place too many per pod of another shape, 532 and 202 (obstructed) a shape that
// may go where the base may not; 7605, 13669 and 15158 skip tries only when every shape's count
// joins the others, not just the count of the shape that joins the most.
TEST(SearchDifferential, TriesSkippedForEveryShapeTheyMustReplaceTogetherWouldFail) {
  CaseTally tally;
  for (int index : {446, 532, 707, 3354, 6484, 7605, 13669, 15158}) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(index, &tally));
  }
  for (int index : {202, 1753}) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(index, &tally, Variant::kObstructed));
  }
  // 569 with every shape's count joined, 439 with only the count that joins the most, and fewer
  // with each shape alone.
  EXPECT_GE(tally.skipped_moves, 500);
  RecordProperty("tries_skipped_moves", static_cast<int>(tally.skipped_moves));
}

// The bounds skip or stop tries on what victims may do when re-placed: where they may go, whether
// a limit lets them back, whether a gang's later units join its job (Solver::OrderedMoves checks
// each before it counts on a victim being re-placed). On snapshots that put these in the way
// (Obstructed), the answers are still the reference search's.
TEST(SearchDifferential, ObstructedVictimsAnswerAsTheReferenceSearch) {
  const int cases = Cases();
  CaseTally tally;
  for (int i = 0; i < cases; ++i) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(i, &tally, Variant::kObstructed));
  }
  EXPECT_GE(tally.evicting, cases / 4)
      << "cases whose answer evicts: " << tally.evicting << " of " << cases;
  EXPECT_GT(tally.cut_short, 0);
}

// A try is also skipped when the nodes cannot hold its part together with the pods of R's groups
// that §4.3 ranks before the preemptor in it, each of which fits wherever the part fits
// (Solver::OrderedMoves). These cases must answer as the reference search: 1817, 9069, 10054,
// 11659 and 19222 are the ones among 20,000 where such tries are skipped; 1 fails when the
// ranking is not checked, and 1160 when a job on the victim's side is taken to carry nothing.
// Groups of several shapes ranked first are counted together (JoinedPlaces): 9069 and 19222
// skip tries only that count rules out. (The corpus's L answers fail when a victim with more
// pods than the part could make room for is counted, or when a try's own victims are left out
// of its ranking.)
TEST(SearchDifferential, TriesSkippedForTheVictimsRankedFirstWouldFail) {
  CaseTally tally;
  for (int index : {1, 1160, 1817, 9069, 10054, 11659, 19222}) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(index, &tally));
  }
  EXPECT_GT(tally.skipped_ranked, 0);
}

// Cases past the ones `make test` runs, kept because they once told a wrong shortcut apart:
// 2253 has a reclaim try whose victims that failed to be re-placed fail the saturation guard
// while the try's whole evicted set passes it (units left in a queue on the reclaimer's side
// lower its saturation), so a try may be stopped early only on the strategies.
TEST(SearchDifferential, KeptCasesAnswerAsTheReferenceSearch) {
  CaseTally tally;
  for (int index : {2253}) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(index, &tally));
  }
}

// A failed search whose victims min-runtime protects is searched again without min-runtime, for
// the reason (RunEvictionAction). That search replays the failed one (Solver::Record): while it
// draws the same victims, none of them protected, it does not make again the tries the failed
// search made and saw fail, and takes a part's recorded solution when its try is one of those.
// These cases, the ones among 20,000 where it does, must answer as the reference search, which
// never replays. (Reclaim.MinRuntimeReasonRetriesWhatAProtectedElasticVictimFailed fails when
// the replay passes over protected victims.)
TEST(SearchDifferential, ExplanationsThatReplayTheFailedSearchAnswerAsTheReferenceSearch) {
  CaseTally tally;
  for (int index : {613,   769,   853,   1376,  1921,  2419,  3124,  3812,  4399,  6653,
                    7714,  8032,  8046,  8869,  9093,  9351,  10019, 10834, 11461, 12947,
                    13207, 13400, 13849, 14777, 15105, 15235, 15721, 17175, 18823, 19517}) {
    ASSERT_NO_FATAL_FAILURE(CompareCase(index, &tally));
  }
  EXPECT_GT(tally.replayed, 0);
  RecordProperty("explanation_tries_replayed", static_cast<int>(tally.replayed));
}

}  // namespace
}  // namespace arbiter::testing
