// The GPU device state of WorkingState (SEMANTICS.md §4.13.2): per device its used and releasing
// units, and how each device changing state moves one unit of the node's nvidia.com/gpu pool.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/kai/working_state.h"

namespace arbiter::kai {

void WorkingState::LayOutDevices() {
  const int nodes = cluster_.num_nodes();
  const int pods = cluster_.num_pods();
  gpu_unit_.assign(rn_, 0.0);
  if (cluster_.node_gpu() >= 0) gpu_unit_[cluster_.node_gpu()] = 1;
  queue_scratch_.assign(r_, 0.0);
  node_devices_.assign(nodes, {});
  for (int device = 0; device < cluster_.num_input_devices(); ++device) {
    devices_.push_back(DeviceSlot{0, 0, -1, cluster_.device_key(device)});
  }
  for (int n = 0; n < nodes; ++n) {
    const ClusterNode& node = cluster_.node(n);
    for (int k = 0; k < node.input_devices; ++k) {
      node_devices_[n].push_back(node.first_device + k);
      devices_[node.first_device + k].node = n;
    }
    if (node.input_devices > 0) device_nodes_.push_back(n);
  }
  pod_device_begin_.assign(pods, 0);
  for (int p = 0; p < pods; ++p) {
    const ClusterPod& pod = cluster_.pod(p);
    if (!pod.shares()) continue;
    pod_device_begin_[p] = static_cast<int32_t>(pod_devices_.size());
    const bool on_node = pod.phase == PodPhase::kRunning || pod.phase == PodPhase::kReleasing;
    for (int j = 0; j < pod.gpu_devices; ++j) {
      const int device = on_node ? cluster_.pod_device(pod.first_device + j) : -1;
      pod_devices_.push_back(device);
      if (device < 0) continue;
      const int64_t units = cluster_.DeviceUnits(p, pod.node);
      int64_t& amount =
          pod.phase == PodPhase::kRunning ? devices_[device].used : devices_[device].releasing;
      amount += units;
    }
  }
  // The pool counts 1 used per active device and 1 releasing per draining one.
  const int gpu = cluster_.node_gpu();
  for (int device = 0; device < cluster_.num_input_devices(); ++device) {
    const DeviceSlot& slot = devices_[device];
    if (gpu < 0) break;
    if (slot.used > 0) {
      used_[At(slot.node, gpu)] += 1;
    } else if (slot.releasing > 0) {
      releasing_[At(slot.node, gpu)] += 1;
    }
  }
  spread_ = index_ != nullptr && index_->spread();
  std::vector<int> members(nodes);
  for (int n = 0; n < nodes; ++n) members[n] = n;
  // A pod that joins a device asks for cpu and a share of a device: pairing the two passes over
  // subtrees whose members each lack one of them (some cpu, others a device with room). The
  // share column is already a share, of one device.
  const double weight_cpu = ShareWeight(cluster_, members, cluster_.node_cpu());
  const CapacityTree::Pair pair =
      weight_cpu == 0 ? CapacityTree::Pair{}
                      : CapacityTree::Pair{cluster_.node_cpu(), rn_, weight_cpu, 1.0};
  joinable_tree_.Init(members, rn_ + kJoinableColumns, pair);
  tree_row_.assign(2 * static_cast<size_t>(rn_ + kJoinableColumns), 0.0);
  device_room_.assign(nodes, 0);
  room_dirty_.assign(nodes, 0);
  joinable_key_.assign(nodes, 0.0);
  joinable_in_.assign(nodes, 0);
  joinable_rows_.assign(static_cast<size_t>(nodes) * tree_row_.size(), 0.0);
  joinable_dirty_.assign(nodes, 0);
  for (int n : device_nodes_) UpdateDeviceSummary(n);
}

void WorkingState::SumUpDeviceRoom(int node) const {
  int64_t room = 0;
  const int64_t units = cluster_.node(node).device_units;
  for (int slot : node_devices_[node]) {
    const DeviceSlot& device = devices_[slot];
    if (device.used > 0) room = std::max(room, units - device.used);
  }
  device_room_[node] = room;
  room_dirty_[node] = 0;
}

void WorkingState::UpdateDeviceSummary(int node) {
  // A node without a device slot keeps its room of 0 (a slot is laid out before it is used).
  if (!node_devices_[node].empty()) room_dirty_[node] = 1;
  if (joinable_dirty_[node] == 0) {
    joinable_dirty_[node] = 1;
    joinable_dirty_list_.push_back(node);
  }
}

const WorkingState::NodeOrder& WorkingState::joinable_nodes() const {
  if (!joinable_frozen_) ApplyJoinable();
  if (!joinable_order_kept_) {
    joinable_order_kept_ = true;
    for (int node = 0; node < static_cast<int>(joinable_in_.size()); ++node) {
      if (joinable_in_[node] != 0) joinable_nodes_.insert({joinable_key_[node], node});
    }
  }
  return joinable_nodes_;
}

void WorkingState::ApplyJoinable() const {
  for (int node : joinable_dirty_list_) {
    joinable_dirty_[node] = 0;
    ApplyJoinableNode(node);
  }
  joinable_dirty_list_.clear();
}

void WorkingState::ApplyJoinableNode(int node) const {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  const int64_t room = device_room(node);
  const size_t columns = static_cast<size_t>(rn_ + kJoinableColumns);
  const size_t width = 2 * columns;
  double* applied = &joinable_rows_[static_cast<size_t>(node) * width];
  if (room <= 0) {
    // Out of reach: no request is met by -inf.
    if (joinable_in_[node] == 0) return;
    joinable_in_[node] = 0;
    if (joinable_order_kept_) joinable_nodes_.erase({joinable_key_[node], node});
    std::fill(tree_row_.begin(), tree_row_.end(), -kInfinity);
    joinable_tree_.Set(node, kInfinity, tree_row_.data(), tree_row_.data() + columns);
    return;
  }
  int64_t idle_room = 0;
  int active = 0;
  const int64_t units = cluster_.node(node).device_units;
  for (int slot : node_devices_[node]) {
    const DeviceSlot& device = devices_[slot];
    if (device.used <= 0) continue;
    ++active;
    idle_room = std::max(idle_room, units - device.used - device.releasing);
  }
  const int gpu = cluster_.node_gpu();
  const double allocatable = gpu < 0 ? 0 : cluster_.allocatable(node)[gpu];
  const double pool_free = gpu < 0 ? 0 : this->free(node, gpu);
  double key;
  if (spread_) {
    key = allocatable == 0 ? -0.0 : -(pool_free / allocatable);
  } else {
    key = allocatable > 0 ? pool_free : kInfinity;
  }
  double* idle = tree_row_.data();
  double* free = tree_row_.data() + columns;
  for (int k = 0; k < rn_; ++k) {
    idle[k] = this->idle(node, k);
    free[k] = this->free(node, k);
  }
  // G's column: the devices a pod could take, its active devices and the pool's whole GPUs
  // (ChooseDevices: d <= |J| + w to fit, and the d - |J| new devices from the pool's idle GPUs
  // to fit now, so d <= |J| + idle, |J| at most the active devices).
  if (gpu >= 0) {
    idle[gpu] = active + idle[gpu];
    free[gpu] = active + std::max(0.0, std::floor(free[gpu]));
  }
  idle[rn_] = static_cast<double>(idle_room) / static_cast<double>(units);
  free[rn_] = static_cast<double>(room) / static_cast<double>(units);
  // A memory pod's units are its memory on every node (§4.13.1): the same room in units, where
  // the devices' memory is known (elsewhere no memory pod joins).
  const bool memory_known = cluster_.node(node).node->gpu_device_memory > 0;
  idle[rn_ + 1] = memory_known ? static_cast<double>(idle_room) : -kInfinity;
  free[rn_ + 1] = memory_known ? static_cast<double>(room) : -kInfinity;
  // Compared bit for bit: the key's sign of zero orders it.
  const bool same_key =
      std::signbit(key) == std::signbit(joinable_key_[node]) && key == joinable_key_[node];
  if (joinable_in_[node] != 0 && same_key && std::equal(idle, idle + width, applied)) return;
  if (joinable_order_kept_) {
    if (joinable_in_[node] != 0) joinable_nodes_.erase({joinable_key_[node], node});
    joinable_nodes_.insert({key, node});
  }
  joinable_in_[node] = 1;
  joinable_key_[node] = key;
  std::copy(idle, idle + width, applied);
  joinable_tree_.Set(node, key, idle, free);
}

const double* WorkingState::QueueRequests(int pod, int node) {
  const ClusterPod& info = cluster_.pod(pod);
  const double* requests = cluster_.requests(pod);
  if (info.gpu_memory == 0 || cluster_.gpu() < 0) return requests;
  std::copy(requests, requests + r_, queue_scratch_.begin());
  queue_scratch_[cluster_.gpu()] = cluster_.GpuAmountOn(pod, node);
  return queue_scratch_.data();
}

void WorkingState::TakeDevices(int pod, int node, const DeviceChoice& choice, bool pipelined) {
  const int64_t units = cluster_.DeviceUnits(pod, node);
  const int begin = pod_device_begin_[pod];
  for (size_t j = 0; j < choice.devices.size(); ++j) {
    int slot = choice.devices[j];
    if (slot == kNewDevice) {
      slot = OpenDevice(node, units, pipelined);
      ++device_counters_.opened;
    } else {
      ++device_counters_.joined;
      DeviceSlot& device = devices_[slot];
      assert(device.node == node && device.used > 0);
      if (pipelined) {
        const int64_t claim = std::min(units, device.releasing);
        if (claim > 0) SetInt64(device.releasing, device.releasing - claim);
      }
      SetInt64(device.used, device.used + units);
    }
    SetInt(pod_devices_[begin + static_cast<int>(j)], slot);
  }
  TouchNode(node);
}

int WorkingState::OpenDevice(int node, int64_t units, bool pipelined) {
  // The pool gives one whole GPU, as it gives a pod's request of 1 (§4.1).
  OccupyNode(node, gpu_unit_.data(), pipelined);
  // The key: new-<j>, the smallest j no device on the node has. The j of every existing key of
  // that form, sorted, give it in O(devices · log devices).
  std::vector<int>& slots = node_devices_[node];
  std::vector<int64_t> taken;
  for (int slot : slots) {
    const DeviceSlot& device = devices_[slot];
    if (device.used == 0 && device.releasing == 0) continue;
    absl::string_view key = device.key;
    // Only the canonical decimal form names j ("new-01" is another key than "new-1").
    if (!absl::ConsumePrefix(&key, "new-") || key.empty() || key.size() > 18 ||
        (key.size() > 1 && key[0] == '0') || key.find_first_not_of("0123456789") != key.npos) {
      continue;
    }
    int64_t number = 0;
    if (absl::SimpleAtoi(key, &number)) taken.push_back(number);
  }
  std::sort(taken.begin(), taken.end());
  int64_t j = 0;
  for (int64_t number : taken) {
    if (number == j) ++j;
    if (number > j) break;
  }
  int free_slot = -1;
  for (int slot : slots) {
    const DeviceSlot& device = devices_[slot];
    if (device.used == 0 && device.releasing == 0) {
      free_slot = slot;
      break;
    }
  }
  if (free_slot < 0) {
    free_slot = static_cast<int>(devices_.size());
    devices_.push_back(DeviceSlot{0, 0, node, ""});
    if (slots.empty()) device_nodes_.push_back(node);
    slots.push_back(free_slot);
  }
  DeviceSlot& device = devices_[free_slot];
  device.key = absl::StrCat("new-", j);
  SetInt64(device.used, units);
  return free_slot;
}

void WorkingState::EvictDevices(int pod) {
  const ClusterPod& info = cluster_.pod(pod);
  const int node = pod_node_[pod];
  const int64_t units = cluster_.DeviceUnits(pod, node);
  for (int j = 0; j < info.gpu_devices; ++j) {
    DeviceSlot& device = devices_[pod_device(pod, j)];
    SetInt64(device.used, device.used - units);
    SetInt64(device.releasing, device.releasing + units);
    if (device.used == 0) PoolEvictOne(node);
  }
  TouchNode(node);
}

void WorkingState::RestoreDevices(int pod) {
  const ClusterPod& info = cluster_.pod(pod);
  const int node = pod_node_[pod];
  const int64_t units = cluster_.DeviceUnits(pod, node);
  for (int j = 0; j < info.gpu_devices; ++j) {
    DeviceSlot& device = devices_[pod_device(pod, j)];
    const bool draining = device.used == 0;
    SetInt64(device.used, device.used + units);
    // What pipelined pods claimed beyond what is left releasing comes from idle (§4.13.2).
    SetInt64(device.releasing, std::max<int64_t>(0, device.releasing - units));
    if (draining) PoolRestoreOne(node);
  }
  TouchNode(node);
}

void WorkingState::PoolEvictOne(int node) {
  const int gpu = cluster_.node_gpu();
  if (gpu < 0) return;
  double& used = used_[At(node, gpu)];
  double& releasing = releasing_[At(node, gpu)];
  SetDouble(used, used - 1);
  SetDouble(releasing, releasing + 1);
}

void WorkingState::PoolRestoreOne(int node) {
  const int gpu = cluster_.node_gpu();
  if (gpu < 0) return;
  double& used = used_[At(node, gpu)];
  double& releasing = releasing_[At(node, gpu)];
  double& claimed = claimed_[At(node, gpu)];
  const double back = releasing - 1;
  SetDouble(used, used + 1);
  SetDouble(releasing, back);
  const double still = std::max(back, 0.0);
  if (claimed > still) {
    SetDouble(used, used + (claimed - still));
    SetDouble(claimed, still);
  }
}

}  // namespace arbiter::kai
