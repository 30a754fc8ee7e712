// The accounting step of time-aware fairness (SEMANTICS.md §3), for adapters.
//
// Arbiter is stateless: the adapter keeps each queue's decayed usage and the matching decayed
// capacity, and sends them as Snapshot.usage and Snapshot.usage_capacity. Between two calls it
// advances them over the elapsed interval with this one step:
//
//   usage'          = usage          · 0.5^(Δ/H) + allocated · Δ     (per queue)
//   usage_capacity' = usage_capacity · 0.5^(Δ/H) + capacity  · Δ     (once per cluster)
//
// with Δ the interval and H the half-life, both in the same time unit (seconds by convention).
// H <= 0 means no decay (factor 1). Sliding, tumbling or cron windows are the caller's choice:
// a tumbling window starts each window from empty maps.
//
// Pure functions: no clock, no state, thread-safe. The test vectors in
// tests/testdata/usage_accounting_vectors.json pin the results for every implementation.
#pragma once

#include "absl/status/statusor.h"
#include "core/model.h"

namespace arbiter {

// 0.5^(interval / half_life), or exactly 1 when half_life <= 0 (no decay). Inputs are assumed
// valid (see AccumulateUsage). O(1).
double UsageDecayFactor(double interval, double half_life);

// One accounting step: for every resource in the union of the keys of `usage` and `rate`,
// `usage[r] · UsageDecayFactor(interval, half_life) + rate[r] · interval` (a missing key is 0).
// Use it with (usage, allocated) for a queue and with (usage_capacity, capacity) for the
// cluster. The result lists every key of the union, in key order.
//
// InvalidArgument when `interval` is negative or not finite, `half_life` is NaN, a value of
// `usage` or `rate` is negative or not finite, or a result overflows to +Inf (the message names
// the argument and key).
// O((|usage| + |rate|) · log).
absl::StatusOr<ResourceMap> AccumulateUsage(const ResourceMap& usage, const ResourceMap& rate,
                                            double interval, double half_life);

}  // namespace arbiter
