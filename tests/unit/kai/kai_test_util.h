// The KAI test kit: run one validated cycle and read its decisions, and the calls into the
// model's internals (the fair-share division) that the unit tests make, funnelled here so that a
// change of the internal signatures is adapted in one place.
#pragma once

#include <deque>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/kai_schedule.h"
#include "core/model.h"
#include "core/validation.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"
#include "tests/support/validated.h"

namespace arbiter::testing {

inline ResourceMap Gpu(double n) { return {{"nvidia.com/gpu", n}}; }
inline ResourceMap Cpu(double n) { return {{"cpu", n}}; }

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

// The short name of an eviction reason, as Evictions() prints it.
inline std::string EvictionReasonName(EvictionReason reason) {
  switch (reason) {
    case EvictionReason::kFairShareReclaim:
      return "FAIR_SHARE_RECLAIM";
    case EvictionReason::kQuotaReclaim:
      return "QUOTA_RECLAIM";
    case EvictionReason::kPriorityPreemption:
      return "PRIORITY_PREEMPTION";
    case EvictionReason::kConsolidation:
      return "CONSOLIDATION";
    default:
      return "OTHER";
  }
}

// "pod@node REASON for preemptor" per eviction, in response order.
inline std::vector<std::string> Evictions(const ScheduleResult& result) {
  std::vector<std::string> out;
  for (const Eviction& e : result.evictions) {
    out.push_back(absl::StrCat(e.pod, "@", e.node, " ", EvictionReasonName(e.reason), " for ",
                               e.preemptor_pod_group));
  }
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
    absl::StrAppend(&out, "B ", b.pod_group, "/", b.pod, "@", b.node, b.after_evictions, " [",
                    absl::StrJoin(b.gpu_groups, ","), "]\n");
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

// The same node held by team-b's gang of four 2-GPU pods at its min_member: two teams with
// equal deserved GPUs (4) on one 8-GPU node.
inline SnapshotBuilder GangHoldsTheNode() {
  SnapshotBuilder b;
  b.Node("n1", Gpu(8))
      .Queue("team-a")
      .Deserved(Gpu(4))
      .Queue("team-b")
      .Deserved(Gpu(4))
      .Group("gang", "team-b")
      .MinMember(4)
      .RunningPods(4, Gpu(2), "n1");
  return b;
}

// GangHoldsTheNode at now = 1000 s, the gang started at 900 s (its last pod's start, the
// earliest among them) and protected by team-b's reclaim min-runtime of 600 s until 1500 s (§4.7).
inline SnapshotBuilder ProtectedGangHoldsTheNode() {
  SnapshotBuilder b = GangHoldsTheNode();
  b.Now(1000).ReclaimMinRuntime(600).Started(900);  // team-b is the last queue, gang the last group
  return b;
}

// Two victims of `queue` on n1 (which the caller adds), one GPU each: "small" (priority 10, g = 1,
// its one RUNNING pod started at `small_started`, two more PENDING: elastic by §0 with only its
// gang running) and "wide" (priority 20, g = 1, started at 0).
inline SnapshotBuilder& SmallAndWideOnN1(SnapshotBuilder& b, const std::string& queue,
                                         int64_t small_started) {
  b.Group("small", queue)
      .Priority(10)
      .MinMember(1)
      .RunningPods(1, Gpu(1), "n1")
      .Started(small_started)
      .Pods(2, Gpu(1))
      .Group("wide", queue)
      .Priority(20)
      .MinMember(1)
      .RunningPods(1, Gpu(1), "n1")
      .Started(0);
  return b;
}

// The same node held by a non-preemptible borrower in team-b (four 2-GPU pods).
inline SnapshotBuilder NonPreemptibleBorrower() {
  SnapshotBuilder b;
  b.Node("n1", Gpu(8))
      .Queue("team-a")
      .Deserved(Gpu(4))
      .Queue("team-b")
      .Deserved(Gpu(4))
      .Group("borrower", "team-b")
      .Preemptible(Preemptibility::kNonPreemptible)
      .RunningPods(4, Gpu(2), "n1");
  return b;
}

// A named case of an eviction action's table: one cycle of `snapshot` under `policy`, and the
// decisions expected of it. An unset field is not checked.
struct EvictionCase {
  std::string name;
  Snapshot snapshot;
  Policy policy;
  // Exactly these evictions, as Evictions() prints them.
  std::vector<std::string> evictions;
  // When set: exactly these bindings, as Bindings() prints them.
  std::optional<std::vector<std::string>> bindings = std::nullopt;
  // When set: exactly these pending groups, as Pending() prints them.
  std::optional<std::vector<std::string>> pending = std::nullopt;
  // When not empty: the first eviction's message.
  std::string first_eviction_message = "";
};

inline void PrintTo(const EvictionCase& c, std::ostream* os) { *os << c.name; }

// Runs the case's cycle and checks every decision the case states.
inline void ExpectDecisions(const EvictionCase& c) {
  const ScheduleResult result = RunCycle(c.snapshot, c.policy);
  EXPECT_EQ(Evictions(result), c.evictions);
  if (c.bindings.has_value()) {
    EXPECT_EQ(Bindings(result), *c.bindings);
  }
  if (c.pending.has_value()) {
    EXPECT_EQ(Pending(result), *c.pending);
  }
  if (!c.first_eviction_message.empty()) {
    ASSERT_FALSE(result.evictions.empty());
    EXPECT_EQ(result.evictions[0].message, c.first_eviction_message);
  }
}

}  // namespace arbiter::testing
