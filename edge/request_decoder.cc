#include "edge/request_decoder.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_set.h"
#include "absl/strings/str_cat.h"
#include "edge/wire_reader.h"

namespace arbiter::edge {
namespace {

// One segment of a field path: "queues" with index 3 is "queues[3]"; index -1 has no index.
struct PathPart {
  const char* field;
  int64_t index;
};

// Accounted sizes (libstdc++, 64-bit): a string longer than its inline buffer (15 bytes) holds
// its bytes and a terminator on the heap.
//
// Per resource name: each queue's share in the answer (four map entries, in the core and in the
// response message) and its fair-share vectors; each node's capacity vectors; each pod group's
// request vector; each pod's two dense request vectors in the KAI cycle (its own, and its
// node-side copy).
constexpr int64_t kQueueResourceBytes = 600;
constexpr int64_t kNodeResourceBytes = 128;
constexpr int64_t kGroupResourceBytes = 16;
constexpr int64_t kPodResourceBytes = 16;

int64_t HeapBytes(size_t string_length) {
  return string_length > 15 ? static_cast<int64_t>(string_length) + 1 : 0;
}

// The arbiter.v1 field map over the wire framing of WireReader, with the limits of
// RequestLimits counted as the fields are read.
class Decoder : private WireReader {
 public:
  Decoder(std::string_view bytes, const RequestLimits& limits)
      : WireReader(bytes), limits_(limits) {}

  bool Request(Snapshot* snapshot, Policy* policy) {
    const bool read = Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      if (number == 1) return Nested("snapshot", -1, [&] { return SnapshotFields(snapshot); });
      if (number == 2) return Nested("policy", -1, [&] { return PolicyFields(policy); });
      return Step::kUnknown;
    });
    return read && ChargeResourceTables(*snapshot);
  }

  // Why decoding stopped at a limit; OK when it did not (the bytes may still be invalid).
  const absl::Status& limit_error() const { return limit_error_; }
  int64_t decoded_bytes() const { return decoded_bytes_; }

 private:
  // ---- Limits ----

  // The field path being read, e.g. "snapshot.pod_groups[3].pods[0]", then `field` if any.
  std::string Path(std::string_view field = {}) const {
    std::string path;
    for (const PathPart& part : path_) {
      if (!path.empty()) path += '.';
      path += part.field;
      if (part.index >= 0) absl::StrAppend(&path, "[", part.index, "]");
    }
    if (!field.empty()) {
      if (!path.empty()) path += '.';
      path.append(field.data(), field.size());
    }
    return path;
  }

  // Records the first limit hit; always false, for `return Stop(...)`.
  bool Stop(absl::Status status) {
    if (limit_error_.ok()) limit_error_ = std::move(status);
    return false;
  }

  // Counts `bytes` more of decoded memory; false (and stops) past --max-decoded-bytes.
  bool Charge(int64_t bytes) {
    decoded_bytes_ += bytes;
    if (decoded_bytes_ <= limits_.max_decoded_bytes) return true;
    return OverBudget();
  }
  // Charge's refusal, out of the line every string and element takes.
  ABSL_ATTRIBUTE_NOINLINE bool OverBudget() {
    return Stop(absl::ResourceExhaustedError(
        absl::StrCat(Path(), ": the decoded request needs more than ", limits_.max_decoded_bytes,
                     " bytes of memory; this server accepts at most ", limits_.max_decoded_bytes,
                     " (--max-decoded-bytes)")));
  }

  // A new element at the end of `items`, the (limit + 1)th refused naming `what` and `flag`.
  // Capacity grows as std::vector grows it, charged before it is allocated.
  template <typename T>
  T* Append(std::vector<T>* items, int64_t limit, const char* field, const char* what,
            const char* flag) {
    if (static_cast<int64_t>(items->size()) >= limit) {
      Stop(absl::ResourceExhaustedError(absl::StrCat(Path(field), ": more than ", limit, " ", what,
                                                     "; this server accepts at most ", limit, " (",
                                                     flag, ")")));
      return nullptr;
    }
    if (items->size() == items->capacity()) {
      const size_t grown = std::max<size_t>(4, 2 * items->capacity());
      if (!Charge(static_cast<int64_t>((grown - items->capacity()) * sizeof(T)))) return nullptr;
      items->reserve(grown);
    }
    return &items->emplace_back();
  }

  template <typename T>
  T* Append(std::vector<T>* items, const char* field) {
    return Append(items, std::numeric_limits<int64_t>::max(), field, "", "");
  }

  // Reserves room for `more` elements that the bytes ahead announce, at most up to `limit` and
  // within the memory budget (a hint: decoding refuses what is over either).
  template <typename T>
  void ReserveMore(std::vector<T>* items, int64_t more, int64_t limit) {
    const int64_t wanted = std::min<int64_t>(static_cast<int64_t>(items->size()) + more, limit);
    if (wanted <= static_cast<int64_t>(items->capacity())) return;
    const int64_t cost = (wanted - static_cast<int64_t>(items->capacity())) * sizeof(T);
    if (decoded_bytes_ + cost > limits_.max_decoded_bytes) return;
    decoded_bytes_ += cost;
    items->reserve(static_cast<size_t>(wanted));
  }

  // What the decision and its answer hold for every (queue, node, pod group or pod) x resource name
  // of the request: the core's dense per-resource vectors, and for each queue the four
  // per-resource maps of its QueueShare. Charged once the counts are known, before the core
  // runs; the figures are measured (server/README.md, "What one call may cost").
  bool ChargeResourceTables(const Snapshot& snapshot) {
    const auto names = static_cast<int64_t>(resource_names_.size() + flavor_cells_.size());
    const int64_t cells = static_cast<int64_t>(snapshot.queues.size()) * kQueueResourceBytes +
                          static_cast<int64_t>(snapshot.nodes.size()) * kNodeResourceBytes +
                          static_cast<int64_t>(snapshot.pod_groups.size()) * kGroupResourceBytes +
                          pods_ * kPodResourceBytes;
    if (names == 0 || cells <= (limits_.max_decoded_bytes - decoded_bytes_) / names) {
      decoded_bytes_ += cells * names;
      return true;
    }
    return Stop(absl::ResourceExhaustedError(absl::StrCat(
        "snapshot: ", snapshot.queues.size(), " queues, ", snapshot.nodes.size(), " nodes, ",
        snapshot.pod_groups.size(), " pod groups and ", pods_, " pods over ", names,
        " resource names need more memory than this server gives one request (",
        limits_.max_decoded_bytes,
        " bytes, --max-decoded-bytes); send fewer resource names or "
        "fewer objects")));
  }

  // A string's length against --max-name-bytes, before it is copied.
  bool NameFits(uint32_t length, std::string_view field) {
    if (static_cast<int64_t>(length) <= limits_.max_name_bytes) return true;
    return NameTooLong(length, field);
  }
  // NameFits' refusal, out of the line every string takes.
  ABSL_ATTRIBUTE_NOINLINE bool NameTooLong(uint32_t length, std::string_view field) {
    return Stop(absl::InvalidArgumentError(
        absl::StrCat(Path(field), ": ", length,
                     " bytes; this server accepts names, keys and "
                     "values of at most ",
                     limits_.max_name_bytes, " bytes (--max-name-bytes)")));
  }

  // A resource name against --max-resource-names. Most requests repeat a handful of names
  // ("cpu", "memory", ...) in every map: the last names seen are compared before the set.
  bool KnownResource(std::string_view name, std::string_view field) {
    for (const std::string_view recent : recent_names_) {
      if (recent == name) return true;
    }
    const absl::string_view key(name.data(), name.size());
    auto found = resource_names_.find(key);
    if (found != resource_names_.end()) {
      Remember(*found);
      return true;
    }
    if (static_cast<int64_t>(resource_names_.size()) >= limits_.max_resource_names) {
      return Stop(absl::ResourceExhaustedError(
          absl::StrCat(Path(field), ": more than ", limits_.max_resource_names,
                       " distinct resource names in the request; this server accepts at most ",
                       limits_.max_resource_names, " (--max-resource-names)")));
    }
    Remember(*resource_names_.emplace(key).first);
    return true;
  }

  // A flavor-resource (SEMANTICS §5.8.1): the core gives each one a column of R beside the
  // resource names, so distinct names and flavor-resources together count against
  // --max-resource-names.
  bool KnownCell(std::string_view flavor, std::string_view resource, std::string_view field) {
    std::string key;
    key.reserve(flavor.size() + 1 + resource.size());
    key.append(flavor.data(), flavor.size());
    key.push_back('\0');
    key.append(resource.data(), resource.size());
    if (flavor_cells_.contains(key)) return true;
    if (static_cast<int64_t>(resource_names_.size() + flavor_cells_.size()) >=
        limits_.max_resource_names) {
      return Stop(absl::ResourceExhaustedError(absl::StrCat(
          Path(field), ": more than ", limits_.max_resource_names,
          " distinct resource names and flavor-resources in the request; this server accepts at "
          "most ",
          limits_.max_resource_names, " (--max-resource-names)")));
    }
    flavor_cells_.insert(std::move(key));
    return true;
  }

  // `name` (an element of resource_names_, whose address is stable) as the most recent name.
  void Remember(const std::string& name) {
    for (size_t i = recent_names_.size() - 1; i > 0; --i) recent_names_[i] = recent_names_[i - 1];
    recent_names_[0] = name;
  }

  // Embedded, for a message field named `field` (element `index` of a repeated one, or -1):
  // the path of limit errors inside it names it.
  template <typename Body>
  Step Nested(const char* field, int64_t index, Body&& body) {
    path_.push_back({field, index});
    const Step step = Embedded(std::forward<Body>(body));
    path_.pop_back();
    return step;
  }

  // ---- Values with limits (the wire type was checked by the caller) ----

  // A string field named `field`, within --max-name-bytes.
  Step String(std::string* out, std::string_view field) {
    uint32_t length = 0;
    if (!ReadLength(&length)) return Step::kBad;
    if (!NameFits(length, field) || !Charge(HeapBytes(length))) return Step::kBad;
    return ReadUtf8(length, out);
  }

  // A repeated enum, one value (unpacked) or a packed run.
  template <typename Enum>
  Step RepeatedEnum(int wire, std::vector<Enum>* out, const char* field) {
    if (wire == kVarint) {
      Enum* value = Append(out, field);
      if (value == nullptr) return Step::kBad;
      return EnumValue(value);
    }
    if (wire != kLength) return Step::kUnknown;
    uint32_t length = 0;
    if (!ReadLength(&length)) return Step::kBad;
    const bool read = Within(length, [&] {
      bool all = true;
      while (all && !AtLimit()) {
        Enum* value = Append(out, field);
        all = value != nullptr && EnumValue(value) == Step::kRead;
      }
      return all;
    });
    return read ? Step::kRead : Step::kBad;
  }

  // One entry of a resource quantity map named `field`: a resource name and a quantity.
  Step MapEntry(ResourceMap* map, std::string_view field) {
    // Fast path for the entry every encoder writes: a one-byte length, then key (field 1, a
    // key shorter than 128 bytes) and value (field 2, fixed64), nothing else.
    const std::string_view ahead = Ahead();
    if (ahead.size() >= 3) {
      const auto length = static_cast<uint8_t>(ahead[0]);
      const auto key_length = static_cast<uint8_t>(ahead[2]);
      if (length < 0x80 && ahead[1] == '\x0a' && key_length < 0x80 && length == 11 + key_length &&
          ahead.size() >= 1u + length && ahead[3 + key_length] == '\x11') {
        const std::string_view key = ahead.substr(3, key_length);
        if (!Utf8(key)) return Step::kBad;
        if (!NameFits(key_length, field) || !KnownResource(key, field) ||
            !Charge(HeapBytes(key.size())) || !Room(map)) {
          return Step::kBad;
        }
        double value = 0;
        std::memcpy(&value, ahead.data() + 4 + key_length, sizeof(value));
        Put(map, std::string(key), value);
        Advance(1 + length);
        return Step::kRead;
      }
    }
    std::string key;
    double value = 0;
    const Step step = Embedded([&] {
      return Fields([&](uint32_t number, int wire) {
        if (number == 1 && wire == kLength) return String(&key, field);
        if (number == 2 && wire == kFixed64) return Double(&value);
        return Step::kUnknown;
      });
    });
    if (step != Step::kRead) return step;
    if (!KnownResource(key, field) || !Room(map)) return Step::kBad;
    Put(map, std::move(key), value);
    return step;
  }

  // Room for one more entry in `map`, charged before it is allocated: a map's array starts with
  // room for four entries (a request's maps hold a handful of resources or labels, so one
  // allocation is the rule) and doubles after.
  template <typename Value>
  bool Room(SortedMap<Value>* map) {
    if (map->size() < map->capacity()) return true;
    const size_t grown = std::max<size_t>(4, 2 * map->capacity());
    const size_t entry = sizeof(typename SortedMap<Value>::value_type);
    if (!Charge(static_cast<int64_t>((grown - map->capacity()) * entry))) return false;
    map->reserve(grown);
    return true;
  }

  // map[key] = value, with a shortcut for keys that arrive in order (as deterministic
  // serialisation writes them).
  template <typename Value>
  static void Put(SortedMap<Value>* map, std::string key, Value value) {
    if (map->empty() || map->rbegin()->first < key) {
      map->emplace_hint(map->end(), std::move(key), std::move(value));
    } else {
      (*map)[std::move(key)] = std::move(value);
    }
  }

  // One entry of a label map named `field`.
  Step MapEntry(LabelMap* map, std::string_view field) {
    // Fast path as for ResourceMap: one-byte length, key, then value (field 2, string), both
    // shorter than 128 bytes.
    const std::string_view ahead = Ahead();
    if (ahead.size() >= 3) {
      const auto length = static_cast<uint8_t>(ahead[0]);
      const auto key_length = static_cast<uint8_t>(ahead[2]);
      if (length < 0x80 && ahead[1] == '\x0a' && key_length < 0x80 &&
          ahead.size() >= 5u + key_length && ahead[3 + key_length] == '\x12') {
        const auto value_length = static_cast<uint8_t>(ahead[4 + key_length]);
        if (value_length < 0x80 && length == 4 + key_length + value_length &&
            ahead.size() >= 1u + length) {
          const std::string_view key = ahead.substr(3, key_length);
          const std::string_view value = ahead.substr(5 + key_length, value_length);
          if (!Utf8(key) || !Utf8(value)) return Step::kBad;
          if (!NameFits(key_length, field) || !NameFits(value_length, field) ||
              !Charge(HeapBytes(key.size()) + HeapBytes(value.size())) || !Room(map)) {
            return Step::kBad;
          }
          Put(map, std::string(key), std::string(value));
          Advance(1 + length);
          return Step::kRead;
        }
      }
    }
    std::string key;
    std::string value;
    const Step step = Embedded([&] {
      return Fields([&](uint32_t number, int wire) {
        if (number == 1 && wire == kLength) return String(&key, field);
        if (number == 2 && wire == kLength) return String(&value, field);
        return Step::kUnknown;
      });
    });
    if (step != Step::kRead) return step;
    if (!Room(map)) return Step::kBad;
    Put(map, std::move(key), std::move(value));
    return step;
  }

  // Element `items.size()` of the repeated message field `field`, read by `fields(element)`;
  // refused over `limit` (naming `what` and `flag`) or over the memory budget.
  template <typename T, typename ReadFields>
  Step Element(std::vector<T>* items, const char* field, int64_t limit, const char* what,
               const char* flag, ReadFields&& fields) {
    const int64_t index = static_cast<int64_t>(items->size());
    T* item = Append(items, limit, field, what, flag);
    if (item == nullptr) return Step::kBad;
    return Nested(field, index, [&] { return fields(item); });
  }

  template <typename T, typename ReadFields>
  Step Element(std::vector<T>* items, const char* field, ReadFields&& fields) {
    return Element(items, field, std::numeric_limits<int64_t>::max(), "", "",
                   std::forward<ReadFields>(fields));
  }

  // ---- Messages ----

  bool SnapshotFields(Snapshot* snapshot) {
    const std::array<int64_t, kCounted> counts = CountAhead();
    ReserveMore(&snapshot->queues, counts[2], limits_.max_queues);
    ReserveMore(&snapshot->nodes, counts[3], limits_.max_nodes);
    ReserveMore(&snapshot->pod_groups, counts[4], limits_.max_pod_groups);
    ReserveMore(&snapshot->usage, counts[5], std::numeric_limits<int64_t>::max());
    return Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      switch (number) {
        case 1:
          return TimeValue(&snapshot->now);
        case 2:
          return Element(&snapshot->queues, "queues", limits_.max_queues, "queues", "--max-queues",
                         [&](Queue* queue) { return QueueFields(queue); });
        case 3:
          return Element(&snapshot->nodes, "nodes", limits_.max_nodes, "nodes", "--max-nodes",
                         [&](Node* node) { return NodeFields(node); });
        case 4:
          return Element(&snapshot->pod_groups, "pod_groups", limits_.max_pod_groups, "pod groups",
                         "--max-pod-groups",
                         [&](PodGroup* group) { return PodGroupFields(group); });
        case 5:
          return Element(&snapshot->usage, "usage",
                         [&](QueueUsage* usage) { return QueueUsageFields(usage); });
        case 6:
          return MapEntry(&snapshot->usage_capacity, "usage_capacity");
        case 7:
          return MapEntry(&snapshot->capacity, "capacity");
        case 8:
          return Element(&snapshot->resource_flavors, "resource_flavors",
                         [&](ResourceFlavor* flavor) { return ResourceFlavorFields(flavor); });
        default:
          return Step::kUnknown;
      }
    });
  }

  bool QueueFields(Queue* queue) {
    return Fields([&](uint32_t number, int wire) {
      switch (number) {
        case 1:
          return wire == kLength ? String(&queue->name, "name") : Step::kUnknown;
        case 2:
          return wire == kLength ? String(&queue->parent, "parent") : Step::kUnknown;
        case 3:
          return wire == kLength ? MapEntry(&queue->deserved, "deserved") : Step::kUnknown;
        case 4:
          return wire == kLength ? MapEntry(&queue->limit, "limit") : Step::kUnknown;
        case 5:
          return wire == kLength ? MapEntry(&queue->over_quota_weight, "over_quota_weight")
                                 : Step::kUnknown;
        case 6:
          return wire == kVarint ? Int32(&queue->priority) : Step::kUnknown;
        case 7:
          return wire == kLength ? TimeValue(&queue->creation_time) : Step::kUnknown;
        case 8:
          return wire == kLength ? MapEntry(&queue->borrowing_limit, "borrowing_limit")
                                 : Step::kUnknown;
        case 9:
          return wire == kLength ? MapEntry(&queue->lending_limit, "lending_limit")
                                 : Step::kUnknown;
        case 10:
          if (wire != kFixed64) return Step::kUnknown;
          return Double(&queue->fair_sharing_weight.emplace());
        case 11:
          return wire == kLength ? TimeValue(&queue->reclaim_min_runtime) : Step::kUnknown;
        case 12:
          return wire == kLength ? TimeValue(&queue->preempt_min_runtime) : Step::kUnknown;
        case 13:
          if (wire != kLength) return Step::kUnknown;
          return Embedded([&] { return KueuePreemptionFields(&queue->kueue_preemption); });
        case 14:
          if (wire != kLength) return Step::kUnknown;
          return Element(&queue->resource_groups, "resource_groups",
                         [&](ResourceGroup* group) { return ResourceGroupFields(group); });
        case 15:
          if (wire != kLength) return Step::kUnknown;
          return Nested("flavor_fungibility", -1,
                        [&] { return FlavorFungibilityFields(&queue->flavor_fungibility); });
        default:
          return Step::kUnknown;
      }
    });
  }

  bool KueuePreemptionFields(KueuePreemption* preemption) {
    return Fields([&](uint32_t number, int wire) {
      if (wire != kVarint) return Step::kUnknown;
      if (number == 1) return EnumValue(&preemption->within_cluster_queue);
      if (number == 2) return EnumValue(&preemption->reclaim_within_cohort);
      return Step::kUnknown;
    });
  }

  // ---- Kueue resource flavors (SEMANTICS §5.8) ----

  bool ResourceFlavorFields(ResourceFlavor* flavor) {
    return Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      switch (number) {
        case 1:
          return String(&flavor->name, "name");
        case 2:
          return MapEntry(&flavor->node_labels, "node_labels");
        case 3:
          return Element(&flavor->node_taints, "node_taints",
                         [&](Taint* taint) { return TaintFields(taint); });
        case 4:
          return Element(&flavor->tolerations, "tolerations",
                         [&](Toleration* toleration) { return TolerationFields(toleration); });
        default:
          return Step::kUnknown;
      }
    });
  }

  bool ResourceGroupFields(ResourceGroup* group) {
    return Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      if (number == 1) {
        std::string* name = Append(&group->covered_resources, "covered_resources");
        if (name == nullptr) return Step::kBad;
        const Step step = String(name, "covered_resources");
        if (step == Step::kRead && !KnownResource(*name, "covered_resources")) return Step::kBad;
        return step;
      }
      if (number == 2) {
        return Element(&group->flavors, "flavors",
                       [&](FlavorQuotas* flavor) { return FlavorQuotasFields(flavor); });
      }
      return Step::kUnknown;
    });
  }

  bool FlavorQuotasFields(FlavorQuotas* flavor) {
    const bool read = Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      if (number == 1) return String(&flavor->flavor, "flavor");
      if (number == 2) return QuotaEntry(&flavor->resources, "resources");
      return Step::kUnknown;
    });
    if (!read) return false;
    for (const auto& [resource, quota] : flavor->resources) {
      if (!KnownCell(flavor->flavor, resource, "resources")) return false;
    }
    return true;
  }

  // One entry of FlavorQuotas.resources: a resource name and its FlavorResourceQuota.
  Step QuotaEntry(SortedMap<FlavorResourceQuota>* map, std::string_view field) {
    std::string key;
    FlavorResourceQuota quota;
    const Step step = Embedded([&] {
      return Fields([&](uint32_t number, int wire) {
        if (number == 1 && wire == kLength) return String(&key, field);
        if (number == 2 && wire == kLength) {
          return Embedded([&] { return FlavorResourceQuotaFields(&quota); });
        }
        return Step::kUnknown;
      });
    });
    if (step != Step::kRead) return step;
    if (!KnownResource(key, field) || !Room(map)) return Step::kBad;
    Put(map, std::move(key), quota);
    return step;
  }

  bool FlavorResourceQuotaFields(FlavorResourceQuota* quota) {
    return Fields([&](uint32_t number, int wire) {
      if (wire != kFixed64) return Step::kUnknown;
      if (number == 1) return Double(&quota->nominal);
      if (number == 2) return Double(&quota->borrowing_limit.emplace());
      if (number == 3) return Double(&quota->lending_limit.emplace());
      return Step::kUnknown;
    });
  }

  bool FlavorFungibilityFields(FlavorFungibility* fungibility) {
    return Fields([&](uint32_t number, int wire) {
      if (wire != kVarint) return Step::kUnknown;
      if (number == 1) return EnumValue(&fungibility->when_can_borrow);
      if (number == 2) return EnumValue(&fungibility->when_can_preempt);
      if (number == 3) return EnumValue(&fungibility->preference);
      return Step::kUnknown;
    });
  }

  bool PodSetFlavorsFields(PodSetFlavors* flavors) {
    const bool read = Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      if (number == 1) return String(&flavors->pod_set, "pod_set");
      if (number == 2) return MapEntry(&flavors->flavors, "flavors");
      return Step::kUnknown;
    });
    if (!read) return false;
    for (const auto& [resource, flavor] : flavors->flavors) {
      if (!KnownResource(resource, "flavors") || !KnownCell(flavor, resource, "flavors")) {
        return false;
      }
    }
    return true;
  }

  bool NodeFields(Node* node) {
    return Fields([&](uint32_t number, int wire) {
      switch (number) {
        case 1:
          return wire == kLength ? String(&node->name, "name") : Step::kUnknown;
        case 2:
          return wire == kLength ? MapEntry(&node->allocatable, "allocatable") : Step::kUnknown;
        case 3:
          return wire == kLength ? MapEntry(&node->labels, "labels") : Step::kUnknown;
        case 4:
          if (wire != kLength) return Step::kUnknown;
          return Element(&node->taints, "taints", [&](Taint* taint) { return TaintFields(taint); });
        case 5:
          return wire == kVarint ? Bool(&node->unschedulable) : Step::kUnknown;
        case 6:
          return wire == kFixed64 ? Double(&node->gpu_device_memory) : Step::kUnknown;
        default:
          return Step::kUnknown;
      }
    });
  }

  bool TaintFields(Taint* taint) {
    return Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      if (number == 1) return String(&taint->key, "key");
      if (number == 2) return String(&taint->value, "value");
      if (number == 3) return String(&taint->effect, "effect");
      return Step::kUnknown;
    });
  }

  bool PodGroupFields(PodGroup* group) {
    ReserveMore(&group->pods, CountAhead()[7], limits_.max_pods - pods_);
    return Fields([&](uint32_t number, int wire) {
      switch (number) {
        case 1:
          return wire == kLength ? String(&group->name, "name") : Step::kUnknown;
        case 2:
          return wire == kLength ? String(&group->queue, "queue") : Step::kUnknown;
        case 3:
          return wire == kVarint ? Int32(&group->priority) : Step::kUnknown;
        case 4:
          return wire == kVarint ? EnumValue(&group->preemptibility) : Step::kUnknown;
        case 5:
          return wire == kVarint ? Int32(&group->min_member) : Step::kUnknown;
        case 6:
          return wire == kLength ? TimeValue(&group->creation_time) : Step::kUnknown;
        case 7: {
          if (wire != kLength) return Step::kUnknown;
          if (pods_ >= limits_.max_pods) {
            Stop(absl::ResourceExhaustedError(
                absl::StrCat(Path("pods"), ": more than ", limits_.max_pods,
                             " pods in all pod groups; this server accepts at most ",
                             limits_.max_pods, " (--max-pods)")));
            return Step::kBad;
          }
          ++pods_;
          return Element(&group->pods, "pods", [&](Pod* pod) { return PodFields(pod); });
        }
        case 8:
          return wire == kVarint ? Bool(&group->admitted) : Step::kUnknown;
        case 9:
          return wire == kLength ? TimeValue(&group->admission_time) : Step::kUnknown;
        case 10:
          return wire == kVarint ? Bool(&group->one_pod_per_node) : Step::kUnknown;
        case 11:
          if (wire != kLength) return Step::kUnknown;
          return Element(&group->flavors, "flavors",
                         [&](PodSetFlavors* flavors) { return PodSetFlavorsFields(flavors); });
        default:
          return Step::kUnknown;
      }
    });
  }

  bool PodFields(Pod* pod) {
    return Fields([&](uint32_t number, int wire) {
      switch (number) {
        case 1:
          return wire == kLength ? String(&pod->name, "name") : Step::kUnknown;
        case 2:
          return wire == kLength ? MapEntry(&pod->requests, "requests") : Step::kUnknown;
        case 3:
          return wire == kLength ? String(&pod->node_name, "node_name") : Step::kUnknown;
        case 4:
          return wire == kVarint ? EnumValue(&pod->phase) : Step::kUnknown;
        case 5:
          return wire == kLength ? TimeValue(&pod->start_time) : Step::kUnknown;
        case 6:
          return wire == kLength ? MapEntry(&pod->node_selector, "node_selector") : Step::kUnknown;
        case 7:
          if (wire != kLength) return Step::kUnknown;
          return Element(&pod->tolerations, "tolerations",
                         [&](Toleration* toleration) { return TolerationFields(toleration); });
        case 8:
          return wire == kLength ? String(&pod->pod_set, "pod_set") : Step::kUnknown;
        case 9:
          return wire == kFixed64 ? Double(&pod->gpu_fraction.emplace()) : Step::kUnknown;
        case 10:
          return wire == kFixed64 ? Double(&pod->gpu_memory.emplace()) : Step::kUnknown;
        case 11:
          return wire == kVarint ? Int32(&pod->gpu_fraction_devices) : Step::kUnknown;
        case 12: {
          if (wire != kLength) return Step::kUnknown;
          std::string* key = Append(&pod->gpu_groups, "gpu_groups");
          return key == nullptr ? Step::kBad : String(key, "gpu_groups");
        }
        default:
          return Step::kUnknown;
      }
    });
  }

  bool TolerationFields(Toleration* toleration) {
    return Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      if (number == 1) return String(&toleration->key, "key");
      if (number == 2) return String(&toleration->op, "operator");
      if (number == 3) return String(&toleration->value, "value");
      if (number == 4) return String(&toleration->effect, "effect");
      return Step::kUnknown;
    });
  }

  bool QueueUsageFields(QueueUsage* usage) {
    return Fields([&](uint32_t number, int wire) {
      if (wire != kLength) return Step::kUnknown;
      if (number == 1) return String(&usage->queue, "queue");
      if (number == 2) return MapEntry(&usage->usage, "usage");
      return Step::kUnknown;
    });
  }

  bool PolicyFields(Policy* policy) {
    return Fields([&](uint32_t number, int wire) {
      switch (number) {
        case 1:
          return wire == kVarint ? EnumValue(&policy->fairness_model) : Step::kUnknown;
        case 2:
          return wire == kFixed64 ? Double(&policy->k_value) : Step::kUnknown;
        case 3:
          if (wire != kFixed64) return Step::kUnknown;
          return Double(&policy->reclaimer_utilization_multiplier);
        case 4:
          return wire == kVarint ? EnumValue(&policy->placement) : Step::kUnknown;
        case 5:
          return RepeatedEnum(wire, &policy->actions, "actions");
        case 6:
          return RepeatedEnum(wire, &policy->kueue_preemption_strategies,
                              "kueue_preemption_strategies");
        case 7:
          return wire == kVarint ? Bool(&policy->consolidating_reclaim.emplace()) : Step::kUnknown;
        case 8:
          if (wire != kVarint) return Step::kUnknown;
          return Int32(&policy->max_consolidation_preemptees.emplace());
        case 9:
          return wire == kVarint ? EnumValue(&policy->gpu_device_placement) : Step::kUnknown;
        default:
          return Step::kUnknown;
      }
    });
  }

  const RequestLimits& limits_;
  std::vector<PathPart> path_;
  absl::Status limit_error_;
  int64_t decoded_bytes_ = 0;
  int64_t pods_ = 0;
  absl::node_hash_set<std::string> resource_names_;  // node-based: elements never move
  absl::flat_hash_set<std::string> flavor_cells_;    // flavor, a zero byte, resource
  std::array<std::string_view, 4> recent_names_;
};

}  // namespace

absl::Status DecodeRequest(std::string_view bytes, const RequestLimits& limits,
                           std::string_view type_name, Snapshot* snapshot, Policy* policy,
                           int64_t* decoded_bytes) {
  if (bytes.size() <= static_cast<size_t>(INT32_MAX)) {
    Decoder decoder(bytes, limits);
    const bool read = decoder.Request(snapshot, policy);
    if (decoded_bytes != nullptr) *decoded_bytes = decoder.decoded_bytes();
    if (!decoder.limit_error().ok()) return decoder.limit_error();
    if (read) return absl::OkStatus();
  }
  return NotARequest(type_name, bytes.size());
}

absl::Status NotARequest(std::string_view type_name, size_t size) {
  return absl::InvalidArgumentError(
      absl::StrCat("request: not a valid binary ",
                   absl::string_view(type_name.data(), type_name.size()), " (", size, " bytes)"));
}

bool DecodeRequest(std::string_view bytes, Snapshot* snapshot, Policy* policy) {
  return DecodeRequest(bytes, RequestLimits::Unlimited(), "request", snapshot, policy).ok();
}

}  // namespace arbiter::edge
