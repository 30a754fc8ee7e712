// The two shapes of request the generator makes; Generate() (generator.h) dispatches to them.
#pragma once

#include "clients/generator/generator.h"

namespace arbiter::generator::internal {

// The time every generated snapshot calls "now": 2026-01-01T00:00:00Z.
inline constexpr int64_t kNowSeconds = 1767225600;

// A KAI cluster: nodes, queue tree, running and pending pod groups (docs/generator.md, KAI).
GeneratedRequest GenerateKai(const GeneratorOptions& options);

// A Kueue quota tree with admitted and pending workloads (docs/generator.md, Kueue).
GeneratedRequest GenerateKueue(const GeneratorOptions& options);

GeneratedRequest GenerateKaiReclaimShape(const GeneratorOptions& options);

}  // namespace arbiter::generator::internal
