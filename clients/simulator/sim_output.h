// Writing a simulation's results: CSV (queues.csv and jobs.csv), JSON (simulation.json), KAI's
// simulator CSV (Time,QueueID,Allocation,FairShare), and charts drawn by gnuplot.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "clients/simulator/simulation.h"

namespace arbiter::simulator {

// queues.csv: time_s,queue, then allocated/fair_share/usage per resource, then pending,evictions
// (and weighted_share for Kueue), then with resource flavors allocated:<r>@<flavor> and
// borrowed:<r>@<flavor> per flavor-resource, then, when some job stream shares GPUs,
// gpu_devices (the devices its subtree's sharing pods occupy).
void WriteQueuesCsv(const SimResult& result, bool kueue, std::ostream& out);
// jobs.csv: job,queue,submit_s,start_s,end_s,evictions,wait_s (empty start/end: never).
void WriteJobsCsv(const SimResult& result, std::ostream& out);
// KAI's columns: Time (the cycle), QueueID, Allocation and FairShare of nvidia.com/gpu.
void WriteKaiCsv(const SimResult& result, std::ostream& out);
// Everything in one JSON document: {"queues":[...],"resources":[...],"steps":[...],"jobs":[...]};
// with resource flavors also "flavor_resources", and per step "flavor_allocated" and
// "flavor_borrowed" (flavor -> resource -> amount); with GPU sharing, per step "gpu_devices".
void WriteJson(const SimResult& result, std::ostream& out);

// The resource the charts and summaries follow: nvidia.com/gpu when the nodes have it, else cpu,
// else the first resource.
std::string MainResource(const SimResult& result);

// Writes `<dir>/allocation.{png,svg}` (allocation against fair share per leaf queue over time),
// `<dir>/resource_hours.{png,svg}` (cumulative resource-hours per leaf queue against the
// cumulative fair share, its target), `<dir>/jobs.{png,svg}` (a timeline of jobs) and, with
// resource flavors, `<dir>/flavors.{png,svg}` (each leaf's allocation per flavor), with GPU
// sharing `<dir>/gpu_sharing.{png,svg}` (each leaf whose sharing pods hold devices: its GPU
// allocation against the devices they occupy), by running
// `gnuplot` (the program named, looked up on the PATH). The data and scripts stay beside them.
absl::Status WritePlots(const SimResult& result, const std::string& title, const std::string& dir,
                        const std::string& gnuplot = "gnuplot");

}  // namespace arbiter::simulator
