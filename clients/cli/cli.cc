#include "clients/cli/cli.h"

#include "clients/cli/commands.h"
#include "server/grpc_status.h"

namespace arbiter::cli {
namespace {

constexpr char kUsage[] =
    "usage: arbiter COMMAND [ARGS]\n"
    "\n"
    "Fair shares and scheduling decisions for a cluster snapshot, computed in-process or by\n"
    "arbiter-server (--server HOST:PORT).\n"
    "\n"
    "commands:\n"
    "  fairshare REQUEST   fair share of every queue (KAI or Kueue)\n"
    "  schedule REQUEST    one scheduling cycle: bindings, evictions, admissions, pending reasons\n"
    "  generate            write a synthetic ScheduleRequest\n"
    "  help [COMMAND]      this text, or a command's flags\n"
    "\n"
    "Exit status: 0 success, 2 invalid input (INVALID_ARGUMENT), 1 any other failure; failures\n"
    "are printed on stderr as \"CODE: message\".\n";

}  // namespace

int ExitCode(const absl::Status& status) {
  if (status.ok()) return 0;
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int Fail(const absl::Status& status, std::ostream& err) {
  err << server::FormatStatus(status) << "\n";
  return ExitCode(status);
}

int RunCli(const Args& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << kUsage;
    return 2;
  }
  const std::string& command = args.front();
  const Args rest(args.begin() + 1, args.end());
  if (command == "fairshare") return RunFairShare(rest, out, err);
  if (command == "schedule") return RunSchedule(rest, out, err);
  if (command == "generate") return RunGenerate(rest, out, err);
  if (command == "help" || command == "--help" || command == "-h") {
    if (rest.empty()) {
      out << kUsage;
      return 0;
    }
    return RunCli({rest.front(), "--help"}, out, err);
  }
  return Fail(absl::InvalidArgumentError("unknown command \"" + command +
                                         "\"; run `arbiter help`"),
              err);
}

}  // namespace arbiter::cli
