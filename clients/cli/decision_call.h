// How the CLI answers a request: in-process through the core, or through an arbiter-server
// (--server, over TLS with the TLS flags), and the flags that choose. Shared by the commands that
// decide: fairshare, schedule and what-if.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arbiter/v1/arbiter.grpc.pb.h"
#include "arbiter/v1/arbiter.pb.h"
#include "clients/cli/phase_timer.h"
#include "core/cycle_hooks.h"
#include "edge/rpc/command_line.h"
#include "edge/rpc/tls.h"

namespace arbiter::cli {

// The flags of a deciding command, as DeclareDecideFlags binds them.
struct DecideOptions {
  std::string format = "table";
  std::string server;  // empty = in-process
  bool timing = false;
  bool trace = false;  // --trace: every attempt of the KAI actions, in order (in-process only)
  std::ostream* trace_to = nullptr;  // where --trace writes; the command sets it (stderr)
  double deadline_seconds = 0;
  rpc::ClientTlsFiles tls;
  std::string tls_server_name;
  std::string request_id;
};

// Declares --format, --server, --timing, --trace, --deadline-seconds, --tls-ca, --tls-cert,
// --tls-key, --tls-server-name, --request-id and --help, bound to `options` and `help`.
void DeclareDecideFlags(rpc::CommandLine* flags, DecideOptions* options, bool* help);

// The checks that span flags, after parsing: the TLS flags and --request-id need --server,
// --trace does without it, and --format is table or json. InvalidArgument naming the flags.
absl::Status CheckDecideOptions(const DecideOptions& options);

// The answer to `request`, computed in-process when options.server is empty and by that server
// otherwise; each phase is marked on `timer`. Errors are the core's or the server's own status
// (InvalidArgument with a field path for a bad request), DeadlineExceeded when
// --deadline-seconds passed, or the channel's status (e.g. Unavailable) for a remote call.
absl::StatusOr<v1::FairShareResponse> Answer(const v1::FairShareRequest& request,
                                             const DecideOptions& options, PhaseTimer* timer);
absl::StatusOr<v1::ScheduleResponse> Answer(const v1::ScheduleRequest& request,
                                            const DecideOptions& options, PhaseTimer* timer);

// A stub for options.server over one channel, with TLS when the TLS flags say so and no message
// size limit. Used per call by Answer, and once for a whole run by `simulate --server`.
absl::StatusOr<std::unique_ptr<v1::Arbiter::Stub>> ConnectStub(const DecideOptions& options);

// One line of --trace: "reclaim j15 (1 pod): placed; evicted j04-1 j04-2; moved j14-0".
std::string FormatAttempt(const AttemptTrace& attempt);

// Where the answer came from, for PhaseTimer::Render: "in-process" or "server HOST:PORT".
std::string TimingMode(const DecideOptions& options);

}  // namespace arbiter::cli
