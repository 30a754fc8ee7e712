// Running the built binaries from integration tests: capture exit status, stdout and stderr.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace arbiter::testing {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] is the path of the program) to completion, feeding it `input` on
// standard input, and returns what it wrote.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "");

// A program left running in the background with its standard output readable line by line.
class BackgroundProcess {
 public:
  // Starts `argv`; its stdout is a pipe read by ReadLine; its stderr is inherited, or written to
  // the file `stderr_path` (created or truncated) when that is not empty.
  explicit BackgroundProcess(const std::vector<std::string>& argv,
                             const std::string& stderr_path = "");
  // Kills the process (SIGKILL) if it is still running.
  ~BackgroundProcess();

  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // The next line of its stdout without the newline; false at end of output.
  bool ReadLine(std::string* line);
  // Sends `signal_number` and returns the exit code as ProcessResult does.
  int SignalAndWait(int signal_number);
  // Sends `signal_number` without waiting.
  void Signal(int signal_number);
  // Waits for the process to exit and returns the exit code as ProcessResult does.
  int Wait();
  // Everything left on its stdout (call after it exited).
  std::string ReadRest();

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
};

}  // namespace arbiter::testing
