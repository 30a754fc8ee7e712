#include "edge/rpc/command_line.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace arbiter::rpc {
namespace {

absl::Status BadValue(const std::string& name, const std::string& text, const char* expected) {
  return absl::InvalidArgumentError(absl::StrCat("--", name, ": \"", text, "\" is not ", expected));
}

}  // namespace

void CommandLine::AddString(const std::string& name, const std::string& placeholder,
                            std::string* value, const std::string& help) {
  flags_.push_back({name, placeholder, help, *value, [value](const std::string& text) {
                      *value = text;
                      return absl::OkStatus();
                    }});
}

void CommandLine::AddInt(const std::string& name, const std::string& placeholder, int64_t* value,
                         const std::string& help) {
  flags_.push_back(
      {name, placeholder, help, absl::StrCat(*value), [name, value](const std::string& text) {
         if (!absl::SimpleAtoi(text, value)) return BadValue(name, text, "an integer");
         return absl::OkStatus();
       }});
}

void CommandLine::AddDouble(const std::string& name, const std::string& placeholder, double* value,
                            const std::string& help) {
  flags_.push_back(
      {name, placeholder, help, absl::StrCat(*value), [name, value](const std::string& text) {
         if (!absl::SimpleAtod(text, value)) return BadValue(name, text, "a number");
         return absl::OkStatus();
       }});
}

void CommandLine::AddBool(const std::string& name, bool* value, const std::string& help) {
  flags_.push_back(
      {name, "", help, *value ? "true" : "false", [name, value](const std::string& text) {
         if (!absl::SimpleAtob(text, value)) return BadValue(name, text, "a boolean");
         return absl::OkStatus();
       }});
}

const CommandLine::Flag* CommandLine::Find(const std::string& name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

bool CommandLine::IsSet(const std::string& name) const {
  return std::find(set_.begin(), set_.end(), name) != set_.end();
}

absl::Status CommandLine::Parse(absl::Span<const std::string> args,
                                std::vector<std::string>* positional) {
  set_.clear();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional->insert(positional->end(), args.begin() + i + 1, args.end());
      return absl::OkStatus();
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      positional->push_back(arg);  // includes "-" (standard input)
      continue;
    }
    const size_t equals = arg.find('=');
    const std::string name =
        arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    const Flag* flag = Find(name);
    if (flag == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    std::string text;
    if (equals != std::string::npos) {
      text = arg.substr(equals + 1);
    } else if (flag->placeholder.empty()) {
      text = "true";  // a bare boolean flag
    } else if (i + 1 < args.size()) {
      text = args[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": missing value ", flag->placeholder));
    }
    if (absl::Status status = flag->set(text); !status.ok()) return status;
    set_.push_back(name);
  }
  return absl::OkStatus();
}

std::string CommandLine::Usage() const {
  std::vector<std::string> heads;
  size_t width = 0;
  for (const Flag& flag : flags_) {
    heads.push_back(
        absl::StrCat("--", flag.name, flag.placeholder.empty() ? "" : " ", flag.placeholder));
    width = std::max(width, heads.back().size());
  }
  std::string usage;
  for (size_t i = 0; i < flags_.size(); ++i) {
    const Flag& flag = flags_[i];
    absl::StrAppendFormat(&usage, "  %-*s  %s", static_cast<int>(width), heads[i], flag.help);
    if (!flag.default_value.empty() && flag.default_value != "false") {
      absl::StrAppend(&usage, " (default: ", flag.default_value, ")");
    }
    usage.push_back('\n');
  }
  return usage;
}

}  // namespace arbiter::rpc
