// Writes core requests and decisions as proto3 JSON (original proto field names, default values
// left out), for the scenario files under tests/scenarios/kai/. Test-only: covers the fields the
// scenarios use (no timestamps or durations).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model.h"
#include "core/quantity_format.h"
#include "edge/json_text.h"

namespace arbiter::testing {

class JsonWriter {
 public:
  std::string Quote(const std::string& text) const { return edge::JsonString(text); }
  std::string Number(double value) const { return FormatQuantity(value); }
  template <typename Map, typename F>
  std::string Object(const Map& map, F value) const {
    std::vector<std::string> parts;
    for (const auto& [k, v] : map) parts.push_back(absl::StrCat(Quote(k), ": ", value(v)));
    return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
  }
  std::string Resources(const ResourceMap& map) const {
    return Object(map, [this](double v) { return Number(v); });
  }
  std::string Labels(const LabelMap& map) const {
    return Object(map, [this](const std::string& v) { return Quote(v); });
  }
};

// Fields of one JSON object, skipping defaults.
class Fields {
 public:
  Fields& Add(const std::string& name, const std::string& json) {
    parts_.push_back(absl::StrCat("\"", name, "\": ", json));
    return *this;
  }
  Fields& String(const std::string& name, const std::string& value) {
    if (!value.empty()) Add(name, JsonWriter().Quote(value));
    return *this;
  }
  Fields& Number(const std::string& name, double value) {
    if (value != 0) Add(name, JsonWriter().Number(value));
    return *this;
  }
  Fields& Bool(const std::string& name, bool value) {
    if (value) Add(name, "true");
    return *this;
  }
  Fields& Map(const std::string& name, const ResourceMap& map) {
    if (!map.empty()) Add(name, JsonWriter().Resources(map));
    return *this;
  }
  Fields& Labels(const std::string& name, const LabelMap& map) {
    if (!map.empty()) Add(name, JsonWriter().Labels(map));
    return *this;
  }
  Fields& List(const std::string& name, const std::vector<std::string>& items, int indent) {
    if (items.empty()) return *this;
    const std::string pad(indent + 2, ' ');
    Add(name, absl::StrCat("[\n", pad, absl::StrJoin(items, absl::StrCat(",\n", pad)), "\n",
                           std::string(indent, ' '), "]"));
    return *this;
  }
  std::string Inline() const { return absl::StrCat("{", absl::StrJoin(parts_, ", "), "}"); }
  std::string Block(int indent) const {
    const std::string pad(indent + 2, ' ');
    return absl::StrCat("{\n", pad, absl::StrJoin(parts_, absl::StrCat(",\n", pad)), "\n",
                        std::string(indent, ' '), "}");
  }

 private:
  std::vector<std::string> parts_;
};

inline std::string PhaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "POD_PHASE_PENDING";
    case PodPhase::kRunning:
      return "POD_PHASE_RUNNING";
    case PodPhase::kReleasing:
      return "POD_PHASE_RELEASING";
    default:
      return "";
  }
}

inline std::string ActionName(Action action) {
  switch (action) {
    case Action::kAllocate:
      return "ACTION_ALLOCATE";
    case Action::kConsolidate:
      return "ACTION_CONSOLIDATE";
    case Action::kReclaim:
      return "ACTION_RECLAIM";
    case Action::kPreempt:
      return "ACTION_PREEMPT";
    default:
      return "ACTION_UNSPECIFIED";
  }
}

inline std::string ReasonName(EvictionReason reason) {
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
      return "EVICTION_REASON_UNSPECIFIED";
  }
}

inline std::string RequestJson(const Snapshot& s, const Policy& p) {
  JsonWriter w;
  std::vector<std::string> queues, nodes, groups;
  for (const Queue& q : s.queues) {
    queues.push_back(Fields()
                         .String("name", q.name)
                         .String("parent", q.parent)
                         .Map("deserved", q.deserved)
                         .Map("limit", q.limit)
                         .Map("over_quota_weight", q.over_quota_weight)
                         .Number("priority", q.priority)
                         .Inline());
  }
  for (const Node& n : s.nodes) {
    std::vector<std::string> taints;
    for (const Taint& t : n.taints) {
      taints.push_back(Fields()
                           .String("key", t.key)
                           .String("value", t.value)
                           .String("effect", t.effect)
                           .Inline());
    }
    Fields f;
    f.String("name", n.name).Map("allocatable", n.allocatable).Labels("labels", n.labels);
    if (!taints.empty()) f.Add("taints", absl::StrCat("[", absl::StrJoin(taints, ", "), "]"));
    nodes.push_back(f.Bool("unschedulable", n.unschedulable).Inline());
  }
  for (const PodGroup& g : s.pod_groups) {
    std::vector<std::string> pods;
    for (const Pod& pod : g.pods) {
      std::vector<std::string> tolerations;
      for (const Toleration& t : pod.tolerations) {
        tolerations.push_back(Fields()
                                  .String("key", t.key)
                                  .String("operator", t.op)
                                  .String("value", t.value)
                                  .String("effect", t.effect)
                                  .Inline());
      }
      Fields f;
      f.String("name", pod.name)
          .Map("requests", pod.requests)
          .String("node_name", pod.node_name)
          .String("phase", PhaseName(pod.phase))
          .Labels("node_selector", pod.node_selector);
      if (!tolerations.empty()) {
        f.Add("tolerations", absl::StrCat("[", absl::StrJoin(tolerations, ", "), "]"));
      }
      pods.push_back(f.Inline());
    }
    Fields f;
    f.String("name", g.name).String("queue", g.queue).Number("priority", g.priority);
    if (g.preemptibility == Preemptibility::kPreemptible)
      f.Add("preemptibility", "\"PREEMPTIBLE\"");
    if (g.preemptibility == Preemptibility::kNonPreemptible) {
      f.Add("preemptibility", "\"NON_PREEMPTIBLE\"");
    }
    f.Number("min_member", g.min_member).List("pods", pods, 8);
    groups.push_back(f.Block(6));
  }
  Fields snapshot;
  snapshot.List("queues", queues, 4)
      .List("nodes", nodes, 4)
      .List("pod_groups", groups, 4)
      .Map("capacity", s.capacity);
  std::vector<std::string> actions;
  for (Action a : p.actions) actions.push_back(w.Quote(ActionName(a)));
  Fields policy;
  policy.Add("fairness_model", "\"FAIRNESS_MODEL_KAI\"");
  if (p.placement == Placement::kBinpack) policy.Add("placement", "\"PLACEMENT_BINPACK\"");
  if (p.placement == Placement::kSpread) policy.Add("placement", "\"PLACEMENT_SPREAD\"");
  if (!actions.empty()) policy.Add("actions", absl::StrCat("[", absl::StrJoin(actions, ", "), "]"));
  return Fields().Add("snapshot", snapshot.Block(2)).Add("policy", policy.Block(2)).Block(0) + "\n";
}

// bindings, evictions and pending of a response.
inline std::string DecisionsJson(const ScheduleResult& r) {
  std::vector<std::string> bindings, evictions, pending;
  for (const Binding& b : r.bindings) {
    bindings.push_back(Fields()
                           .String("pod_group", b.pod_group)
                           .String("pod", b.pod)
                           .String("node", b.node)
                           .Bool("after_evictions", b.after_evictions)
                           .Inline());
  }
  for (const Eviction& e : r.evictions) {
    evictions.push_back(Fields()
                            .String("pod_group", e.pod_group)
                            .String("pod", e.pod)
                            .String("node", e.node)
                            .Add("reason", "\"" + ReasonName(e.reason) + "\"")
                            .String("preemptor_pod_group", e.preemptor_pod_group)
                            .String("message", e.message)
                            .Inline());
  }
  for (const PendingPodGroup& p : r.pending) {
    pending.push_back(Fields()
                          .String("pod_group", p.pod_group)
                          .String("reason", p.reason)
                          .String("message", p.message)
                          .Inline());
  }
  Fields f;
  f.List("bindings", bindings, 2).List("evictions", evictions, 2).List("pending", pending, 2);
  return f.Block(0) + "\n";
}

}  // namespace arbiter::testing
