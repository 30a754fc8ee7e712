// The KAI test kit: run one validated cycle and read its decisions, and the calls into the
// model's internals (the fair-share division) that the unit tests make, funnelled here so that a
// change of the internal signatures is adapted in one place.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/kai_schedule.h"
#include "core/model.h"
#include "core/validation.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "tests/support/validated.h"

namespace arbiter::testing {

inline const std::map<std::string, double> Gpu(double n) { return {{"nvidia.com/gpu", n}}; }
inline const std::map<std::string, double> Cpu(double n) { return {{"cpu", n}}; }

inline Policy PolicyWith(std::vector<Action> actions, Placement placement = Placement::kBinpack) {
  Policy policy;
  policy.actions = std::move(actions);
  policy.placement = placement;
  return policy;
}

inline Policy AllocateOnly(Placement placement = Placement::kBinpack) {
  return PolicyWith({Action::kAllocate}, placement);
}

// The KAI fair-share division of `snapshot` under `policy` (SEMANTICS §2, §3). A fair share
// points into the validated request it divided, and that into its snapshot: both are kept (a
// copy of the snapshot) for the life of the test program, so that the share may outlive the
// caller's snapshot, a temporary included.
inline kai::KaiFairShare KaiFairShareOf(const Snapshot& snapshot, const Policy& policy = {}) {
  struct Kept {
    Snapshot snapshot;
    std::optional<ValidatedSnapshot> request;
  };
  static std::deque<Kept> kept;
  Kept& entry = kept.emplace_back();
  entry.snapshot = snapshot;
  entry.request.emplace(MustValidate(entry.snapshot, policy, RequestKind::kFairShares));
  return kai::ComputeKaiFairShare(*entry.request);
}

// One KAI cycle on the validated request, with the caller's hooks.
inline absl::StatusOr<ScheduleResult> ScheduleKaiWithHooks(const Snapshot& snapshot,
                                                           const Policy& policy,
                                                           const CycleHooks& hooks) {
  return kai::ScheduleKai(MustValidate(snapshot, policy), hooks);
}

// Validates the request (a test snapshot must be valid) and runs one KAI cycle.
inline ScheduleResult RunCycle(const Snapshot& snapshot, const Policy& policy) {
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule), IsOk());
  absl::StatusOr<ScheduleResult> result = ScheduleKaiWithHooks(snapshot, policy, CycleHooks{});
  EXPECT_THAT(result, IsOk());
  return result.ok() ? *std::move(result) : ScheduleResult{};
}

// "pod@node" per binding, "pod@node+" when pipelined, in response order.
inline std::vector<std::string> Bindings(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Binding& b : result.bindings) {
    out.push_back(absl::StrCat(b.pod, "@", b.node, b.after_evictions ? "+" : ""));
  }
  return out;
}

// "group:reason" per pending group, in response order.
inline std::vector<std::string> Pending(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const PendingPodGroup& p : result.pending) out.push_back(p.pod_group + ":" + p.reason);
  return out;
}

inline const PendingPodGroup* FindPending(const ScheduleResult& result, const std::string& group) {
  for (const PendingPodGroup& p : result.pending) {
    if (p.pod_group == group) return &p;
  }
  return nullptr;
}

inline std::string PendingMessage(const ScheduleResult& result, const std::string& group) {
  const PendingPodGroup* p = FindPending(result, group);
  return p == nullptr ? "<not pending>" : p->message;
}

// Every field of a result, for equality checks (maps print in key order).
inline std::string Describe(const ScheduleResult& result) {
  std::string out;
  auto map = [](const ResourceMap& m) {
    std::string text;
    for (const auto& [k, v] : m) absl::StrAppend(&text, k, "=", v, ";");
    return text;
  };
  for (const QueueShare& q : result.queues) {
    absl::StrAppend(&out, "Q ", q.queue, " d{", map(q.deserved), "} fs{", map(q.fair_share), "} a{",
                    map(q.allocated), "} r{", map(q.requested), "} s", q.saturation, "\n");
  }
  for (const Binding& b : result.bindings) {
    absl::StrAppend(&out, "B ", b.pod_group, "/", b.pod, "@", b.node, b.after_evictions, "\n");
  }
  for (const Eviction& e : result.evictions) {
    absl::StrAppend(&out, "E ", e.pod_group, "/", e.pod, "@", e.node, " ",
                    static_cast<int>(e.reason), " for ", e.preemptor_pod_group, ": ", e.message,
                    "\n");
  }
  for (const PendingPodGroup& p : result.pending) {
    absl::StrAppend(&out, "P ", p.pod_group, " ", p.reason, ": ", p.message, "\n");
  }
  return out;
}

}  // namespace arbiter::testing
