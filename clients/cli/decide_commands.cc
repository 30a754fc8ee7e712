// `arbiter fairshare` and `arbiter schedule`: read a request, answer it in-process (the core) or
// through a server (--server), and print the answer as a table or as proto3 JSON.
#include <chrono>
#include <memory>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arbiter/v1/arbiter.grpc.pb.h"
#include "clients/cli/commands.h"
#include "clients/cli/response_tables.h"
#include "core/api/arbiter.h"
#include "google/protobuf/arena.h"
#include "grpcpp/grpcpp.h"
#include "server/command_line.h"
#include "server/grpc_status.h"
#include "server/proto_convert.h"
#include "server/request_id.h"
#include "server/tls.h"
#include "server/wire.h"

namespace arbiter::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Durations of consecutive phases, each measured from the end of the one before.
class PhaseTimer {
 public:
  PhaseTimer() : start_(Clock::now()), last_(start_) {}

  void Mark(std::string_view phase) {
    const Clock::time_point now = Clock::now();
    phases_.emplace_back(std::string(phase.data(), phase.size()), Seconds(now - last_));
    last_ = now;
  }

  // The victim search's counters of an eviction action, shown under its phase.
  void Counters(std::string_view phase,
                const std::vector<std::pair<std::string_view, int64_t>>& counters) {
    std::string text;
    for (const auto& [name, value] : counters) {
      absl::StrAppend(&text, text.empty() ? "" : ", ", absl::string_view(name.data(), name.size()),
                      " ", value);
    }
    counters_[std::string(phase)] = std::move(text);
  }

  // "timing (in-process):" then one aligned line per phase and the total, in milliseconds; an
  // eviction action's counters on the line below its own.
  std::string Render(std::string_view mode) const {
    std::string out = absl::StrCat("timing (", absl::string_view(mode.data(), mode.size()), "):\n");
    for (const auto& [phase, seconds] : phases_) {
      absl::StrAppendFormat(&out, "  %-12s %10.3f ms\n", phase, seconds * 1e3);
      auto counters = counters_.find(phase);
      if (counters != counters_.end()) absl::StrAppend(&out, "    search: ", counters->second, "\n");
    }
    absl::StrAppendFormat(&out, "  %-12s %10.3f ms\n", "total", Seconds(last_ - start_) * 1e3);
    return out;
  }

 private:
  static double Seconds(Clock::duration duration) {
    return std::chrono::duration<double>(duration).count();
  }

  Clock::time_point start_;
  Clock::time_point last_;
  std::vector<std::pair<std::string, double>> phases_;
  std::map<std::string, std::string> counters_;
};

// What differs between the two calls.
struct FairShareCall {
  using Request = v1::FairShareRequest;
  using Response = v1::FairShareResponse;
  static constexpr const char* kCommand = "fairshare";

  static absl::StatusOr<Response> Local(const Snapshot& snapshot, const Policy& policy,
                                        const CycleHooks& hooks) {
    absl::StatusOr<FairShareResult> result = ComputeFairShares(snapshot, policy, hooks);
    if (!result.ok()) return result.status();
    return server::ToProto(*result);
  }
  static grpc::Status Remote(v1::Arbiter::Stub& stub, grpc::ClientContext* context,
                             const Request& request, Response* response) {
    return stub.ComputeFairShares(context, request, response);
  }
  static std::string Table(const Request& request, const Response& response) {
    return RenderFairShares(request.snapshot(), request.policy(), response);
  }
};

struct ScheduleCall {
  using Request = v1::ScheduleRequest;
  using Response = v1::ScheduleResponse;
  static constexpr const char* kCommand = "schedule";

  static absl::StatusOr<Response> Local(const Snapshot& snapshot, const Policy& policy,
                                        const CycleHooks& hooks) {
    absl::StatusOr<ScheduleResult> result = Schedule(snapshot, policy, hooks);
    if (!result.ok()) return result.status();
    return server::ToProto(*result);
  }
  static grpc::Status Remote(v1::Arbiter::Stub& stub, grpc::ClientContext* context,
                             const Request& request, Response* response) {
    return stub.Schedule(context, request, response);
  }
  static std::string Table(const Request& request, const Response& response) {
    return RenderSchedule(request.snapshot(), request.policy(), response);
  }
};

struct DecideOptions {
  std::string request_path;
  std::string format = "table";
  std::string server;
  bool timing = false;
  double deadline_seconds = 0;
  server::ClientTlsFiles tls;
  std::string tls_server_name;
  std::string request_id;
};

// The flags of `fairshare` and `schedule`, bound to `options` and `help`.
void DeclareFlags(server::CommandLine* flags, DecideOptions* options, bool* help) {
  flags->AddString("format", "table|json", &options->format, "how to print the answer");
  flags->AddString("server", "HOST:PORT", &options->server,
                   "ask this arbiter-server instead of computing in-process");
  flags->AddBool("timing", &options->timing,
                 "print on stderr how long each phase took (parse, validate, fair share, each "
                 "action, serialise)");
  flags->AddDouble("deadline-seconds", "SECONDS", &options->deadline_seconds,
                   "give up after this long (0 = no deadline)");
  flags->AddString("tls-ca", "FILE", &options->tls.ca,
                   "with --server: use TLS, verifying the server's certificate against this PEM "
                   "CA");
  flags->AddString("tls-cert", "FILE", &options->tls.cert,
                   "with --server: use TLS and present this PEM certificate (mutual TLS; needs "
                   "--tls-key)");
  flags->AddString("tls-key", "FILE", &options->tls.key, "PEM private key of --tls-cert");
  flags->AddString("tls-server-name", "NAME", &options->tls_server_name,
                   "with TLS: the name the server's certificate must carry, when not the host of "
                   "--server");
  flags->AddString("request-id", "ID", &options->request_id,
                   "with --server: send this x-request-id (the server logs it with the call)");
  flags->AddBool("help", help, "print this help");
}

std::string Usage(const char* command, const server::CommandLine& flags) {
  return absl::StrCat("usage: arbiter ", command, " REQUEST [flags]\n\n",
                      "REQUEST is a file holding an arbiter.v1 request as proto3 JSON, or binary\n"
                      "protobuf when its name ends in .pb; - reads JSON from standard input.\n\n"
                      "flags:\n",
                      flags.Usage());
}

template <typename Call>
absl::StatusOr<typename Call::Response> AnswerInProcess(const typename Call::Request& request,
                                                        const DecideOptions& options,
                                                        PhaseTimer* timer) {
  const Snapshot snapshot = server::FromProto(request.snapshot());
  const Policy policy = server::FromProto(request.policy());
  timer->Mark("convert");
  CycleHooks hooks;
  hooks.phase_done = [timer](std::string_view phase) { timer->Mark(phase); };
  hooks.phase_counters = [timer](std::string_view phase,
                                 const std::vector<std::pair<std::string_view, int64_t>>& counters) {
    timer->Counters(phase, counters);
  };
  if (options.deadline_seconds > 0) {
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(options.deadline_seconds));
    hooks.cancelled = [deadline] { return Clock::now() > deadline; };
  }
  absl::StatusOr<typename Call::Response> response = Call::Local(snapshot, policy, hooks);
  if (!response.ok() && response.status().code() == absl::StatusCode::kCancelled &&
      options.deadline_seconds > 0) {
    return absl::DeadlineExceededError(
        absl::StrCat("the deadline passed: ", response.status().message()));
  }
  return response;
}

template <typename Call>
absl::StatusOr<typename Call::Response> AnswerRemotely(const typename Call::Request& request,
                                                       const DecideOptions& options,
                                                       PhaseTimer* timer) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      server::MakeChannelCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  arguments.SetMaxSendMessageSize(-1);
  if (!options.tls_server_name.empty()) {
    arguments.SetSslTargetNameOverride(options.tls_server_name);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.server, *credentials, arguments);
  std::unique_ptr<v1::Arbiter::Stub> stub = v1::Arbiter::NewStub(channel);
  grpc::ClientContext context;
  if (!options.request_id.empty()) context.AddMetadata(server::kRequestIdKey, options.request_id);
  if (options.deadline_seconds > 0) {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::duration_cast<std::chrono::system_clock::duration>(
                             std::chrono::duration<double>(options.deadline_seconds)));
  }
  typename Call::Response response;
  const grpc::Status status = Call::Remote(*stub, &context, request, &response);
  timer->Mark("round_trip");
  if (!status.ok()) return server::FromGrpcStatus(status);
  return response;
}

template <typename Call>
int RunDecide(const Args& args, std::ostream& out, std::ostream& err) {
  DecideOptions options;
  bool help = false;
  server::CommandLine flags;
  DeclareFlags(&flags, &options, &help);

  std::vector<std::string> positional;
  absl::Status parsed = flags.Parse(args, &positional);
  if (parsed.ok() && help) {
    out << Usage(Call::kCommand, flags);
    return 0;
  }
  if (parsed.ok() && positional.size() != 1) {
    parsed = absl::InvalidArgumentError(
        positional.empty() ? "missing REQUEST file"
                           : absl::StrCat("expected one REQUEST file, got ", positional.size()));
  }
  if (parsed.ok() && options.server.empty() &&
      (server::UsesTls(options.tls) || !options.request_id.empty())) {
    parsed = absl::InvalidArgumentError(
        "--tls-ca, --tls-cert, --tls-key and --request-id need --server");
  }
  if (parsed.ok() && options.format != "table" && options.format != "json") {
    parsed = absl::InvalidArgumentError(
        absl::StrCat("--format: \"", options.format, "\" is not table or json"));
  }
  if (!parsed.ok()) {
    err << server::FormatStatus(parsed) << "\n" << Usage(Call::kCommand, flags);
    return ExitCode(parsed);
  }
  options.request_path = positional.front();

  PhaseTimer timer;
  // Large snapshots parse about twice as fast on an arena, which also frees them in one go.
  google::protobuf::Arena arena;
  typename Call::Request& request =
      *google::protobuf::Arena::CreateMessage<typename Call::Request>(&arena);
  if (absl::Status read = server::ReadMessageFile(options.request_path, &request); !read.ok()) {
    return Fail(read, err);
  }
  timer.Mark("parse");

  absl::StatusOr<typename Call::Response> response =
      options.server.empty() ? AnswerInProcess<Call>(request, options, &timer)
                             : AnswerRemotely<Call>(request, options, &timer);
  if (!response.ok()) {
    if (options.timing) err << timer.Render(options.server.empty() ? "in-process" : "server");
    return Fail(response.status(), err);
  }

  std::string text;
  if (options.format == "json") {
    absl::StatusOr<std::string> json = server::ToJson(*response, server::JsonStyle::kPretty);
    if (!json.ok()) return Fail(json.status(), err);
    text = *std::move(json);
    if (text.empty() || text.back() != '\n') text.push_back('\n');
  } else {
    text = Call::Table(request, *response);
  }
  timer.Mark("serialise");
  out << text;
  out.flush();
  if (options.timing) {
    err << timer.Render(options.server.empty() ? "in-process"
                                               : absl::StrCat("server ", options.server));
  }
  return 0;
}

}  // namespace

std::string DecideFlagsUsage() {
  DecideOptions options;
  bool help = false;
  server::CommandLine flags;
  DeclareFlags(&flags, &options, &help);
  return flags.Usage();
}

int RunFairShare(const Args& args, std::ostream& out, std::ostream& err) {
  return RunDecide<FairShareCall>(args, out, err);
}

int RunSchedule(const Args& args, std::ostream& out, std::ostream& err) {
  return RunDecide<ScheduleCall>(args, out, err);
}

}  // namespace arbiter::cli
