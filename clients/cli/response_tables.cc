#include "clients/cli/response_tables.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "clients/cli/text_table.h"

namespace arbiter::cli {
namespace {

using ::google::protobuf::Map;
using ::google::protobuf::RepeatedPtrField;

constexpr char kNotSet[] = "-";

std::string TrimZeros(std::string text) {
  if (text.find('.') == std::string::npos) return text;
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

std::string FormatNumber(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::isnan(value)) return "nan";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return absl::StrFormat("%.0f", value);
  std::string text = TrimZeros(absl::StrFormat("%.3f", value));
  if (text == "0" || text == "-0") return absl::StrFormat("%.2g", value);
  return text;
}

std::string FormatBytes(double value) {
  static constexpr const char* kUnits[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  double scaled = value;
  int unit = -1;
  while (std::fabs(scaled) >= 1024 && unit + 1 < 6) {
    scaled /= 1024;
    ++unit;
  }
  if (unit < 0) return FormatNumber(value);
  return absl::StrCat(TrimZeros(absl::StrFormat("%.2f", scaled)), kUnits[unit]);
}

// A queue of the request's tree with its depth, in display order.
struct TreeEntry {
  std::string name;
  int depth = 0;
};

// Depth-first, children in name order; queues named only by the response come last.
std::vector<TreeEntry> QueueTree(const v1::Snapshot& snapshot,
                                 const RepeatedPtrField<v1::QueueShare>& shares) {
  std::set<std::string> known;
  for (const v1::Queue& queue : snapshot.queues()) known.insert(queue.name());
  std::map<std::string, std::set<std::string>> children;  // parent ("" = root) -> names
  for (const v1::Queue& queue : snapshot.queues()) {
    const std::string parent = known.count(queue.parent()) ? queue.parent() : "";
    children[parent].insert(queue.name());
  }
  std::vector<TreeEntry> order;
  std::set<std::string> visited;
  std::vector<TreeEntry> stack;
  auto push_children = [&](const std::string& parent, int depth) {
    auto it = children.find(parent);
    if (it == children.end()) return;
    for (auto child = it->second.rbegin(); child != it->second.rend(); ++child) {
      stack.push_back({*child, depth});
    }
  };
  push_children("", 0);
  while (!stack.empty()) {
    TreeEntry entry = stack.back();
    stack.pop_back();
    if (!visited.insert(entry.name).second) continue;  // a cycle in a rejected request
    order.push_back(entry);
    push_children(entry.name, entry.depth + 1);
  }
  for (const v1::QueueShare& share : shares) {
    if (visited.insert(share.queue()).second) order.push_back({share.queue(), 0});
  }
  return order;
}

std::set<std::string> Resources(const RepeatedPtrField<v1::QueueShare>& shares) {
  std::set<std::string> resources;
  for (const v1::QueueShare& share : shares) {
    for (const auto* map :
         {&share.deserved(), &share.fair_share(), &share.allocated(), &share.requested()}) {
      for (const auto& [name, value] : *map) resources.insert(name);
    }
  }
  return resources;
}

std::string Cell(const Map<std::string, double>& map, const std::string& resource, bool quota) {
  auto it = map.find(resource);
  if (it == map.end()) return quota ? kNotSet : "0";
  return FormatQuantity(resource, it->second, quota);
}

bool IsKueue(const v1::Policy& policy) {
  return policy.fairness_model() == v1::FAIRNESS_MODEL_KUEUE;
}

// Kueue resource flavors: each queue's quota and usage per flavor and resource
// (QueueShare.flavor_resources), in tree order; "" when no queue has any.
std::string RenderFlavorQuotas(const v1::Snapshot& snapshot,
                               const RepeatedPtrField<v1::QueueShare>& shares) {
  std::map<std::string, const v1::QueueShare*> by_name;
  bool any = false;
  for (const v1::QueueShare& share : shares) {
    by_name[share.queue()] = &share;
    any = any || share.flavor_resources_size() > 0;
  }
  if (!any) return "";
  TextTable table({{"QUEUE"},
                   {"FLAVOR"},
                   {"RESOURCE"},
                   {"NOMINAL", TextTable::kRight},
                   {"SUBTREE QUOTA", TextTable::kRight},
                   {"USAGE", TextTable::kRight},
                   {"BORROWED", TextTable::kRight}});
  for (const TreeEntry& entry : QueueTree(snapshot, shares)) {
    auto it = by_name.find(entry.name);
    if (it == by_name.end()) continue;
    bool first = true;
    for (const v1::FlavorResourceShare& row : it->second->flavor_resources()) {
      const std::string& resource = row.resource();
      table.AddRow({first ? std::string(2 * entry.depth, ' ') + entry.name : "",
                    row.flavor().empty() ? "-" : row.flavor(), resource,
                    FormatQuantity(resource, row.nominal(), false),
                    FormatQuantity(resource, row.subtree_quota(), false),
                    FormatQuantity(resource, row.usage(), false),
                    FormatQuantity(resource, row.borrowed(), false)});
      first = false;
    }
  }
  return absl::StrCat("\nFlavor quotas (- = a queue without resource groups)\n", table.Render());
}

std::string RenderQueues(const v1::Snapshot& snapshot, const v1::Policy& policy,
                         const RepeatedPtrField<v1::QueueShare>& shares) {
  if (shares.empty()) return "Queues: none\n";
  std::map<std::string, const v1::QueueShare*> by_name;
  for (const v1::QueueShare& share : shares) by_name[share.queue()] = &share;
  std::map<std::string, const v1::Queue*> request_queues;
  for (const v1::Queue& queue : snapshot.queues()) request_queues[queue.name()] = &queue;
  const std::set<std::string> resources = Resources(shares);
  const bool kueue = IsKueue(policy);

  TextTable table = kueue ? TextTable({{"QUEUE"},
                                       {"RESOURCE"},
                                       {"NOMINAL", TextTable::kRight},
                                       {"BORROWING LIMIT", TextTable::kRight},
                                       {"LENDING LIMIT", TextTable::kRight},
                                       {"USAGE", TextTable::kRight},
                                       {"REQUESTED", TextTable::kRight},
                                       {"WEIGHTED SHARE", TextTable::kRight},
                                       {"DOMINANT"},
                                       {"BORROWING"}})
                          : TextTable({{"QUEUE"},
                                       {"RESOURCE"},
                                       {"DESERVED", TextTable::kRight},
                                       {"FAIR SHARE", TextTable::kRight},
                                       {"ALLOCATED", TextTable::kRight},
                                       {"REQUESTED", TextTable::kRight},
                                       {"SATURATION", TextTable::kRight}});
  static const v1::Queue kNoQueue;
  bool any_not_set = false;
  auto quota_cell = [&](const Map<std::string, double>& map, const std::string& resource) {
    std::string cell = Cell(map, resource, true);
    any_not_set = any_not_set || cell == kNotSet;
    return cell;
  };
  for (const TreeEntry& entry : QueueTree(snapshot, shares)) {
    auto share_it = by_name.find(entry.name);
    if (share_it == by_name.end()) continue;
    const v1::QueueShare& share = *share_it->second;
    auto queue_it = request_queues.find(entry.name);
    const v1::Queue& queue = queue_it == request_queues.end() ? kNoQueue : *queue_it->second;
    bool first = true;
    for (const std::string& resource : resources) {
      std::vector<std::string> row = {first ? std::string(2 * entry.depth, ' ') + entry.name : "",
                                      resource};
      if (kueue) {
        row.insert(
            row.end(),
            {quota_cell(share.deserved(), resource), quota_cell(queue.borrowing_limit(), resource),
             quota_cell(queue.lending_limit(), resource), Cell(share.allocated(), resource, false),
             Cell(share.requested(), resource, false),
             first ? FormatNumber(share.weighted_share()) : "",
             first ? share.dominant_resource() : "",
             first ? (share.borrowing() ? "yes" : "no") : ""});
      } else {
        row.insert(
            row.end(),
            {quota_cell(share.deserved(), resource), Cell(share.fair_share(), resource, false),
             Cell(share.allocated(), resource, false), Cell(share.requested(), resource, false),
             first ? FormatNumber(share.saturation()) : ""});
      }
      table.AddRow(std::move(row));
      first = false;
    }
  }
  return absl::StrCat(kueue ? "Queues (Kueue fair sharing)" : "Queues (KAI fair share)", "\n",
                      table.Render(), any_not_set ? absl::StrCat(kNotSet, " = not set\n") : "",
                      RenderFlavorQuotas(snapshot, shares));
}

std::string Heading(const char* title, int count) {
  return count == 0 ? absl::StrCat(title, ": none\n") : absl::StrCat(title, " (", count, ")\n");
}

}  // namespace

std::string EvictionReasonName(v1::EvictionReason reason) {
  const std::string& name = v1::EvictionReason_Name(reason);
  return name.empty() ? absl::StrCat(static_cast<int>(reason)) : name;
}

// An admission's flavors (Admission.pod_sets): "cpu=spot, memory=spot" for the unnamed pod set,
// "main: cpu=spot; workers: cpu=on-demand" for named ones; "-" for a queue without flavors.
std::string PodSetFlavorsText(const RepeatedPtrField<v1::PodSetFlavors>& pod_sets) {
  std::vector<std::string> sets;
  for (const v1::PodSetFlavors& pod_set : pod_sets) {
    std::vector<std::string> pairs;
    const std::map<std::string, std::string> flavors(pod_set.flavors().begin(),
                                                     pod_set.flavors().end());
    for (const auto& [resource, flavor] : flavors) {
      pairs.push_back(absl::StrCat(resource, "=", flavor.empty() ? "-" : flavor));
    }
    const std::string text = absl::StrJoin(pairs, ", ");
    sets.push_back(pod_set.pod_set().empty() ? text : absl::StrCat(pod_set.pod_set(), ": ", text));
  }
  return absl::StrJoin(sets, "; ");
}

std::string FormatQuantity(const std::string& resource, double value, bool minus_one_unlimited) {
  if (minus_one_unlimited && value == -1) return "unlimited";
  if (resource == "memory" && std::isfinite(value)) return FormatBytes(value);
  return FormatNumber(value);
}

std::string RenderFairShares(const v1::Snapshot& snapshot, const v1::Policy& policy,
                             const v1::FairShareResponse& response) {
  return RenderQueues(snapshot, policy, response.queues());
}

std::string RenderSchedule(const v1::Snapshot& snapshot, const v1::Policy& policy,
                           const v1::ScheduleResponse& response) {
  std::string out = RenderQueues(snapshot, policy, response.queues());
  const bool kueue = IsKueue(policy);
  std::map<std::string, std::string> group_queue;
  for (const v1::PodGroup& group : snapshot.pod_groups()) group_queue[group.name()] = group.queue();

  if (!kueue || response.bindings_size() > 0) {
    absl::StrAppend(&out, "\n", Heading("Bindings", response.bindings_size()));
    if (response.bindings_size() > 0) {
      // GPU sharing (§4.13): a column of device keys when some binding shares a device.
      const bool devices =
          std::any_of(response.bindings().begin(), response.bindings().end(),
                      [](const v1::Binding& binding) { return binding.gpu_groups_size() > 0; });
      std::vector<TextTable::Column> columns = {
          {"POD GROUP"}, {"POD"}, {"NODE"}, {"AFTER EVICTIONS"}};
      if (devices) columns.push_back({"GPU DEVICES"});
      TextTable table(columns);
      for (const v1::Binding& binding : response.bindings()) {
        std::vector<std::string> row = {binding.pod_group(), binding.pod(), binding.node(),
                                        binding.after_evictions() ? "yes" : ""};
        if (devices) row.push_back(absl::StrJoin(binding.gpu_groups(), ","));
        table.AddRow(row);
      }
      out += table.Render();
    }
  }
  if (kueue || response.admissions_size() > 0) {
    absl::StrAppend(&out, "\n", Heading("Admissions", response.admissions_size()));
    if (response.admissions_size() > 0) {
      bool flavors = false;
      for (const v1::Admission& admission : response.admissions()) {
        flavors = flavors || admission.pod_sets_size() > 0;
      }
      TextTable table =
          flavors ? TextTable({{"POD GROUP"}, {"QUEUE"}, {"AFTER EVICTIONS"}, {"FLAVORS"}})
                  : TextTable({{"POD GROUP"}, {"QUEUE"}, {"AFTER EVICTIONS"}});
      for (const v1::Admission& admission : response.admissions()) {
        std::vector<std::string> row = {admission.pod_group(), admission.queue(),
                                        admission.after_evictions() ? "yes" : ""};
        if (flavors) row.push_back(PodSetFlavorsText(admission.pod_sets()));
        table.AddRow(std::move(row));
      }
      out += table.Render();
    }
  }
  absl::StrAppend(&out, "\n", Heading("Evictions", response.evictions_size()));
  if (response.evictions_size() > 0) {
    TextTable table({{"POD GROUP"}, {"POD"}, {"NODE"}, {"REASON"}, {"FOR"}, {"MESSAGE"}});
    for (const v1::Eviction& eviction : response.evictions()) {
      table.AddRow({eviction.pod_group(), eviction.pod(), eviction.node(),
                    EvictionReasonName(eviction.reason()), eviction.preemptor_pod_group(),
                    eviction.message()});
    }
    out += table.Render();
  }
  absl::StrAppend(&out, "\n", Heading("Pending", response.pending_size()));
  if (response.pending_size() > 0) {
    TextTable table({{"POD GROUP"}, {"QUEUE"}, {"REASON"}, {"MESSAGE"}});
    for (const v1::PendingPodGroup& pending : response.pending()) {
      auto it = group_queue.find(pending.pod_group());
      table.AddRow({pending.pod_group(), it == group_queue.end() ? "" : it->second,
                    pending.reason(), pending.message()});
    }
    out += table.Render();
  }
  return out;
}

}  // namespace arbiter::cli
