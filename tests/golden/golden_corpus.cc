// The golden corpus: the exact answers of both RPCs on a fixed set of requests, recorded once and
// compared byte for byte afterwards, so that a change meant to keep answers (a refactor, a
// speed-up) can prove it did.
//
//   golden_corpus check  CORPUS [--filter SUBSTRING] [--before DIR]
//       compare (exit 1 on any difference, a line with no case and a case with no line included)
//   golden_corpus record CORPUS [--filter SUBSTRING] [--before DIR]
//       write the answers (only the filtered cases are replaced, the others kept; a line whose
//       case is gone is dropped)
//   golden_corpus save   DIR [--filter SUBSTRING]       write every answer as text, for --before
//   golden_corpus dump   CASE DIR                       write CASE's request and answers as .pb
//
// With --before DIR (written by `save` before the change), every answer that moved is shown as
// text: the lines of the answer (one binding, eviction, admission, pending group or queue share
// per line) that went, marked "-", and those that came, marked "+".
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
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "arbiter/v1/arbiter.pb.h"
#include "clients/generator/generator.h"
#include "core/api/arbiter.h"
#include "edge/answer_writer.h"
#include "edge/proto_convert.h"
#include "edge/request_decoder.h"
#include "edge/wire.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
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
    // The server writes this answer's bytes straight from the result; the message's
    // serialisation must give the same bytes.
    std::string written;
    edge::AppendFairShareResponse(*shares, &written);
    v1::FairShareResponse proto;
    edge::ToProto(*std::move(shares), &proto);
    if (Deterministic(proto) != written) {
      return {{"ComputeFairShares", "the written answer differs from the message's bytes"}};
    }
    answers.push_back({"ComputeFairShares", written});
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

// An answer as text, one line per entry of each list (a binding, an eviction, an admission, a
// pending group, a queue share) in the answer's own order, then the other fields; an error
// answer is its status line. Lines are protobuf text format on one line each.
std::vector<std::string> AnswerLines(const Answer& answer) {
  std::unique_ptr<google::protobuf::Message> message;
  if (answer.rpc == "Schedule") message = std::make_unique<v1::ScheduleResponse>();
  if (answer.rpc == "ComputeFairShares") message = std::make_unique<v1::FairShareResponse>();
  if (message == nullptr || !message->ParseFromString(answer.bytes)) return {answer.bytes};
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  const google::protobuf::Reflection* reflection = message->GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  std::vector<std::string> lines;
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (field->is_repeated() &&
        field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
        std::string text;
        printer.PrintToString(reflection->GetRepeatedMessage(*message, field, i), &text);
        lines.push_back(absl::StrCat(field->name(), " { ", text, "}"));
      }
    } else {
      std::string text;
      printer.PrintFieldValueToString(*message, field, -1, &text);
      lines.push_back(absl::StrCat(field->name(), ": ", text));
    }
  }
  return lines;
}

// The lines of `before` that `after` lacks ("- ...") and those `after` adds ("+ ..."), each in
// its answer's order; a line that occurs twice counts twice.
std::vector<std::string> ChangedLines(const std::vector<std::string>& before,
                                      const std::vector<std::string>& after) {
  std::map<std::string, int> balance;
  for (const std::string& line : before) ++balance[line];
  for (const std::string& line : after) --balance[line];
  std::vector<std::string> changed;
  std::map<std::string, int> gone = balance;
  for (const std::string& line : before) {
    if (gone[line] > 0) {
      --gone[line];
      changed.push_back("- " + line);
    }
  }
  std::map<std::string, int> came = balance;
  for (const std::string& line : after) {
    if (came[line] < 0) {
      ++came[line];
      changed.push_back("+ " + line);
    }
  }
  return changed;
}

std::string TextPath(const std::string& dir, const std::string& name, const std::string& rpc) {
  return absl::StrCat(dir, "/", name, "/", rpc, ".txt");
}

bool WriteText(const std::string& path, const std::vector<std::string>& lines) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& line : lines) out << line << "\n";
  return static_cast<bool>(out);
}

std::vector<std::string> ReadText(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct Line {
  std::string request_sha;
  std::string answer_size;
  std::string answer_sha;
};
using Corpus = std::map<std::pair<std::string, std::string>, Line>;  // (case, rpc) -> line

// The corpus at `path`; every line that is not a comment and not five fields, or that repeats a
// (case, rpc) pair, goes to `malformed`.
Corpus ReadCorpus(const std::string& path, std::vector<std::string>* malformed) {
  Corpus corpus;
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(text, ' ');
    if (fields.size() != 5 ||
        !corpus.emplace(std::make_pair(fields[0], fields[1]), Line{fields[2], fields[3], fields[4]})
             .second) {
      malformed->push_back(text);
    }
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

struct Options {
  std::string filter;
  std::string before;  // a directory written by `save`, "" when not given
};

bool Selected(const std::string& name, const Options& options) {
  return options.filter.empty() || name.find(options.filter) != std::string::npos;
}

// Prints how the answer of (name, rpc) moved, from the text `save` wrote under options.before.
void ShowMoved(const std::string& name, const Answer& answer, const Options& options) {
  if (options.before.empty()) return;
  const std::string before = TextPath(options.before, name, answer.rpc);
  if (!std::filesystem::exists(before)) {
    std::cout << "    (no " << before << ")\n";
    return;
  }
  for (const std::string& line : ChangedLines(ReadText(before), AnswerLines(answer))) {
    std::cout << "    " << line << "\n";
  }
}

// Compares (check) or records (record) the selected cases against the corpus at `path`. Each
// difference is printed as it is found, "DIFFERS ..." when checking and "MOVED ..." or
// "DROPPED ..." when recording, followed by the answer's changed lines when options.before is
// set.
int Run(const std::string& mode, const std::string& path, const Options& options) {
  const bool record = mode == "record";
  std::vector<std::string> malformed;
  Corpus corpus = ReadCorpus(path, &malformed);
  if (!record && corpus.empty()) {
    std::cerr << "golden_corpus: no corpus at " << path << "\n";
    return 2;
  }
  int compared = 0;
  int differences = 0;
  const auto report = [&](const std::string& label, const std::string& text) {
    ++differences;
    std::cout << (record ? label : "DIFFERS") << " " << text << "\n";
  };
  for (const std::string& text : malformed)
    report("DROPPED", "a malformed or repeated line: " + text);
  int moved = 0;  // answers that differ from their line, or have none
  std::set<std::pair<std::string, std::string>> answered;
  for (const Case& c : Cases()) {
    if (!Selected(c.name, options)) continue;
    const auto start = std::chrono::steady_clock::now();
    const std::string request = Deterministic(c.request());
    const std::string request_sha = Sha256(request);
    for (const Answer& answer : AnswerBoth(request)) {
      Line line{request_sha, std::to_string(answer.bytes.size()), Sha256(answer.bytes)};
      const auto key = std::make_pair(c.name, answer.rpc);
      const std::string name = absl::StrCat(c.name, " ", answer.rpc);
      answered.insert(key);
      ++compared;
      auto it = corpus.find(key);
      const bool was_there = it != corpus.end();
      if (!was_there) {
        report("MOVED", name + ": not in the corpus");
      } else if (it->second.request_sha != line.request_sha) {
        report("MOVED", name + ": the request changed (generator or scenario file)");
      } else if (it->second.answer_sha != line.answer_sha) {
        report("MOVED", absl::StrCat(name, ": the answer changed (", it->second.answer_size, " -> ",
                                     line.answer_size, " bytes)"));
      }
      if (!was_there || it->second.request_sha != line.request_sha ||
          it->second.answer_sha != line.answer_sha) {
        ++moved;
      }
      if (was_there && it->second.answer_sha != line.answer_sha) ShowMoved(c.name, answer, options);
      if (record) corpus[key] = line;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0.5) std::cout << c.name << ": " << seconds << " s\n";
  }
  // A line whose case is gone: a check that skipped it would pass with a case fewer.
  for (auto it = corpus.begin(); it != corpus.end();) {
    if (!Selected(it->first.first, options) || answered.count(it->first) > 0) {
      ++it;
      continue;
    }
    report("DROPPED", absl::StrCat(it->first.first, " ", it->first.second,
                                   ": in the corpus, but no such case"));
    it = record ? corpus.erase(it) : std::next(it);
  }
  if (record) {
    if (!WriteCorpus(path, corpus)) {
      std::cerr << "golden_corpus: cannot write " << path << "\n";
      return 2;
    }
    std::cout << "recorded " << compared << " answers in " << path << "\n";
    return 0;
  }
  std::cout << compared - moved << " of " << compared << " answers byte-identical\n";
  if (differences > 0 && options.before.empty()) {
    std::cout << "to see what moved: `golden_corpus save DIR` on the tree before the change, then "
                 "`golden_corpus check CORPUS --before DIR`\n";
  }
  return differences == 0 ? 0 : 1;
}

// Every selected case's answers as text under `dir`, for a later --before.
int Save(const std::string& dir, const Options& options) {
  int saved = 0;
  for (const Case& c : Cases()) {
    if (!Selected(c.name, options)) continue;
    for (const Answer& answer : AnswerBoth(Deterministic(c.request()))) {
      if (!WriteText(TextPath(dir, c.name, answer.rpc), AnswerLines(answer))) {
        std::cerr << "golden_corpus: cannot write under " << dir << "\n";
        return 2;
      }
      ++saved;
    }
  }
  std::cout << "saved " << saved << " answers as text under " << dir << "\n";
  return 0;
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
  const std::vector<std::string> args(argv + 1, argv + argc);
  const char* usage =
      "usage: golden_corpus check|record CORPUS [--filter SUBSTRING] [--before DIR]\n"
      "       golden_corpus save DIR [--filter SUBSTRING]\n"
      "       golden_corpus dump CASE DIR\n";
  if (args.size() == 3 && args[0] == "dump") return arbiter::Dump(args[1], args[2]);
  arbiter::Options options;
  bool flags_ok = args.size() >= 2 && args.size() % 2 == 0;
  for (size_t i = 2; flags_ok && i + 1 < args.size(); i += 2) {
    if (args[i] == "--filter") {
      options.filter = args[i + 1];
    } else if (args[i] == "--before" && args[0] != "save") {
      options.before = args[i + 1];
    } else {
      flags_ok = false;
    }
  }
  if (flags_ok && (args[0] == "check" || args[0] == "record")) {
    return arbiter::Run(args[0], args[1], options);
  }
  if (flags_ok && args[0] == "save") return arbiter::Save(args[1], options);
  std::cerr << usage;
  return 2;
}
