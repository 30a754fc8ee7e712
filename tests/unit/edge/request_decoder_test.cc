// The request decoder against protobuf itself: for every input, DecodeRequest must accept
// exactly what ScheduleRequest::ParseFromString accepts, and read every field protobuf reads
// (compared as deterministic bytes: ToProto of the decoded model, which writes every field of the
// model, against the parsed message in ToProto's canonical form). A test driven by the proto
// descriptors makes sure no field of arbiter.v1 is left unread.
#include "edge/request_decoder.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "arbiter/v1/arbiter.pb.h"
#include "clients/generator/generator.h"
#include "edge/proto_convert.h"
#include "edge/wire.h"
#include "edge/wire_reader.h"
#include "gtest/gtest.h"
#include "tests/support/canonical_request.h"
#include "tests/support/wire_bytes.h"

namespace arbiter::edge {
namespace {

namespace fs = std::filesystem;

struct Decoded {
  bool ok = false;
  std::string model;  // deterministic bytes of the snapshot and policy, when ok
};

std::string ModelBytes(const Snapshot& snapshot, const Policy& policy) {
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = ToProto(snapshot);
  *request.mutable_policy() = ToProto(policy);
  return SerializeDeterministic(request);
}

Decoded WithProtobuf(const std::string& bytes) {
  v1::ScheduleRequest request;
  Decoded decoded;
  decoded.ok = request.ParseFromString(bytes);
  if (decoded.ok) decoded.model = testing::CanonicalRequestBytes(request);
  return decoded;
}

Decoded WithDecoder(const std::string& bytes) {
  Snapshot snapshot;
  Policy policy;
  Decoded decoded;
  decoded.ok = DecodeRequest(bytes, &snapshot, &policy);
  if (decoded.ok) decoded.model = ModelBytes(snapshot, policy);
  return decoded;
}

// Decodes `bytes` both ways; `what` names the case in failures. Returns whether protobuf
// accepted the bytes.
bool ExpectSameAsProtobuf(const std::string& bytes, const std::string& what) {
  const Decoded expected = WithProtobuf(bytes);
  const Decoded actual = WithDecoder(bytes);
  EXPECT_EQ(actual.ok, expected.ok) << what;
  EXPECT_TRUE(actual.model == expected.model) << what << ": the decoded models differ";
  // The server's default limits refuse only by a limit's own error, and change nothing else.
  Snapshot snapshot;
  Policy policy;
  const absl::Status limited = DecodeRequest(bytes, RequestLimits(), "request", &snapshot, &policy);
  if (limited.message().find("(--max-") == absl::string_view::npos) {
    EXPECT_EQ(limited.ok(), expected.ok) << what << " with the default limits: " << limited;
    if (limited.ok()) {
      EXPECT_TRUE(ModelBytes(snapshot, policy) == expected.model)
          << what << ": the limited decoder built another model";
    }
  }
  return expected.ok;
}

std::string SourcePath(const std::string& relative) {
  return std::string(ARBITER_SOURCE_DIR) + "/" + relative;
}

std::string DemoBytes() {
  v1::ScheduleRequest request;
  EXPECT_TRUE(ReadMessageFile(SourcePath("examples/demo.json"), &request).ok());
  return SerializeDeterministic(request);
}

// ---- Small wire writer for hand-made inputs ----

using ::arbiter::testing::Len;
using ::arbiter::testing::Repeated;
using ::arbiter::testing::Tag;
using ::arbiter::testing::Varint;

std::string Fixed64(uint32_t number, double value) {
  std::string out = Tag(number, 1);
  char bytes[8];
  std::memcpy(bytes, &value, 8);
  out.append(bytes, 8);
  return out;
}

std::string VarintField(uint32_t number, uint64_t value) { return Tag(number, 0) + Varint(value); }

// Unknown fields of every wire type, to sprinkle into any message.
std::string UnknownFields() {
  return VarintField(900, 7) + Tag(901, 1) + std::string(8, '\x01') + Len(902, "opaque") +
         Tag(903, 3) + VarintField(1, 5) + Len(2, "in a group") + Tag(903, 4) + Tag(904, 5) +
         std::string(4, '\x02');
}

// ---- Tests ----

TEST(IsValidUtf8, FollowsRfc3629) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9"));        // é
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac"));       // €
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x98\x80"));   // U+1F600
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));   // U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));          // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80"));              // stray continuation
  EXPECT_FALSE(IsValidUtf8("\xff"));
}

TEST(IsAscii, SeesAHighByteInEveryWordAndInTheTail) {
  EXPECT_TRUE(IsAscii("", 0));
  // Every length up to three words, with a byte of 0x80 or more at each position in turn.
  for (size_t size = 1; size <= 24; ++size) {
    std::string text(size, 'a');
    EXPECT_TRUE(IsAscii(text.data(), size)) << size;
    for (size_t at = 0; at < size; ++at) {
      for (const char high : {'\x80', '\xc3', '\xff'}) {
        std::string marked = text;
        marked[at] = high;
        EXPECT_FALSE(IsAscii(marked.data(), size)) << size << " " << at;
      }
    }
  }
  // Only the bytes in range count.
  const std::string tail = "abc\xff";
  EXPECT_TRUE(IsAscii(tail.data(), 3));
}

TEST(DecodeRequest, TheExamplesAndScenariosDecodeAsProtobufDecodesThem) {
  ASSERT_TRUE(ExpectSameAsProtobuf(DemoBytes(), "examples/demo.json"));
  int scenarios = 0;
  for (const fs::directory_entry& entry :
       fs::recursive_directory_iterator(SourcePath("tests/scenarios"))) {
    if (entry.path().filename() != "request.json") continue;
    v1::ScheduleRequest request;
    ASSERT_TRUE(ReadMessageFile(entry.path().string(), &request).ok()) << entry.path();
    EXPECT_TRUE(ExpectSameAsProtobuf(SerializeDeterministic(request), entry.path().string()));
    ++scenarios;
  }
  EXPECT_GT(scenarios, 0);
}

// The fuzzer's seeds (tests/fuzz/corpus/): binary requests of both models, some of them odd.
TEST(DecodeRequest, TheFuzzSeedsDecodeAsProtobufDecodesThem) {
  const fs::path corpus = SourcePath("tests/fuzz/corpus");
  // The corpus is committed: a checkout without it is broken, not a reason to skip.
  ASSERT_TRUE(fs::is_directory(corpus)) << corpus << " is missing";
  int seeds = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(corpus)) {
    std::ifstream file(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
    ExpectSameAsProtobuf(bytes, entry.path().filename().string());
    ++seeds;
  }
  EXPECT_GT(seeds, 0);
}

TEST(DecodeRequest, GeneratedRequestsOfBothModelsDecodeAsProtobufDecodesThem) {
  for (const generator::GeneratorModel model :
       {generator::GeneratorModel::kKai, generator::GeneratorModel::kKueue}) {
    for (const char* size : {"S", "M"}) {
      absl::StatusOr<generator::GeneratorOptions> options = generator::SizePreset(size, model);
      ASSERT_TRUE(options.ok());
      options->extra_resources = 2;
      const generator::GeneratedRequest generated = generator::Generate(*options);
      EXPECT_TRUE(ExpectSameAsProtobuf(ModelBytes(generated.snapshot, generated.policy),
                                       std::string("generated ") + size));
    }
  }
}

// ---- Limits ----

std::string Field(int number, const std::string& bytes) {
  return Len(static_cast<uint32_t>(number), bytes);
}

TEST(DecodeRequestLimits, AReservationNeverGoesPastTheLimit) {
  // The bytes announce 100,000 queues; the limit is 10.
  const std::string bytes = Field(1, Repeated(Field(2, ""), 100'000));
  RequestLimits limits;
  limits.max_queues = 10;
  Snapshot snapshot;
  Policy policy;
  const absl::Status status = DecodeRequest(bytes, limits, "request", &snapshot, &policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "snapshot.queues: more than 10 queues; this server accepts at most 10 (--max-queues)");
  EXPECT_LE(snapshot.queues.capacity(), 10u);
}

TEST(DecodeRequestLimits, TheMemoryBudgetStopsDecodingBeforeItIsSpent) {
  // 100,000 empty taints on one node: no count limit applies, the budget does.
  const std::string bytes = Field(1, Field(3, Repeated(Field(4, ""), 100'000)));
  RequestLimits limits;
  limits.max_decoded_bytes = 1 << 20;
  Snapshot snapshot;
  Policy policy;
  int64_t decoded_bytes = 0;
  const absl::Status status =
      DecodeRequest(bytes, limits, "request", &snapshot, &policy, &decoded_bytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("snapshot.nodes[0]: "), absl::string_view::npos) << status;
  EXPECT_NE(status.message().find("(--max-decoded-bytes)"), absl::string_view::npos) << status;
  ASSERT_EQ(snapshot.nodes.size(), 1u);
  EXPECT_LE(snapshot.nodes[0].taints.capacity() * sizeof(Taint), size_t{1} << 20);
}

// A map is one array: its room is charged before it is allocated, so a node with many labels
// costs what its array holds, and a budget below that refuses it.
TEST(DecodeRequestLimits, AMapsArrayIsChargedBeforeItGrows) {
  std::string node;
  for (int i = 0; i < 5000; ++i) {
    node += Field(3, Field(1, "label-" + std::to_string(i)) + Field(2, "v"));
  }
  const std::string bytes = Field(1, Field(3, node));
  RequestLimits limits;
  Snapshot snapshot;
  Policy policy;
  int64_t decoded_bytes = 0;
  ASSERT_TRUE(DecodeRequest(bytes, limits, "request", &snapshot, &policy, &decoded_bytes).ok());
  ASSERT_EQ(snapshot.nodes.size(), 1u);
  const LabelMap& labels = snapshot.nodes[0].labels;
  EXPECT_EQ(labels.size(), 5000u);
  EXPECT_GE(decoded_bytes, static_cast<int64_t>(labels.capacity() * sizeof(LabelMap::value_type)));

  limits.max_decoded_bytes = 5000 * static_cast<int64_t>(sizeof(LabelMap::value_type));
  Snapshot again;
  const absl::Status status = DecodeRequest(bytes, limits, "request", &again, &policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("snapshot.nodes[0]"), absl::string_view::npos) << status;
  ASSERT_EQ(again.nodes.size(), 1u);
  EXPECT_LE(again.nodes[0].labels.capacity() * sizeof(LabelMap::value_type),
            static_cast<size_t>(limits.max_decoded_bytes));
}

TEST(DecodeRequestLimits, PerResourceTablesAreChargedOnceTheCountsAreKnown) {
  // 1,000 empty queues and one node with 64 resource names: small bytes, a large answer.
  std::string node;
  for (int r = 0; r < 64; ++r) {
    node += Field(2, Field(1, "r" + std::to_string(r)) + "\x11" + std::string(8, '\0'));
  }
  const std::string bytes = Field(1, Repeated(Field(2, ""), 1000) + Field(3, node));
  RequestLimits limits;
  Snapshot snapshot;
  Policy policy;
  int64_t decoded_bytes = 0;
  ASSERT_TRUE(DecodeRequest(bytes, limits, "request", &snapshot, &policy, &decoded_bytes).ok());
  EXPECT_GE(decoded_bytes, 1000 * 64 * 600);
  limits.max_decoded_bytes = 1000 * 64 * 600;
  Snapshot again;
  const absl::Status status = DecodeRequest(bytes, limits, "request", &again, &policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  const std::string expected = "snapshot: 1000 queues, 1 nodes, 0 pod groups and 0 pods over 64 ";
  EXPECT_EQ(status.message().substr(0, expected.size()), expected);
}

// The KAI cycle holds every pod's requests as dense vectors over every resource name, so a
// request of many pods over many names is charged per pod and name, whatever its groups: 1,000
// pods in one group, each asking for one of 64 names, once cost four times what was accounted.
TEST(DecodeRequestLimits, PodsAreChargedPerResourceNameOnceTheCountsAreKnown) {
  std::string pods;
  for (int p = 0; p < 1000; ++p) {
    const std::string requests =
        Field(2, Field(1, "r" + std::to_string(p % 64)) + "\x11" + std::string(8, '\0'));
    pods += Field(7, Field(1, "p" + std::to_string(p)) + requests);
  }
  const std::string group = Field(1, "g") + Field(2, "q") + pods;
  const std::string bytes = Field(1, Field(2, Field(1, "q")) + Field(4, group));
  RequestLimits limits;
  Snapshot snapshot;
  Policy policy;
  int64_t decoded_bytes = 0;
  ASSERT_TRUE(DecodeRequest(bytes, limits, "request", &snapshot, &policy, &decoded_bytes).ok());
  ASSERT_EQ(snapshot.pod_groups.size(), 1u);
  ASSERT_EQ(snapshot.pod_groups[0].pods.size(), 1000u);
  EXPECT_GE(decoded_bytes, int64_t{1000} * 64 * 16);
  limits.max_decoded_bytes = int64_t{1000} * 64 * 16;
  Snapshot again;
  const absl::Status status = DecodeRequest(bytes, limits, "request", &again, &policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("1 pod groups and 1000 pods over 64 resource names"),
            absl::string_view::npos)
      << status;
}

TEST(DecodeRequestLimits, ALongStringIsRefusedBeforeItIsCopied) {
  const std::string bytes = Field(1, Field(4, Field(7, Field(1, std::string(5000, 'p')))));
  RequestLimits limits;
  limits.max_name_bytes = 4096;
  Snapshot snapshot;
  Policy policy;
  const absl::Status status = DecodeRequest(bytes, limits, "request", &snapshot, &policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "snapshot.pod_groups[0].pods[0].name: 5000 bytes; this server accepts names, keys "
            "and values of at most 4096 bytes (--max-name-bytes)");
}

TEST(DecodeRequestLimits, DistinctResourceNamesAreCountedOverTheWholeRequest) {
  const auto entry = [](const std::string& name) {
    return Field(2, Field(1, name) + "\x11" + std::string(8, '\0'));
  };
  // Two nodes sharing "cpu", then a third name on a pod: three distinct names.
  const std::string bytes = Field(1, Field(3, entry("cpu") + entry("memory")) +
                                         Field(3, entry("cpu")) + Field(4, Field(7, entry("gpu"))));
  RequestLimits limits;
  limits.max_resource_names = 3;
  Snapshot snapshot;
  Policy policy;
  EXPECT_TRUE(DecodeRequest(bytes, limits, "request", &snapshot, &policy).ok());
  limits.max_resource_names = 2;
  Snapshot again;
  const absl::Status status = DecodeRequest(bytes, limits, "request", &again, &policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "snapshot.pod_groups[0].pods[0].requests: more than 2 distinct resource names in the "
            "request; this server accepts at most 2 (--max-resource-names)");
}

TEST(DecodeRequestLimits, BytesThatDoNotParseNameTheMessageType) {
  Snapshot snapshot;
  Policy policy;
  const absl::Status status =
      DecodeRequest(std::string("\x0a\x05"
                                "ab",
                                4),
                    RequestLimits(), "arbiter.v1.ScheduleRequest", &snapshot, &policy);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "request: not a valid binary arbiter.v1.ScheduleRequest (4 bytes)");
}

// Every field of the model set to something other than its default.
TEST(DecodeRequest, EveryFieldIsRead) {
  const std::string json = R"({
    "snapshot": {
      "now": "2026-01-01T00:00:00.5Z",
      "queues": [{
        "name": "q", "parent": "root", "deserved": {"cpu": 1, "memory": -1},
        "limit": {"cpu": 2}, "over_quota_weight": {"cpu": 3}, "priority": -4,
        "creation_time": "2025-01-01T00:00:01Z", "borrowing_limit": {"cpu": 5},
        "lending_limit": {"cpu": 6}, "fair_sharing_weight": 0,
        "reclaim_min_runtime": "7.25s", "preempt_min_runtime": "-8s",
        "kueue_preemption": {"within_cluster_queue": 2, "reclaim_within_cohort": 77}
      }],
      "nodes": [{
        "name": "n", "allocatable": {"cpu": 1e300, "gpu": 0.5},
        "labels": {"zone": "a", "caf\u00e9": "\u20ac"},
        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}, {"key": "k2"}],
        "unschedulable": true
      }],
      "pod_groups": [{
        "name": "g", "queue": "q", "priority": 2147483647, "preemptibility": 2,
        "min_member": -1, "creation_time": "1970-01-01T00:00:00Z",
        "pods": [{
          "name": "p", "requests": {"cpu": 1}, "node_name": "n", "phase": 3,
          "start_time": "2025-06-01T00:00:00Z", "node_selector": {"zone": "a"},
          "tolerations": [{"key": "k", "operator": "Exists", "value": "v", "effect": "x"}]
        }, {"name": "p2", "phase": 99}],
        "admitted": true, "admission_time": "2025-06-02T00:00:00Z"
      }],
      "usage": [{"queue": "q", "usage": {"cpu": 9}}],
      "usage_capacity": {"cpu": 10}, "capacity": {"cpu": 11}
    },
    "policy": {
      "fairness_model": 2, "k_value": 0.25, "reclaimer_utilization_multiplier": 1.5,
      "placement": 2, "actions": [1, 3, 42], "kueue_preemption_strategies": [2, 1],
      "consolidating_reclaim": false, "max_consolidation_preemptees": -1
    }
  })";
  v1::ScheduleRequest request;
  ASSERT_TRUE(ParseJson(json, &request).ok());
  const std::string bytes = SerializeDeterministic(request);
  ASSERT_TRUE(ExpectSameAsProtobuf(bytes, "every field"));
  Snapshot snapshot;
  Policy policy;
  ASSERT_TRUE(DecodeRequest(bytes, &snapshot, &policy));
  EXPECT_EQ(snapshot.queues[0].fair_sharing_weight, 0.0);  // present though zero
  EXPECT_EQ(static_cast<int>(snapshot.queues[0].kueue_preemption.reclaim_within_cohort), 77);
  EXPECT_EQ(static_cast<int>(snapshot.pod_groups[0].pods[1].phase), 99);
  EXPECT_EQ(policy.consolidating_reclaim, false);
  EXPECT_EQ(policy.max_consolidation_preemptees, -1);
  ASSERT_EQ(policy.actions.size(), 3u);
  EXPECT_EQ(static_cast<int>(policy.actions[2]), 42);
}

TEST(DecodeRequest, UnknownFieldsAreSkippedAtEveryLevel) {
  const std::string pod = Len(1, "p") + UnknownFields() + Len(2, Len(1, "cpu") + Fixed64(2, 3));
  const std::string group = Len(1, "g") + UnknownFields() + Len(7, pod);
  const std::string node = Len(1, "n") + Len(3, Len(1, "zone") + UnknownFields() + Len(2, "a"));
  const std::string snapshot = UnknownFields() + Len(3, node) + Len(4, group);
  const std::string request = Len(1, snapshot) + UnknownFields() + Len(2, VarintField(1, 2));
  EXPECT_TRUE(ExpectSameAsProtobuf(request, "unknown fields"));
}

TEST(DecodeRequest, AKnownFieldWithAnotherWireTypeCountsAsUnknown) {
  // Pod.name as a varint, Pod.phase as length-delimited, Node.unschedulable as fixed64,
  // Policy.k_value as a varint, Queue.fair_sharing_weight as fixed32.
  const std::string pod = VarintField(1, 5) + Len(4, "x") + Len(1, "p");
  const std::string node = Len(1, "n") + Tag(5, 1) + std::string(8, '\x01');
  const std::string queue = Len(1, "q") + Tag(10, 5) + std::string(4, '\x00');
  const std::string snapshot = Len(2, queue) + Len(3, node) + Len(4, Len(1, "g") + Len(7, pod));
  const std::string request = Len(1, snapshot) + Len(2, VarintField(2, 9));
  EXPECT_TRUE(ExpectSameAsProtobuf(request, "mismatched wire types"));
}

// A present message whose fields are all unspecified is the absent one in the model: a Queue's
// kueue_preemption and flavor_fungibility (found by the fuzzer: tests/fuzz/corpus/
// regression-empty-flavor-fungibility.pb).
TEST(DecodeRequest, AnEmptyPolicyMessageOfAQueueIsTheAbsentOne) {
  const std::string queue = Len(1, "q") + Len(13, "") + Len(15, "");
  EXPECT_TRUE(
      ExpectSameAsProtobuf(Len(1, Len(2, queue)), "empty kueue_preemption and fungibility"));
  EXPECT_TRUE(ExpectSameAsProtobuf(Len(1, Len(2, Len(15, ""))), "empty flavor_fungibility alone"));
}

TEST(DecodeRequest, RepeatedMessagesMergeScalarsKeepTheLastAndMapKeysTheLastValue) {
  const std::string first =
      Len(1, VarintField(1, 100)) + Len(2, Len(1, "a")) + Len(7, Len(1, "cpu") + Fixed64(2, 1));
  const std::string second = Len(1, VarintField(2, 5)) + Len(2, Len(1, "b")) +
                             Len(7, Len(1, "cpu") + Fixed64(2, 2)) + Len(7, Fixed64(2, 4));
  const std::string policy_a = VarintField(1, 1) + VarintField(5, 1) + VarintField(8, 3);
  const std::string policy_b = VarintField(1, 2) + Len(5, Varint(3) + Varint(4));
  const std::string request = Len(1, first) + Len(2, policy_a) + Len(1, second) + Len(2, policy_b);
  ASSERT_TRUE(ExpectSameAsProtobuf(request, "merged"));
  Snapshot snapshot;
  Policy policy;
  ASSERT_TRUE(DecodeRequest(request, &snapshot, &policy));
  ASSERT_TRUE(snapshot.now.has_value());
  EXPECT_EQ(snapshot.now->seconds, 100);
  EXPECT_EQ(snapshot.now->nanos, 5);
  EXPECT_EQ(snapshot.queues.size(), 2u);
  EXPECT_EQ(snapshot.capacity.at("cpu"), 2);
  EXPECT_EQ(snapshot.capacity.at(""), 4);  // an entry without a key has the empty key
  EXPECT_EQ(policy.actions.size(), 3u);
  EXPECT_EQ(policy.max_consolidation_preemptees, 3);
}

TEST(DecodeRequest, RejectsWhatProtobufRejects) {
  const std::string pod = Len(1, "p");
  struct Case {
    std::string name;
    std::string bytes;
  };
  const std::vector<Case> cases = {
      {"invalid UTF-8 name", Len(1, Len(4, Len(1, "g\xc0\x80")))},
      {"invalid UTF-8 map key", Len(1, Len(7, Len(1, "\xff") + Fixed64(2, 1)))},
      {"invalid UTF-8 label value", Len(1, Len(3, Len(3, Len(1, "k") + Len(2, "\xed\xa0\x80"))))},
      {"zero tag", Len(1, std::string("\x00", 1))},
      {"field number zero", Tag(0, 2) + Varint(0)},
      {"stray end group", Len(1, Tag(5, 4))},
      {"unclosed group", Len(1, Tag(9, 3) + VarintField(1, 1))},
      {"group closed by another number", Len(1, Tag(9, 3) + Tag(8, 4))},
      {"wire type 6", Tag(3, 6)},
      {"wire type 7", Tag(3, 7)},
      {"length past the end", Tag(1, 2) + Varint(50) + "short"},
      {"embedded length past its message", Len(1, Tag(2, 2) + Varint(9) + "abc") + "abcdefgh"},
      {"truncated varint", Len(2, std::string("\x08\xff", 2))},
      {"truncated double", Len(2, Tag(2, 1) + "\x01\x02")},
      {"packed run cut in a varint", Len(2, Len(5, std::string("\x01\x82", 2)))},
      {"malformed tag", std::string("\xff\xff\xff\xff\xff\xff", 6)},
      // Protobuf's parser reads tags and lengths in at most 5 bytes, lengths below 2 GiB.
      {"tag of six bytes", std::string("\x92\x80\x80\x80\x80\x00", 6) + Varint(0)},
      {"length of six bytes", Tag(2, 2) + std::string("\x80\x80\x80\x80\x80\x00", 6)},
      {"length of 4 GiB, 0 in 32 bits", Tag(2, 2) + std::string("\x80\x80\x80\x80\x10", 5)},
      {"map entry length of six bytes",
       Len(1, Tag(7, 2) + std::string("\x80\x80\x80\x80\x80\x00", 6))},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(ExpectSameAsProtobuf(c.bytes, c.name)) << c.name << ": protobuf accepted it";
  }
  EXPECT_TRUE(ExpectSameAsProtobuf(Len(1, Len(4, Len(7, pod))), "the same made valid"));
  // Five-byte tags and lengths are within the parser's reach.
  EXPECT_TRUE(ExpectSameAsProtobuf(std::string("\x92\x80\x80\x80\x00", 5) + Varint(0),
                                   "tag of five bytes"));
  EXPECT_TRUE(ExpectSameAsProtobuf(Tag(2, 2) + std::string("\x80\x80\x80\x80\x00", 5),
                                   "length of five bytes"));
  // A five-byte tag with bits past the 32nd: whatever protobuf decides, the decoder decides.
  ExpectSameAsProtobuf(std::string("\x92\x80\x80\x80\x70", 5) + Varint(0), "tag past 32 bits");
}

TEST(DecodeRequest, EveryPrefixOfARequestIsDecidedAsProtobufDecidesIt) {
  const std::string bytes = DemoBytes();
  for (size_t size = 0; size <= bytes.size(); ++size) {
    ExpectSameAsProtobuf(bytes.substr(0, size), "prefix of " + std::to_string(size) + " bytes");
  }
}

TEST(DecodeRequest, MutatedRequestsAreDecidedAsProtobufDecidesThem) {
  const std::string original = DemoBytes();
  std::mt19937_64 random(20260101);
  int accepted = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string bytes = original;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = random() % bytes.size();
      switch (random() % 4) {
        case 0:
          bytes[at] = static_cast<char>(random());
          break;
        case 1:
          bytes[at] = static_cast<char>(bytes[at] ^ (1 << (random() % 8)));
          break;
        case 2:
          bytes.erase(at, 1 + random() % 3);
          break;
        default:
          bytes.insert(at, 1, static_cast<char>(random()));
      }
    }
    if (ExpectSameAsProtobuf(bytes, "mutation round " + std::to_string(round))) ++accepted;
    if (::testing::Test::HasFailure()) break;  // one case is enough to debug
  }
  EXPECT_GT(accepted, 100);  // the mutations exercise both outcomes
}

}  // namespace
}  // namespace arbiter::edge

namespace arbiter::edge {
namespace {

namespace pb = ::google::protobuf;

// Sets `field` of `message` to a value other than its default: a leaf of the request.
void SetNonDefault(pb::Message* message, const pb::FieldDescriptor* field) {
  const pb::Reflection* reflection = message->GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
      repeated ? reflection->AddInt32(message, field, 7) : reflection->SetInt32(message, field, 7);
      break;
    case pb::FieldDescriptor::CPPTYPE_INT64:
      repeated ? reflection->AddInt64(message, field, 7) : reflection->SetInt64(message, field, 7);
      break;
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      repeated ? reflection->AddDouble(message, field, 2.5)
               : reflection->SetDouble(message, field, 2.5);
      break;
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      repeated ? reflection->AddBool(message, field, true)
               : reflection->SetBool(message, field, true);
      break;
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      repeated ? reflection->AddEnumValue(message, field, 2)
               : reflection->SetEnumValue(message, field, 2);
      break;
    case pb::FieldDescriptor::CPPTYPE_STRING:
      repeated ? reflection->AddString(message, field, "x")
               : reflection->SetString(message, field, "x");
      break;
    default:
      ADD_FAILURE() << field->full_name() << ": a leaf of a type this test does not know; teach "
                    << "SetNonDefault to set it";
  }
}

// One request per leaf field reachable from `descriptor`: `path` leads from the request to
// `descriptor`'s message, each step a field (a repeated one gets one element, a map one entry).
struct Leaf {
  std::vector<const pb::FieldDescriptor*> path;  // the last one is the leaf
  std::string name;                              // "snapshot.pod_groups.pods.start_time.nanos"
};

void CollectLeaves(const pb::Descriptor* descriptor, std::vector<const pb::FieldDescriptor*>* path,
                   const std::string& prefix, std::vector<Leaf>* leaves) {
  ASSERT_LT(path->size(), 10u) << prefix << ": the request's messages nest deeper than expected";
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const pb::FieldDescriptor* field = descriptor->field(i);
    const std::string name = prefix.empty() ? field->name() : prefix + "." + field->name();
    path->push_back(field);
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      CollectLeaves(field->message_type(), path, name, leaves);
    } else {
      leaves->push_back({*path, name});
    }
    path->pop_back();
  }
}

// `request` with the leaf set, and every message on its path present (one element each).
void SetLeaf(const Leaf& leaf, pb::Message* request) {
  pb::Message* message = request;
  for (size_t i = 0; i + 1 < leaf.path.size(); ++i) {
    const pb::FieldDescriptor* step = leaf.path[i];
    const pb::Reflection* reflection = message->GetReflection();
    pb::Message* next = step->is_repeated() ? reflection->AddMessage(message, step)
                                            : reflection->MutableMessage(message, step);
    if (step->is_map()) {
      // A map entry needs its key to be an entry protobuf keeps: a key other than the default.
      const pb::FieldDescriptor* key = step->message_type()->map_key();
      if (leaf.path[i + 1] != key) SetNonDefault(next, key);
    }
    message = next;
  }
  SetNonDefault(message, leaf.path.back());
}

template <typename Request>
void ExpectEveryLeafDecoded() {
  std::vector<Leaf> leaves;
  std::vector<const pb::FieldDescriptor*> path;
  CollectLeaves(Request::descriptor(), &path, "", &leaves);
  // The request has 72 leaves today; far fewer means the walk itself broke.
  EXPECT_GE(leaves.size(), 72u);
  for (const Leaf& leaf : leaves) {
    Request request;
    SetLeaf(leaf, &request);
    Snapshot snapshot;
    Policy policy;
    ASSERT_TRUE(DecodeRequest(request.SerializeAsString(), RequestLimits::Unlimited(),
                              Request::descriptor()->full_name(), &snapshot, &policy)
                    .ok())
        << leaf.name;
    Request back;
    *back.mutable_snapshot() = ToProto(snapshot);
    *back.mutable_policy() = ToProto(policy);
    EXPECT_EQ(SerializeDeterministic(back), testing::CanonicalRequestBytes(request))
        << Request::descriptor()->name() << "." << leaf.name
        << " is not decoded (or not written back): every field of arbiter.v1 must reach the "
           "model through edge/request_decoder.cc and back through ToProto";
  }
}

// Driven by the descriptors, so a field added to arbiter.v1 later is checked without anyone
// writing a test for it: unless the decoder reads it into the model (and ToProto writes it), its
// request comes back without it.
TEST(DecodeRequest, EveryFieldOfArbiterV1IsDecoded) {
  ExpectEveryLeafDecoded<v1::ScheduleRequest>();
  ExpectEveryLeafDecoded<v1::FairShareRequest>();
}

}  // namespace
}  // namespace arbiter::edge
