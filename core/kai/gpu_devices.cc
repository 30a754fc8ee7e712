#include "core/kai/gpu_devices.h"

#include <algorithm>
#include <cmath>

namespace arbiter::kai {
namespace {

// The node's pool of G: idle and unclaimed releasing (0 when no node has G).
double PoolIdle(const WorkingState& state, int node) {
  const int gpu = state.cluster().node_gpu();
  return gpu < 0 ? 0 : state.idle(node, gpu);
}

double PoolReleasing(const WorkingState& state, int node) {
  const int gpu = state.cluster().node_gpu();
  return gpu < 0 ? 0 : state.releasing(node, gpu);
}

// The active devices of `node` in key order.
std::vector<int> ActiveByKey(const WorkingState& state, int node) {
  std::vector<int> active;
  for (int slot : state.node_devices(node)) {
    if (state.device_active(slot)) active.push_back(slot);
  }
  std::sort(active.begin(), active.end(),
            [&](int a, int b) { return state.device_key(a) < state.device_key(b); });
  return active;
}

}  // namespace

bool DevicesBinpack(const Policy& policy) {
  const Placement placement = policy.gpu_device_placement != Placement::kUnspecified
                                  ? policy.gpu_device_placement
                                  : policy.placement;
  return placement != Placement::kSpread;
}

void ChooseDevices(const WorkingState& state, int pod, int node, bool binpack, bool with_devices,
                   std::vector<int>* scratch, DeviceFit* fit) {
  fit->fits = false;
  fit->joinable = false;
  fit->choice.devices.clear();
  fit->choice.now = false;
  ++state.device_counters().choices;
  const Cluster& cluster = state.cluster();
  const ClusterPod& info = cluster.pod(pod);
  const ClusterNode& on = cluster.node(node);
  if (info.gpu_memory > 0 && on.node->gpu_device_memory == 0) return;
  const int64_t units = cluster.DeviceUnits(pod, node);
  if (units > on.device_units) return;
  // J: the active devices with room for the pod once their releasing pods are gone.
  std::vector<int>& joinable = *scratch;
  joinable.clear();
  for (int slot : state.node_devices(node)) {
    if (state.device_active(slot) && units <= on.device_units - state.device_used(slot)) {
      joinable.push_back(slot);
    }
  }
  fit->joinable = !joinable.empty();
  const int64_t d = info.gpu_devices;
  const double pool_idle = PoolIdle(state, node);
  const double whole = std::floor(pool_idle + PoolReleasing(state, node));
  // w, the new devices the node could open; only the first d entries of L matter.
  const int64_t w =
      whole > 0 ? (whole >= static_cast<double>(d) ? d : static_cast<int64_t>(whole)) : 0;
  if (static_cast<int64_t>(joinable.size()) + w < d) return;
  const double* requests = cluster.node_requests(pod);
  if (!state.FitsPipelined(node, requests)) return;
  // L: BINPACK the fullest device first and a new device last; SPREAD a new device first, then
  // the emptiest; ties by key. Only the first d entries are taken.
  const int64_t from_joinable =
      binpack ? std::min<int64_t>(d, static_cast<int64_t>(joinable.size())) : d - std::min(d, w);
  const int64_t opened = d - from_joinable;
  const auto before = [&](int a, int b) {
    const int64_t idle_a = state.device_idle(a);
    const int64_t idle_b = state.device_idle(b);
    if (idle_a != idle_b) return binpack ? idle_a < idle_b : idle_a > idle_b;
    return state.device_key(a) < state.device_key(b);
  };
  std::partial_sort(joinable.begin(), joinable.begin() + from_joinable, joinable.end(), before);
  bool now = static_cast<double>(opened) <= pool_idle && state.FitsNow(node, requests);
  for (int64_t j = 0; j < from_joinable && now; ++j) now = units <= state.device_idle(joinable[j]);
  fit->choice.now = now;
  fit->fits = true;
  if (!with_devices) return;
  std::vector<int32_t>& choice = fit->choice.devices;
  if (!binpack) choice.assign(static_cast<size_t>(opened), kNewDevice);
  choice.insert(choice.end(), joinable.begin(), joinable.begin() + from_joinable);
  if (binpack) choice.insert(choice.end(), static_cast<size_t>(opened), kNewDevice);
}

double DeviceRoom(const WorkingState& state, int node) {
  const double units = static_cast<double>(state.cluster().node(node).device_units);
  double room = 0;
  for (int slot : ActiveByKey(state, node)) {
    room += static_cast<double>(state.device_idle(slot) + state.device_releasing(slot)) / units;
  }
  return room;
}

double ProvableDeviceRoom(const WorkingState& state, int node, bool* any_active) {
  const int64_t units = state.cluster().node(node).device_units;
  double room = 0;
  bool active = false;
  for (int slot : state.node_devices(node)) {
    if (!state.device_active(slot)) continue;
    active = true;
    const int64_t free = state.device_idle(slot) + state.device_releasing(slot);
    if (free > 0) room += static_cast<double>(free) / static_cast<double>(units);
  }
  if (any_active != nullptr) *any_active = active;
  return room;
}

double SkipTestGpu(const Cluster& cluster, int pod, const std::vector<int>& nodes) {
  const ClusterPod& info = cluster.pod(pod);
  double least = -1;
  for (int node : nodes) {
    if (info.gpu_memory > 0 && cluster.node(node).node->gpu_device_memory == 0) continue;
    const double share = static_cast<double>(cluster.DeviceUnits(pod, node)) /
                         static_cast<double>(cluster.node(node).device_units);
    if (least < 0 || share < least) least = share;
  }
  if (least < 0) return cluster.requests(pod)[cluster.gpu()];
  return info.gpu_devices * least;
}

double LargestFreeDeviceShare(const WorkingState& state, int node) {
  if (std::floor(PoolIdle(state, node) + PoolReleasing(state, node)) >= 1) return 1;
  // An active device's idle and releasing units are M_n - used_k, whose largest is the node's
  // device room.
  const int64_t room = state.device_room(node);
  if (room <= 0) return 0;
  return static_cast<double>(room) / static_cast<double>(state.cluster().node(node).device_units);
}

}  // namespace arbiter::kai
