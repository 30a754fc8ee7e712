// `arbiter generate`: writes a synthetic ScheduleRequest (clients/generator/generator.h) as JSON,
// or as binary protobuf when --out ends in .pb.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cli/command_prologue.h"
#include "clients/cli/commands.h"
#include "clients/generator/generator.h"
#include "edge/proto_convert.h"
#include "edge/rpc/command_line.h"
#include "edge/wire.h"

namespace arbiter::cli {
namespace {

constexpr char kUsage[] =
    "usage: arbiter generate [flags]\n\n"
    "Writes a valid, realistic synthetic ScheduleRequest; the same flags (seed included) give\n"
    "the same bytes. --size starts from a preset (docs/generator.md) that the other flags\n"
    "override.\n\n"
    "flags:\n";

// The values `generate` reads from its flags.
struct GenerateFlags {
  generator::GeneratorOptions defaults;
  int64_t nodes = defaults.nodes;
  int64_t queues = defaults.queues;
  int64_t depth = defaults.depth;
  int64_t pods = defaults.pods;
  int64_t seed = static_cast<int64_t>(defaults.seed);
  double pending_fraction = defaults.pending_fraction;
  int64_t resources = defaults.extra_resources;
  int64_t reclaim_groups = defaults.reclaim_groups;
  int64_t cohorts = defaults.cohorts;
  int64_t flavors = defaults.flavors;
  double gpu_sharing = defaults.gpu_sharing;
  std::string size;
  std::string model_name = "kai";
  std::string shape_name = "realistic";
  std::string out_path = "-";
  bool help = false;
};

void DeclareFlags(rpc::CommandLine* flags, GenerateFlags* values) {
  flags->AddInt("nodes", "N", &values->nodes, "nodes (KAI)");
  flags->AddInt("queues", "Q", &values->queues,
                "queues, non-leaf ones included (Kueue: ClusterQueues)");
  flags->AddInt("depth", "D", &values->depth, "levels of the queue tree (1 = flat)");
  flags->AddInt("pods", "P", &values->pods, "pods, running and pending (Kueue: workloads)");
  flags->AddInt("seed", "S", &values->seed, "random seed");
  flags->AddDouble("pending-fraction", "F", &values->pending_fraction,
                   "share of pods that is pending");
  flags->AddInt("resources", "R", &values->resources,
                "extra resource kinds beyond cpu, memory and nvidia.com/gpu");
  flags->AddString("size", "S|M|L|XL", &values->size, "start from a size preset");
  flags->AddString("model", "kai|kueue", &values->model_name,
                   "which fairness model to generate for");
  flags->AddInt("reclaim-groups", "N", &values->reclaim_groups,
                "pending groups that can only run by reclaim (KAI)");
  flags->AddInt("cohorts", "N", &values->cohorts, "cohorts over all levels (Kueue)");
  flags->AddInt("flavors", "N", &values->flavors,
                "resource flavors per resource; 0 = legacy quotas (Kueue)");
  flags->AddDouble("gpu-sharing", "PCT", &values->gpu_sharing,
                   "percentage of GPU pods that share GPU devices: fraction and memory pods, "
                   "device keys, gpu_device_memory on GPU nodes (KAI; 0 = none)");
  flags->AddString("shape", "realistic|kai-reclaim", &values->shape_name,
                   "kai-reclaim: KAI's reclaim yardstick, eight running and eight pending "
                   "one-GPU jobs per node (only --nodes applies)");
  flags->AddString("out", "FILE", &values->out_path,
                   "where to write; .pb = binary, - = standard output");
  flags->AddBool("help", &values->help, "print this help");
}

}  // namespace

std::string GenerateFlagsUsage() {
  GenerateFlags values;
  rpc::CommandLine flags;
  DeclareFlags(&flags, &values);
  return flags.Usage();
}

int RunGenerate(const Args& args, std::ostream& out, std::ostream& err) {
  GenerateFlags values;
  rpc::CommandLine flags;
  DeclareFlags(&flags, &values);
  ParsedCommand command = ParseCommand(args, flags, values.help, kUsage, out);
  if (command.help_printed) return 0;
  absl::Status& parsed = command.status;
  const std::vector<std::string>& positional = command.positional;
  if (parsed.ok() && !positional.empty()) {
    parsed = absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", positional.front(), "\""));
  }
  if (parsed.ok() && values.seed < 0) {
    parsed = absl::InvalidArgumentError("--seed: must not be negative");
  }
  if (parsed.ok() && !(values.gpu_sharing >= 0 && values.gpu_sharing <= 100)) {
    parsed = absl::InvalidArgumentError("--gpu-sharing: must be a percentage in [0, 100]");
  }
  absl::StatusOr<generator::GeneratorModel> model = generator::GeneratorModel::kKai;
  if (parsed.ok()) {
    model = generator::ParseModel(values.model_name);
    if (!model.ok())
      parsed = absl::InvalidArgumentError(absl::StrCat("--model: ", model.status().message()));
  }
  absl::StatusOr<generator::GeneratorShape> shape = generator::GeneratorShape::kRealistic;
  if (parsed.ok()) {
    shape = generator::ParseShape(values.shape_name);
    if (!shape.ok()) {
      parsed = absl::InvalidArgumentError(absl::StrCat("--shape: ", shape.status().message()));
    } else if (*shape != generator::GeneratorShape::kRealistic &&
               *model != generator::GeneratorModel::kKai) {
      parsed = absl::InvalidArgumentError("--shape: kai-reclaim is a KAI shape (--model kai)");
    }
  }
  generator::GeneratorOptions options;
  if (parsed.ok() && flags.IsSet("size")) {
    absl::StatusOr<generator::GeneratorOptions> preset = generator::SizePreset(values.size, *model);
    if (preset.ok()) {
      options = *preset;
    } else {
      parsed = absl::InvalidArgumentError(absl::StrCat("--size: ", preset.status().message()));
    }
  }
  if (!parsed.ok()) return FailWithUsage(parsed, kUsage, flags, err);
  options.model = *model;
  options.shape = *shape;
  if (flags.IsSet("nodes")) options.nodes = static_cast<int>(values.nodes);
  if (flags.IsSet("queues")) options.queues = static_cast<int>(values.queues);
  if (flags.IsSet("depth")) options.depth = static_cast<int>(values.depth);
  if (flags.IsSet("pods")) options.pods = static_cast<int>(values.pods);
  if (flags.IsSet("seed")) options.seed = static_cast<uint64_t>(values.seed);
  if (flags.IsSet("pending-fraction")) options.pending_fraction = values.pending_fraction;
  if (flags.IsSet("resources")) options.extra_resources = static_cast<int>(values.resources);
  if (flags.IsSet("reclaim-groups")) {
    options.reclaim_groups = static_cast<int>(values.reclaim_groups);
  }
  if (flags.IsSet("cohorts")) options.cohorts = static_cast<int>(values.cohorts);
  if (flags.IsSet("flavors")) options.flavors = static_cast<int>(values.flavors);
  if (flags.IsSet("gpu-sharing")) options.gpu_sharing = values.gpu_sharing;

  const generator::GeneratedRequest generated = generator::Generate(options);
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = edge::ToProto(generated.snapshot);
  *request.mutable_policy() = edge::ToProto(generated.policy);
  if (absl::Status written = edge::WriteMessageFile(values.out_path, request); !written.ok()) {
    return Fail(written, err);
  }
  return 0;
}

}  // namespace arbiter::cli
