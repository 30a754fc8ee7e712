// The start every `arbiter` subcommand shares: its arguments parsed against the flags it
// declared, --help answered, and a bad flag or argument reported with the command's usage.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "clients/cli/commands.h"
#include "edge/rpc/command_line.h"

namespace arbiter::cli {

// What ParseCommand found in a command's arguments.
struct ParsedCommand {
  // The first problem with the flags (OK if none). The command adds its own checks of the
  // arguments while it is OK, then reports it with FailWithUsage (or Fail).
  absl::Status status;
  std::vector<std::string> positional;  // the arguments that are not flags, in order
  bool help_printed = false;            // --help was answered: the command returns 0
};

// Parses `args` with `flags`, whose --help flag writes `help`. When the flags parse and --help is
// set, prints `usage_intro` and the flags' usage on `out` and sets `help_printed`.
ParsedCommand ParseCommand(const Args& args, rpc::CommandLine& flags, const bool& help,
                           std::string_view usage_intro, std::ostream& out);

// Prints `status` as "CODE_NAME: message", then `usage_intro` and the flags' usage, on `err`, and
// returns the exit code of `status` (commands.h).
int FailWithUsage(const absl::Status& status, std::string_view usage_intro,
                  const rpc::CommandLine& flags, std::ostream& err);

}  // namespace arbiter::cli
