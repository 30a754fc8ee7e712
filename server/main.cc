// arbiter-server: serves arbiter.v1.Arbiter, gRPC health and reflection, and /metrics.
//
// Prints `listening on HOST:PORT` and `metrics on HOST:PORT` as its first lines on standard
// output so that scripts can find the ports it bound (port 0 picks a free one); its log goes to
// standard error (server/call_log.h). SIGTERM or SIGINT drains it: health turns NOT_SERVING while
// calls are still served for --drain-seconds, then it stops accepting calls, gives the calls in
// flight --shutdown-grace-seconds to finish, and exits 0.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "edge/rpc/command_line.h"
#include "edge/rpc/grpc_status.h"
#include "server/arbiter_server.h"

namespace {

// The write end of a pipe that the stop-signal handler writes to; the waiter thread reads it.
// A pipe is async-signal-safe, unlike any lock or condition variable.
int stop_pipe_write = -1;

void OnStopSignal(int signal_number) {
  const char byte = static_cast<char>(signal_number);
  [[maybe_unused]] const ssize_t written = write(stop_pipe_write, &byte, 1);
}

// Makes SIGTERM and SIGINT readable from the returned descriptor; -1 on failure.
int WatchStopSignals() {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  stop_pipe_write = fds[1];
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  return fds[0];
}

constexpr char kUsage[] =
    "usage: arbiter-server [flags]\n"
    "\n"
    "Serves arbiter.v1.Arbiter (ComputeFairShares, Schedule), grpc.health.v1.Health and server\n"
    "reflection over gRPC, and Prometheus metrics at http://HOST:METRICS_PORT/metrics.\n"
    "Prints \"listening on HOST:PORT\" and \"metrics on HOST:PORT\" on standard output; logs one\n"
    "line per call (logfmt) on standard error. TLS: --tls-cert and --tls-key; mutual TLS: add\n"
    "--tls-client-ca. A request over one of the --max-* limits is refused while it is decoded,\n"
    "before it is paid for, with RESOURCE_EXHAUSTED or INVALID_ARGUMENT naming the flag; a call\n"
    "that finds --max-queued-calls waiting answers UNAVAILABLE.\n"
    "SIGTERM: health turns NOT_SERVING, calls are still served for --drain-seconds, then calls\n"
    "in flight get --shutdown-grace-seconds to finish, and the server exits 0, within\n"
    "drain + grace + 1 s whatever is still running.\n"
    "\n"
    "flags:\n";

// The command line's values: the server's options, and the flags that are not options yet
// (integers narrowed once checked, the log level's name, the stop timings, --help).
struct Settings {
  arbiter::server::ServerOptions options;
  int64_t port = options.port;
  int64_t metrics_port = options.metrics_port;
  int64_t max_message_bytes = options.max_message_bytes;
  int64_t workers = options.workers;
  int64_t small_lane_workers = options.small_lane_workers;
  std::string log_level = "info";
  double drain_seconds = 0;
  double grace_seconds = 5;
  bool help = false;
};

// Declares every flag, each writing into `settings`.
void AddFlags(arbiter::rpc::CommandLine& flags, Settings& settings) {
  arbiter::server::ServerOptions& options = settings.options;
  arbiter::edge::RequestLimits& limits = options.limits;
  flags.AddString("host", "HOST", &options.host, "address to bind both ports on");
  flags.AddInt("port", "PORT", &settings.port, "gRPC port; 0 picks a free port");
  flags.AddInt("metrics-port", "PORT", &settings.metrics_port,
               "Prometheus /metrics port; 0 picks a free port, -1 disables");
  flags.AddInt("max-message-bytes", "BYTES", &settings.max_message_bytes,
               "largest request or response accepted");
  flags.AddInt("max-nodes", "N", &limits.max_nodes,
               "largest snapshot accepted, in nodes (RESOURCE_EXHAUSTED above)");
  flags.AddInt("max-pods", "N", &limits.max_pods,
               "largest snapshot accepted, in pods over all pod groups (RESOURCE_EXHAUSTED above)");
  flags.AddInt(
      "max-queues", "N", &limits.max_queues,
      "most queues (or ClusterQueues and cohorts) in a request (RESOURCE_EXHAUSTED above)");
  flags.AddInt("max-pod-groups", "N", &limits.max_pod_groups,
               "most pod groups in a request (RESOURCE_EXHAUSTED above)");
  flags.AddInt("max-resource-names", "N", &limits.max_resource_names,
               "most distinct resource names in a request (RESOURCE_EXHAUSTED above)");
  flags.AddInt("max-name-bytes", "BYTES", &limits.max_name_bytes,
               "longest name, key or value in a request (INVALID_ARGUMENT above)");
  flags.AddInt("max-queue-depth", "N", &limits.max_queue_depth,
               "deepest queue or cohort tree, in levels (INVALID_ARGUMENT above)");
  flags.AddInt("max-gpu-devices-per-pod", "N", &limits.max_gpu_devices_per_pod,
               "most GPU devices one sharing pod may ask for, gpu_fraction_devices "
               "(INVALID_ARGUMENT above)");
  flags.AddInt("max-decoded-bytes", "BYTES", &limits.max_decoded_bytes,
               "most memory a decoded request may take (RESOURCE_EXHAUSTED above)");
  flags.AddInt("workers", "N", &settings.workers, "decision threads; 0 = one per core");
  flags.AddInt("small-lane-workers", "N", &settings.small_lane_workers,
               "extra threads that run only small requests, so that they never wait behind "
               "large ones");
  flags.AddInt("small-request-bytes", "BYTES", &options.small_request_bytes,
               "requests up to this size may run on the small lane");
  flags.AddInt("max-queued-calls", "N", &options.max_queued_calls,
               "calls waiting for a thread; more answer UNAVAILABLE at once");
  flags.AddInt("max-queued-bytes", "BYTES", &options.max_queued_bytes,
               "request bytes of the calls waiting for a thread; more answer UNAVAILABLE");
  flags.AddString("tls-cert", "FILE", &options.tls.cert,
                  "PEM certificate chain: serve TLS (needs --tls-key)");
  flags.AddString("tls-key", "FILE", &options.tls.key, "PEM private key of --tls-cert");
  flags.AddString("tls-client-ca", "FILE", &options.tls.client_ca,
                  "PEM CA: mutual TLS, every client must present a certificate it signed");
  flags.AddString("log-level", "debug|info|warn|error", &settings.log_level,
                  "least level logged on stderr; info logs one line per call");
  flags.AddDouble("drain-seconds", "SECONDS", &settings.drain_seconds,
                  "after SIGTERM, how long health reports NOT_SERVING while calls are still "
                  "served");
  flags.AddDouble("shutdown-grace-seconds", "SECONDS", &settings.grace_seconds,
                  "then, how long calls in flight may run before they are cancelled");
  flags.AddBool("help", &settings.help, "print this help");
}

// Checks the parsed values that the flags' types do not bound and copies them into
// `settings.options`. Returns 0 when they are good; else prints why and returns exit code 2.
int CheckSettings(Settings& settings) {
  arbiter::server::ServerOptions& options = settings.options;
  options.port = static_cast<int>(settings.port);
  options.metrics_port = static_cast<int>(settings.metrics_port);
  options.max_message_bytes = settings.max_message_bytes;
  if (settings.workers < 0 || settings.workers > arbiter::server::kMaxWorkers ||
      settings.small_lane_workers < 0 ||
      settings.small_lane_workers > arbiter::server::kMaxWorkers) {
    std::cerr << "INVALID_ARGUMENT: --workers and --small-lane-workers must be 0.."
              << arbiter::server::kMaxWorkers << "\n";
    return 2;
  }
  options.workers = static_cast<int>(settings.workers);
  options.small_lane_workers = static_cast<int>(settings.small_lane_workers);
  absl::StatusOr<arbiter::server::LogLevel> level =
      arbiter::server::ParseLogLevel(settings.log_level);
  if (!level.ok()) {
    std::cerr << arbiter::rpc::FormatStatus(absl::InvalidArgumentError(
                     absl::StrCat("--log-level: ", level.status().message())))
              << "\n";
    return 2;
  }
  options.log_level = *level;
  // `!(x >= 0 && x <= limit)` also refuses NaN, which every comparison fails.
  constexpr double kMaxSeconds = 24 * 3600;
  if (!(settings.drain_seconds >= 0 && settings.drain_seconds <= kMaxSeconds) ||
      !(settings.grace_seconds >= 0 && settings.grace_seconds <= kMaxSeconds)) {
    std::cerr << "INVALID_ARGUMENT: --drain-seconds and --shutdown-grace-seconds must be "
                 "numbers of seconds from 0 to "
              << kMaxSeconds << "\n";
    return 2;
  }
  return 0;
}

// Blocks until a stop signal arrives on `stop_signals`, then drains `running` for
// `drain_seconds` and shuts it down with `grace_seconds` for the calls in flight.
void StopOnSignal(arbiter::server::ArbiterServer* running, int stop_signals, double drain_seconds,
                  double grace_seconds) {
  char signal_number = 0;
  while (read(stop_signals, &signal_number, 1) < 0 && errno == EINTR) {
  }
  running->logger().Log(arbiter::server::LogLevel::kInfo, "stop signal",
                        {{"signal", absl::StrCat(static_cast<int>(signal_number))}});
  running->Drain();
  if (drain_seconds > 0) absl::SleepFor(absl::Seconds(drain_seconds));
  // The calls in flight get the grace period, then are cancelled, and stop at their next
  // cancellation check. Should anything still run a second later, the process ends anyway:
  // a stop signal is answered within drain + grace + 1 s.
  std::thread([running, grace_seconds] {
    absl::SleepFor(absl::Seconds(grace_seconds + 1));
    running->logger().Log(arbiter::server::LogLevel::kWarn, "forced exit",
                          {{"reason", "calls still running 1 s after the grace period"}});
    std::cout << "stopped (forced)" << std::endl;
    std::_Exit(0);
  }).detach();
  running->Shutdown(absl::Seconds(grace_seconds));
}

// Starts the server, prints its addresses, and serves until a stop signal has drained it.
int Serve(const Settings& settings) {
  const int stop_signals = WatchStopSignals();
  if (stop_signals < 0) {
    std::cerr << "INTERNAL: cannot watch for stop signals\n";
    return 1;
  }

  absl::StatusOr<std::unique_ptr<arbiter::server::ArbiterServer>> server =
      arbiter::server::ArbiterServer::Start(settings.options);
  if (!server.ok()) {
    std::cerr << arbiter::rpc::FormatStatus(server.status()) << "\n";
    return server.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::cout << "listening on " << (*server)->address() << "\n";
  if (!(*server)->metrics_address().empty()) {
    std::cout << "metrics on " << (*server)->metrics_address() << "\n";
  }
  std::cout.flush();

  arbiter::server::ArbiterServer* running = server->get();
  std::thread waiter(StopOnSignal, running, stop_signals, settings.drain_seconds,
                     settings.grace_seconds);
  running->Wait();
  waiter.join();
  std::cout << "stopped\n";
  return 0;
}

int Run(const std::vector<std::string>& args) {
  Settings settings;
  arbiter::rpc::CommandLine flags;
  AddFlags(flags, settings);

  std::vector<std::string> positional;
  if (absl::Status status = flags.Parse(args, &positional); !status.ok()) {
    std::cerr << arbiter::rpc::FormatStatus(status) << "\n" << kUsage << flags.Usage();
    return 2;
  }
  if (settings.help) {
    std::cout << kUsage << flags.Usage();
    return 0;
  }
  if (!positional.empty()) {
    std::cerr << "INVALID_ARGUMENT: unexpected argument \"" << positional.front() << "\"\n"
              << kUsage << flags.Usage();
    return 2;
  }
  if (const int code = CheckSettings(settings); code != 0) return code;
  return Serve(settings);
}

}  // namespace

int main(int argc, char** argv) {
  // glibc gives each thread that allocates under contention an arena of its own (up to 8 per
  // core) and returns little of them to the system: after a burst of large calls the server
  // would keep a few hundred MiB it no longer uses. Two arenas keep it near its size at rest;
  // MALLOC_ARENA_MAX, when set, decides instead.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  return Run(std::vector<std::string>(argv + 1, argv + argc));
}
