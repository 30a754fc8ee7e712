#include "clients/simulator/sim_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/validation.h"
#include "yaml-cpp/yaml.h"

namespace arbiter::simulator {
namespace {

constexpr char kGpu[] = "nvidia.com/gpu";

// Resource names a config may abbreviate.
std::string ResourceName(const std::string& key) {
  if (key == "gpu" || key == "gpus") return kGpu;
  if (key == "mem") return "memory";
  return key;
}

// KAI's simulator writes every absent value as `null` (its optional fields are Go pointers,
// and a nil list or map is written as null too), and a YAML key with no value reads as null.
// Every null value of a mapping, at any depth, is removed before the config is read, so that each
// field's reader finds it absent and applies its default (or, for a required field, says it is
// required). A null element of a list is kept: the element's reader refuses it with its path.
void DropNulls(YAML::Node node) {
  if (node.IsSequence()) {
    for (YAML::Node element : node) DropNulls(element);
    return;
  }
  if (!node.IsMap()) return;
  std::vector<YAML::Node> null_keys;
  for (const auto& entry : node) {
    if (entry.second.IsNull()) {
      null_keys.push_back(entry.first);
    } else {
      DropNulls(entry.second);
    }
  }
  for (const YAML::Node& key : null_keys) node.remove(key);
}

// What a value is, for error messages: its text, or its kind when it has none.
std::string Describe(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
  if (node.IsScalar()) return absl::StrCat("\"", node.Scalar(), "\"");
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "null";
}

// Reading one YAML document with paths in every error. yaml-cpp reports problems by throwing;
// every call into it happens inside Parse's try block.
class Reader {
 public:
  absl::Status error() const { return error_; }
  bool ok() const { return error_.ok(); }

  void Fail(const std::string& path, const std::string& what) {
    if (error_.ok()) error_ = absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  }

  // Keys of a mapping must be among `known`.
  void CheckKeys(const YAML::Node& node, const std::string& path,
                 const std::set<std::string>& known) {
    if (!node.IsMap()) {
      Fail(path, absl::StrCat("must be a mapping, got ", Describe(node)));
      return;
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      if (known.count(key) == 0) Fail(absl::StrCat(path, ".", key), "unknown key");
    }
  }

  // The readers of one value below fail with "is required" when the value is absent (or was
  // null), and otherwise name what they got.
  double Number(const YAML::Node& node, const std::string& path) {
    double value = 0;
    if (!Present(node, path)) return 0;
    if (!node.IsScalar() || !absl::SimpleAtod(node.Scalar(), &value) || !std::isfinite(value)) {
      Fail(path, absl::StrCat("must be a finite number, got ", Describe(node)));
      return 0;
    }
    return value;
  }

  int64_t Integer(const YAML::Node& node, const std::string& path) {
    int64_t value = 0;
    if (!Present(node, path)) return 0;
    if (!node.IsScalar() || !absl::SimpleAtoi(node.Scalar(), &value)) {
      Fail(path, absl::StrCat("must be an integer, got ", Describe(node)));
    }
    return value;
  }

  bool Bool(const YAML::Node& node, const std::string& path) {
    if (!Present(node, path)) return false;
    const std::string text = node.IsScalar() ? node.Scalar() : "";
    if (text == "true") return true;
    if (text == "false") return false;
    Fail(path, absl::StrCat("must be true or false, got ", Describe(node)));
    return false;
  }

  std::string String(const YAML::Node& node, const std::string& path) {
    if (!Present(node, path)) return "";
    if (!node.IsScalar()) {
      Fail(path, absl::StrCat("must be a string, got ", Describe(node)));
      return "";
    }
    return node.Scalar();
  }

  // Seconds: a number, or a number with a unit s, m, h or d.
  double Seconds(const YAML::Node& node, const std::string& path) {
    if (!Present(node, path)) return 0;
    if (!node.IsScalar()) {
      Fail(path, absl::StrCat("must be a duration such as 90, \"15m\", \"1h\" or \"2d\", got ",
                              Describe(node)));
      return 0;
    }
    std::string text = node.Scalar();
    double unit = 1;
    if (!text.empty()) {
      const char last = text.back();
      const std::map<char, double> units = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
      auto found = units.find(last);
      if (found != units.end()) {
        unit = found->second;
        text.pop_back();
      }
    }
    double value = 0;
    if (!absl::SimpleAtod(text, &value) || !std::isfinite(value) || value < 0) {
      Fail(path, absl::StrCat("must be a duration such as 90, \"15m\", \"1h\" or \"2d\", got \"",
                              node.Scalar(), "\""));
      return 0;
    }
    return value * unit;
  }

  ResourceMap Resources(const YAML::Node& node, const std::string& path) {
    ResourceMap out;
    if (!node) return out;
    if (!node.IsMap()) {
      Fail(path, absl::StrCat("must map resource names to amounts, got ", Describe(node)));
      return out;
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      out[ResourceName(key)] = Number(entry.second, absl::StrCat(path, ".", key));
    }
    return out;
  }

  // Label keys to values (node labels, node selectors).
  LabelMap Labels(const YAML::Node& node, const std::string& path) {
    LabelMap out;
    if (!node) return out;
    if (!node.IsMap()) {
      Fail(path, absl::StrCat("must map label keys to values, got ", Describe(node)));
      return out;
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      out[key] = String(entry.second, absl::StrCat(path, ".", key));
    }
    return out;
  }

  // A list of mappings; `read` takes each element with its path.
  template <typename Read>
  void List(const YAML::Node& node, const std::string& path, const Read& read) {
    if (!node) return;
    if (!node.IsSequence()) {
      Fail(path, absl::StrCat("must be a list, got ", Describe(node)));
      return;
    }
    for (size_t i = 0; i < node.size() && ok(); ++i) read(node[i], absl::StrCat(path, "[", i, "]"));
  }

  std::vector<Taint> Taints(const YAML::Node& node, const std::string& path) {
    std::vector<Taint> out;
    List(node, path, [&](const YAML::Node& t, const std::string& at) {
      CheckKeys(t, at, {"key", "value", "effect"});
      if (!ok()) return;
      Taint taint;
      taint.key = String(t["key"], at + ".key");
      if (t["value"]) taint.value = String(t["value"], at + ".value");
      taint.effect = String(t["effect"], at + ".effect");
      if (ok() && taint.effect != "NoSchedule" && taint.effect != "PreferNoSchedule" &&
          taint.effect != "NoExecute") {
        Fail(at + ".effect", "must be NoSchedule, PreferNoSchedule or NoExecute");
      }
      out.push_back(std::move(taint));
    });
    return out;
  }

  std::vector<Toleration> Tolerations(const YAML::Node& node, const std::string& path) {
    std::vector<Toleration> out;
    List(node, path, [&](const YAML::Node& t, const std::string& at) {
      CheckKeys(t, at, {"key", "operator", "value", "effect"});
      if (!ok()) return;
      Toleration toleration;
      if (t["key"]) toleration.key = String(t["key"], at + ".key");
      if (t["operator"]) toleration.op = String(t["operator"], at + ".operator");
      if (t["value"]) toleration.value = String(t["value"], at + ".value");
      if (t["effect"]) toleration.effect = String(t["effect"], at + ".effect");
      if (!toleration.op.empty() && toleration.op != "Equal" && toleration.op != "Exists") {
        Fail(at + ".operator", "must be Equal or Exists");
      }
      if (!toleration.effect.empty() && toleration.effect != "NoSchedule" &&
          toleration.effect != "PreferNoSchedule" && toleration.effect != "NoExecute") {
        Fail(at + ".effect", "must be NoSchedule, PreferNoSchedule or NoExecute");
      }
      out.push_back(std::move(toleration));
    });
    return out;
  }

 private:
  bool Present(const YAML::Node& node, const std::string& path) {
    if (node.IsDefined()) return true;
    Fail(path, "is required");
    return false;
  }

  absl::Status error_;
};

Duration ToDuration(double seconds) {
  Duration d;
  d.seconds = static_cast<int64_t>(std::floor(seconds));
  d.nanos = static_cast<int32_t>(std::llround((seconds - std::floor(seconds)) * 1e9));
  return d;
}

absl::StatusOr<Action> ActionNamed(const std::string& name) {
  if (name == "allocate") return Action::kAllocate;
  if (name == "consolidate") return Action::kConsolidate;
  if (name == "reclaim") return Action::kReclaim;
  if (name == "preempt") return Action::kPreempt;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown action \"", name, "\" (allocate, consolidate, reclaim, preempt)"));
}

Placement ReadPlacement(Reader& r, const YAML::Node& node, const std::string& path) {
  const std::string placement = r.String(node, path);
  if (placement == "binpack") return Placement::kBinpack;
  if (placement == "spread") return Placement::kSpread;
  r.Fail(path, "must be binpack or spread");
  return Placement::kUnspecified;
}

void ReadPolicy(Reader& r, const YAML::Node& node, SimConfig& config) {
  r.CheckKeys(node, "policy",
              {"model", "k_value", "actions", "placement", "gpu_device_placement",
               "reclaimer_utilization_multiplier", "consolidating_reclaim",
               "max_consolidation_preemptees"});
  Policy& p = config.policy;
  if (node["model"]) {
    const std::string model = r.String(node["model"], "policy.model");
    if (model == "kai") {
      p.fairness_model = FairnessModel::kKai;
    } else if (model == "kueue") {
      p.fairness_model = FairnessModel::kKueue;
    } else {
      r.Fail("policy.model", "must be kai or kueue");
    }
  }
  if (node["k_value"]) p.k_value = r.Number(node["k_value"], "policy.k_value");
  if (node["reclaimer_utilization_multiplier"]) {
    p.reclaimer_utilization_multiplier = r.Number(node["reclaimer_utilization_multiplier"],
                                                  "policy.reclaimer_utilization_multiplier");
  }
  if (node["placement"]) p.placement = ReadPlacement(r, node["placement"], "policy.placement");
  if (node["gpu_device_placement"]) {
    // §4.13.3: how a sharing pod chooses its devices; absent = as placement.
    p.gpu_device_placement =
        ReadPlacement(r, node["gpu_device_placement"], "policy.gpu_device_placement");
  }
  if (node["actions"]) {
    const YAML::Node& actions = node["actions"];
    if (!actions.IsSequence()) {
      r.Fail("policy.actions", absl::StrCat("must be a list, got ", Describe(actions)));
    }
    for (size_t i = 0; actions.IsSequence() && i < actions.size(); ++i) {
      const std::string path = absl::StrCat("policy.actions[", i, "]");
      absl::StatusOr<Action> action = ActionNamed(r.String(actions[i], path));
      if (!action.ok()) {
        r.Fail(path, std::string(action.status().message()));
      } else {
        p.actions.push_back(*action);
      }
    }
  }
  if (node["consolidating_reclaim"]) {
    p.consolidating_reclaim = r.Bool(node["consolidating_reclaim"], "policy.consolidating_reclaim");
  }
  if (node["max_consolidation_preemptees"]) {
    p.max_consolidation_preemptees = static_cast<int32_t>(
        r.Integer(node["max_consolidation_preemptees"], "policy.max_consolidation_preemptees"));
  }
}

// A flavored queue's resource groups (SEMANTICS §5.8.2): each covers resources and lists its
// flavors in the order they are tried, each with a quota per covered resource, either a number
// (the nominal quota) or {nominal, borrowing_limit, lending_limit}.
std::vector<ResourceGroup> ReadResourceGroups(Reader& r, const YAML::Node& node,
                                              const std::string& path) {
  std::vector<ResourceGroup> groups;
  r.List(node, path, [&](const YAML::Node& g, const std::string& at) {
    r.CheckKeys(g, at, {"covered_resources", "flavors"});
    if (!r.ok()) return;
    ResourceGroup group;
    const std::string covered_path = at + ".covered_resources";
    if (!g["covered_resources"]) r.Fail(covered_path, "is required");
    r.List(g["covered_resources"], covered_path, [&](const YAML::Node& c, const std::string& k) {
      group.covered_resources.push_back(ResourceName(r.String(c, k)));
    });
    if (!g["flavors"]) r.Fail(at + ".flavors", "is required");
    r.List(g["flavors"], at + ".flavors", [&](const YAML::Node& f, const std::string& fat) {
      r.CheckKeys(f, fat, {"flavor", "resources"});
      if (!r.ok()) return;
      FlavorQuotas quotas;
      quotas.flavor = r.String(f["flavor"], fat + ".flavor");
      const YAML::Node& resources = f["resources"];
      const std::string resources_path = fat + ".resources";
      if (!resources) r.Fail(resources_path, "is required");
      if (resources && !resources.IsMap()) {
        r.Fail(resources_path,
               absl::StrCat("must map resource names to quotas, got ", Describe(resources)));
      }
      for (const auto& entry : resources) {
        if (!r.ok()) return;
        const std::string key = entry.first.as<std::string>();
        const std::string qat = absl::StrCat(resources_path, ".", key);
        FlavorResourceQuota quota;
        if (entry.second.IsMap()) {
          r.CheckKeys(entry.second, qat, {"nominal", "borrowing_limit", "lending_limit"});
          quota.nominal = r.Number(entry.second["nominal"], qat + ".nominal");
          if (entry.second["borrowing_limit"]) {
            quota.borrowing_limit =
                r.Number(entry.second["borrowing_limit"], qat + ".borrowing_limit");
          }
          if (entry.second["lending_limit"]) {
            quota.lending_limit = r.Number(entry.second["lending_limit"], qat + ".lending_limit");
          }
        } else {
          quota.nominal = r.Number(entry.second, qat);
        }
        quotas.resources[ResourceName(key)] = quota;
      }
      group.flavors.push_back(std::move(quotas));
    });
    groups.push_back(std::move(group));
  });
  return groups;
}

// Kueue's spelling of flavor fungibility (SEMANTICS §5.8.6).
FlavorFungibility ReadFlavorFungibility(Reader& r, const YAML::Node& node,
                                        const std::string& path) {
  FlavorFungibility out;
  r.CheckKeys(node, path, {"when_can_borrow", "when_can_preempt", "preference"});
  if (!r.ok()) return out;
  if (node["when_can_borrow"]) {
    const std::string v = r.String(node["when_can_borrow"], path + ".when_can_borrow");
    if (v == "MayStopSearch") {
      out.when_can_borrow = WhenCanBorrow::kMayStopSearch;
    } else if (v == "TryNextFlavor") {
      out.when_can_borrow = WhenCanBorrow::kTryNextFlavor;
    } else {
      r.Fail(path + ".when_can_borrow", "must be MayStopSearch or TryNextFlavor");
    }
  }
  if (node["when_can_preempt"]) {
    const std::string v = r.String(node["when_can_preempt"], path + ".when_can_preempt");
    if (v == "MayStopSearch") {
      out.when_can_preempt = WhenCanPreempt::kMayStopSearch;
    } else if (v == "TryNextFlavor") {
      out.when_can_preempt = WhenCanPreempt::kTryNextFlavor;
    } else {
      r.Fail(path + ".when_can_preempt", "must be MayStopSearch or TryNextFlavor");
    }
  }
  if (node["preference"]) {
    const std::string v = r.String(node["preference"], path + ".preference");
    if (v == "BorrowingOverPreemption") {
      out.preference = FlavorPreference::kBorrowingOverPreemption;
    } else if (v == "PreemptionOverBorrowing") {
      out.preference = FlavorPreference::kPreemptionOverBorrowing;
    } else {
      r.Fail(path + ".preference", "must be BorrowingOverPreemption or PreemptionOverBorrowing");
    }
  }
  return out;
}

void ReadResourceFlavors(Reader& r, const YAML::Node& node, SimConfig& config) {
  r.List(node, "resource_flavors", [&](const YAML::Node& f, const std::string& at) {
    r.CheckKeys(f, at, {"name", "node_labels", "node_taints", "tolerations"});
    if (!r.ok()) return;
    ResourceFlavor flavor;
    flavor.name = r.String(f["name"], at + ".name");
    flavor.node_labels = r.Labels(f["node_labels"], at + ".node_labels");
    flavor.node_taints = r.Taints(f["node_taints"], at + ".node_taints");
    flavor.tolerations = r.Tolerations(f["tolerations"], at + ".tolerations");
    config.resource_flavors.push_back(std::move(flavor));
  });
}

void ReadQueues(Reader& r, const YAML::Node& node, SimConfig& config) {
  if (!node.IsSequence()) {
    r.Fail("queues", absl::StrCat("must be a list, got ", Describe(node)));
    return;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string path = absl::StrCat("queues[", i, "]");
    const YAML::Node& q = node[i];
    r.CheckKeys(q, path,
                {"name", "parent", "deserved", "limit", "over_quota_weight", "priority",
                 "reclaim_min_runtime", "preempt_min_runtime", "borrowing_limit", "lending_limit",
                 "fair_sharing_weight", "within_cluster_queue", "reclaim_within_cohort",
                 "resource_groups", "flavor_fungibility"});
    if (!r.ok()) return;
    Queue queue;
    queue.name = r.String(q["name"], path + ".name");
    if (q["parent"]) queue.parent = r.String(q["parent"], path + ".parent");
    queue.deserved = r.Resources(q["deserved"], path + ".deserved");
    queue.limit = r.Resources(q["limit"], path + ".limit");
    queue.over_quota_weight = r.Resources(q["over_quota_weight"], path + ".over_quota_weight");
    queue.borrowing_limit = r.Resources(q["borrowing_limit"], path + ".borrowing_limit");
    queue.lending_limit = r.Resources(q["lending_limit"], path + ".lending_limit");
    if (q["priority"])
      queue.priority = static_cast<int32_t>(r.Integer(q["priority"], path + ".priority"));
    if (q["fair_sharing_weight"]) {
      queue.fair_sharing_weight = r.Number(q["fair_sharing_weight"], path + ".fair_sharing_weight");
    }
    if (q["reclaim_min_runtime"]) {
      queue.reclaim_min_runtime =
          ToDuration(r.Seconds(q["reclaim_min_runtime"], path + ".reclaim_min_runtime"));
    }
    if (q["preempt_min_runtime"]) {
      queue.preempt_min_runtime =
          ToDuration(r.Seconds(q["preempt_min_runtime"], path + ".preempt_min_runtime"));
    }
    if (q["within_cluster_queue"]) {
      const std::string v = r.String(q["within_cluster_queue"], path + ".within_cluster_queue");
      if (v == "Never") {
        queue.kueue_preemption.within_cluster_queue = WithinClusterQueue::kNever;
      } else if (v == "LowerPriority") {
        queue.kueue_preemption.within_cluster_queue = WithinClusterQueue::kLowerPriority;
      } else if (v == "LowerOrNewerEqualPriority") {
        queue.kueue_preemption.within_cluster_queue =
            WithinClusterQueue::kLowerOrNewerEqualPriority;
      } else {
        r.Fail(path + ".within_cluster_queue",
               "must be Never, LowerPriority or LowerOrNewerEqualPriority");
      }
    }
    if (q["reclaim_within_cohort"]) {
      const std::string v = r.String(q["reclaim_within_cohort"], path + ".reclaim_within_cohort");
      if (v == "Never") {
        queue.kueue_preemption.reclaim_within_cohort = ReclaimWithinCohort::kNever;
      } else if (v == "LowerPriority") {
        queue.kueue_preemption.reclaim_within_cohort = ReclaimWithinCohort::kLowerPriority;
      } else if (v == "Any") {
        queue.kueue_preemption.reclaim_within_cohort = ReclaimWithinCohort::kAny;
      } else {
        r.Fail(path + ".reclaim_within_cohort", "must be Never, LowerPriority or Any");
      }
    }
    queue.resource_groups = ReadResourceGroups(r, q["resource_groups"], path + ".resource_groups");
    if (q["flavor_fungibility"]) {
      queue.flavor_fungibility =
          ReadFlavorFungibility(r, q["flavor_fungibility"], path + ".flavor_fungibility");
    }
    config.queues.push_back(std::move(queue));
  }
}

void ReadNodes(Reader& r, const YAML::Node& node, SimConfig& config) {
  if (!node.IsSequence()) {
    r.Fail("nodes", absl::StrCat("must be a list, got ", Describe(node)));
    return;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string path = absl::StrCat("nodes[", i, "]");
    const YAML::Node& n = node[i];
    r.CheckKeys(n, path, {"name", "count", "allocatable", "labels", "gpu_device_memory"});
    if (!r.ok()) return;
    NodeSet set;
    if (n["name"]) set.name = r.String(n["name"], path + ".name");
    if (n["count"]) set.count = static_cast<int>(r.Integer(n["count"], path + ".count"));
    if (set.count < 1 || set.count > 100000) r.Fail(path + ".count", "must be 1 to 100000");
    set.allocatable = r.Resources(n["allocatable"], path + ".allocatable");
    set.labels = r.Labels(n["labels"], path + ".labels");
    if (n["gpu_device_memory"]) {
      const std::string at = path + ".gpu_device_memory";
      set.gpu_device_memory = r.Number(n["gpu_device_memory"], at);
      if (r.ok() && !(set.gpu_device_memory >= 0 && set.gpu_device_memory <= 0x1p53 &&
                      std::floor(set.gpu_device_memory) == set.gpu_device_memory)) {
        r.Fail(at, "must be a whole number >= 0 (the memory of each GPU device; 0 = unknown)");
      }
    }
    config.nodes.push_back(std::move(set));
  }
}

// A job stream's GPU sharing fields (SEMANTICS §4.13, checked as §4.13.6 checks a pod).
void ReadSharing(Reader& r, const YAML::Node& j, const std::string& path, JobStream& s) {
  if (j["gpu_fraction"]) {
    const std::string at = path + ".gpu_fraction";
    s.gpu_fraction = r.Number(j["gpu_fraction"], at);
    if (r.ok() && !(*s.gpu_fraction > 0 && *s.gpu_fraction < 1)) {
      r.Fail(at, "must be a share of one GPU above 0 and below 1, such as 0.25");
    }
  }
  if (j["gpu_memory"]) {
    const std::string at = path + ".gpu_memory";
    s.gpu_memory = r.Number(j["gpu_memory"], at);
    if (r.ok() && !(*s.gpu_memory >= 1 && *s.gpu_memory <= 0x1p53 &&
                    std::floor(*s.gpu_memory) == *s.gpu_memory)) {
      r.Fail(at,
             "must be a whole number >= 1 (memory on each device, in gpu_device_memory's unit)");
    }
    if (r.ok() && s.gpu_fraction) {
      r.Fail(at, "a job shares GPUs by gpu_fraction or by gpu_memory, not both");
    }
  }
  if (j["gpu_fraction_devices"]) {
    const std::string at = path + ".gpu_fraction_devices";
    const int64_t devices = r.Integer(j["gpu_fraction_devices"], at);
    if (r.ok() && (devices < 1 || devices > 10000)) r.Fail(at, "must be 1 to 10000");
    if (r.ok() && !s.gpu_fraction && !s.gpu_memory) {
      r.Fail(at, "needs gpu_fraction or gpu_memory (the share taken on each device)");
    }
    s.gpu_fraction_devices = static_cast<int32_t>(devices);
  }
  if (!r.ok() || (!s.gpu_fraction && !s.gpu_memory)) return;
  // A sharing pod's GPUs are its share of devices (§4.13.6 rule 5): it requests no whole GPU.
  const YAML::Node& requests = j["requests"];
  for (const auto& entry : requests) {
    const std::string key = entry.first.as<std::string>();
    if (ResourceName(key) != kGpu) continue;
    if (s.requests[kGpu] == 0) continue;
    r.Fail(absl::StrCat(path, ".requests.", key),
           absl::StrCat("a job that shares GPUs (", s.gpu_fraction ? "gpu_fraction" : "gpu_memory",
                        ") must not also request whole GPUs: its GPUs are its device shares"));
  }
}

void ReadJobs(Reader& r, const YAML::Node& node, SimConfig& config) {
  if (!node.IsSequence()) {
    r.Fail("jobs", absl::StrCat("must be a list of job streams, got ", Describe(node)));
    return;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string path = absl::StrCat("jobs[", i, "]");
    const YAML::Node& j = node[i];
    r.CheckKeys(j, path,
                {"queue", "name", "pods", "min_member", "requests", "duration", "priority",
                 "preemptible", "arrival", "count", "rate", "start", "node_selector", "tolerations",
                 "gpu_fraction", "gpu_memory", "gpu_fraction_devices"});
    if (!r.ok()) return;
    JobStream s;
    s.queue = r.String(j["queue"], path + ".queue");
    s.name = j["name"] ? r.String(j["name"], path + ".name") : s.queue;
    if (j["pods"]) s.pods = static_cast<int>(r.Integer(j["pods"], path + ".pods"));
    if (s.pods < 1 || s.pods > 10000) r.Fail(path + ".pods", "must be 1 to 10000");
    if (j["min_member"])
      s.min_member = static_cast<int>(r.Integer(j["min_member"], path + ".min_member"));
    s.requests = r.Resources(j["requests"], path + ".requests");
    if (j["duration"]) s.duration = r.Seconds(j["duration"], path + ".duration");
    if (j["priority"])
      s.priority = static_cast<int32_t>(r.Integer(j["priority"], path + ".priority"));
    if (j["preemptible"]) {
      s.preemptibility = r.Bool(j["preemptible"], path + ".preemptible")
                             ? Preemptibility::kPreemptible
                             : Preemptibility::kNonPreemptible;
    }
    if (j["arrival"]) {
      const std::string arrival = r.String(j["arrival"], path + ".arrival");
      if (arrival == "start") {
        s.arrival = Arrival::kStart;
      } else if (arrival == "backlog") {
        s.arrival = Arrival::kBacklog;
      } else if (arrival == "rate") {
        s.arrival = Arrival::kRate;
      } else {
        r.Fail(path + ".arrival", "must be start, backlog or rate");
      }
    }
    if (j["count"]) {
      s.count = static_cast<int>(r.Integer(j["count"], path + ".count"));
    } else if (s.arrival == Arrival::kRate) {
      s.count = 0;  // a random stream has no end unless it says so
    }
    if (s.count < 0 || s.count > 1000000) r.Fail(path + ".count", "must be 0 to 1000000");
    if (j["rate"]) s.rate = r.Number(j["rate"], path + ".rate");
    if (s.arrival == Arrival::kRate && !(s.rate > 0)) r.Fail(path + ".rate", "must be positive");
    if (j["start"]) s.start = r.Seconds(j["start"], path + ".start");
    s.node_selector = r.Labels(j["node_selector"], path + ".node_selector");
    s.tolerations = r.Tolerations(j["tolerations"], path + ".tolerations");
    ReadSharing(r, j, path, s);
    config.jobs.push_back(std::move(s));
  }
}

void ReadOwn(Reader& r, const YAML::Node& root, SimConfig& config) {
  r.CheckKeys(root, "config",
              {"name", "step", "horizon", "seed", "accounting", "policy", "resource_flavors",
               "queues", "nodes", "jobs"});
  if (!r.ok()) return;
  if (root["name"]) config.name = r.String(root["name"], "name");
  if (root["step"]) config.step = r.Seconds(root["step"], "step");
  if (root["horizon"]) config.horizon = r.Seconds(root["horizon"], "horizon");
  if (root["seed"]) config.seed = static_cast<uint64_t>(r.Integer(root["seed"], "seed"));
  if (root["accounting"]) {
    const YAML::Node& a = root["accounting"];
    r.CheckKeys(a, "accounting", {"half_life", "window", "window_type"});
    if (a["half_life"])
      config.accounting.half_life = r.Seconds(a["half_life"], "accounting.half_life");
    if (a["window"]) config.accounting.window = r.Seconds(a["window"], "accounting.window");
    if (a["window_type"]) {
      const std::string type = r.String(a["window_type"], "accounting.window_type");
      if (type != "sliding" && type != "tumbling") {
        r.Fail("accounting.window_type", "must be sliding or tumbling");
      }
      config.accounting.tumbling = type == "tumbling";
    }
  }
  if (root["policy"]) ReadPolicy(r, root["policy"], config);
  ReadResourceFlavors(r, root["resource_flavors"], config);
  if (root["queues"]) ReadQueues(r, root["queues"], config);
  if (root["nodes"]) ReadNodes(r, root["nodes"], config);
  if (root["jobs"]) ReadJobs(r, root["jobs"], config);
}

// KAI's simulator: one cycle is one second; every job is submitted at the start and runs until
// the end (its jobs never finish); usage is decayed by HalfLifePeriod inside a sliding window of
// WindowSize seconds. Defaults are KAI's: Cycles 100, WindowSize 5, HalfLifePeriod 0, KValue 1,
// queue Priority 100, Weight 1.
void ReadKai(Reader& r, const YAML::Node& root, SimConfig& config) {
  r.CheckKeys(root, "config",
              {"Cycles", "WindowSize", "HalfLifePeriod", "KValue", "Nodes", "Queues", "Jobs"});
  if (!r.ok()) return;
  config.from_kai = true;
  config.step = 1;
  config.horizon = root["Cycles"] ? static_cast<double>(r.Integer(root["Cycles"], "Cycles")) : 100;
  config.accounting.window = root["WindowSize"] ? r.Number(root["WindowSize"], "WindowSize") : 5;
  config.accounting.half_life =
      root["HalfLifePeriod"] ? r.Number(root["HalfLifePeriod"], "HalfLifePeriod") : 0;
  config.policy.fairness_model = FairnessModel::kKai;
  config.policy.k_value = root["KValue"] ? r.Number(root["KValue"], "KValue") : 1.0;
  const YAML::Node& nodes = root["Nodes"];
  if (nodes && !nodes.IsSequence()) {
    r.Fail("Nodes", absl::StrCat("must be a list, got ", Describe(nodes)));
  }
  for (size_t i = 0; nodes && nodes.IsSequence() && i < nodes.size(); ++i) {
    const std::string path = absl::StrCat("Nodes[", i, "]");
    r.CheckKeys(nodes[i], path, {"GPUs", "Count"});
    if (!r.ok()) return;
    NodeSet set;
    set.name = absl::StrCat("node", i);
    set.count =
        nodes[i]["Count"] ? static_cast<int>(r.Integer(nodes[i]["Count"], path + ".Count")) : 1;
    set.allocatable[kGpu] = r.Number(nodes[i]["GPUs"], path + ".GPUs");
    config.nodes.push_back(set);
  }
  const YAML::Node& queues = root["Queues"];
  if (queues && !queues.IsSequence()) {
    r.Fail("Queues", absl::StrCat("must be a list, got ", Describe(queues)));
  }
  for (size_t i = 0; queues && queues.IsSequence() && i < queues.size(); ++i) {
    const std::string path = absl::StrCat("Queues[", i, "]");
    const YAML::Node& q = queues[i];
    r.CheckKeys(q, path, {"Name", "Parent", "Priority", "DeservedGPUs", "Weight"});
    if (!r.ok()) return;
    Queue queue;
    queue.name = r.String(q["Name"], path + ".Name");
    if (q["Parent"]) queue.parent = r.String(q["Parent"], path + ".Parent");
    queue.priority =
        q["Priority"] ? static_cast<int32_t>(r.Integer(q["Priority"], path + ".Priority")) : 100;
    queue.deserved[kGpu] =
        q["DeservedGPUs"] ? r.Number(q["DeservedGPUs"], path + ".DeservedGPUs") : 0;
    queue.over_quota_weight[kGpu] = q["Weight"] ? r.Number(q["Weight"], path + ".Weight") : 1;
    config.queues.push_back(std::move(queue));
  }
  const YAML::Node& jobs = root["Jobs"];
  if (jobs && !jobs.IsMap()) {
    r.Fail("Jobs", absl::StrCat("must map queue names to jobs, got ", Describe(jobs)));
    return;
  }
  for (const auto& entry : jobs) {
    const std::string queue = entry.first.as<std::string>();
    const std::string path = absl::StrCat("Jobs.", queue);
    r.CheckKeys(entry.second, path, {"GPUs", "NumPods", "NumJobs"});
    if (!r.ok()) return;
    JobStream s;
    s.queue = queue;
    s.name = queue;
    s.requests[kGpu] = r.Number(entry.second["GPUs"], path + ".GPUs");
    s.pods = entry.second["NumPods"]
                 ? static_cast<int>(r.Integer(entry.second["NumPods"], path + ".NumPods"))
                 : 1;
    s.count = entry.second["NumJobs"]
                  ? static_cast<int>(r.Integer(entry.second["NumJobs"], path + ".NumJobs"))
                  : 1;
    s.arrival = Arrival::kStart;
    config.jobs.push_back(std::move(s));
  }
}

// Whether a queue sets a resource-flavor field (SEMANTICS §5.8).
bool SetsFlavors(const Queue& queue) {
  const FlavorFungibility& f = queue.flavor_fungibility;
  return !queue.resource_groups.empty() || f.when_can_borrow != WhenCanBorrow::kUnspecified ||
         f.when_can_preempt != WhenCanPreempt::kUnspecified ||
         f.preference != FlavorPreference::kUnspecified;
}

// Resource flavors: Kueue only; every flavor a queue lists is declared; then the queues and
// flavors pass the core's own validation (SEMANTICS §1), its paths read as the config's keys.
absl::Status CheckFlavors(const SimConfig& config) {
  bool flavored = !config.resource_flavors.empty();
  for (const Queue& queue : config.queues) flavored |= SetsFlavors(queue);
  if (!flavored) return absl::OkStatus();
  if (config.policy.fairness_model != FairnessModel::kKueue) {
    if (!config.resource_flavors.empty()) {
      return absl::InvalidArgumentError(
          "resource_flavors: only the kueue model has resource flavors (policy.model: kueue)");
    }
    for (size_t i = 0; i < config.queues.size(); ++i) {
      if (!SetsFlavors(config.queues[i])) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "queues[", i, "].",
          config.queues[i].resource_groups.empty() ? "flavor_fungibility" : "resource_groups",
          ": only the kueue model has resource flavors (policy.model: kueue)"));
    }
  }
  std::set<std::string> declared;
  for (const ResourceFlavor& flavor : config.resource_flavors) declared.insert(flavor.name);
  for (size_t i = 0; i < config.queues.size(); ++i) {
    const std::vector<ResourceGroup>& groups = config.queues[i].resource_groups;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t f = 0; f < groups[g].flavors.size(); ++f) {
        const std::string& name = groups[g].flavors[f].flavor;
        if (name.empty() || declared.count(name) > 0) continue;
        return absl::InvalidArgumentError(
            absl::StrCat("queues[", i, "].resource_groups[", g, "].flavors[", f,
                         "].flavor: no resource flavor named \"", name, "\" in resource_flavors"));
      }
    }
  }
  Snapshot snapshot;
  snapshot.queues = config.queues;
  snapshot.resource_flavors = config.resource_flavors;
  absl::Status status = ValidateRequest(snapshot, config.policy, RequestKind::kSchedule);
  if (status.ok()) return status;
  return absl::InvalidArgumentError(absl::StrReplaceAll(status.message(), {{"snapshot.", ""}}));
}

absl::Status Check(const SimConfig& config) {
  if (!(config.step > 0)) return absl::InvalidArgumentError("step: must be positive");
  if (!(config.horizon >= config.step)) {
    return absl::InvalidArgumentError("horizon: must be at least one step");
  }
  if (config.horizon / config.step > 10'000'000) {
    return absl::InvalidArgumentError("horizon: more than 10,000,000 steps");
  }
  if (config.nodes.empty() && config.policy.fairness_model != FairnessModel::kKueue) {
    return absl::InvalidArgumentError("nodes: at least one is needed (KAI places pods on nodes)");
  }
  if (config.queues.empty()) return absl::InvalidArgumentError("queues: at least one is needed");
  // The pods a run can hold at once are bounded before any is made: a start or backlog stream
  // holds at most count · pods (a random stream adds at most one job per arrival).
  double pods = 0;
  for (const JobStream& stream : config.jobs) {
    pods += static_cast<double>(std::max(stream.count, 1)) * stream.pods;
  }
  if (pods > 10'000'000) {
    return absl::InvalidArgumentError(
        "jobs: more than 10,000,000 pods in the streams' counts (count x pods)");
  }
  for (size_t i = 0; i < config.jobs.size(); ++i) {
    const JobStream& stream = config.jobs[i];
    if (config.policy.fairness_model == FairnessModel::kKueue &&
        (stream.gpu_fraction || stream.gpu_memory)) {
      return absl::InvalidArgumentError(
          absl::StrCat("jobs[", i, "].", stream.gpu_fraction ? "gpu_fraction" : "gpu_memory",
                       ": GPU sharing is read by the KAI model only (policy.model: kai)"));
    }
  }
  std::set<std::string> queues;
  for (const Queue& q : config.queues) queues.insert(q.name);
  for (size_t i = 0; i < config.jobs.size(); ++i) {
    if (queues.count(config.jobs[i].queue) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("jobs[", i, "].queue: no queue named \"", config.jobs[i].queue, "\""));
    }
  }
  return CheckFlavors(config);
}

}  // namespace

absl::StatusOr<SimConfig> ParseSimConfig(const std::string& yaml_text) {
  SimConfig config;
  Reader reader;
  try {
    YAML::Node document = YAML::Load(yaml_text);
    if (!document.IsMap()) return absl::InvalidArgumentError("config: must be a YAML mapping");
    // The dialect is told by its keys, before the null values (and their keys) go.
    const YAML::Node& keys = document;
    const bool kai = keys["Cycles"] || keys["Queues"] || keys["Nodes"] || keys["Jobs"];
    DropNulls(document);
    const YAML::Node& root = document;
    if (kai) {
      ReadKai(reader, root, config);
    } else {
      ReadOwn(reader, root, config);
    }
  } catch (const YAML::Exception& e) {
    // A reader that went on past a value of the wrong kind (a scalar where a mapping belongs)
    // makes yaml-cpp throw; the problem it found first is the one to report.
    if (!reader.ok()) return reader.error();
    return absl::InvalidArgumentError(absl::StrCat("config: ", e.what()));
  }
  if (!reader.ok()) return reader.error();
  if (absl::Status status = Check(config); !status.ok()) return status;
  return config;
}

absl::StatusOr<SimConfig> LoadSimConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<SimConfig> config = ParseSimConfig(text.str());
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        absl::StrCat(path, ": ", config.status().message()));
  }
  if (config->name.empty()) {
    const size_t slash = path.find_last_of('/');
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    const size_t dot = base.find_last_of('.');
    config->name = dot == std::string::npos ? base : base.substr(0, dot);
  }
  return config;
}

}  // namespace arbiter::simulator
