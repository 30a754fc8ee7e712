// The KAI generator's pod groups before they are placed: the five kinds of work, their mix, and
// what a group of each kind asks for (docs/generator.md, "Pod groups").
#pragma once

#include <vector>

#include "clients/generator/kai_resources.h"
#include "clients/generator/random.h"
#include "core/model.h"

namespace arbiter::generator::internal {

enum class GroupKind { kTrain, kInference, kNotebook, kBatch, kService };

// The kind's prefix in pod group names: "train", "infer", "notebook", "batch", "service".
const char* GroupKindName(GroupKind kind);

// Training, inference and notebooks use GPUs; batch and services do not.
bool IsGpuKind(GroupKind kind);

// A GPU kind (train 50%, inference 30%, notebook 20%) or a CPU kind (batch 80%, service 20%).
GroupKind DrawGroupKind(bool gpu, Rng& rng);

// A pod group before it is placed. Every pod of a group requests the same.
struct GroupSpec {
  GroupKind kind = GroupKind::kBatch;
  int pods = 1;
  int pending_extra = 0;   // elastic running groups: pods left pending
  DenseResources request;  // per pod
  int min_member = 0;
  int priority = 0;
  Preemptibility preemptibility = Preemptibility::kUnspecified;
  LabelMap selector;
  std::vector<Toleration> tolerations;
  int leaf = -1;  // the queue, an index into KaiQueueTree
  bool releasing = false;
  bool reclaim = false;
};

// A group of `kind` with between 1 and `max_pods` (>= 1) pods: its size, per-pod request,
// min_member, priority, preemptibility, node selector and tolerations. No leaf yet.
GroupSpec DrawGroupSpec(GroupKind kind, int max_pods, const KaiResources& resources, Rng& rng);

// A reclaim group of 1 or 2 (at most `max_pods`) pods each wanting a whole 8-GPU node, in
// queue `leaf` (docs/generator.md, "Reclaim groups").
GroupSpec ReclaimGroupSpec(int max_pods, int leaf, const KaiResources& resources, Rng& rng);

}  // namespace arbiter::generator::internal
