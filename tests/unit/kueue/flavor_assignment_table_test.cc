// The flavor assigner (SEMANTICS.md §5.8.6) driven directly, one nomination per case, on a table
// of cases shaped like Kueue's own assigner tests (pkg/scheduler/flavorassigner,
// TestAssignFlavors): a ClusterQueue with its resource groups and fungibility, maybe a cohort with
// a second queue, the usage already admitted, and one pending workload; the expected flavor of each
// pod set's resources and the representative mode (Fit, Preempt, or NoFit with its reason). Where
// Kueue's table mocks the preemption oracle, these cases admit the workloads the oracle would find.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/kueue/flavor_assignment.h"
#include "core/pending_reasons.h"
#include "gtest/gtest.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace arbiter::kueue {
namespace {

using testing::SnapshotBuilder;
using PodSetMap = std::map<std::string, std::map<std::string, std::string>>;

struct AssignCase {
  std::string name;
  std::function<SnapshotBuilder()> build;  // the pending workload is the group named "w"
  const char* want_mode;                   // "Fit", "Preempt" or "NoFit"
  PodSetMap want_flavors;                  // Fit and Preempt
  const char* want_reason = "";            // NoFit
};

struct Assigned {
  std::string mode;
  PodSetMap flavors;
  std::string reason;
  std::string message;
};

// One nomination's flavor assignment for "w" on the starting tree of `snapshot`.
Assigned AssignW(const Snapshot& snapshot) {
  const std::unique_ptr<testing::BuiltTree> built = testing::BuildTree(snapshot);
  const QuotaTree& tree = built->tree;
  const testing::SearchSetup setup(*built, testing::KueuePolicy());
  const std::vector<Workload>& workloads = setup.workloads;
  int w = -1;
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (workloads[i].name() == "w") w = static_cast<int>(i);
  }
  Assigned out;
  EXPECT_GE(w, 0);
  if (w < 0) return out;
  const FlavorAssignment a = AssignFlavors(setup.context, workloads[w], nullptr);
  switch (a.mode) {
    case FlavorAssignment::Mode::kFit:
      out.mode = "Fit";
      break;
    case FlavorAssignment::Mode::kPreempt:
      out.mode = "Preempt";
      break;
    case FlavorAssignment::Mode::kNoFit:
      out.mode = "NoFit";
      break;
  }
  out.reason = a.reason;
  out.message = a.message;
  if (a.mode == FlavorAssignment::Mode::kNoFit) return out;  // no flavor for every pod set
  for (size_t s = 0; s < a.cells.size(); ++s) {
    const PodSet& set = workloads[w].pod_sets[s];
    for (size_t i = 0; i < a.cells[s].size(); ++i) {
      out.flavors[std::string(set.name)][tree.resources().name(set.request[i].resource)] =
          tree.cells().flavor(a.cells[s][i]);
    }
  }
  return out;
}

// A ClusterQueue "cq" (in cohort "cohort" when `cohort`), with no groups yet.
SnapshotBuilder Base(bool cohort) {
  SnapshotBuilder b;
  b.Now(1000)
      .Flavor("default")
      .Flavor("one")
      .FlavorLabel("type", "one")
      .Flavor("two")
      .FlavorLabel("type", "two")
      .Flavor("tainted")
      .FlavorTaint("instance", "spot", "NoSchedule");
  if (cohort) b.Queue("cohort");
  b.Queue("cq", cohort ? "cohort" : "");
  return b;
}

const AssignCase kCases[] = {
    {"SingleFlavorFits",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu", "memory"}).FlavorQuota("default", {{"cpu", 1}, {"memory", 2}});
       b.Group("w", "cq").Pod({{"cpu", 1}, {"memory", 1}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "default"}, {"memory", "default"}}}}},
    {"SingleFlavorTaintedWithoutTolerationDoesNotMatch",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("tainted", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 1}});
       return b;
     },
     "NoFit",
     {},
     kNoMatchingFlavor},
    {"SingleFlavorFitsTaintedFlavorWithToleration",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("tainted", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 1}}).Tolerate("instance", "Equal", "spot", "NoSchedule");
       return b;
     },
     "Fit",
     {{"", {{"cpu", "tainted"}}}}},
    // The quota is within nominal once the used 3 go, but nothing may be preempted: NO_CANDIDATES,
    // which is not a fit, so the representative mode is Preempt (its search finds no targets).
    {"SingleFlavorUsedResourcesDoesNotFit",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("default", {{"cpu", 4}});
       b.Group("used", "cq")
           .Admitted(10)
           .Preemptible(Preemptibility::kNonPreemptible)
           .Pod({{"cpu", 3}})
           .AssignedFlavor("", "cpu", "default");
       b.Group("w", "cq").Pod({{"cpu", 2}});
       return b;
     },
     "Preempt",
     {{"", {{"cpu", "default"}}}}},
    {"MultipleResourceGroupsFit",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu", "memory"})
           .FlavorQuota("one", {{"cpu", 2}, {"memory", 10}})
           .FlavorQuota("two", {{"cpu", 4}, {"memory", 15}});
       b.ResourceGroup({"example.com/gpu"})
           .FlavorQuota("b_one", {{"example.com/gpu", 4}})
           .FlavorQuota("b_two", {{"example.com/gpu", 2}});
       b.Group("w", "cq").Pod({{"cpu", 3}, {"memory", 10}, {"example.com/gpu", 3}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "two"}, {"memory", "two"}, {"example.com/gpu", "b_one"}}}}},
    {"MultipleResourcesInAGroupDoesNotFit",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu", "memory"})
           .FlavorQuota("one", {{"cpu", 2}, {"memory", 1}})
           .FlavorQuota("two", {{"cpu", 1}, {"memory", 5}});
       b.Group("w", "cq").Pod({{"cpu", 2}, {"memory", 2}});
       return b;
     },
     "NoFit",
     {},
     kExceedsMaxQuota},
    {"MultipleFlavorsFitWhileSkippingTaintedFlavor",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"})
           .FlavorQuota("tainted", {{"cpu", 4}})
           .FlavorQuota("two", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 3}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "two"}}}}},
    {"MultipleFlavorsFitANodeSelector",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 4}}).FlavorQuota("two", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 1}}).Selector("type", "two");
       return b;
     },
     "Fit",
     {{"", {{"cpu", "two"}}}}},
    {"MultipleSpecsFitDifferentFlavors",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 4}}).FlavorQuota("two", {{"cpu", 10}});
       b.Group("w", "cq").Pod({{"cpu", 3}}).PodSet("driver").Pod({{"cpu", 5}}).PodSet("worker");
       return b;
     },
     "Fit",
     {{"driver", {{"cpu", "one"}}}, {"worker", {{"cpu", "two"}}}}},
    {"MultipleSpecsFitBorrowing",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("default", {{"cpu", 2}});
       b.Queue("lender", "cohort").ResourceGroup({"cpu"}).FlavorQuota("default", {{"cpu", 6}});
       b.Group("w", "cq").Pod({{"cpu", 3}}).PodSet("driver").Pod({{"cpu", 3}}).PodSet("worker");
       return b;
     },
     "Fit",
     {{"driver", {{"cpu", "default"}}}, {"worker", {{"cpu", "default"}}}}},
    {"NotEnoughSpaceToBorrow",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 1}});
       b.Queue("lender", "cohort").ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 2}});
       b.Group("w", "cq").Pod({{"cpu", 4}});
       return b;
     },
     "NoFit",
     {},
     kExceedsMaxQuota},
    {"PastMaxButCanPreemptInClusterQueue",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 2}}, {{"cpu", 8}});
       b.KueuePolicy(WithinClusterQueue::kLowerPriority, ReclaimWithinCohort::kNever);
       b.Queue("other", "cohort").ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 98}});
       b.Group("mine", "cq").Admitted(10).Pod({{"cpu", 9}}).AssignedFlavor("", "cpu", "one");
       b.Group("theirs", "other").Admitted(10).Pod({{"cpu", 90}}).AssignedFlavor("", "cpu", "one");
       b.Group("w", "cq").Priority(5).Pod({{"cpu", 2}});
       return b;
     },
     "Preempt",
     {{"", {{"cpu", "one"}}}}},
    {"ResourceNotListedInClusterQueue",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 1}, {"example.com/gpu", 1}});
       return b;
     },
     "NoFit",
     {},
     kResourceNotCovered},
    {"ZeroRequestOfAResourceNotInTheClusterQueueFits",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 1}, {"example.com/gpu", 0}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "one"}}}}},
    {"PreemptBeforeTryNextFlavor",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 2}}).FlavorQuota("two", {{"cpu", 4}});
       b.KueuePolicy(WithinClusterQueue::kLowerPriority, ReclaimWithinCohort::kNever)
           .Fungibility(WhenCanBorrow::kMayStopSearch, WhenCanPreempt::kMayStopSearch);
       b.Group("low", "cq").Admitted(10).Pod({{"cpu", 2}}).AssignedFlavor("", "cpu", "one");
       b.Group("w", "cq").Priority(5).Pod({{"cpu", 2}});
       return b;
     },
     "Preempt",
     {{"", {{"cpu", "one"}}}}},
    {"PreemptTryNextFlavor",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 2}}).FlavorQuota("two", {{"cpu", 4}});
       b.KueuePolicy(WithinClusterQueue::kLowerPriority, ReclaimWithinCohort::kNever)
           .Fungibility(WhenCanBorrow::kMayStopSearch, WhenCanPreempt::kTryNextFlavor);
       b.Group("low", "cq").Admitted(10).Pod({{"cpu", 2}}).AssignedFlavor("", "cpu", "one");
       b.Group("w", "cq").Priority(5).Pod({{"cpu", 2}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "two"}}}}},
    {"BorrowTryNextFlavorFoundTheFirstFlavor",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 4}}).FlavorQuota("two", {{"cpu", 4}});
       b.Fungibility(WhenCanBorrow::kTryNextFlavor, WhenCanPreempt::kTryNextFlavor);
       b.Queue("lender", "cohort").ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 3}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "one"}}}}},
    {"BorrowTryNextFlavorFoundTheSecondFlavor",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 2}}).FlavorQuota("two", {{"cpu", 4}});
       b.Fungibility(WhenCanBorrow::kTryNextFlavor, WhenCanPreempt::kTryNextFlavor);
       b.Queue("lender", "cohort").ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 3}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "two"}}}}},
    {"BorrowBeforeTryNextFlavor",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 2}}).FlavorQuota("two", {{"cpu", 4}});
       b.Fungibility(WhenCanBorrow::kMayStopSearch, WhenCanPreempt::kTryNextFlavor);
       b.Queue("lender", "cohort").ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 4}});
       b.Group("w", "cq").Pod({{"cpu", 3}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "one"}}}}},
    {"LendTryNextFlavorFoundTheSecondFlavor",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 0}}).FlavorQuota("two", {{"cpu", 0}});
       b.Fungibility(WhenCanBorrow::kTryNextFlavor, WhenCanPreempt::kTryNextFlavor);
       // The lender keeps all but 1 of "one" (lending limit) and lends "two" whole.
       b.Queue("lender", "cohort")
           .ResourceGroup({"cpu"})
           .FlavorQuota("one", {{"cpu", 10}}, {}, {{"cpu", 1}})
           .FlavorQuota("two", {{"cpu", 10}});
       b.Group("w", "cq").Pod({{"cpu", 3}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "two"}}}}},
    {"OracleFindsNoCandidatesInTheFirstFlavorTheSecondFits",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 2}}).FlavorQuota("two", {{"cpu", 2}});
       b.KueuePolicy(WithinClusterQueue::kNever, ReclaimWithinCohort::kAny)
           .Fungibility(WhenCanBorrow::kMayStopSearch, WhenCanPreempt::kMayStopSearch);
       b.Queue("other", "cohort").ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 0}});
       // "other" borrows all of "one", but its workload is not preemptible: no candidates.
       b.Group("theirs", "other")
           .Admitted(10)
           .Preemptible(Preemptibility::kNonPreemptible)
           .Pod({{"cpu", 2}})
           .AssignedFlavor("", "cpu", "one");
       b.Group("w", "cq").Pod({{"cpu", 2}});
       return b;
     },
     "Fit",
     {{"", {{"cpu", "two"}}}}},
    {"PreemptionOverBorrowingBreaksBorrowingTiesWithPreemption",
     [] {
       SnapshotBuilder b = Base(true);
       b.ResourceGroup({"cpu"}).FlavorQuota("one", {{"cpu", 2}}).FlavorQuota("two", {{"cpu", 2}});
       b.KueuePolicy(WithinClusterQueue::kLowerPriority, ReclaimWithinCohort::kNever)
           .Fungibility(WhenCanBorrow::kTryNextFlavor, WhenCanPreempt::kTryNextFlavor,
                        FlavorPreference::kPreemptionOverBorrowing);
       b.Queue("lender", "cohort").ResourceGroup({"cpu"}).FlavorQuota("two", {{"cpu", 4}});
       // "one": full of a lower-priority workload (preempt, level 0); "two": fits by borrowing.
       b.Group("low", "cq").Admitted(10).Pod({{"cpu", 2}}).AssignedFlavor("", "cpu", "one");
       b.Group("mid", "cq")
           .Priority(9)
           .Admitted(10)
           .Pod({{"cpu", 2}})
           .AssignedFlavor("", "cpu", "two");
       b.Group("w", "cq").Priority(5).Pod({{"cpu", 2}});
       return b;
     },
     "Preempt",
     {{"", {{"cpu", "one"}}}}},
    {"NoFitReasonIsTheLeastSevereOverTheFlavors",
     [] {
       SnapshotBuilder b = Base(false);
       b.ResourceGroup({"cpu"})
           .FlavorQuota("tainted", {{"cpu", 8}})
           .FlavorQuota("one", {{"cpu", 1}});
       b.Group("w", "cq").Pod({{"cpu", 2}});
       return b;
     },
     "NoFit",
     {},
     kExceedsMaxQuota},
};

class AssignFlavorsTable : public ::testing::TestWithParam<AssignCase> {};

TEST_P(AssignFlavorsTable, AssignsTheExpectedFlavorsAndMode) {
  const AssignCase& c = GetParam();
  const Assigned got = AssignW(c.build().Build());
  EXPECT_EQ(got.mode, c.want_mode) << got.reason << ": " << got.message;
  if (std::string(c.want_mode) == "NoFit") {
    EXPECT_EQ(got.reason, c.want_reason) << got.message;
  } else {
    EXPECT_EQ(got.flavors, c.want_flavors);
  }
}

INSTANTIATE_TEST_SUITE_P(Semantics586, AssignFlavorsTable, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<AssignCase>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace arbiter::kueue
