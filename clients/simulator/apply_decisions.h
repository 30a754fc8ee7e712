// Applying a Schedule response to its snapshot, as the next scheduling cycle would see it. One
// implementation, shared by `arbiter simulate` and the property tests:
//   - a bound pod becomes RUNNING on its node with start_time = now (a moved pod, which has an
//     eviction and a binding, ends RUNNING on its new node); a pod that shares GPUs (SEMANTICS
//     §4.13) takes the binding's gpu_groups as its devices, a new device's "new-<j>" included
//     (keys are opaque and unique on their node while the device exists, so the name stays);
//   - an evicted pod without a binding becomes PENDING again, in its own group, with no node,
//     no start time and no GPU devices;
//   - RELEASING pods of the input disappear (their termination is done);
//   - KUEUE: an admitted group gets admitted = true, admission_time = now and, with resource
//     flavors, the admission's flavors (PodGroup.flavors = Admission.pod_sets); a group with an
//     evicted pod loses its admission (admitted = false, no admission_time, no flavors);
//   - `now` and everything else stay the same.
#pragma once

#include "absl/status/statusor.h"
#include "core/model.h"

namespace arbiter::simulator {

// The snapshot after the decisions. InvalidArgument when the response names an unknown pod
// group, pod or node, binds or evicts a pod twice, binds a pod that is neither PENDING nor
// evicted in the same response (a move), binds a pod with other than its number of GPU devices
// (gpu_fraction_devices, or 1, for a pod that shares; none for another), or evicts a pod that is
// not RUNNING (KAI) or of a group that was not admitted (KUEUE).
absl::StatusOr<Snapshot> ApplyDecisions(const Snapshot& snapshot, const Policy& policy,
                                        const ScheduleResult& result);

}  // namespace arbiter::simulator
