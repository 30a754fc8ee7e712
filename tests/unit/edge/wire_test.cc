// Deterministic bytes (SEMANTICS.md §0.5): binary and JSON output of equal messages are equal
// whatever order their map entries were inserted in, and JSON lists map keys in bytewise order.
#include "edge/wire.h"

#include <fstream>
#include <string>
#include <vector>

#include "edge/proto_convert.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/support/temp_dir.h"

namespace arbiter::edge {
namespace {

using ::google::protobuf::util::MessageDifferencer;

// 200 resource names: enough that protobuf's hash map iterates them in an order unrelated to
// insertion, so that a printer that followed it would differ between the two messages below.
std::vector<std::string> ResourceNames() {
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i) names.push_back("example.com/r" + std::to_string(i * 37 % 200));
  return names;
}

// The same response with every map filled forwards or backwards.
v1::FairShareResponse ResponseWithMapsFilled(bool reverse) {
  std::vector<std::string> names = ResourceNames();
  if (reverse) std::reverse(names.begin(), names.end());
  v1::FairShareResponse response;
  for (const char* queue : {"a", "b"}) {
    v1::QueueShare* share = response.add_queues();
    share->set_queue(queue);
    for (const std::string& name : names) {
      (*share->mutable_fair_share())[name] = static_cast<double>(name.size());
      (*share->mutable_allocated())[name] = 1.5;
    }
  }
  return response;
}

TEST(Wire, BinaryIsByteIdenticalWhateverTheMapInsertionOrder) {
  const v1::FairShareResponse forwards = ResponseWithMapsFilled(false);
  const v1::FairShareResponse backwards = ResponseWithMapsFilled(true);
  ASSERT_TRUE(MessageDifferencer::Equals(forwards, backwards));
  EXPECT_EQ(SerializeDeterministic(forwards), SerializeDeterministic(backwards));
}

TEST(Wire, JsonIsByteIdenticalWhateverTheMapInsertionOrder) {
  for (JsonStyle style : {JsonStyle::kCompact, JsonStyle::kPretty}) {
    absl::StatusOr<std::string> forwards = ToJson(ResponseWithMapsFilled(false), style);
    absl::StatusOr<std::string> backwards = ToJson(ResponseWithMapsFilled(true), style);
    ASSERT_TRUE(forwards.ok()) << forwards.status();
    ASSERT_TRUE(backwards.ok()) << backwards.status();
    EXPECT_EQ(*forwards, *backwards);
  }
}

TEST(Wire, JsonListsMapKeysInBytewiseOrder) {
  v1::QueueShare share;
  for (const char* key : {"nvidia.com/gpu", "cpu", "memory", "Zeta", "a"}) {
    (*share.mutable_fair_share())[key] = 1;
  }
  absl::StatusOr<std::string> json = ToJson(share, JsonStyle::kCompact);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, R"({"fair_share":{"Zeta":1,"a":1,"cpu":1,"memory":1,"nvidia.com/gpu":1}})");
}

TEST(Wire, JsonUsesOriginalProtoFieldNames) {
  v1::Binding binding;
  binding.set_pod_group("g");
  binding.set_after_evictions(true);
  absl::StatusOr<std::string> json = ToJson(binding, JsonStyle::kCompact);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, R"({"pod_group":"g","after_evictions":true})");
}

TEST(Wire, JsonWritesInfinityAsTheProto3String) {
  v1::QueueShare share;
  share.set_saturation(std::numeric_limits<double>::infinity());
  absl::StatusOr<std::string> json = ToJson(share, JsonStyle::kCompact);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, R"({"saturation":"Infinity"})");
}

TEST(Wire, ParseJsonAcceptsProtoAndJsonFieldNames) {
  v1::Binding proto_names;
  v1::Binding json_names;
  ASSERT_TRUE(ParseJson(R"({"pod_group": "g", "after_evictions": true})", &proto_names).ok());
  ASSERT_TRUE(ParseJson(R"({"podGroup": "g", "afterEvictions": true})", &json_names).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(proto_names, json_names));
  EXPECT_EQ(proto_names.pod_group(), "g");
}

TEST(Wire, ParseJsonRejectsUnknownFieldsAsInvalidArgument) {
  v1::ScheduleRequest request;
  const absl::Status status = ParseJson(R"({"snapshot": {"queuez": []}})", &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("arbiter.v1.ScheduleRequest"), absl::string_view::npos) << status;
}

TEST(Wire, ParseJsonRejectsMalformedJsonAsInvalidArgument) {
  v1::ScheduleRequest request;
  EXPECT_EQ(ParseJson("{\"snapshot\": ", &request).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Wire, ParseBinaryRejectsTruncatedBytesAsInvalidArgument) {
  v1::ScheduleRequest request;
  request.mutable_snapshot()->add_queues()->set_name("a-queue-with-a-long-name");
  std::string bytes = SerializeDeterministic(request);
  bytes.resize(bytes.size() - 3);
  v1::ScheduleRequest parsed;
  EXPECT_EQ(ParseBinary(bytes, &parsed).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Wire, FormatFollowsTheExtension) {
  EXPECT_EQ(FormatForPath("req.pb"), WireFormat::kBinary);
  EXPECT_EQ(FormatForPath("req.json"), WireFormat::kJson);
  EXPECT_EQ(FormatForPath("-"), WireFormat::kJson);
  EXPECT_EQ(FormatForPath("pb"), WireFormat::kJson);
}

class WireFiles : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.File(name); }

  const arbiter::testing::TempDir dir_;
};

TEST_F(WireFiles, JsonAndBinaryFilesReadBackEqual) {
  v1::ScheduleRequest request;
  request.mutable_snapshot()->add_queues()->set_name("team-a");
  (*request.mutable_snapshot()->mutable_capacity())["cpu"] = 8000;
  request.mutable_policy()->set_k_value(0.25);
  for (const char* name : {"request.json", "request.pb"}) {
    const std::string path = Path(name);
    ASSERT_TRUE(WriteMessageFile(path, request).ok());
    v1::ScheduleRequest back;
    const absl::Status status = ReadMessageFile(path, &back);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_TRUE(MessageDifferencer::Equals(request, back)) << name;
  }
}

TEST_F(WireFiles, MissingFileIsNotFound) {
  v1::ScheduleRequest request;
  const absl::Status status = ReadMessageFile(Path("absent.json"), &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("absent.json"), absl::string_view::npos);
}

TEST_F(WireFiles, BadContentIsInvalidArgumentNamingTheFile) {
  const std::string path = Path("bad.json");
  std::ofstream(path) << "{ not json";
  v1::ScheduleRequest request;
  const absl::Status status = ReadMessageFile(path, &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().find(path), 0u) << status;
}

}  // namespace
}  // namespace arbiter::edge
