// The `arbiter` command line as a library: main() forwards to RunCli, tests call it directly.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace arbiter::cli {

// Runs `arbiter ARGS...` (ARGS without the program name). Results go to `out`, errors, usage
// mistakes and --timing to `err`. Returns the exit status: 0 success, 2 invalid input, 1 other.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace arbiter::cli
