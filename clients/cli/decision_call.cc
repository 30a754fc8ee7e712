#include "clients/cli/decision_call.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arbiter/v1/arbiter.grpc.pb.h"
#include "edge/calls.h"
#include "edge/rpc/grpc_status.h"
#include "edge/rpc/request_id.h"
#include "grpcpp/grpcpp.h"

namespace arbiter::cli {
namespace {

using Clock = std::chrono::steady_clock;

// What differs between the two calls.
struct FairShareCall {
  using Request = v1::FairShareRequest;
  using Response = v1::FairShareResponse;

  static absl::StatusOr<Response> Local(std::string_view request_bytes, const CycleHooks& hooks) {
    return edge::CallComputeFairShares(request_bytes, hooks);
  }
  static grpc::Status Remote(v1::Arbiter::Stub& stub, grpc::ClientContext* context,
                             const Request& request, Response* response) {
    return stub.ComputeFairShares(context, request, response);
  }
};

struct ScheduleCall {
  using Request = v1::ScheduleRequest;
  using Response = v1::ScheduleResponse;

  static absl::StatusOr<Response> Local(std::string_view request_bytes, const CycleHooks& hooks) {
    return edge::CallSchedule(request_bytes, hooks);
  }
  static grpc::Status Remote(v1::Arbiter::Stub& stub, grpc::ClientContext* context,
                             const Request& request, Response* response) {
    return stub.Schedule(context, request, response);
  }
};

template <typename Call>
absl::StatusOr<typename Call::Response> AnswerInProcess(const typename Call::Request& request,
                                                        const DecideOptions& options,
                                                        PhaseTimer* timer) {
  // A request read from JSON or binary is in hand as a message: it takes the one way in, as
  // bytes through the decoder.
  const std::string request_bytes = request.SerializeAsString();
  timer->Mark("serialize_request");
  CycleHooks hooks;
  hooks.phase_done = [timer](std::string_view phase) { timer->Mark(phase); };
  hooks.phase_counters = [timer](
                             std::string_view phase,
                             const std::vector<std::pair<std::string_view, int64_t>>& counters) {
    timer->Counters(phase, counters);
  };
  if (options.trace && options.trace_to != nullptr) {
    std::ostream* trace = options.trace_to;
    hooks.attempt = [trace](const AttemptTrace& attempt) {
      *trace << FormatAttempt(attempt) << '\n';
    };
  }
  if (options.deadline_seconds > 0) {
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(options.deadline_seconds));
    hooks.cancelled = [deadline] { return Clock::now() > deadline; };
  }
  absl::StatusOr<typename Call::Response> response = Call::Local(request_bytes, hooks);
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
  absl::StatusOr<std::unique_ptr<v1::Arbiter::Stub>> stub = ConnectStub(options);
  if (!stub.ok()) return stub.status();
  grpc::ClientContext context;
  if (!options.request_id.empty()) context.AddMetadata(rpc::kRequestIdKey, options.request_id);
  if (options.deadline_seconds > 0) {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::duration_cast<std::chrono::system_clock::duration>(
                             std::chrono::duration<double>(options.deadline_seconds)));
  }
  typename Call::Response response;
  const grpc::Status status = Call::Remote(**stub, &context, request, &response);
  timer->Mark("round_trip");
  if (!status.ok()) return rpc::FromGrpcStatus(status);
  return response;
}

template <typename Call>
absl::StatusOr<typename Call::Response> AnswerCall(const typename Call::Request& request,
                                                   const DecideOptions& options,
                                                   PhaseTimer* timer) {
  return options.server.empty() ? AnswerInProcess<Call>(request, options, timer)
                                : AnswerRemotely<Call>(request, options, timer);
}

}  // namespace

void DeclareDecideFlags(rpc::CommandLine* flags, DecideOptions* options, bool* help) {
  flags->AddString("format", "table|json", &options->format, "how to print the answer");
  flags->AddString("server", "HOST:PORT", &options->server,
                   "ask this arbiter-server instead of computing in-process");
  flags->AddBool("timing", &options->timing,
                 "print on stderr how long each phase took (parse, validate, fair share, each "
                 "action, serialise)");
  flags->AddBool("trace", &options->trace,
                 "print on stderr every attempt of the KAI actions in the order they were made: "
                 "the pod group, the unit's pods, the outcome, the pods it evicted or moved, and "
                 "the victims it tried and restored on their own node (in-process only)");
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

absl::StatusOr<std::unique_ptr<v1::Arbiter::Stub>> ConnectStub(const DecideOptions& options) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      rpc::MakeChannelCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  arguments.SetMaxSendMessageSize(-1);
  if (!options.tls_server_name.empty()) {
    arguments.SetSslTargetNameOverride(options.tls_server_name);
  }
  return v1::Arbiter::NewStub(grpc::CreateCustomChannel(options.server, *credentials, arguments));
}

absl::Status CheckDecideOptions(const DecideOptions& options) {
  if (options.server.empty() && (rpc::UsesTls(options.tls) || !options.request_id.empty())) {
    return absl::InvalidArgumentError(
        "--tls-ca, --tls-cert, --tls-key and --request-id need --server");
  }
  if (options.trace && !options.server.empty()) {
    return absl::InvalidArgumentError("--trace works in-process only: drop --server");
  }
  if (options.format != "table" && options.format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format: \"", options.format, "\" is not table or json"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::FairShareResponse> Answer(const v1::FairShareRequest& request,
                                             const DecideOptions& options, PhaseTimer* timer) {
  return AnswerCall<FairShareCall>(request, options, timer);
}

absl::StatusOr<v1::ScheduleResponse> Answer(const v1::ScheduleRequest& request,
                                            const DecideOptions& options, PhaseTimer* timer) {
  return AnswerCall<ScheduleCall>(request, options, timer);
}

std::string FormatAttempt(const AttemptTrace& attempt) {
  std::string line(attempt.action);
  line += ' ';
  line += attempt.pod_group;
  absl::StrAppend(&line, " (", attempt.pods, attempt.pods == 1 ? " pod): " : " pods): ");
  line += attempt.outcome;
  const auto append_pods = [&line](const char* what, const std::vector<std::string_view>& pods) {
    if (pods.empty()) return;
    line += what;
    for (std::string_view pod : pods) {
      line += ' ';
      line += pod;
    }
  };
  append_pods("; evicted", attempt.evicted);
  append_pods("; moved", attempt.moved);
  append_pods("; restored", attempt.restored);
  return line;
}

std::string TimingMode(const DecideOptions& options) {
  return options.server.empty() ? "in-process" : absl::StrCat("server ", options.server);
}

}  // namespace arbiter::cli
