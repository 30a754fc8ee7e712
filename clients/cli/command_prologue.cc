#include "clients/cli/command_prologue.h"

#include "edge/rpc/grpc_status.h"

namespace arbiter::cli {

ParsedCommand ParseCommand(const Args& args, rpc::CommandLine& flags, const bool& help,
                           std::string_view usage_intro, std::ostream& out) {
  ParsedCommand parsed;
  parsed.status = flags.Parse(args, &parsed.positional);
  if (parsed.status.ok() && help) {
    out << usage_intro << flags.Usage();
    parsed.help_printed = true;
  }
  return parsed;
}

int FailWithUsage(const absl::Status& status, std::string_view usage_intro,
                  const rpc::CommandLine& flags, std::ostream& err) {
  err << rpc::FormatStatus(status) << "\n" << usage_intro << flags.Usage();
  return ExitCode(status);
}

}  // namespace arbiter::cli
