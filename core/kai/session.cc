#include "core/kai/session.h"

namespace arbiter::kai {

Session::Session(const Snapshot& snapshot, const Policy& policy, const KaiFairShare& shares)
    : policy_(policy),
      shares_(shares),
      cluster_(snapshot, shares.resources, shares.tree),
      feasibility_(cluster_),
      index_(cluster_, feasibility_, policy.placement),
      state_(std::make_unique<WorkingState>(cluster_, shares, &index_)),
      placer_(std::make_unique<Placer>(cluster_, feasibility_, index_, *state_)),
      reasons_(cluster_.num_groups()) {}

}  // namespace arbiter::kai
