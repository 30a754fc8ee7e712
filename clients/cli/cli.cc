#include "clients/cli/cli.h"

#include "absl/strings/str_cat.h"
#include "clients/cli/commands.h"
#include "edge/rpc/grpc_status.h"

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
    "  what-if SNAPSHOT --add GROUP\n"
    "                      what one cycle would decide for GROUP if it were submitted now\n"
    "  generate            write a synthetic ScheduleRequest\n"
    "  simulate CONFIG     fairness over time: a cluster and its job streams, step by step\n"
    "  help [COMMAND]      this text, or one command's help\n"
    "\n"
    "REQUEST is a file holding an arbiter.v1 request as proto3 JSON, or binary protobuf when its\n"
    "name ends in .pb; - reads JSON from standard input. With --server the request goes to an\n"
    "arbiter-server, over TLS when --tls-ca, --tls-cert or --tls-key is given.\n"
    "\n"
    "Exit status: 0 success, 2 invalid input (INVALID_ARGUMENT), 1 any other failure; failures\n"
    "are printed on stderr as \"CODE: message\".\n";

// The overview and every command's flags.
std::string FullUsage() {
  return absl::StrCat(kUsage, "\nflags of fairshare and schedule:\n", DecideFlagsUsage(),
                      "\nflags of what-if: --add GROUP (required) and those of schedule\n",
                      "\nflags of generate:\n", GenerateFlagsUsage(), "\nflags of simulate:\n",
                      SimulateFlagsUsage());
}

}  // namespace

int ExitCode(const absl::Status& status) {
  if (status.ok()) return 0;
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

int Fail(const absl::Status& status, std::ostream& err) {
  err << rpc::FormatStatus(status) << "\n";
  return ExitCode(status);
}

int RunCli(const Args& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << FullUsage();
    return 2;
  }
  const std::string& command = args.front();
  const Args rest(args.begin() + 1, args.end());
  if (command == "fairshare") return RunFairShare(rest, out, err);
  if (command == "schedule") return RunSchedule(rest, out, err);
  if (command == "generate") return RunGenerate(rest, out, err);
  if (command == "what-if") return RunWhatIf(rest, out, err);
  if (command == "simulate") return RunSimulate(rest, out, err);
  if (command == "help" || command == "--help" || command == "-h") {
    if (rest.empty()) {
      out << FullUsage();
      return 0;
    }
    return RunCli({rest.front(), "--help"}, out, err);
  }
  return Fail(absl::InvalidArgumentError("unknown command \"" + command + "\"; run `arbiter help`"),
              err);
}

}  // namespace arbiter::cli
