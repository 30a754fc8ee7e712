#include "clients/simulator/sim_output.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "edge/json_text.h"

namespace arbiter::simulator {
namespace {

constexpr char kGpu[] = "nvidia.com/gpu";

std::string Num(double value) { return absl::StrFormat("%.10g", value); }

double Get(const ResourceMap& amounts, const std::string& resource) {
  auto found = amounts.find(resource);
  return found == amounts.end() ? 0 : found->second;
}

std::string Csv(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

using edge::JsonString;

std::string JsonMap(const ResourceMap& amounts) {
  std::vector<std::string> parts;
  for (const auto& [resource, amount] : amounts)
    parts.push_back(JsonString(resource) + ":" + Num(amount));
  return "{" + absl::StrJoin(parts, ",") + "}";
}

double Get(const std::map<std::string, ResourceMap>& amounts, const FlavorResource& fr) {
  auto found = amounts.find(fr.flavor);
  return found == amounts.end() ? 0 : Get(found->second, fr.resource);
}

// A flavor-resource's column suffix: `<resource>@<flavor>`.
std::string FlavorColumn(const FlavorResource& fr) {
  return absl::StrCat(fr.resource, "@", fr.flavor);
}

std::string JsonFlavorMap(const std::map<std::string, ResourceMap>& amounts) {
  std::vector<std::string> parts;
  for (const auto& [flavor, resources] : amounts) {
    parts.push_back(JsonString(flavor) + ":" + JsonMap(resources));
  }
  return "{" + absl::StrJoin(parts, ",") + "}";
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

void WriteQueuesCsv(const SimResult& result, bool kueue, std::ostream& out) {
  out << "time_s,queue";
  for (const char* what : {"allocated", "fair_share", "usage"}) {
    for (const std::string& r : result.resources) out << "," << what << ":" << Csv(r);
  }
  out << ",pending,evictions" << (kueue ? ",weighted_share" : "");
  for (const char* what : {"allocated", "borrowed"}) {
    for (const FlavorResource& fr : result.flavor_resources) {
      out << "," << what << ":" << Csv(FlavorColumn(fr));
    }
  }
  if (result.gpu_sharing) out << ",gpu_devices";
  out << "\n";
  for (const QueueRow& row : result.rows) {
    out << Num(row.time) << "," << Csv(row.queue);
    for (const ResourceMap* amounts : {&row.allocated, &row.fair_share, &row.usage}) {
      for (const std::string& r : result.resources) out << "," << Num(Get(*amounts, r));
    }
    out << "," << row.pending << "," << row.evictions;
    if (kueue) out << "," << Num(row.weighted_share);
    for (const auto* amounts : {&row.flavor_allocated, &row.flavor_borrowed}) {
      for (const FlavorResource& fr : result.flavor_resources) out << "," << Num(Get(*amounts, fr));
    }
    if (result.gpu_sharing) out << "," << row.gpu_devices;
    out << "\n";
  }
}

void WriteJobsCsv(const SimResult& result, std::ostream& out) {
  out << "job,queue,submit_s,start_s,end_s,evictions,wait_s\n";
  for (const JobRecord& job : result.jobs) {
    out << Csv(job.name) << "," << Csv(job.queue) << "," << Num(job.submit) << ","
        << (job.start < 0 ? "" : Num(job.start)) << "," << (job.end < 0 ? "" : Num(job.end)) << ","
        << job.evictions << "," << Num(job.wait) << "\n";
  }
}

void WriteKaiCsv(const SimResult& result, std::ostream& out) {
  out << "Time,QueueID,Allocation,FairShare\n";
  for (const QueueRow& row : result.rows) {
    out << Num(row.time / result.step) << "," << Csv(row.queue) << ","
        << absl::StrFormat("%.6f", Get(row.allocated, kGpu)) << ","
        << absl::StrFormat("%.6f", Get(row.fair_share, kGpu)) << "\n";
  }
}

void WriteJson(const SimResult& result, std::ostream& out) {
  std::vector<std::string> queues;
  for (const std::string& q : result.queues) queues.push_back(JsonString(q));
  std::vector<std::string> resources;
  for (const std::string& r : result.resources) resources.push_back(JsonString(r));
  const bool flavored = !result.flavor_resources.empty();
  std::vector<std::string> flavor_resources;
  for (const FlavorResource& fr : result.flavor_resources) {
    flavor_resources.push_back(absl::StrCat("{\"flavor\":", JsonString(fr.flavor),
                                            ",\"resource\":", JsonString(fr.resource), "}"));
  }
  out << "{\"step_s\":" << Num(result.step) << ",\"cycles\":" << result.cycles << ",\"queues\":["
      << absl::StrJoin(queues, ",") << "],\"resources\":[" << absl::StrJoin(resources, ",") << "],";
  if (flavored) out << "\"flavor_resources\":[" << absl::StrJoin(flavor_resources, ",") << "],";
  out << "\n\"steps\":[";
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const QueueRow& row = result.rows[i];
    out << (i == 0 ? "\n" : ",\n") << "{\"time_s\":" << Num(row.time)
        << ",\"queue\":" << JsonString(row.queue) << ",\"allocated\":" << JsonMap(row.allocated)
        << ",\"fair_share\":" << JsonMap(row.fair_share) << ",\"usage\":" << JsonMap(row.usage)
        << ",\"weighted_share\":" << Num(row.weighted_share) << ",\"pending\":" << row.pending
        << ",\"evictions\":" << row.evictions;
    if (flavored) {
      out << ",\"flavor_allocated\":" << JsonFlavorMap(row.flavor_allocated)
          << ",\"flavor_borrowed\":" << JsonFlavorMap(row.flavor_borrowed);
    }
    if (result.gpu_sharing) out << ",\"gpu_devices\":" << row.gpu_devices;
    out << "}";
  }
  out << "],\n\"jobs\":[";
  for (size_t i = 0; i < result.jobs.size(); ++i) {
    const JobRecord& job = result.jobs[i];
    out << (i == 0 ? "\n" : ",\n") << "{\"job\":" << JsonString(job.name)
        << ",\"queue\":" << JsonString(job.queue) << ",\"submit_s\":" << Num(job.submit)
        << ",\"start_s\":" << (job.start < 0 ? "null" : Num(job.start))
        << ",\"end_s\":" << (job.end < 0 ? "null" : Num(job.end))
        << ",\"evictions\":" << job.evictions << ",\"wait_s\":" << Num(job.wait) << "}";
  }
  out << "]}\n";
}

std::string MainResource(const SimResult& result) {
  for (const std::string& r : result.resources) {
    if (r == kGpu) return r;
  }
  for (const std::string& r : result.resources) {
    if (r == "cpu") return r;
  }
  return result.resources.empty() ? kGpu : result.resources.front();
}

namespace {

// allocation.dat and resource_hours.dat: one block per leaf, `index i` in gnuplot.
std::pair<std::string, std::string> LeafSeries(const SimResult& result, const std::string& resource,
                                               const std::map<std::string, size_t>& leaf_index) {
  const std::vector<std::string>& leaves = result.leaves;
  std::vector<std::ostringstream> alloc(leaves.size());
  std::vector<std::ostringstream> hours(leaves.size());
  std::vector<double> used(leaves.size(), 0.0);
  std::vector<double> target(leaves.size(), 0.0);
  for (const QueueRow& row : result.rows) {
    auto found = leaf_index.find(row.queue);
    if (found == leaf_index.end()) continue;
    const size_t i = found->second;
    const double allocated = Get(row.allocated, resource);
    const double fair = Get(row.fair_share, resource);
    alloc[i] << Num(row.time / 3600) << " " << Num(allocated) << " " << Num(fair) << "\n";
    used[i] += allocated * result.step / 3600;
    target[i] += fair * result.step / 3600;
    hours[i] << Num((row.time + result.step) / 3600) << " " << Num(used[i]) << " " << Num(target[i])
             << "\n";
  }
  std::string alloc_text;
  std::string hours_text;
  for (size_t i = 0; i < leaves.size(); ++i) {
    absl::StrAppend(&alloc_text, "# ", leaves[i], "\n", alloc[i].str(), "\n\n");
    absl::StrAppend(&hours_text, "# ", leaves[i], "\n", hours[i].str(), "\n\n");
  }
  return {alloc_text, hours_text};
}

// The flavors that list `resource`, in name order.
std::vector<std::string> FlavorsOf(const SimResult& result, const std::string& resource) {
  std::vector<std::string> flavors;
  for (const FlavorResource& fr : result.flavor_resources) {
    if (fr.resource == resource) flavors.push_back(fr.flavor);
  }
  return flavors;
}

// flavors.dat: one block per leaf and flavor (leaf-major, `index (i-1)*m + (j-1)` in gnuplot),
// each the leaf's allocation of `resource` in that flavor over time.
std::string FlavorSeries(const SimResult& result, const std::string& resource,
                         const std::vector<std::string>& flavors,
                         const std::map<std::string, size_t>& leaf_index) {
  std::vector<std::ostringstream> blocks(result.leaves.size() * flavors.size());
  for (const QueueRow& row : result.rows) {
    auto found = leaf_index.find(row.queue);
    if (found == leaf_index.end()) continue;
    for (size_t j = 0; j < flavors.size(); ++j) {
      blocks[found->second * flavors.size() + j]
          << Num(row.time / 3600) << " "
          << Num(Get(row.flavor_allocated, FlavorResource{flavors[j], resource})) << "\n";
    }
  }
  std::string text;
  for (size_t i = 0; i < result.leaves.size(); ++i) {
    for (size_t j = 0; j < flavors.size(); ++j) {
      absl::StrAppend(&text, "# ", result.leaves[i], " ", flavors[j], "\n",
                      blocks[i * flavors.size() + j].str(), "\n\n");
    }
  }
  return text;
}

// GPU sharing: the leaves whose sharing pods ever hold a device, as indices into result.leaves.
std::vector<size_t> SharingLeaves(const SimResult& result,
                                  const std::map<std::string, size_t>& leaf_index) {
  std::set<size_t> sharing;
  for (const QueueRow& row : result.rows) {
    auto found = leaf_index.find(row.queue);
    if (row.gpu_devices > 0 && found != leaf_index.end()) sharing.insert(found->second);
  }
  return {sharing.begin(), sharing.end()};
}

// sharing.dat: one block per sharing leaf (`index k` in gnuplot), each the leaf's allocation of
// nvidia.com/gpu (its GPU share) and the devices its sharing pods occupy, over time.
std::string SharingSeries(const SimResult& result, const std::vector<size_t>& sharing,
                          const std::map<std::string, size_t>& leaf_index) {
  std::map<size_t, std::ostringstream> blocks;
  for (size_t leaf : sharing) blocks[leaf];
  for (const QueueRow& row : result.rows) {
    auto found = leaf_index.find(row.queue);
    if (found == leaf_index.end() || blocks.count(found->second) == 0) continue;
    blocks[found->second] << Num(row.time / 3600) << " " << Num(Get(row.allocated, kGpu)) << " "
                          << row.gpu_devices << "\n";
  }
  std::string text;
  for (size_t leaf : sharing) {
    absl::StrAppend(&text, "# ", result.leaves[leaf], "\n", blocks[leaf].str(), "\n\n");
  }
  return text;
}

// jobs.dat: start, row, length (hours) and the queue's colour for every job that ran.
std::string JobBars(const SimResult& result, const std::map<std::string, size_t>& leaf_index) {
  const double horizon = static_cast<double>(result.cycles) * result.step;
  std::string jobs_text;
  int job_row = 0;
  for (const JobRecord& job : result.jobs) {
    if (job.start < 0) continue;
    const double end = job.end < 0 ? horizon : job.end;
    auto found = leaf_index.find(job.queue);
    const size_t colour = found == leaf_index.end() ? 0 : found->second + 1;
    absl::StrAppend(&jobs_text, Num(job.start / 3600), " ", job_row++, " ",
                    Num((end - job.start) / 3600), " ", colour, "\n");
  }
  if (jobs_text.empty()) jobs_text = "0 0 0 0\n";
  return jobs_text;
}

// The gnuplot script that draws the three charts from the data files in `dir`, as PNG and SVG.
// With resource flavors, a fourth chart: each leaf's allocation per flavor (colour: the queue,
// dash: the flavor).
// With GPU sharing, a fifth: each sharing leaf's GPU allocation against the devices it occupies.
std::string PlotScript(const std::string& title, const std::string& dir,
                       const std::string& resource, const std::vector<std::string>& leaves,
                       const std::vector<std::string>& flavors,
                       const std::vector<size_t>& sharing) {
  std::string names;
  for (const std::string& leaf : leaves) absl::StrAppend(&names, names.empty() ? "" : " ", leaf);
  std::string script =
      absl::StrCat("# Charts of one simulation; run with gnuplot from any directory.\n", "cd '",
                   dir, "'\n", "names = '", names, "'\n", "n = words(names)\n",
                   "set key outside right top noenhanced\n", "set grid\n", "set xlabel 'hours'\n");
  if (!flavors.empty()) {
    absl::StrAppend(&script, "flavors = '", absl::StrJoin(flavors, " "), "'\n",
                    "m = words(flavors)\n");
  }
  if (!sharing.empty()) {
    std::vector<std::string> colours;  // each sharing leaf keeps its colour of the other charts
    for (size_t leaf : sharing) colours.push_back(absl::StrCat(leaf + 1));
    absl::StrAppend(&script, "sharing = '", absl::StrJoin(colours, " "), "'\n",
                    "s = words(sharing)\n");
  }
  for (const auto& [terminal, ext] : std::vector<std::pair<std::string, std::string>>{
           {"pngcairo size 1100,520 noenhanced font ',10'", "png"},
           {"svg size 1100,520 noenhanced dynamic font ',10'", "svg"}}) {
    absl::StrAppend(
        &script, "set terminal ", terminal, "\n", "set output 'allocation.", ext, "'\n",
        "set title '", title, ": allocation (solid) and fair share (dashed) of ", resource, "'\n",
        "set ylabel '", resource, "'\n",
        "plot for [i=1:n] 'allocation.dat' index (i-1) using 1:2 with steps lw 2 lc i title "
        "word(names, i), for [i=1:n] 'allocation.dat' index (i-1) using 1:3 with lines dt 2 lw 1 "
        "lc i notitle\n",
        "set output 'resource_hours.", ext, "'\n", "set title '", title, ": cumulative ", resource,
        "-hours (solid) against the fair share (dashed)'\n", "set ylabel '", resource, "-hours'\n",
        "plot for [i=1:n] 'resource_hours.dat' index (i-1) using 1:2 with lines lw 2 lc i title "
        "word(names, i), for [i=1:n] 'resource_hours.dat' index (i-1) using 1:3 with lines dt 2 "
        "lc i notitle\n",
        "set output 'jobs.", ext, "'\n", "set title '", title,
        ": jobs over time (one line per job, coloured by queue)'\n", "set ylabel 'job'\n",
        "plot 'jobs.dat' using 1:2:3:(0):4 with vectors nohead lw 3 lc variable notitle, "
        "for [i=1:n] NaN with lines lw 3 lc i title word(names, i)\n");
    if (!flavors.empty()) {
      absl::StrAppend(
          &script, "set output 'flavors.", ext, "'\n", "set title '", title, ": allocation of ",
          resource, " per flavor (colour: queue; line: flavor)'\n", "set ylabel '", resource, "'\n",
          "set offsets 0, 0, graph 0.05, 0\n",
          "plot for [i=1:n] for [j=1:m] 'flavors.dat' index ((i-1)*m + (j-1)) using 1:2 with "
          "steps lw 2 lc i dt j title word(names, i).' '.word(flavors, j)\n",
          "set offsets 0, 0, 0, 0\n");
    }
    if (!sharing.empty()) {
      absl::StrAppend(
          &script, "set output 'gpu_sharing.", ext, "'\n", "set title '", title,
          ": GPU share (solid) and GPU devices occupied (dashed) of the queues that share'\n",
          "set ylabel 'GPUs'\n", "set offsets 0, 0, graph 0.05, 0\n",
          "plot for [k=1:s] 'sharing.dat' index (k-1) using 1:2 with steps lw 2 "
          "lc (word(sharing, k)+0) title word(names, word(sharing, k)+0), for [k=1:s] "
          "'sharing.dat' index (k-1) using 1:3 with steps dt 2 lw 1 lc (word(sharing, k)+0) "
          "title word(names, word(sharing, k)+0).' devices'\n",
          "set offsets 0, 0, 0, 0\n");
    }
    absl::StrAppend(&script, "unset output\n");
  }
  return script;
}

}  // namespace

absl::Status WritePlots(const SimResult& result, const std::string& title, const std::string& dir,
                        const std::string& gnuplot) {
  if (dir.find('\'') != std::string::npos || title.find('\'') != std::string::npos) {
    return absl::InvalidArgumentError("--out and the config's name may not contain a quote (')");
  }
  const std::string resource = MainResource(result);
  std::map<std::string, size_t> leaf_index;
  for (size_t i = 0; i < result.leaves.size(); ++i) leaf_index[result.leaves[i]] = i;

  const auto [alloc_text, hours_text] = LeafSeries(result, resource, leaf_index);
  const std::string jobs_text = JobBars(result, leaf_index);
  const std::vector<std::string> flavors = FlavorsOf(result, resource);
  std::vector<std::pair<std::string, std::string>> files = {
      {"allocation.dat", alloc_text}, {"resource_hours.dat", hours_text}, {"jobs.dat", jobs_text}};
  if (!flavors.empty()) {
    files.emplace_back("flavors.dat", FlavorSeries(result, resource, flavors, leaf_index));
  }
  const std::vector<size_t> sharing = SharingLeaves(result, leaf_index);
  if (!sharing.empty())
    files.emplace_back("sharing.dat", SharingSeries(result, sharing, leaf_index));
  for (const auto& [name, text] : files) {
    if (absl::Status s = WriteFile(absl::StrCat(dir, "/", name), text); !s.ok()) return s;
  }

  const std::string script = PlotScript(title, dir, resource, result.leaves, flavors, sharing);
  const std::string script_path = absl::StrCat(dir, "/plots.gp");
  if (absl::Status s = WriteFile(script_path, script); !s.ok()) return s;
  const std::string command =
      absl::StrCat(gnuplot, " '", script_path, "' > '", dir, "/plots.log' 2>&1");
  const int status = std::system(command.c_str());
  if (status != 0) {
    return absl::FailedPreconditionError(absl::StrCat("gnuplot failed (", status, "); see ", dir,
                                                      "/plots.log. Is gnuplot installed? "
                                                      "(apt-get install gnuplot-nox)"));
  }
  return absl::OkStatus();
}

}  // namespace arbiter::simulator
