#include "core/kai/session.h"

namespace arbiter::kai {

Session::Session(const KaiFairShare& shares, CancelPoll* poll)
    : policy_(shares.request->policy()),
      shares_(shares),
      poll_(poll != nullptr ? poll : &never_cancelled_),
      cluster_(*shares.request, poll_),
      feasibility_(cluster_, poll_),
      index_(cluster_, feasibility_, policy_.placement),
      state_(std::make_unique<WorkingState>(cluster_, shares, &index_)),
      placer_(std::make_unique<Placer>(cluster_, feasibility_, index_, *state_)),
      reasons_(cluster_.num_groups()) {
  placer_->SetDeviceBinpack(DevicesBinpack(policy_));
}

}  // namespace arbiter::kai
