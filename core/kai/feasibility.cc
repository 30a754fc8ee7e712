#include "core/kai/feasibility.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace arbiter::kai {
namespace {

constexpr std::string_view kNoSchedule = "NoSchedule";
constexpr std::string_view kPreferNoSchedule = "PreferNoSchedule";
constexpr std::string_view kNoExecute = "NoExecute";

// Length-prefixed (the length's bytes as they are in memory), so that no two different inputs
// encode the same.
void Append(std::string& out, std::string_view text) {
  const size_t size = text.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof(size));
  out += text;
}

bool SameToleration(const Toleration& a, const Toleration& b) {
  return a.key == b.key && a.op == b.op && a.value == b.value && a.effect == b.effect;
}

// Whether two pods ask the same of a node's labels and taints, written the same way: then they
// have the same key, and so the same signature. (Pods of one group usually do.)
bool SameConstraints(const Pod& a, const Pod& b) {
  return a.node_selector == b.node_selector &&
         std::equal(a.tolerations.begin(), a.tolerations.end(), b.tolerations.begin(),
                    b.tolerations.end(), SameToleration);
}

// Writes the node's key into `key` (cleared first; its capacity is reused from node to node).
void NodeKey(const Node& node, const std::set<std::string>& selector_keys, std::string& key) {
  key.assign(node.unschedulable ? "U" : "S");
  for (const std::string& label : selector_keys) {
    auto it = node.labels.find(label);
    if (it == node.labels.end()) {
      key += '-';
    } else {
      key += '+';
      Append(key, it->second);
    }
  }
  std::vector<std::tuple<std::string_view, std::string_view, std::string_view>> taints;
  for (const Taint& taint : node.taints) taints.emplace_back(taint.key, taint.value, taint.effect);
  std::sort(taints.begin(), taints.end());
  for (const auto& [k, v, e] : taints) {
    Append(key, k);
    Append(key, v);
    Append(key, e);
  }
}

std::string PodKey(const Pod& pod) {
  std::string key;
  for (const auto& [k, v] : pod.node_selector) {
    Append(key, k);
    Append(key, v);
  }
  key += '|';
  std::vector<std::string> tolerations;
  for (const Toleration& t : pod.tolerations) {
    std::string one;
    Append(one, t.key);
    Append(one, t.op);
    Append(one, t.value);
    Append(one, t.effect);
    tolerations.push_back(std::move(one));
  }
  std::sort(tolerations.begin(), tolerations.end());
  for (const std::string& one : tolerations) key += one;
  return key;
}

bool Tolerated(const Pod& pod, const Taint& taint) {
  for (const Toleration& toleration : pod.tolerations) {
    if (Tolerates(toleration, taint)) return true;
  }
  return false;
}

}  // namespace

Feasibility::Feasibility(const Cluster& cluster, CancelPoll* poll) {
  CancelPoll never;
  CancelPoll& cancel = poll != nullptr ? *poll : never;
  std::set<std::string> selector_keys;
  for (int p = 0; p < cluster.num_pods(); ++p) {
    for (const auto& [key, value] : cluster.pod(p).pod->node_selector) selector_keys.insert(key);
  }

  absl::flat_hash_map<std::string, int> class_index;
  node_class_.resize(cluster.num_nodes());
  std::string key;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    const Node& node = *cluster.node(n).node;
    NodeKey(node, selector_keys, key);
    auto it = class_index.find(key);
    if (it == class_index.end()) {
      it = class_index.emplace(key, static_cast<int>(classes_.size())).first;
      classes_.push_back(NodeClass{&node, {}});
    }
    classes_[it->second].nodes.push_back(n);
    node_class_[n] = it->second;
    if (n + 1 < cluster.num_nodes() && cancel.Tick()) {
      for (int rest = n + 1; rest < cluster.num_nodes(); ++rest) {
        classes_[it->second].nodes.push_back(rest);
        node_class_[rest] = it->second;
      }
      break;
    }
  }

  absl::flat_hash_map<std::string, int> signature_index;
  pod_signature_.resize(cluster.num_pods());
  int plain = -1;  // the signature without selector or tolerations, the common case
  std::array<int, 4> recent = {-1, -1, -1, -1};  // the signatures last looked up, newest first
  for (int p = 0; p < cluster.num_pods(); ++p) {
    const Pod& pod = *cluster.pod(p).pod;
    if (p > 0 && cancel.Tick()) {
      for (int rest = p; rest < cluster.num_pods(); ++rest)
        pod_signature_[rest] = pod_signature_[p - 1];
      break;
    }
    if (pod.node_selector.empty() && pod.tolerations.empty() && plain >= 0) {
      pod_signature_[p] = plain;
      continue;
    }
    // A pod that asks what a recent one asked has its signature: the previous pod (its group's
    // pods usually agree) or the last few signatures found (the first pods of other groups).
    if (p > 0 && SameConstraints(pod, *cluster.pod(p - 1).pod)) {
      pod_signature_[p] = pod_signature_[p - 1];
      continue;
    }
    const int* known = std::find_if(recent.begin(), recent.end(), [&](int signature) {
      return signature >= 0 && SameConstraints(pod, *signatures_[signature].example);
    });
    if (known != recent.end()) {
      pod_signature_[p] = *known;
      continue;
    }
    auto [it, inserted] =
        signature_index.emplace(PodKey(pod), static_cast<int>(signatures_.size()));
    if (inserted) signatures_.push_back(Signature{&pod, false, 0, {}});
    pod_signature_[p] = it->second;
    std::rotate(recent.begin(), recent.end() - 1, recent.end());
    recent.front() = it->second;
    if (pod.node_selector.empty() && pod.tolerations.empty()) plain = it->second;
  }
}

Feasibility::Verdict Feasibility::Judge(const Pod& pod, const NodeClass& node_class,
                                        bool* preferred) const {
  const Node& node = *node_class.example;
  if (node.unschedulable) return Verdict::kUnschedulable;
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return Verdict::kSelector;
  }
  *preferred = true;
  for (const Taint& taint : node.taints) {
    if (taint.effect == kNoSchedule || taint.effect == kNoExecute) {
      if (!Tolerated(pod, taint)) return Verdict::kTaint;
    } else if (taint.effect == kPreferNoSchedule && *preferred) {
      *preferred = Tolerated(pod, taint);
    }
  }
  return Verdict::kFeasible;
}

void Feasibility::Compute(Signature& signature) {
  signature.computed = true;
  for (int c = 0; c < num_classes(); ++c) {
    bool preferred = false;
    if (Judge(*signature.example, classes_[c], &preferred) != Verdict::kFeasible) continue;
    signature.classes.push_back(FeasibleClass{c, preferred});
    signature.feasible_nodes += static_cast<int>(classes_[c].nodes.size());
  }
}

const std::vector<Feasibility::FeasibleClass>& Feasibility::FeasibleClasses(int signature) {
  Signature& entry = signatures_[signature];
  if (!entry.computed) Compute(entry);
  return entry.classes;
}

int Feasibility::FeasibleNodeCount(int signature) {
  Signature& entry = signatures_[signature];
  if (!entry.computed) Compute(entry);
  return entry.feasible_nodes;
}

Feasibility::Rejections Feasibility::Explain(int signature) const {
  Rejections rejections;
  const Pod& pod = *signatures_[signature].example;
  for (const NodeClass& node_class : classes_) {
    bool preferred = false;
    int count = static_cast<int>(node_class.nodes.size());
    switch (Judge(pod, node_class, &preferred)) {
      case Verdict::kUnschedulable:
        rejections.unschedulable += count;
        break;
      case Verdict::kSelector:
        rejections.selector += count;
        break;
      case Verdict::kTaint:
        rejections.taint += count;
        break;
      case Verdict::kFeasible:
        break;
    }
  }
  return rejections;
}

}  // namespace arbiter::kai
