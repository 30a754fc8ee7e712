// The placer's overlay (core/kai/placement.h, Placer::SetOverlay): with the node index frozen
// and the working state changed since, Choose must give the node it gives on an index brought up
// to date. Checked over generated KAI requests: random evictions, moves, restores and bindings
// in an open statement, then every pod that could be placed is chosen for both ways.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/generator/random.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/placement.h"
#include "core/kai/session.h"
#include "core/validation.h"
#include "gtest/gtest.h"
#include "tests/property/property_support.h"
#include "tests/property/state_mutation.h"
#include "tests/support/validated.h"

namespace arbiter::testing {
namespace {

using generator::GeneratorModel;
using kai::NodeChoice;
using kai::PodState;
using kai::Session;
using kai::WorkingState;

constexpr int kCases = 600;
constexpr int kRoundsPerCase = 6;

// Changes the state at random (MutateWorkingState).
void Mutate(Session& session, generator::Rng& rng) { MutateWorkingState(session, rng, 12); }

// The pods a search could place next: each group's next PENDING pod and every evicted pod.
std::vector<int> PlaceablePods(const Session& session) {
  const kai::Cluster& cluster = session.cluster();
  const WorkingState& state = session.state();
  std::vector<int> pods;
  for (int p = 0; p < cluster.num_pods(); ++p) {
    if (state.pod_state(p) == PodState::kEvicted) pods.push_back(p);
  }
  for (int g = 0; g < cluster.num_groups(); ++g) {
    if (state.pending_left(g) > 0) pods.push_back(state.pending_pod(g, 0));
  }
  return pods;
}

std::string Describe(const NodeChoice& choice) {
  return absl::StrCat(choice.node, choice.fits_now ? " now" : " pipelined");
}

// One generated KAI request's session with an overlay open over its frozen index for the whole
// case, as a try holds one, and closed with it; and placers made for the moment beside it.
class OverlaidCase {
 public:
  OverlaidCase(uint64_t index, bool spread)
      : options_(PropertyCaseOptions(index, GeneratorModel::kKai)),
        request_(generator::Generate(options_)),
        validated_(Validated(&request_, spread)),
        shares_(kai::ComputeKaiFairShare(validated_)),
        session_(shares_) {
    session_.state().FreezeIndex();
    mark_ = session_.state().Checkpoint();
    session_.placer().SetOverlay(&mark_);
  }
  OverlaidCase(const OverlaidCase&) = delete;
  OverlaidCase& operator=(const OverlaidCase&) = delete;
  ~OverlaidCase() {
    session_.placer().SetOverlay(nullptr);
    session_.state().Rollback(mark_);
    session_.state().ThawIndex();
  }

  Session& session() { return session_; }
  std::string Describe(uint64_t index) const { return DescribeCase(index, options_); }
  // A placer made for the moment over the same overlay: it weighs every stale node afresh.
  kai::Placer& Fresh() {
    fresh_.emplace(session_.cluster(), session_.feasibility(), session_.index(), session_.state());
    fresh_->SetOverlay(&mark_);
    return *fresh_;
  }

 private:
  static ValidatedSnapshot Validated(generator::GeneratedRequest* request, bool spread) {
    if (spread) request->policy.placement = Placement::kSpread;
    return MustValidate(request->snapshot, request->policy);
  }

  generator::GeneratorOptions options_;
  generator::GeneratedRequest request_;
  ValidatedSnapshot validated_;
  kai::KaiFairShare shares_;
  Session session_;
  WorkingState::Mark mark_{};
  std::optional<kai::Placer> fresh_;
};

TEST(OverlayChoice, ChoosesAsAnIndexBroughtUpToDate) {
  int compared = 0;
  int with_stale_nodes = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    const generator::GeneratorOptions options = PropertyCaseOptions(index, GeneratorModel::kKai);
    generator::GeneratedRequest request = generator::Generate(options);
    if (index % 3 == 0) request.policy.placement = Placement::kSpread;
    const ValidatedSnapshot validated = MustValidate(request.snapshot, request.policy);
    const kai::KaiFairShare shares = kai::ComputeKaiFairShare(validated);
    Session session(shares);
    WorkingState& state = session.state();
    generator::Rng rng(index * 104729 + 7);
    for (int round = 0; round < kRoundsPerCase; ++round) {
      state.FreezeIndex();
      const WorkingState::Mark mark = state.Checkpoint();
      session.placer().SetOverlay(&mark);
      Mutate(session, rng);
      // An inner statement rolled back, as a victim group that cannot be re-placed is.
      const WorkingState::Mark inner = state.Checkpoint();
      Mutate(session, rng);
      state.Rollback(inner);
      if (!state.node_journal().empty()) ++with_stale_nodes;
      const std::vector<int> pods = PlaceablePods(session);
      std::vector<NodeChoice> overlay;
      for (int pod : pods) overlay.push_back(session.placer().Choose(pod));
      session.placer().SetOverlay(nullptr);
      state.ThawIndex();
      for (size_t k = 0; k < pods.size(); ++k) {
        const NodeChoice fresh = session.placer().Choose(pods[k]);
        ASSERT_EQ(Describe(overlay[k]), Describe(fresh))
            << DescribeCase(index, options) << " round " << round << " pod " << pods[k];
        ++compared;
      }
      state.Rollback(mark);
    }
  }
  // The comparison means something only with stale nodes and pods to place.
  EXPECT_GE(with_stale_nodes, kCases * kRoundsPerCase / 2);
  EXPECT_GE(compared, kCases * 10);
}

// Within one overlay the placer folds the stale nodes' keys into binpack's score range once and
// then weighs again only the nodes changed since (Placer::FoldStaleKeys). Changes, rollbacks of
// inner statements and choices interleave here as in a try; after each change the range the
// session's placer gives every placeable pod must equal the one a placer made for the moment
// gives (it weighs every stale node), and so must the choice.
TEST(OverlayChoice, KeepsTheStaleKeyRangeAcrossChanges) {
  int compared = 0;
  for (uint64_t index = 0; index < kCases / 2; ++index) {
    OverlaidCase overlaid(index, /*spread=*/false);
    Session& session = overlaid.session();
    WorkingState& state = session.state();
    generator::Rng rng(index * 7919 + 3);
    for (int round = 0; round < kRoundsPerCase; ++round) {
      if (rng.Below(3) == 0) {
        const WorkingState::Mark inner = state.Checkpoint();
        Mutate(session, rng);
        state.Rollback(inner);
      } else {
        Mutate(session, rng);
      }
      kai::Placer& fresh = overlaid.Fresh();
      for (int pod : PlaceablePods(session)) {
        double kept_min, kept_max, fresh_min, fresh_max;
        session.placer().ScoreRange(pod, &kept_min, &kept_max);
        fresh.ScoreRange(pod, &fresh_min, &fresh_max);
        ASSERT_EQ(kept_min, fresh_min) << overlaid.Describe(index) << " round " << round;
        ASSERT_EQ(kept_max, fresh_max) << overlaid.Describe(index) << " round " << round;
        ASSERT_EQ(Describe(session.placer().Choose(pod)), Describe(fresh.Choose(pod)))
            << overlaid.Describe(index) << " round " << round << " pod " << pod;
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, kCases * 5);
}

// A try chooses for the pods of one victim group after another while the state changes between
// the choices, and a group that cannot be re-placed is rolled back after its choices. Here the
// same two pods are chosen for again and again through such changes: each choice must equal the
// one a placer made for the moment gives (it reads every stale node afresh). Before the placer
// read the journal again after a roll-back, a node journaled where a rolled-back entry had been
// was not taken as stale, and its frozen entry was read instead of its amounts. The placer also
// keeps, per pod shape and band group, the stale nodes that can take the shape, and weighs again
// only the nodes the journal names since its last choice for that shape (Placer::StaleFits):
// choosing for the same pods again reads exactly those.
TEST(OverlayChoice, ChoosesAsAnIndexBroughtUpToDateAcrossRollBacks) {
  int compared = 0;
  for (uint64_t index = 0; index < kCases / 2; ++index) {
    OverlaidCase overlaid(index, /*spread=*/index % 3 == 1);
    Session& session = overlaid.session();
    WorkingState& state = session.state();
    generator::Rng rng(index * 6271 + 11);
    Mutate(session, rng);
    const std::vector<int> placeable = PlaceablePods(session);
    if (placeable.empty()) continue;
    // Two pods, chosen for in turn: the second choice of a pod reads only what changed.
    const int first = placeable[rng.Below(placeable.size())];
    const int second = placeable[rng.Below(placeable.size())];
    const auto placeable_now = [&state](int pod) {
      return state.pod_state(pod) == PodState::kEvicted ||
             state.pod_state(pod) == PodState::kPending;
    };
    for (int round = 0; round < 3 * kRoundsPerCase; ++round) {
      switch (rng.Below(4)) {
        case 0: {
          // A victim group's re-placement that fails: its choices, then the roll-back, then
          // other changes.
          const WorkingState::Mark inner = state.Checkpoint();
          MutateWorkingState(session, rng, 1 + static_cast<int>(rng.Below(3)));
          for (int pod : {first, second}) {
            if (placeable_now(pod)) session.placer().Choose(pod);
          }
          state.Rollback(inner);
          if (rng.Below(2) == 0) MutateWorkingState(session, rng, 3);
          break;
        }
        case 1:
          break;  // nothing changed since the last choice
        default:
          MutateWorkingState(session, rng, 1 + static_cast<int>(rng.Below(3)));
      }
      kai::Placer& fresh = overlaid.Fresh();
      for (int pod : {first, second, first}) {
        if (!placeable_now(pod)) continue;
        ASSERT_EQ(Describe(session.placer().Choose(pod)), Describe(fresh.Choose(pod)))
            << overlaid.Describe(index) << " round " << round << " pod " << pod;
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, kCases * 5);
}

}  // namespace
}  // namespace arbiter::testing
