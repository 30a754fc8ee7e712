#include "server/call_log.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "edge/rpc/grpc_status.h"

namespace arbiter::server {
namespace {

bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (const char c : value) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte <= ' ' || byte >= 0x7f || c == '"' || c == '=' || c == '\\') return true;
  }
  return false;
}

void AppendValue(std::string* line, std::string_view value) {
  if (!NeedsQuotes(value)) {
    line->append(value.data(), value.size());
    return;
  }
  line->push_back('"');
  for (const char c : value) {
    switch (c) {
      case '"':
        line->append("\\\"");
        break;
      case '\\':
        line->append("\\\\");
        break;
      case '\n':
        line->append("\\n");
        break;
      case '\r':
        line->append("\\r");
        break;
      case '\t':
        line->append("\\t");
        break;
      default:
        line->push_back(c);
    }
  }
  line->push_back('"');
}

void AppendField(std::string* line, std::string_view key, std::string_view value) {
  line->push_back(' ');
  line->append(key.data(), key.size());
  line->push_back('=');
  AppendValue(line, value);
}

std::string Milliseconds(double seconds) { return absl::StrFormat("%.3f", seconds * 1e3); }

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name) {
  for (const LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (name == LogLevelName(level)) return level;
  }
  return absl::InvalidArgumentError(absl::StrCat("log level \"",
                                                 absl::string_view(name.data(), name.size()),
                                                 "\" is not debug, info, warn or error"));
}

std::string FormatLogLine(absl::Time time, LogLevel level, std::string_view message,
                          const LogFields& fields) {
  std::string line =
      absl::StrCat("ts=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone()));
  AppendField(&line, "level", LogLevelName(level));
  AppendField(&line, "msg", message);
  for (const auto& [key, value] : fields) AppendField(&line, key, value);
  return line;
}

LogLevel CallLogLevel(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return LogLevel::kInfo;
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kDataLoss:
      return LogLevel::kError;
    default:
      return LogLevel::kWarn;
  }
}

LogFields CallLogFields(const CallRecord& call, bool with_phases) {
  LogFields fields = {
      {"method", std::string(call.method)},
      {"request_id", call.request_id},
      {"code", rpc::StatusCodeName(call.status.code())},
      {"duration_ms", Milliseconds(call.seconds)},
      {"request_bytes", absl::StrCat(call.request_bytes)},
      {"response_bytes", absl::StrCat(call.response_bytes)},
  };
  if (call.parsed) {
    fields.emplace_back("nodes", absl::StrCat(call.size.nodes));
    fields.emplace_back("pods", absl::StrCat(call.size.pods));
    fields.emplace_back("queues", absl::StrCat(call.size.queues));
    fields.emplace_back("pod_groups", absl::StrCat(call.size.pod_groups));
    fields.emplace_back("decoded_bytes", absl::StrCat(call.decoded_bytes));
  }
  if (call.status.ok()) {
    fields.emplace_back("bindings", absl::StrCat(call.decisions.bindings));
    fields.emplace_back("evictions", absl::StrCat(call.decisions.evictions));
    fields.emplace_back("pending", absl::StrCat(call.decisions.pending));
    fields.emplace_back("admissions", absl::StrCat(call.decisions.admissions));
  } else {
    fields.emplace_back("error", rpc::CappedMessage(std::string_view(
                                     call.status.message().data(), call.status.message().size())));
  }
  if (with_phases) {
    std::string phases;
    for (const auto& [phase, seconds] : call.phase_seconds) {
      absl::StrAppend(&phases, phases.empty() ? "" : ",", phase, ":", Milliseconds(seconds));
    }
    fields.emplace_back("phases_ms", phases);
    if (!call.phase_counters.empty()) {
      std::string search;
      for (const auto& [phase, counters] : call.phase_counters) {
        absl::StrAppend(&search, search.empty() ? "" : ";", phase, ":", counters);
      }
      fields.emplace_back("search", search);
    }
  }
  return fields;
}

Logger::Logger(LogLevel level) : level_(level) {}

Logger::Logger(LogLevel level, Sink sink) : level_(level), sink_(std::move(sink)) {}

void Logger::Log(LogLevel level, std::string_view message, const LogFields& fields) {
  if (!Enabled(level)) return;
  std::string line = FormatLogLine(absl::Now(), level, message, fields);
  absl::MutexLock lock(&mutex_);
  if (sink_) {
    sink_(line);
    return;
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void Logger::LogCall(const CallRecord& call) {
  const LogLevel level = CallLogLevel(call.status.code());
  if (!Enabled(level)) return;
  Log(level, "call", CallLogFields(call, Enabled(LogLevel::kDebug)));
}

}  // namespace arbiter::server
