// GPU sharing's device choice (SEMANTICS.md §4.13.3) and the room a node's devices offer to the
// skip tests (§4.13.5). The device state itself lives in WorkingState (working_state.h, §4.13.2),
// journaled with the nodes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kai/cluster.h"
#include "core/kai/working_state.h"
#include "core/model.h"

namespace arbiter::kai {

// DP of §4.13.3: Policy.gpu_device_placement, or Policy.placement when that is UNSPECIFIED.
bool DevicesBinpack(const Policy& policy);

// What choose(p, n) of §4.13.3 finds on one node for a pod that shares.
struct DeviceFit {
  bool fits = false;      // choose(p, n) != none
  bool joinable = false;  // J != ∅: an active device has room for the pod (the +200 band)
  DeviceChoice choice;    // C in its order, and `now`
};

// choose(p, n): the devices `pod` takes on `node` in `state`, or none. Other resources than G
// must fit pipelined (`now` also needs them to fit now). A memory pod fits no node whose
// gpu_device_memory is unknown (0). `scratch` (reused between calls) holds J; C is written to
// fit->choice.devices only with `with_devices` (fits, joinable and now are set either way).
void ChooseDevices(const WorkingState& state, int pod, int node, bool binpack, bool with_devices,
                   std::vector<int>* scratch, DeviceFit* fit);

// The device term of room_G on `node` (§4.13.5): Σ over its active devices of
// (idle_k + releasing_k) / M_n, in key order.
double DeviceRoom(const WorkingState& state, int node);

// The device term that a bound on the pods able to fit may count (§4.8's skips, solver_bounds.h):
// the same sum with each device's term taken as 0 when negative, in slot order. A device above
// M_n in an over-committed snapshot (§4.13.6) holds nothing, and its debt frees nothing on the
// other devices, so it may not lower the count. `any_active`, when given, is set to whether the
// node has an active device. O(devices of the node), no allocation.
double ProvableDeviceRoom(const WorkingState& state, int node, bool* any_active = nullptr);

// The pod's G count in the skip tests (§4.13.5): d · min over `nodes` of u(p, n) / M_n, or
// amt(p) when `nodes` is empty.
double SkipTestGpu(const Cluster& cluster, int pod, const std::vector<int>& nodes);

// The largest share of one device that `pod` could still join or open on `node` (for the
// pending message), as a fraction of the device: max over active devices of
// (idle_k + releasing_k) / M_n, or 1 when a whole GPU is free in the pool.
double LargestFreeDeviceShare(const WorkingState& state, int node);

}  // namespace arbiter::kai
