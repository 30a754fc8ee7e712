// `arbiter what-if SNAPSHOT --add GROUP`: a check before submitting. It adds one pod group (or
// Kueue workload) to a ScheduleRequest, runs one Schedule on it, in-process or through a server,
// and reports what the cycle decides for that group alone. Nothing is changed anywhere.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arbiter/v1/arbiter.pb.h"
#include "clients/cli/command_prologue.h"
#include "clients/cli/commands.h"
#include "clients/cli/decision_call.h"
#include "clients/cli/phase_timer.h"
#include "clients/cli/what_if_answer.h"
#include "core/echoed_name.h"
#include "edge/rpc/command_line.h"
#include "edge/wire.h"
#include "google/protobuf/arena.h"

namespace arbiter::cli {
namespace {

constexpr char kDescription[] =
    "Answers \"if this pod group (or Kueue workload) were submitted now, what would happen?\"\n"
    "and changes nothing. SNAPSHOT is a ScheduleRequest, read as `arbiter schedule` reads it:\n"
    "proto3 JSON, or binary protobuf when its name ends in .pb; - reads JSON from standard\n"
    "input. --add names one arbiter.v1.PodGroup, proto3 JSON or .pb likewise. The group is\n"
    "appended to the snapshot's pod groups (a name already there is INVALID_ARGUMENT), one\n"
    "Schedule runs on the result, in-process or with --server, and the answer is what that\n"
    "cycle decides for the group:\n"
    "\n"
    "  placed     KAI: pods of the group are bound (some perhaps after evictions)\n"
    "  admitted   Kueue: quota is reserved for it (perhaps after evictions)\n"
    "  pending    it waits, with the stable reason code and the full message\n"
    "  evicted    its own pods, already running, are evicted\n"
    "  unchanged  no decision names it (its pods already run, or its quota is reserved)\n"
    "\n"
    "with its bindings and every eviction made for it (the other groups it takes from).\n"
    "\n"
    "--format json prints one object whose keys always appear, in this order:\n"
    "\n"
    "  {\n"
    "    \"pod_group\": \"NAME\",\n"
    "    \"outcome\": \"placed\" | \"admitted\" | \"pending\" | \"evicted\" | \"unchanged\",\n"
    "    \"after_evictions\": BOOL,  // placed: some binding waits for evictions;\n"
    "                              // admitted: the admission does\n"
    "    \"bindings\": [{\"pod\": \"NAME\", \"node\": \"NAME\", \"after_evictions\": BOOL}, ...],\n"
    "                  // a pod that shares GPUs also has \"gpu_groups\": [\"KEY\", ...],\n"
    "                  // its devices; \"new-<j>\" is a device the cycle opens\n"
    "    \"evictions\": [{\"pod_group\": \"NAME\", \"pod\": \"NAME\", \"node\": \"NAME\",\n"
    "                   \"reason\": \"FAIR_SHARE_RECLAIM\", \"message\": \"TEXT\"}, ...],\n"
    "    \"pending\": null | {\"reason\": \"CODE\", \"message\": \"TEXT\"}\n"
    "  }\n"
    "\n"
    "(docs/what-if.md). Exit status 0 whatever the outcome, 2 invalid input, 1 other failures.\n";

// The usage, up to the flags' lines.
std::string UsageIntro() {
  return absl::StrCat("usage: arbiter what-if SNAPSHOT --add GROUP [flags]\n\n", kDescription,
                      "\nflags:\n");
}

// The same status with "--add: " before its message.
absl::Status AboutAdd(const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("--add: ", status.message()));
}

// Appends `group` to the request's pod groups; InvalidArgument naming --add when the snapshot
// already holds a group of that name. Every other check is the core's (or the server's).
absl::Status AddGroup(const v1::PodGroup& group, v1::ScheduleRequest* request) {
  const auto& groups = request->snapshot().pod_groups();
  for (int i = 0; i < groups.size(); ++i) {
    if (groups[i].name() == group.name()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--add: pod group ", QuotedName(group.name()),
                       " is already in the snapshot (snapshot.pod_groups[", i, "])"));
    }
  }
  *request->mutable_snapshot()->add_pod_groups() = group;
  return absl::OkStatus();
}

}  // namespace

int RunWhatIf(const Args& args, std::ostream& out, std::ostream& err) {
  DecideOptions options;
  std::string add;
  bool help = false;
  rpc::CommandLine flags;
  flags.AddString("add", "GROUP", &add,
                  "the pod group to try: a PodGroup file, proto3 JSON or .pb (required)");
  DeclareDecideFlags(&flags, &options, &help);
  options.trace_to = &err;

  const std::string usage = UsageIntro();
  ParsedCommand command = ParseCommand(args, flags, help, usage, out);
  if (command.help_printed) return 0;
  absl::Status& parsed = command.status;
  const std::vector<std::string>& positional = command.positional;
  if (parsed.ok() && positional.size() != 1) {
    parsed = absl::InvalidArgumentError(
        positional.empty() ? "missing SNAPSHOT file"
                           : absl::StrCat("expected one SNAPSHOT file, got ", positional.size()));
  }
  if (parsed.ok() && add.empty()) parsed = absl::InvalidArgumentError("--add GROUP is required");
  if (parsed.ok() && add == "-" && positional.front() == "-") {
    parsed = absl::InvalidArgumentError("--add and SNAPSHOT cannot both be standard input");
  }
  if (parsed.ok()) parsed = CheckDecideOptions(options);
  if (!parsed.ok()) return FailWithUsage(parsed, usage, flags, err);

  PhaseTimer timer;
  // As `schedule` reads its request: on an arena, which large snapshots parse faster on.
  google::protobuf::Arena arena;
  v1::ScheduleRequest& request =
      *google::protobuf::Arena::CreateMessage<v1::ScheduleRequest>(&arena);
  if (absl::Status read = edge::ReadMessageFile(positional.front(), &request); !read.ok()) {
    return Fail(read, err);
  }
  v1::PodGroup group;
  if (absl::Status read = edge::ReadMessageFile(add, &group); !read.ok()) {
    return Fail(AboutAdd(read), err);
  }
  if (absl::Status added = AddGroup(group, &request); !added.ok()) return Fail(added, err);
  timer.Mark("parse");

  absl::StatusOr<v1::ScheduleResponse> response = Answer(request, options, &timer);
  if (!response.ok()) {
    if (options.timing) err << timer.Render(TimingMode(options));
    return Fail(response.status(), err);
  }
  const WhatIfAnswer answer = ReadWhatIfAnswer(group, *response);
  const std::string text =
      options.format == "json" ? RenderWhatIfJson(answer) : RenderWhatIfTable(answer);
  timer.Mark("serialise");
  out << text;
  out.flush();
  if (options.timing) err << timer.Render(TimingMode(options));
  return 0;
}

}  // namespace arbiter::cli
