#include "clients/cli/what_if_answer.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/cli/response_tables.h"
#include "clients/cli/text_table.h"
#include "edge/json_text.h"

namespace arbiter::cli {
namespace {

using edge::JsonString;

const char* JsonBool(bool value) { return value ? "true" : "false"; }

// "[]" when empty, else one element per line under the key, each indented by four spaces.
std::string JsonArray(const std::vector<std::string>& elements) {
  if (elements.empty()) return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < elements.size(); ++i) {
    absl::StrAppend(&out, "    ", elements[i], i + 1 < elements.size() ? ",\n" : "\n");
  }
  out += "  ]";
  return out;
}

std::string Plural(int count, const char* noun) {
  return absl::StrCat(count, " ", noun, count == 1 ? "" : "s");
}

std::string OutcomeLine(const WhatIfAnswer& answer) {
  if (answer.outcome == kOutcomePlaced) {
    int pipelined = 0;
    for (const v1::Binding& binding : answer.bindings) pipelined += binding.after_evictions();
    const int bound = static_cast<int>(answer.bindings.size());
    std::string line = absl::StrCat("placed (", Plural(bound, "pod"), " bound");
    if (pipelined == bound) {
      absl::StrAppend(&line, bound == 1 ? ", after evictions" : ", all after evictions");
    } else if (pipelined > 0) {
      absl::StrAppend(&line, ", ", pipelined, " of them after evictions");
    }
    return line + ")";
  }
  if (answer.outcome == kOutcomeAdmitted) {
    return answer.after_evictions ? "admitted, once the evictions below have released the quota"
                                  : "admitted";
  }
  if (answer.outcome == kOutcomeEvicted) return "evicted (its own pods are evicted, listed below)";
  if (answer.outcome == kOutcomeUnchanged) {
    return "unchanged (no binding, admission or pending reason names it: its pods already run, "
           "or its quota is already reserved)";
  }
  return answer.outcome;
}

}  // namespace

WhatIfAnswer ReadWhatIfAnswer(const v1::PodGroup& group, const v1::ScheduleResponse& response) {
  WhatIfAnswer answer;
  answer.pod_group = group.name();
  answer.queue = group.queue();
  for (const v1::Binding& binding : response.bindings()) {
    if (binding.pod_group() != group.name()) continue;
    answer.bindings.push_back(binding);
    answer.after_evictions = answer.after_evictions || binding.after_evictions();
  }
  bool own_pods_evicted = false;
  for (const v1::Eviction& eviction : response.evictions()) {
    if (eviction.preemptor_pod_group() == group.name()) answer.evictions.push_back(eviction);
    own_pods_evicted = own_pods_evicted || eviction.pod_group() == group.name();
  }
  const v1::Admission* admission = nullptr;
  for (const v1::Admission& candidate : response.admissions()) {
    if (candidate.pod_group() == group.name()) admission = &candidate;
  }
  for (const v1::PendingPodGroup& pending : response.pending()) {
    if (pending.pod_group() == group.name()) answer.pending = pending;
  }

  if (answer.pending.has_value()) {
    answer.outcome = kOutcomePending;
  } else if (admission != nullptr) {
    answer.outcome = kOutcomeAdmitted;
    answer.after_evictions = admission->after_evictions();
    answer.pod_sets.assign(admission->pod_sets().begin(), admission->pod_sets().end());
  } else if (!answer.bindings.empty()) {
    answer.outcome = kOutcomePlaced;
  } else if (own_pods_evicted) {
    answer.outcome = kOutcomeEvicted;
  } else {
    answer.outcome = kOutcomeUnchanged;
  }
  return answer;
}

std::string RenderWhatIfTable(const WhatIfAnswer& answer) {
  std::string out = absl::StrCat("Pod group: ", answer.pod_group, "\n", "Queue:     ", answer.queue,
                                 "\n", "Outcome:   ", OutcomeLine(answer), "\n");
  if (!answer.pod_sets.empty()) {
    google::protobuf::RepeatedPtrField<v1::PodSetFlavors> pod_sets(answer.pod_sets.begin(),
                                                                   answer.pod_sets.end());
    absl::StrAppend(&out, "Flavors:   ", PodSetFlavorsText(pod_sets), "\n");
  }
  if (answer.pending.has_value()) {
    absl::StrAppend(&out, "Reason:    ", answer.pending->reason(), "\n",
                    "Message:   ", answer.pending->message(), "\n");
  }
  if (!answer.bindings.empty()) {
    absl::StrAppend(&out, "\nBindings (", answer.bindings.size(), ")\n");
    // GPU sharing (SEMANTICS §4.13): a column of device keys when some binding shares devices,
    // as the `schedule` bindings table has.
    const bool devices =
        std::any_of(answer.bindings.begin(), answer.bindings.end(),
                    [](const v1::Binding& binding) { return binding.gpu_groups_size() > 0; });
    std::vector<TextTable::Column> columns = {{"POD"}, {"NODE"}, {"AFTER EVICTIONS"}};
    if (devices) columns.push_back({"GPU DEVICES"});
    TextTable table(columns);
    for (const v1::Binding& binding : answer.bindings) {
      std::vector<std::string> row = {binding.pod(), binding.node(),
                                      binding.after_evictions() ? "yes" : ""};
      if (devices) row.push_back(absl::StrJoin(binding.gpu_groups(), ","));
      table.AddRow(row);
    }
    out += table.Render();
  }
  if (answer.evictions.empty()) {
    out += "\nEvictions for it: none\n";
    return out;
  }
  std::set<std::string> victims;
  for (const v1::Eviction& eviction : answer.evictions) victims.insert(eviction.pod_group());
  absl::StrAppend(&out, "\nEvictions for it (",
                  Plural(static_cast<int>(answer.evictions.size()), "pod"), " of ",
                  Plural(static_cast<int>(victims.size()), "other pod group"), ")\n");
  TextTable table({{"POD GROUP"}, {"POD"}, {"NODE"}, {"REASON"}, {"MESSAGE"}});
  for (const v1::Eviction& eviction : answer.evictions) {
    table.AddRow({eviction.pod_group(), eviction.pod(), eviction.node(),
                  EvictionReasonName(eviction.reason()), eviction.message()});
  }
  out += table.Render();
  return out;
}

std::string RenderWhatIfJson(const WhatIfAnswer& answer) {
  std::vector<std::string> bindings;
  for (const v1::Binding& binding : answer.bindings) {
    std::string devices;  // a sharing pod's GPU devices (§4.13); absent for other pods
    if (binding.gpu_groups_size() > 0) {
      std::vector<std::string> keys;
      for (const std::string& key : binding.gpu_groups()) keys.push_back(JsonString(key));
      devices = absl::StrCat(", \"gpu_groups\": [", absl::StrJoin(keys, ", "), "]");
    }
    bindings.push_back(absl::StrCat(
        "{\"pod\": ", JsonString(binding.pod()), ", \"node\": ", JsonString(binding.node()),
        ", \"after_evictions\": ", JsonBool(binding.after_evictions()), devices, "}"));
  }
  std::vector<std::string> evictions;
  for (const v1::Eviction& eviction : answer.evictions) {
    evictions.push_back(absl::StrCat(
        "{\"pod_group\": ", JsonString(eviction.pod_group()),
        ", \"pod\": ", JsonString(eviction.pod()), ", \"node\": ", JsonString(eviction.node()),
        ", \"reason\": ", JsonString(EvictionReasonName(eviction.reason())),
        ", \"message\": ", JsonString(eviction.message()), "}"));
  }
  const std::string pending =
      answer.pending.has_value()
          ? absl::StrCat("{\"reason\": ", JsonString(answer.pending->reason()),
                         ", \"message\": ", JsonString(answer.pending->message()), "}")
          : "null";
  std::string out = "{\n";
  absl::StrAppend(&out, "  \"pod_group\": ", JsonString(answer.pod_group), ",\n");
  absl::StrAppend(&out, "  \"outcome\": ", JsonString(answer.outcome), ",\n");
  absl::StrAppend(&out, "  \"after_evictions\": ", JsonBool(answer.after_evictions), ",\n");
  absl::StrAppend(&out, "  \"bindings\": ", JsonArray(bindings), ",\n");
  absl::StrAppend(&out, "  \"evictions\": ", JsonArray(evictions), ",\n");
  if (!answer.pod_sets.empty()) {
    std::vector<std::string> pod_sets;
    for (const v1::PodSetFlavors& pod_set : answer.pod_sets) {
      const std::map<std::string, std::string> sorted(pod_set.flavors().begin(),
                                                      pod_set.flavors().end());
      std::vector<std::string> entries;
      for (const auto& [resource, flavor] : sorted) {
        entries.push_back(absl::StrCat(JsonString(resource), ": ", JsonString(flavor)));
      }
      pod_sets.push_back(absl::StrCat("{\"pod_set\": ", JsonString(pod_set.pod_set()),
                                      ", \"flavors\": {", absl::StrJoin(entries, ", "), "}}"));
    }
    absl::StrAppend(&out, "  \"pod_sets\": ", JsonArray(pod_sets), ",\n");
  }
  absl::StrAppend(&out, "  \"pending\": ", pending, "\n");
  out += "}\n";
  return out;
}

}  // namespace arbiter::cli
