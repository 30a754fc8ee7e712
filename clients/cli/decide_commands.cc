// `arbiter fairshare` and `arbiter schedule`: read a request, answer it in-process (the core) or
// through a server (--server), and print the answer as a table or as proto3 JSON.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arbiter/v1/arbiter.pb.h"
#include "clients/cli/command_prologue.h"
#include "clients/cli/commands.h"
#include "clients/cli/decision_call.h"
#include "clients/cli/phase_timer.h"
#include "clients/cli/response_tables.h"
#include "edge/rpc/command_line.h"
#include "edge/wire.h"
#include "google/protobuf/arena.h"

namespace arbiter::cli {
namespace {

// What differs between the two commands.
struct FairShareCommand {
  using Request = v1::FairShareRequest;
  static constexpr const char* kName = "fairshare";

  static std::string Table(const Request& request, const v1::FairShareResponse& response) {
    return RenderFairShares(request.snapshot(), request.policy(), response);
  }
};

struct ScheduleCommand {
  using Request = v1::ScheduleRequest;
  static constexpr const char* kName = "schedule";

  static std::string Table(const Request& request, const v1::ScheduleResponse& response) {
    return RenderSchedule(request.snapshot(), request.policy(), response);
  }
};

// The usage of `command`, up to its flags' lines.
std::string UsageIntro(const char* command) {
  return absl::StrCat("usage: arbiter ", command, " REQUEST [flags]\n\n",
                      "REQUEST is a file holding an arbiter.v1 request as proto3 JSON, or binary\n"
                      "protobuf when its name ends in .pb; - reads JSON from standard input.\n\n"
                      "flags:\n");
}

template <typename Command>
int RunDecide(const Args& args, std::ostream& out, std::ostream& err) {
  DecideOptions options;
  bool help = false;
  rpc::CommandLine flags;
  DeclareDecideFlags(&flags, &options, &help);
  options.trace_to = &err;

  const std::string usage = UsageIntro(Command::kName);
  ParsedCommand command = ParseCommand(args, flags, help, usage, out);
  if (command.help_printed) return 0;
  absl::Status& parsed = command.status;
  const std::vector<std::string>& positional = command.positional;
  if (parsed.ok() && positional.size() != 1) {
    parsed = absl::InvalidArgumentError(
        positional.empty() ? "missing REQUEST file"
                           : absl::StrCat("expected one REQUEST file, got ", positional.size()));
  }
  if (parsed.ok()) parsed = CheckDecideOptions(options);
  if (!parsed.ok()) return FailWithUsage(parsed, usage, flags, err);

  PhaseTimer timer;
  // Large snapshots parse about twice as fast on an arena, which also frees them in one go.
  google::protobuf::Arena arena;
  typename Command::Request& request =
      *google::protobuf::Arena::CreateMessage<typename Command::Request>(&arena);
  if (absl::Status read = edge::ReadMessageFile(positional.front(), &request); !read.ok()) {
    return Fail(read, err);
  }
  timer.Mark("parse");

  auto response = Answer(request, options, &timer);
  if (!response.ok()) {
    if (options.timing) err << timer.Render(TimingMode(options));
    return Fail(response.status(), err);
  }

  std::string text;
  if (options.format == "json") {
    absl::StatusOr<std::string> json = edge::ToJson(*response, edge::JsonStyle::kPretty);
    if (!json.ok()) return Fail(json.status(), err);
    text = *std::move(json);
    if (text.empty() || text.back() != '\n') text.push_back('\n');
  } else {
    text = Command::Table(request, *response);
  }
  timer.Mark("serialise");
  out << text;
  out.flush();
  if (options.timing) err << timer.Render(TimingMode(options));
  return 0;
}

}  // namespace

std::string DecideFlagsUsage() {
  DecideOptions options;
  bool help = false;
  rpc::CommandLine flags;
  DeclareDecideFlags(&flags, &options, &help);
  return flags.Usage();
}

int RunFairShare(const Args& args, std::ostream& out, std::ostream& err) {
  return RunDecide<FairShareCommand>(args, out, err);
}

int RunSchedule(const Args& args, std::ostream& out, std::ostream& err) {
  return RunDecide<ScheduleCommand>(args, out, err);
}

}  // namespace arbiter::cli
