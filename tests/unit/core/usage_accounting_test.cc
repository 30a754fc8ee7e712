// The accounting step of time-aware fairness (SEMANTICS.md §3 "Accounting").
//
// The shared vectors in tests/testdata/usage_accounting_vectors.json are a JSON list of cases:
//   {"name": str, "usage": {resource: number}, "rate": {resource: number},
//    "interval": number, "half_life": number | "+Inf" | "-Inf" | "NaN",
//    "expected": {resource: number}, "relative_tolerance": number (optional, default 0 = exact),
//    "error": true (instead of "expected": the call must fail)}
// Every implementation of the step (C++ here, the Go client library) checks the same file.
#include "core/usage_accounting.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace arbiter {
namespace {

using ::arbiter::testing::IsOk;
using ::arbiter::testing::StatusIs;

// ---- A minimal JSON reader: enough for the vector file (objects, arrays, strings without
// escapes other than \" and \\, numbers, true, false, null). ----

struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  const Json* Find(const std::string& key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &it->second;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string text) : text_(std::move(text)) {}

  bool Read(Json& out) {
    if (!Value(out)) return false;
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool String(std::string& out) {
    if (!Consume('"')) return false;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out.push_back(text_[pos_++]);
    }
    return Consume('"');
  }
  bool Value(Json& out) {
    SkipSpace();
    if (pos_ >= text_.size()) return false;
    const char c = text_[pos_];
    if (c == '{') {
      out.kind = Json::Kind::kObject;
      ++pos_;
      if (Consume('}')) return true;
      do {
        std::string key;
        if (!String(key) || !Consume(':') || !Value(out.object[key])) return false;
      } while (Consume(','));
      return Consume('}');
    }
    if (c == '[') {
      out.kind = Json::Kind::kArray;
      ++pos_;
      if (Consume(']')) return true;
      do {
        out.array.emplace_back();
        if (!Value(out.array.back())) return false;
      } while (Consume(','));
      return Consume(']');
    }
    if (c == '"') {
      out.kind = Json::Kind::kString;
      return String(out.string);
    }
    if (Literal("true")) {
      out.kind = Json::Kind::kBool;
      out.boolean = true;
      return true;
    }
    if (Literal("false")) {
      out.kind = Json::Kind::kBool;
      return true;
    }
    if (Literal("null")) return true;
    const char* begin = text_.c_str() + pos_;
    char* end = nullptr;
    out.kind = Json::Kind::kNumber;
    out.number = std::strtod(begin, &end);
    if (end == begin) return false;
    pos_ += static_cast<size_t>(end - begin);
    return true;
  }

  std::string text_;
  size_t pos_ = 0;
};

// A number, or one of the strings "+Inf", "-Inf", "NaN".
double NumberOf(const Json& value) {
  if (value.kind == Json::Kind::kNumber) return value.number;
  if (value.string == "+Inf") return std::numeric_limits<double>::infinity();
  if (value.string == "-Inf") return -std::numeric_limits<double>::infinity();
  if (value.string == "NaN") return std::numeric_limits<double>::quiet_NaN();
  ADD_FAILURE() << "not a number: " << value.string;
  return 0;
}

ResourceMap MapOf(const Json& value) {
  ResourceMap map;
  for (const auto& [key, entry] : value.object) map[key] = NumberOf(entry);
  return map;
}

struct Vector {
  std::string name;
  ResourceMap usage;
  ResourceMap rate;
  double interval = 0;
  double half_life = 0;
  bool error = false;
  ResourceMap expected;
  double relative_tolerance = 0;
};

std::vector<Vector> LoadVectors() {
  const std::string path =
      std::string(ARBITER_SOURCE_DIR) + "/tests/testdata/usage_accounting_vectors.json";
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  Json root;
  if (!in || !JsonReader(buffer.str()).Read(root) || root.kind != Json::Kind::kArray) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  std::vector<Vector> vectors;
  for (const Json& c : root.array) {
    Vector v;
    v.name = c.Find("name")->string;
    v.usage = MapOf(*c.Find("usage"));
    v.rate = MapOf(*c.Find("rate"));
    v.interval = NumberOf(*c.Find("interval"));
    v.half_life = NumberOf(*c.Find("half_life"));
    if (const Json* error = c.Find("error")) v.error = error->boolean;
    if (const Json* expected = c.Find("expected")) v.expected = MapOf(*expected);
    if (const Json* tolerance = c.Find("relative_tolerance")) {
      v.relative_tolerance = tolerance->number;
    }
    vectors.push_back(std::move(v));
  }
  return vectors;
}

TEST(UsageAccountingTest, SharedVectorsHold) {
  std::vector<Vector> vectors = LoadVectors();
  ASSERT_GE(vectors.size(), 10u);
  for (const Vector& v : vectors) {
    SCOPED_TRACE(v.name);
    absl::StatusOr<ResourceMap> result = AccumulateUsage(v.usage, v.rate, v.interval, v.half_life);
    if (v.error) {
      EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument));
      continue;
    }
    ASSERT_THAT(result, IsOk());
    ASSERT_EQ(result->size(), v.expected.size());
    for (const auto& [name, expected] : v.expected) {
      SCOPED_TRACE(name);
      ASSERT_EQ(result->count(name), 1u);
      const double got = result->at(name);
      if (v.relative_tolerance == 0) {
        EXPECT_EQ(got, expected);
      } else {
        EXPECT_LE(std::fabs(got - expected), v.relative_tolerance * std::fabs(expected))
            << "got " << got;
      }
    }
  }
}

// §3: H unset (0) or negative means no decay.
TEST(UsageAccountingTest, NoDecayWithoutPositiveHalfLife) {
  EXPECT_EQ(UsageDecayFactor(100, 0), 1.0);
  EXPECT_EQ(UsageDecayFactor(100, -5), 1.0);
}

// §3: usage·0.5^(Δ/H): a whole number of half-lives halves exactly that many times.
TEST(UsageAccountingTest, DecayHalvesPerHalfLife) {
  EXPECT_EQ(UsageDecayFactor(60, 60), 0.5);
  EXPECT_EQ(UsageDecayFactor(180, 60), 0.125);
  EXPECT_EQ(UsageDecayFactor(0, 60), 1.0);
}

// §3: allocated·Δ is added undecayed.
TEST(UsageAccountingTest, AddsAllocationTimesInterval) {
  absl::StatusOr<ResourceMap> result =
      AccumulateUsage({{"nvidia.com/gpu", 6}}, {{"nvidia.com/gpu", 3}}, 30, 30);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->at("nvidia.com/gpu"), 3 + 3 * 30);
}

TEST(UsageAccountingTest, RejectsNonFiniteInterval) {
  EXPECT_THAT(AccumulateUsage({}, {}, std::numeric_limits<double>::infinity(), 1),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(AccumulateUsage({}, {}, std::nan(""), 1),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(UsageAccountingTest, ErrorNamesTheArgumentAndKey) {
  absl::StatusOr<ResourceMap> result = AccumulateUsage({}, {{"cpu", -2}}, 1, 1);
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(result.status().message().substr(0, 11), "rate[\"cpu\"]");
}

// Issue 11: finite inputs whose product or sum overflows give an error, never +Inf usage.
TEST(UsageAccountingTest, RejectsAResultThatOverflows) {
  absl::StatusOr<ResourceMap> product = AccumulateUsage({}, {{"cpu", 1e308}}, 10, 60);
  EXPECT_THAT(product, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(product.status().message().substr(0, 11), "rate[\"cpu\"]");
  absl::StatusOr<ResourceMap> sum = AccumulateUsage({{"gpu", 1.5e308}}, {{"gpu", 1e308}}, 1, 0);
  EXPECT_THAT(sum, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(sum.status().message().substr(0, 11), "rate[\"gpu\"]");
}

TEST(UsageAccountingTest, ErrorCapsALongKey) {
  absl::StatusOr<ResourceMap> result = AccumulateUsage({{std::string(100000, 'k'), -1}}, {}, 1, 1);
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_LT(result.status().message().size(), 1024u);
  EXPECT_EQ(result.status().message().substr(0, 7), "usage[\"");
}

}  // namespace
}  // namespace arbiter
