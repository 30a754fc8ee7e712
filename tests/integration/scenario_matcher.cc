#include "tests/integration/scenario_matcher.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace arbiter::testing {
namespace {

namespace pb = ::google::protobuf;

const std::set<std::string>& CheckedLists() {
  static const auto* const lists =
      new std::set<std::string>{"bindings", "evictions", "admissions", "pending", "queues"};
  return *lists;
}

std::string Text(pb::StringPiece piece) { return std::string(piece.data(), piece.size()); }

std::string Show(const pb::Value& value) {
  std::string json;
  pb::util::JsonPrintOptions options;
  if (!pb::util::MessageToJsonString(value, &json, options).ok()) return "<unprintable>";
  return json;
}

void Match(const pb::Value& expected, const pb::Value& actual, const std::string& path,
           std::vector<std::string>* mismatches) {
  if (expected.kind_case() != actual.kind_case()) {
    mismatches->push_back(
        absl::StrCat(path, ": expected ", Show(expected), ", got ", Show(actual)));
    return;
  }
  switch (expected.kind_case()) {
    case pb::Value::kStructValue:
      for (const auto& [key, value] : expected.struct_value().fields()) {
        const auto& fields = actual.struct_value().fields();
        const std::string child = absl::StrCat(path, ".", key);
        auto it = fields.find(key);
        if (it == fields.end()) {
          mismatches->push_back(absl::StrCat(child, ": expected ", Show(value), ", got nothing"));
        } else {
          Match(value, it->second, child, mismatches);
        }
      }
      return;
    case pb::Value::kListValue: {
      const auto& want = expected.list_value().values();
      const auto& got = actual.list_value().values();
      if (want.size() != got.size()) {
        mismatches->push_back(absl::StrCat(path, ": expected ", want.size(), " entries, got ",
                                           got.size(), ": ", Show(actual)));
        return;
      }
      for (int i = 0; i < want.size(); ++i) {
        Match(want[i], got[i], absl::StrCat(path, "[", i, "]"), mismatches);
      }
      return;
    }
    default:
      if (expected.SerializeAsString() != actual.SerializeAsString()) {
        mismatches->push_back(
            absl::StrCat(path, ": expected ", Show(expected), ", got ", Show(actual)));
      }
  }
}

}  // namespace

std::vector<std::string> FindScenarios(const std::string& root) {
  std::vector<std::string> found;
  std::error_code error;
  for (std::filesystem::recursive_directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    if (!it->is_directory()) continue;
    const std::filesystem::path dir = it->path();
    if (std::filesystem::exists(dir / "request.json") &&
        std::filesystem::exists(dir / "expected.json")) {
      found.push_back(dir.string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

absl::Status MatchExpected(const std::string& expected_json, const v1::ScheduleResponse& actual) {
  pb::Struct expected;
  if (const pb::util::Status parsed = pb::util::JsonStringToMessage(expected_json, &expected);
      !parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected.json does not parse: ", Text(parsed.message())));
  }
  for (const auto& [key, value] : expected.fields()) {
    if (key != "description" && CheckedLists().count(key) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("expected.json: unknown key \"", key,
                                                     "\" (known: description, ",
                                                     absl::StrJoin(CheckedLists(), ", "), ")"));
    }
  }

  // The answer as a JSON value with every field written, defaults included.
  pb::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string actual_json;
  if (!pb::util::MessageToJsonString(actual, &actual_json, options).ok()) {
    return absl::InternalError("cannot print the answer as JSON");
  }
  pb::Struct answer;
  if (!pb::util::JsonStringToMessage(actual_json, &answer).ok()) {
    return absl::InternalError("cannot read the answer back from JSON");
  }

  std::vector<std::string> mismatches;
  for (const std::string& list : CheckedLists()) {
    auto want = expected.fields().find(list);
    if (want == expected.fields().end()) continue;
    auto got = answer.fields().find(list);
    pb::Value empty;
    empty.mutable_list_value();
    Match(want->second, got == answer.fields().end() ? empty : got->second, list, &mismatches);
  }
  if (!mismatches.empty()) return absl::NotFoundError(absl::StrJoin(mismatches, "\n"));
  return absl::OkStatus();
}

}  // namespace arbiter::testing
