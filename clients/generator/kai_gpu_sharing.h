// The KAI generator's GPU sharing mix (docs/generator.md, "GPU sharing"; SEMANTICS §4.13): turns
// a share of the GPU pod groups of a generated request into pods that share GPU devices, after
// everything else is drawn and placed, from a random stream of its own, so that the rest of the
// request is exactly the one generated without sharing.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model.h"

namespace arbiter::generator::internal {

// Gives the GPU nodes of `snapshot` their device memory and makes about `percent` (in (0, 100])
// of the GPU pods share: fraction and memory pods, some on two devices; the RUNNING and RELEASING
// ones get device keys on their node that never over-commit a device or the node's GPUs. Groups
// whose `exempt` entry is true keep their requests. Deterministic in (percent, seed, snapshot).
void ApplyGpuSharing(double percent, uint64_t seed, const std::vector<bool>& exempt,
                     Snapshot& snapshot);

}  // namespace arbiter::generator::internal
