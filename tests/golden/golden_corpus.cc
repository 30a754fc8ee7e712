// The golden corpus: the exact answers of both RPCs on a fixed set of requests, recorded once and
// compared byte for byte afterwards, so that a change meant to keep answers (a refactor, a
// speed-up) can prove it did.
//
//   golden_corpus check  CORPUS [--filter SUBSTRING]   compare (exit 1 on any difference)
//   golden_corpus record CORPUS [--filter SUBSTRING]   write the answers (only the filtered cases
//                                                      are replaced; the others are kept)
//   golden_corpus dump   CASE DIR                       write CASE's request and answers as .pb
//
// Every request goes the server's way: serialised to binary, read back by the server's decoder
// (edge/request_decoder.h), answered by the core (core/api/arbiter.h), the answer converted
// (edge/proto_convert.h) and serialised deterministically. A line of CORPUS is
//   CASE RPC REQUEST_SHA256 ANSWER_BYTES ANSWER_SHA256
// The request's digest tells a changed request (the generator, a scenario file) from a changed
// answer. The cases are listed in `Cases()` and in tests/golden/README.md.
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "arbiter/v1/arbiter.pb.h"
#include "clients/generator/generator.h"
#include "core/api/arbiter.h"
#include "edge/proto_convert.h"
#include "edge/request_decoder.h"
#include "edge/wire.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "tests/property/property_support.h"

namespace arbiter {
namespace {

using generator::GeneratedRequest;
using generator::GeneratorModel;
using generator::GeneratorOptions;

struct Case {
  std::string name;
  std::function<v1::ScheduleRequest()> request;
};

std::string Deterministic(const google::protobuf::Message& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

std::string Sha256(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < size; ++i) {
    std::snprintf(byte, sizeof(byte), "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

v1::ScheduleRequest ToRequest(const GeneratedRequest& generated) {
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = edge::ToProto(generated.snapshot);
  *request.mutable_policy() = edge::ToProto(generated.policy);
  return request;
}

Case Generated(std::string name, GeneratorOptions options,
               std::function<void(GeneratedRequest&)> edit = nullptr) {
  return Case{std::move(name), [options, edit] {
                GeneratedRequest generated = generator::Generate(options);
                if (edit) edit(generated);
                return ToRequest(generated);
              }};
}

GeneratorOptions Preset(const char* size, GeneratorModel model = GeneratorModel::kKai) {
  return *generator::SizePreset(size, model);
}

void Actions(GeneratedRequest& request, std::vector<Action> actions) {
  request.policy.actions = std::move(actions);
}

// Time-aware fairness on a generated request: usage per queue from its index, k = 1.
void TimeAware(GeneratedRequest& request) {
  request.policy.k_value = 1;
  request.snapshot.usage_capacity = {{"nvidia.com/gpu", 1000}, {"cpu", 4e6}};
  int index = 0;
  for (const Queue& queue : request.snapshot.queues) {
    ++index;
    if (index % 3 == 0) continue;
    request.snapshot.usage.push_back(QueueUsage{
        queue.name, {{"nvidia.com/gpu", (index % 7) * 3.0}, {"cpu", (index % 5) * 1000.0}}});
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const char* size : {"S", "M", "L"}) {
    cases.push_back(Generated(absl::StrCat("kai/", size), Preset(size)));
    cases.push_back(Generated(absl::StrCat("kueue/", size), Preset(size, GeneratorModel::kKueue)));
  }
  cases.push_back(Generated("kai/M/time-aware", Preset("M"), TimeAware));
  for (const char* size : {"M", "L"}) {
    GeneratorOptions options = Preset(size);
    options.reclaim_groups = 100;
    cases.push_back(Generated(absl::StrCat("kai/", size, "/reclaim-100"), options));
    cases.push_back(Generated(absl::StrCat("kai/", size, "/reclaim-100/allocate-reclaim"), options,
                              [](GeneratedRequest& r) {
                                Actions(r, {Action::kAllocate, Action::kReclaim});
                              }));
  }
  for (int nodes : {10, 50, 100, 200}) {
    GeneratorOptions options;
    options.shape = generator::GeneratorShape::kKaiReclaim;
    options.nodes = nodes;
    cases.push_back(Generated(absl::StrCat("kai-reclaim/", nodes), options));
  }
  for (uint64_t i = 0; i < 200; ++i) {
    cases.push_back(Generated(absl::StrCat("property/kai/", i),
                              testing::PropertyCaseOptions(i, GeneratorModel::kKai)));
  }
  for (uint64_t i = 0; i < 100; ++i) {
    cases.push_back(Generated(absl::StrCat("property/kueue/", i),
                              testing::PropertyCaseOptions(i, GeneratorModel::kKueue)));
  }
  std::vector<std::filesystem::path> scenarios;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(ARBITER_SOURCE_DIR "/tests/scenarios")) {
    if (entry.path().filename() == "request.json") scenarios.push_back(entry.path());
  }
  std::sort(scenarios.begin(), scenarios.end());
  const std::filesystem::path root(ARBITER_SOURCE_DIR "/tests/scenarios");
  for (const std::filesystem::path& path : scenarios) {
    cases.push_back(Case{
        absl::StrCat("scenario/", path.parent_path().lexically_relative(root).string()), [path] {
          v1::ScheduleRequest request;
          absl::Status read = edge::ReadMessageFile(path.string(), &request);
          if (!read.ok()) std::cerr << read << "\n";
          return request;
        }});
  }
  return cases;
}

struct Answer {
  std::string rpc;
  std::string bytes;
};

// Both RPCs on the request's binary form, the server's way.
std::vector<Answer> AnswerBoth(const std::string& request_bytes) {
  Snapshot snapshot;
  Policy policy;
  if (!edge::DecodeRequest(request_bytes, &snapshot, &policy)) {
    return {{"decode", "not a valid request"}};
  }
  std::vector<Answer> answers;
  absl::StatusOr<FairShareResult> shares = ComputeFairShares(snapshot, policy, CycleHooks{});
  if (shares.ok()) {
    v1::FairShareResponse proto;
    edge::ToProto(*std::move(shares), &proto);
    answers.push_back({"ComputeFairShares", Deterministic(proto)});
  } else {
    answers.push_back({"ComputeFairShares", shares.status().ToString()});
  }
  absl::StatusOr<ScheduleResult> result = Schedule(snapshot, policy, CycleHooks{});
  if (result.ok()) {
    v1::ScheduleResponse proto;
    edge::ToProto(*std::move(result), &proto);
    answers.push_back({"Schedule", Deterministic(proto)});
  } else {
    answers.push_back({"Schedule", result.status().ToString()});
  }
  return answers;
}

struct Line {
  std::string request_sha;
  std::string answer_size;
  std::string answer_sha;
};
using Corpus = std::map<std::pair<std::string, std::string>, Line>;  // (case, rpc) -> line

Corpus ReadCorpus(const std::string& path) {
  Corpus corpus;
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(text, ' ');
    if (fields.size() != 5) continue;
    corpus[{fields[0], fields[1]}] = Line{fields[2], fields[3], fields[4]};
  }
  return corpus;
}

bool WriteCorpus(const std::string& path, const Corpus& corpus) {
  std::ofstream out(path, std::ios::trunc);
  out << "# The golden corpus (tests/golden/README.md): CASE RPC REQUEST_SHA256 ANSWER_BYTES "
         "ANSWER_SHA256\n";
  for (const auto& [key, line] : corpus) {
    out << key.first << " " << key.second << " " << line.request_sha << " " << line.answer_size
        << " " << line.answer_sha << "\n";
  }
  return static_cast<bool>(out);
}

int Run(const std::string& mode, const std::string& path, const std::string& filter) {
  Corpus corpus = ReadCorpus(path);
  if (mode == "check" && corpus.empty()) {
    std::cerr << "golden_corpus: no corpus at " << path << "\n";
    return 2;
  }
  int compared = 0;
  std::vector<std::string> differences;
  for (const Case& c : Cases()) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    const auto start = std::chrono::steady_clock::now();
    const std::string request = Deterministic(c.request());
    const std::string request_sha = Sha256(request);
    for (const Answer& answer : AnswerBoth(request)) {
      Line line{request_sha, std::to_string(answer.bytes.size()), Sha256(answer.bytes)};
      const auto key = std::make_pair(c.name, answer.rpc);
      ++compared;
      if (mode == "record") {
        corpus[key] = line;
        continue;
      }
      auto it = corpus.find(key);
      if (it == corpus.end()) {
        differences.push_back(absl::StrCat(c.name, " ", answer.rpc, ": not in the corpus"));
      } else if (it->second.request_sha != line.request_sha) {
        differences.push_back(absl::StrCat(c.name, " ", answer.rpc,
                                           ": the request changed (generator or scenario file)"));
      } else if (it->second.answer_sha != line.answer_sha) {
        differences.push_back(absl::StrCat(c.name, " ", answer.rpc, ": the answer changed (",
                                           it->second.answer_size, " -> ", line.answer_size,
                                           " bytes)"));
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0.5) std::cout << c.name << ": " << seconds << " s\n";
  }
  if (mode == "record") {
    if (!WriteCorpus(path, corpus)) {
      std::cerr << "golden_corpus: cannot write " << path << "\n";
      return 2;
    }
    std::cout << "recorded " << compared << " answers in " << path << "\n";
    return 0;
  }
  for (const std::string& difference : differences) std::cout << "DIFFERS " << difference << "\n";
  std::cout << compared - static_cast<int>(differences.size()) << " of " << compared
            << " answers byte-identical\n";
  return differences.empty() ? 0 : 1;
}

int Dump(const std::string& name, const std::string& dir) {
  for (const Case& c : Cases()) {
    if (c.name != name) continue;
    std::filesystem::create_directories(dir);
    const v1::ScheduleRequest request = c.request();
    std::ofstream(dir + "/request.pb", std::ios::binary) << Deterministic(request);
    for (const Answer& answer : AnswerBoth(Deterministic(request))) {
      std::ofstream(dir + "/" + answer.rpc + ".pb", std::ios::binary) << answer.bytes;
    }
    std::cout << "wrote " << dir << "/request.pb and the answers\n";
    return 0;
  }
  std::cerr << "golden_corpus: no case " << name << "\n";
  return 2;
}

}  // namespace
}  // namespace arbiter

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const char* usage =
      "usage: golden_corpus check|record CORPUS [--filter SUBSTRING]\n"
      "       golden_corpus dump CASE DIR\n";
  if (args.size() == 3 && args[0] == "dump") return arbiter::Dump(args[1], args[2]);
  if ((args.size() == 2 || (args.size() == 4 && args[2] == "--filter")) &&
      (args[0] == "check" || args[0] == "record")) {
    return arbiter::Run(args[0], args[1], args.size() == 4 ? args[3] : "");
  }
  std::cerr << usage;
  return 2;
}
