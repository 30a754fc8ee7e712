// The subcommands of the `arbiter` CLI. Each takes its arguments after the subcommand name,
// writes its result to `out` and its errors (and --timing) to `err`, and returns the exit code:
// 0 success, 2 invalid input (INVALID_ARGUMENT: a bad request, bad JSON, a bad flag), 1 anything
// else. Failures are printed as "CODE_NAME: message", whether the call ran in-process or not.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace arbiter::cli {

using Args = std::vector<std::string>;

// `arbiter fairshare REQUEST [--format table|json] [--server HOST:PORT] [--timing] [TLS flags]`
int RunFairShare(const Args& args, std::ostream& out, std::ostream& err);

// `arbiter schedule REQUEST [--format table|json] [--server HOST:PORT] [--timing] [TLS flags]`
int RunSchedule(const Args& args, std::ostream& out, std::ostream& err);

// `arbiter what-if SNAPSHOT --add GROUP [--format table|json] [--server HOST:PORT] [TLS flags]`
int RunWhatIf(const Args& args, std::ostream& out, std::ostream& err);

// `arbiter simulate CONFIG [--out DIR] [--format csv|json|kai-csv] [--plot] [--server HOST:PORT]`
int RunSimulate(const Args& args, std::ostream& out, std::ostream& err);
std::string SimulateFlagsUsage();

// `arbiter generate [--size S|M|L|XL] [--nodes N] ... [--out FILE]`
int RunGenerate(const Args& args, std::ostream& out, std::ostream& err);

// The flag lines of `fairshare` and `schedule` (the same flags), and of `generate`.
std::string DecideFlagsUsage();
std::string GenerateFlagsUsage();

// The exit code for a command that ended with `status`.
int ExitCode(const absl::Status& status);

// Prints `status` on `err` as "CODE_NAME: message" and returns its exit code.
int Fail(const absl::Status& status, std::ostream& err);

}  // namespace arbiter::cli
