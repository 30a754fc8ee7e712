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

void Session::CallAttemptHook(std::string_view action, int group, int pods,
                              std::string_view outcome, size_t first_note,
                              const std::vector<int>* restored) const {
  AttemptTrace trace;
  trace.action = action;
  trace.pod_group = cluster_.group_name(group);
  trace.pods = pods;
  trace.outcome = outcome;
  for (size_t k = first_note; k < evictions_.size(); ++k) {
    const int pod = evictions_[k].pod;
    std::vector<std::string_view>& list =
        state_->pod_state(pod) == PodState::kMoved ? trace.moved : trace.evicted;
    list.push_back(cluster_.pod_name(pod));
  }
  if (restored != nullptr) {
    for (int pod : *restored) trace.restored.push_back(cluster_.pod_name(pod));
  }
  (*attempt_hook_)(trace);
}

}  // namespace arbiter::kai
