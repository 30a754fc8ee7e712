// The server's structured log: one logfmt line per event on standard error.
//
// Every line is `ts=<RFC 3339 UTC> level=<level> msg=<message>` followed by the event's own
// `key=value` fields. A value is written bare when it holds only printable characters other than
// space, `"`, `=` and `\`; otherwise it is double-quoted with `\"`, `\\`, `\n`, `\r` and `\t`
// escaped. Every arbiter.v1 call gives exactly one line (msg=call) at info level when it
// succeeds, at warn when the caller's request was refused, at error for the server's own
// failures (FormatCallLine says which fields).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/call_record.h"

namespace arbiter::server {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// "debug", "info", "warn" or "error" (as --log-level takes them).
std::string_view LogLevelName(LogLevel level);
// The inverse of LogLevelName; InvalidArgument naming the accepted values otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name);

using LogFields = std::vector<std::pair<std::string, std::string>>;

// One logfmt line without the trailing newline (see the file comment).
std::string FormatLogLine(absl::Time time, LogLevel level, std::string_view message,
                          const LogFields& fields);

// The level of a call's line: info for OK; error for UNKNOWN, INTERNAL, UNIMPLEMENTED and
// DATA_LOSS (the server's own failures); warn for every other code (the caller's request was
// refused, or its deadline passed).
LogLevel CallLogLevel(absl::StatusCode code);

// The fields of a call's line, in this order: method, request_id, code, duration_ms,
// request_bytes, response_bytes, then (once the request parsed) nodes, pods, queues, pod_groups,
// then (on success) bindings, evictions, pending, admissions; on failure `error` with the status
// message. With `with_phases`, `phases_ms` lists each phase as "name:milliseconds", comma
// separated.
LogFields CallLogFields(const CallRecord& call, bool with_phases);

class Logger {
 public:
  using Sink = std::function<void(std::string_view line)>;

  // Lines at `level` or above go to standard error.
  explicit Logger(LogLevel level);
  // Lines at `level` or above go to `sink` (one call per line, without the newline); for tests.
  Logger(LogLevel level, Sink sink);

  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  bool Enabled(LogLevel level) const { return level >= level_; }
  LogLevel level() const { return level_; }

  // Writes one line if `level` is enabled. Thread-safe: lines never interleave.
  void Log(LogLevel level, std::string_view message, const LogFields& fields = {});

  // The one line for a finished call (msg=call), at CallLogLevel(call.status.code()); with the
  // phase breakdown when debug is enabled. Thread-safe.
  void LogCall(const CallRecord& call);

 private:
  const LogLevel level_;
  absl::Mutex mutex_;
  Sink sink_ ABSL_GUARDED_BY(mutex_);  // empty: standard error
};

}  // namespace arbiter::server
