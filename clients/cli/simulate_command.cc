// `arbiter simulate CONFIG`: fairness over time (clients/simulator/simulation.h,
// docs/simulate.md). Runs the decision core in-process, or an arbiter-server with --server, writes
// CSV or JSON (and KAI's CSV), charts with --plot, and closes with a summary per queue.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arbiter/v1/arbiter.grpc.pb.h"
#include "clients/cli/command_prologue.h"
#include "clients/cli/commands.h"
#include "clients/cli/decision_call.h"
#include "clients/simulator/sim_config.h"
#include "clients/simulator/sim_output.h"
#include "clients/simulator/simulation.h"
#include "edge/proto_convert.h"
#include "edge/rpc/command_line.h"
#include "edge/rpc/grpc_status.h"
#include "edge/rpc/tls.h"
#include "grpcpp/grpcpp.h"

namespace arbiter::cli {
namespace {

constexpr char kUsage[] =
    "usage: arbiter simulate CONFIG [flags]\n\n"
    "Simulates a cluster over time: at every step the jobs that arrive are submitted, the\n"
    "decision core (in-process, or --server) answers one Schedule, the answer is applied, usage\n"
    "is accounted, and jobs that ran their duration finish. CONFIG is arbiter's simulation YAML\n"
    "or a KAI time-aware fairness simulator config, unchanged (docs/simulate.md).\n\n"
    "Writes to --out: queues.csv (one row per queue and step) and jobs.csv, or simulation.json\n"
    "(--format json), or KAI's Time,QueueID,Allocation,FairShare (--format kai-csv, as\n"
    "kai.csv); with --plot also allocation, resource_hours and jobs charts as PNG and SVG\n"
    "(gnuplot), a flavors chart for Kueue with resource flavors, and a gpu_sharing chart when\n"
    "jobs share GPUs (gpu_fraction, gpu_memory). Prints a summary per queue at the end.\n\n"
    "flags:\n";

struct SimulateFlags {
  std::string out_dir = "simulation";
  std::string format = "csv";
  std::string server;
  bool plot = false;
  bool quiet = false;
  double k_value = std::numeric_limits<double>::quiet_NaN();
  rpc::ClientTlsFiles tls;
  bool help = false;
};

void DeclareFlags(rpc::CommandLine* flags, SimulateFlags* values) {
  flags->AddString("out", "DIR", &values->out_dir, "where the results go (created if missing)");
  flags->AddString("format", "csv|json|kai-csv", &values->format, "what to write");
  flags->AddBool("plot", &values->plot, "also draw the charts (needs gnuplot)");
  flags->AddString("server", "HOST:PORT", &values->server,
                   "ask this arbiter-server at every step instead of the core in-process");
  flags->AddDouble("k-value", "K", &values->k_value,
                   "override the policy's k (time-aware fairness; 0 = off)");
  flags->AddBool("quiet", &values->quiet, "no progress lines on stderr");
  flags->AddString("tls-ca", "FILE", &values->tls.ca, "CA bundle: call --server over TLS");
  flags->AddString("tls-cert", "FILE", &values->tls.cert, "client certificate (mutual TLS)");
  flags->AddString("tls-key", "FILE", &values->tls.key, "client key (mutual TLS)");
  flags->AddBool("help", &values->help, "print this help");
}

// One Schedule per step through a server, over one channel (the CLI's shared ConnectStub).
absl::StatusOr<simulator::Decide> ThroughServer(const SimulateFlags& values) {
  DecideOptions options;
  options.server = values.server;
  options.tls = values.tls;
  absl::StatusOr<std::unique_ptr<v1::Arbiter::Stub>> connected = ConnectStub(options);
  if (!connected.ok()) return connected.status();
  std::shared_ptr<v1::Arbiter::Stub> stub = *std::move(connected);
  return simulator::Decide(
      [stub](const Snapshot& snapshot, const Policy& policy) -> absl::StatusOr<ScheduleResult> {
        v1::ScheduleRequest request;
        *request.mutable_snapshot() = edge::ToProto(snapshot);
        *request.mutable_policy() = edge::ToProto(policy);
        v1::ScheduleResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        context.set_wait_for_ready(true);
        grpc::Status status = stub->Schedule(&context, request, &response);
        if (!status.ok()) return rpc::FromGrpcStatus(status);
        return edge::FromProto(response);
      });
}

absl::Status MakeDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat("cannot create --out ", dir));
  }
  return absl::OkStatus();
}

template <typename Write>
absl::Status WriteTo(const std::string& path, Write write) {
  std::ofstream out(path);
  write(out);
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// Per leaf: resource-hours and their share, jobs started and finished, evictions.
std::string Summary(const simulator::SimResult& result, const std::string& name) {
  const std::string resource = simulator::MainResource(result);
  const std::vector<double> seconds = simulator::ResourceSeconds(result, resource);
  double total = 0;
  std::vector<size_t> leaves;
  for (size_t q = 0; q < result.queues.size(); ++q) {
    for (const std::string& leaf : result.leaves) {
      if (leaf == result.queues[q]) leaves.push_back(q);
    }
  }
  for (size_t q : leaves) total += seconds[q];
  std::string out = absl::StrFormat("%s: %d steps of %gs (%.1f h)\n", name, result.cycles,
                                    result.step, result.cycles * result.step / 3600);
  absl::StrAppendFormat(&out, "%-16s %14s %7s %8s %9s %10s\n", "QUEUE",
                        absl::StrCat(resource, "-h"), "SHARE", "STARTED", "FINISHED", "EVICTIONS");
  for (size_t q : leaves) {
    int started = 0;
    int finished = 0;
    int evictions = 0;
    for (const simulator::JobRecord& job : result.jobs) {
      if (job.queue != result.queues[q]) continue;
      started += job.start >= 0;
      finished += job.end >= 0;
      evictions += job.evictions;
    }
    absl::StrAppendFormat(&out, "%-16s %14.1f %6.1f%% %8d %9d %10d\n", result.queues[q],
                          seconds[q] / 3600, total > 0 ? 100 * seconds[q] / total : 0.0, started,
                          finished, evictions);
  }
  absl::StrAppendFormat(&out, "switches of the queue holding most %s: %d\n", resource,
                        simulator::Switches(result, resource));
  absl::StrAppendFormat(&out, "time: %.2fs in all, %.2fs deciding (%.3f ms per step)\n",
                        result.total_seconds, result.decide_seconds,
                        result.cycles > 0 ? 1e3 * result.decide_seconds / result.cycles : 0.0);
  return out;
}

}  // namespace

std::string SimulateFlagsUsage() {
  SimulateFlags values;
  rpc::CommandLine flags;
  DeclareFlags(&flags, &values);
  return flags.Usage();
}

int RunSimulate(const Args& args, std::ostream& out, std::ostream& err) {
  SimulateFlags values;
  rpc::CommandLine flags;
  DeclareFlags(&flags, &values);
  ParsedCommand command = ParseCommand(args, flags, values.help, kUsage, out);
  if (command.help_printed) return 0;
  absl::Status& parsed = command.status;
  const std::vector<std::string>& positional = command.positional;
  if (parsed.ok() && positional.size() != 1) {
    parsed =
        absl::InvalidArgumentError("simulate takes one CONFIG file; run `arbiter simulate --help`");
  }
  if (parsed.ok() && values.format != "csv" && values.format != "json" &&
      values.format != "kai-csv") {
    parsed = absl::InvalidArgumentError("--format: must be csv, json or kai-csv");
  }
  if (!parsed.ok()) return Fail(parsed, err);

  absl::StatusOr<simulator::SimConfig> config = simulator::LoadSimConfig(positional.front());
  if (!config.ok()) return Fail(config.status(), err);
  if (!std::isnan(values.k_value)) config->policy.k_value = values.k_value;

  simulator::Decide decide = simulator::InProcess();
  if (!values.server.empty()) {
    absl::StatusOr<simulator::Decide> remote = ThroughServer(values);
    if (!remote.ok()) return Fail(remote.status(), err);
    decide = *std::move(remote);
  }
  if (absl::Status s = MakeDir(values.out_dir); !s.ok()) return Fail(s, err);

  const auto started = std::chrono::steady_clock::now();
  int64_t reported = 0;
  simulator::Progress progress = [&](int64_t done, int64_t total) {
    const int64_t tenth = done * 10 / total;
    if (!values.quiet && tenth > reported) {
      reported = tenth;
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      err << absl::StrFormat("simulate: %3d%%  step %d of %d  %.1fs\n", tenth * 10, done, total,
                             seconds);
    }
    return true;
  };
  absl::StatusOr<simulator::SimResult> result = simulator::Simulate(*config, decide, progress);
  if (!result.ok()) return Fail(result.status(), err);

  const bool kueue = config->policy.fairness_model == FairnessModel::kKueue;
  absl::Status written;
  if (values.format == "csv") {
    written = WriteTo(values.out_dir + "/queues.csv",
                      [&](std::ostream& o) { simulator::WriteQueuesCsv(*result, kueue, o); });
    if (written.ok()) {
      written = WriteTo(values.out_dir + "/jobs.csv",
                        [&](std::ostream& o) { simulator::WriteJobsCsv(*result, o); });
    }
  } else if (values.format == "json") {
    written = WriteTo(values.out_dir + "/simulation.json",
                      [&](std::ostream& o) { simulator::WriteJson(*result, o); });
  } else {
    written = WriteTo(values.out_dir + "/kai.csv",
                      [&](std::ostream& o) { simulator::WriteKaiCsv(*result, o); });
  }
  if (written.ok() && values.plot) {
    written = simulator::WritePlots(*result, config->name, values.out_dir);
  }
  if (!written.ok()) return Fail(written, err);
  out << Summary(*result, config->name) << "results in " << values.out_dir << "/\n";
  return 0;
}

}  // namespace arbiter::cli
