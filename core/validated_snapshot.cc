#include "core/validated_snapshot.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/name_order.h"
#include "core/resource_interner.h"
#include "core/status_macros.h"

namespace arbiter {
namespace {

// Indices 0..n-1 sorted by `name_of(i)`, untouched when already in order, appended to `out`.
template <typename NameOf>
void AppendByName(size_t n, NameOf name_of, std::vector<int>& out) {
  const size_t first = out.size();
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<int>(i));
  SortByName(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), name_of);
}

template <typename NameOf>
std::vector<int> ByName(size_t n, NameOf name_of) {
  std::vector<int> order;
  order.reserve(n);
  AppendByName(n, name_of, order);
  return order;
}

}  // namespace

// Reads the request's maps into runs of first-met ids, then, once R is known, turns the ids into
// indices of R (which keeps every run ascending: a map's keys are in bytewise order, and so is R).
class ValidatedSnapshot::Builder {
 public:
  // `index` is what validation learned; its resource names are taken over.
  Builder(const Snapshot& snapshot, RequestIndex& index, ValidatedSnapshot& out)
      : snapshot_(snapshot), index_(index), out_(out), interner_(std::move(index.resources)) {}

  // False when cancelled.
  bool Build(CancelPoll& poll) {
    out_.amounts_.reserve(CountAmounts());
    out_.capacity_ = Read(snapshot_.capacity);
    out_.allocatable_.reserve(snapshot_.nodes.size());
    size_t cursor = 0;
    for (const Node& node : snapshot_.nodes) {
      out_.allocatable_.push_back(Read(node.allocatable, index_.allocatable_ids, cursor));
    }
    if (!ReadPods(poll)) return false;
    std::vector<QueueRanges> by_input(snapshot_.queues.size());
    for (size_t i = 0; i < snapshot_.queues.size(); ++i) {
      const Queue& queue = snapshot_.queues[i];
      by_input[i] = {Read(queue.deserved), Read(queue.limit), Read(queue.over_quota_weight),
                     Read(queue.borrowing_limit), Read(queue.lending_limit)};
    }
    InternFlavorQuotaNames();
    out_.resources_ = interner_.Sorted(position_);
    bool in_order = true;  // ids met in name order already: nothing to renumber
    for (size_t id = 0; id < position_.size(); ++id)
      in_order &= position_[id] == static_cast<int>(id);
    if (!in_order) {
      for (Amount& amount : out_.amounts_) amount.resource = position_[amount.resource];
    }

    out_.tree_ = QueueTree::Build(snapshot_, index_.queue_parent);
    out_.queues_.resize(by_input.size());
    for (int q = 0; q < out_.tree_.size(); ++q) {
      out_.queues_[q] = by_input[&out_.tree_.queue(q) - snapshot_.queues.data()];
    }
    ReadUsage();
    out_.group_queue_.reserve(index_.group_queue.size());
    for (const int queue : index_.group_queue) {
      out_.group_queue_.push_back(out_.tree_.FromInput(queue));
    }
    return true;
  }

 private:
  // The entries of every map Build reads, so that the runs' array is allocated once. The nodes'
  // and pods' entries are those whose ids validation recorded, and a sharing pod's G one more,
  // so the pods are not walked again.
  size_t CountAmounts() const {
    size_t count = snapshot_.capacity.size() + snapshot_.usage_capacity.size() +
                   index_.allocatable_ids.size() + index_.request_ids.size() + index_.sharing_pods;
    for (const Queue& queue : snapshot_.queues) {
      count += queue.deserved.size() + queue.limit.size() + queue.over_quota_weight.size() +
               queue.borrowing_limit.size() + queue.lending_limit.size();
    }
    for (const QueueUsage& usage : snapshot_.usage) count += usage.usage.size();
    return count;
  }

  // `map`, whose entries' ids validation recorded in `ids` from `cursor` on (core/validation.h,
  // RequestIndex): no name is compared again. Advances `cursor` past them.
  Range Read(const ResourceMap& map, const std::vector<int32_t>& ids, size_t& cursor) {
    Range range;
    range.begin = static_cast<uint32_t>(out_.amounts_.size());
    for (const auto& entry : map) out_.amounts_.push_back({ids[cursor++], entry.second});
    range.end = static_cast<uint32_t>(out_.amounts_.size());
    return range;
  }

  Range Read(const ResourceMap& map) {
    Range range;
    range.begin = static_cast<uint32_t>(out_.amounts_.size());
    int hint = 0;
    for (const auto& [name, value] : map) {
      out_.amounts_.push_back({interner_.Intern(name, hint), value});
    }
    range.end = static_cast<uint32_t>(out_.amounts_.size());
    return range;
  }

  bool ReadPods(CancelPoll& poll) {
    const std::vector<Node>& nodes = snapshot_.nodes;
    out_.nodes_by_name_ =
        ByName(nodes.size(), [&](int i) -> const std::string& { return nodes[i].name; });

    const std::vector<PodGroup>& groups = snapshot_.pod_groups;
    out_.groups_by_name_ =
        ByName(groups.size(), [&](int i) -> const std::string& { return groups[i].name; });
    size_t pod_count = 0;
    for (const PodGroup& group : groups) pod_count += group.pods.size();
    out_.first_pod_.reserve(groups.size() + 1);
    out_.pods_by_name_.reserve(pod_count);
    out_.requests_.reserve(pod_count);
    out_.pod_node_ = std::move(index_.pod_node);
    out_.pod_phase_.reserve(pod_count);
    size_t cursor = 0;  // into index_.request_ids
    for (const PodGroup& group : groups) {
      if (poll.Tick(1 + static_cast<int64_t>(group.pods.size()))) return false;
      out_.first_pod_.push_back(static_cast<int>(out_.pod_phase_.size()));
      const std::vector<Pod>& pods = group.pods;
      AppendByName(
          pods.size(), [&](int i) -> const std::string& { return pods[i].name; },
          out_.pods_by_name_);
      for (const Pod& pod : pods) {
        const size_t number = out_.pod_phase_.size();
        out_.pod_phase_.push_back(EffectivePhase(pod));
        if (Shares(pod)) {
          out_.requests_.push_back(ReadSharing(pod, number, index_.request_ids, cursor));
        } else {
          out_.requests_.push_back(Read(pod.requests, index_.request_ids, cursor));
        }
      }
    }
    out_.first_pod_.push_back(static_cast<int>(out_.pod_phase_.size()));
    return true;
  }

  // The effective request req*(p) of a pod that shares (§4.13.1): its requests with G = amt(p),
  // in key order, as Read(map, ids, cursor) reads the others.
  Range ReadSharing(const Pod& pod, size_t number, const std::vector<int32_t>& ids,
                    size_t& cursor) {
    int hint = 0;
    const int gpu = interner_.Intern(gpu_resource_, hint);
    const double amount = SharedGpuAmount(pod, number);
    Range range;
    range.begin = static_cast<uint32_t>(out_.amounts_.size());
    bool placed = false;
    for (const auto& entry : pod.requests) {
      const int id = ids[cursor++];
      if (!placed && entry.first >= std::string_view(kGpuResource)) {
        out_.amounts_.push_back({gpu, amount});
        placed = true;
        if (entry.first == kGpuResource) continue;  // absent or 0 by validation: replaced
      }
      out_.amounts_.push_back({id, entry.second});
    }
    if (!placed) out_.amounts_.push_back({gpu, amount});
    range.end = static_cast<uint32_t>(out_.amounts_.size());
    return range;
  }

  // amt(p) of §4.13.1 for the pod numbered `number`.
  double SharedGpuAmount(const Pod& pod, size_t number) {
    const double devices = std::max(pod.gpu_fraction_devices, 1);
    if (pod.gpu_fraction) return devices * *pod.gpu_fraction;
    const double memory = *pod.gpu_memory;
    const int node = out_.pod_node_[number];
    if (node >= 0 && out_.pod_phase_[number] != PodPhase::kPending) {
      return devices * memory / snapshot_.nodes[node].gpu_device_memory;
    }
    // Pending: Mref, the smallest device memory of the snapshot that holds the pod.
    if (device_memories_.empty()) {
      for (const Node& n : snapshot_.nodes) {
        if (n.gpu_device_memory > 0) device_memories_.push_back(n.gpu_device_memory);
      }
      std::sort(device_memories_.begin(), device_memories_.end());
      device_memories_.push_back(-1);  // marks the list as built
    }
    const auto end = device_memories_.end() - 1;
    const auto fits = std::lower_bound(device_memories_.begin(), end, memory);
    return fits == end ? devices : devices * memory / *fits;
  }

  // The resource names of Kueue's flavor quotas (§5.8, amendment to §0.1): covered resources
  // and the keys of each flavor's quotas are in R, whether or not anything requests them.
  void InternFlavorQuotaNames() {
    for (const Queue& queue : snapshot_.queues) {
      for (const ResourceGroup& group : queue.resource_groups) {
        for (const std::string& name : group.covered_resources) {
          int hint = 0;
          interner_.Intern(name, hint);
        }
        for (const FlavorQuotas& flavor : group.flavors) {
          int hint = 0;
          for (const auto& entry : flavor.resources) interner_.Intern(entry.first, hint);
        }
      }
    }
  }

  // Usage of resources outside R is kept out: no queue can be charged for it.
  void ReadUsage() {
    out_.usage_capacity_ = ReadKnown(snapshot_.usage_capacity);
    out_.usage_queue_.reserve(snapshot_.usage.size());
    out_.usage_.reserve(snapshot_.usage.size());
    for (size_t i = 0; i < snapshot_.usage.size(); ++i) {
      out_.usage_queue_.push_back(out_.tree_.FromInput(index_.usage_queue[i]));
      out_.usage_.push_back(ReadKnown(snapshot_.usage[i].usage));
    }
  }

  Range ReadKnown(const ResourceMap& map) {
    Range range;
    range.begin = static_cast<uint32_t>(out_.amounts_.size());
    int hint = 0;
    for (const auto& [name, value] : map) {
      const int id = interner_.Find(name, hint);
      if (id >= 0) out_.amounts_.push_back({position_[id], value});
    }
    range.end = static_cast<uint32_t>(out_.amounts_.size());
    return range;
  }

  const Snapshot& snapshot_;
  RequestIndex& index_;
  ValidatedSnapshot& out_;
  // G's name for the pods that share: the interner keeps a pointer to it, so it lives as long.
  const std::string gpu_resource_ = kGpuResource;
  ResourceInterner interner_;
  std::vector<int> position_;            // by id of interner_: the index in R, once R is known
  std::vector<double> device_memories_;  // the nodes' positive gpu_device_memory, ascending
};

absl::StatusOr<ValidatedSnapshot> ValidatedSnapshot::Validate(const Snapshot& snapshot,
                                                              const Policy& policy,
                                                              RequestKind kind, CancelPoll* poll,
                                                              const RequestBounds& bounds) {
  RequestIndex index;
  RETURN_IF_ERROR(ValidateRequest(snapshot, policy, kind, poll, bounds, &index));
  CancelPoll never;
  CancelPoll& cancel = poll != nullptr ? *poll : never;
  ValidatedSnapshot validated;
  validated.snapshot_ = &snapshot;
  validated.policy_ = policy;
  if (!Builder(snapshot, index, validated).Build(cancel)) return cancel.status();
  return validated;
}

}  // namespace arbiter
