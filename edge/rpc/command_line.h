// A small command-line flag parser for arbiter-server and the arbiter CLI.
//
// Flags are spelt with dashes (`--metrics-port 9464` or `--metrics-port=9464`), as the commands
// document them; every other argument is positional. `--` ends the flags. A boolean flag takes no
// value (`--timing`) or an explicit one (`--timing=false`).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace arbiter::rpc {

class CommandLine {
 public:
  // Each Add* declares `--name`; `value` keeps its current content as the default and must
  // outlive Parse. `placeholder` names the value in the usage text (e.g. "PORT").
  void AddString(const std::string& name, const std::string& placeholder, std::string* value,
                 const std::string& help);
  void AddInt(const std::string& name, const std::string& placeholder, int64_t* value,
              const std::string& help);
  void AddDouble(const std::string& name, const std::string& placeholder, double* value,
                 const std::string& help);
  void AddBool(const std::string& name, bool* value, const std::string& help);

  // Parses `args` (without the program name), storing flag values and appending the other
  // arguments to `positional`. InvalidArgument naming the flag for an unknown flag, a missing
  // value, or a value that does not parse.
  absl::Status Parse(absl::Span<const std::string> args, std::vector<std::string>* positional);

  // Whether the last Parse set `--name` explicitly (to let explicit flags override presets).
  bool IsSet(const std::string& name) const;

  // One line per flag, in declaration order: "  --port PORT    help (default: 50051)".
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    std::string placeholder;  // empty for booleans
    std::string help;
    std::string default_value;
    std::function<absl::Status(const std::string& text)> set;
  };

  const Flag* Find(const std::string& name) const;

  std::vector<Flag> flags_;
  std::vector<std::string> set_;  // names given on the command line
};

}  // namespace arbiter::rpc
