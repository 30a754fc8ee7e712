#include "clients/simulator/simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "clients/simulator/apply_decisions.h"
#include "core/api/arbiter.h"
#include "core/usage_accounting.h"

namespace arbiter::simulator {
namespace {

// Simulated time 0 is 2026-01-01T00:00:00Z.
constexpr int64_t kEpoch = 1767225600;

Timestamp At(double seconds) {
  Timestamp ts;
  const double whole = std::floor(seconds);
  ts.seconds = kEpoch + static_cast<int64_t>(whole);
  ts.nanos = static_cast<int32_t>(std::llround((seconds - whole) * 1e9));
  if (ts.nanos >= 1'000'000'000) {
    ++ts.seconds;
    ts.nanos -= 1'000'000'000;
  }
  return ts;
}

void Add(ResourceMap& into, const ResourceMap& amounts, double times = 1) {
  for (const auto& [resource, amount] : amounts) into[resource] += amount * times;
}

// A job of the simulation, beside its pod group in the snapshot.
struct LiveJob {
  size_t record = 0;  // index in SimResult::jobs
  size_t stream = 0;
  double ran = 0;  // seconds of uninterrupted running
  bool running = false;
};

// Per-stream arrival state.
struct StreamState {
  int submitted = 0;
  double next_arrival = 0;  // kRate
};

// The usage ledger with an optional window: decayed sums, and for a sliding window the
// contributions still inside it (each added as amount · step and decayed since).
class Ledger {
 public:
  Ledger(const Accounting& accounting, double step) : accounting_(accounting), step_(step) {
    if (accounting.window > 0 && !accounting.tumbling) {
      window_steps_ = std::max<int64_t>(1, std::llround(accounting.window / step));
    }
  }

  const ResourceMap& usage(const std::string& queue) const {
    static const ResourceMap kEmpty;
    auto found = usage_.find(queue);
    return found == usage_.end() ? kEmpty : found->second;
  }
  const ResourceMap& capacity() const { return capacity_; }
  const std::map<std::string, ResourceMap>& all() const { return usage_; }

  // Accounts the step that starts at `time`, with what each queue held over it.
  absl::Status Advance(double time, const std::map<std::string, ResourceMap>& held,
                       const ResourceMap& capacity) {
    if (accounting_.window > 0 && accounting_.tumbling) {
      const int64_t window = static_cast<int64_t>(std::floor(time / accounting_.window));
      if (window != current_window_) {
        current_window_ = window;
        usage_.clear();
        capacity_.clear();
      }
    }
    std::set<std::string> queues;
    for (const auto& [queue, amounts] : usage_) queues.insert(queue);
    for (const auto& [queue, amounts] : held) queues.insert(queue);
    static const ResourceMap kNothing;
    for (const std::string& queue : queues) {
      auto found = held.find(queue);
      const ResourceMap& rate = found == held.end() ? kNothing : found->second;
      absl::StatusOr<ResourceMap> next =
          AccumulateUsage(usage_[queue], rate, step_, accounting_.half_life);
      if (!next.ok()) return next.status();
      usage_[queue] = *std::move(next);
      if (window_steps_ > 0) Expire(history_[queue], usage_[queue], rate);
    }
    absl::StatusOr<ResourceMap> next =
        AccumulateUsage(capacity_, capacity, step_, accounting_.half_life);
    if (!next.ok()) return next.status();
    capacity_ = *std::move(next);
    if (window_steps_ > 0) Expire(capacity_history_, capacity_, capacity);
    return absl::OkStatus();
  }

 private:
  // Records this step's rate and takes out the contribution that just left the window.
  void Expire(std::deque<ResourceMap>& history, ResourceMap& sums, const ResourceMap& rate) {
    history.push_back(rate);
    if (static_cast<int64_t>(history.size()) <= window_steps_) return;
    const double decay = std::pow(UsageDecayFactor(step_, accounting_.half_life),
                                  static_cast<double>(window_steps_));
    for (const auto& [resource, amount] : history.front()) {
      double& sum = sums[resource];
      sum -= amount * step_ * decay;
      if (sum < 1e-9 * std::max(1.0, amount * step_)) sum = 0;  // rounding left-overs
    }
    history.pop_front();
  }

  Accounting accounting_;
  double step_;
  int64_t window_steps_ = 0;
  int64_t current_window_ = std::numeric_limits<int64_t>::min();
  std::map<std::string, ResourceMap> usage_;
  std::map<std::string, std::deque<ResourceMap>> history_;
  ResourceMap capacity_;
  std::deque<ResourceMap> capacity_history_;
};

class Simulation {
 public:
  Simulation(const SimConfig& config, const Decide& decide, const Progress& progress)
      : config_(config),
        decide_(decide),
        progress_(progress),
        kueue_(config.policy.fairness_model == FairnessModel::kKueue),
        ledger_(config.accounting, config.step),
        rng_(config.seed),
        streams_(config.jobs.size()) {}

  absl::StatusOr<SimResult> Run() {
    const auto started = std::chrono::steady_clock::now();
    Setup();
    const int64_t total = static_cast<int64_t>(std::floor(config_.horizon / config_.step + 1e-9));
    for (int64_t i = 0; i < total; ++i) {
      const double time = static_cast<double>(i) * config_.step;
      if (absl::Status status = Step(time); !status.ok()) {
        return absl::Status(status.code(), absl::StrCat("at t=", time, "s: ", status.message()));
      }
      ++result_.cycles;
      if (progress_ && !progress_(i + 1, total)) {
        return absl::CancelledError(absl::StrCat("stopped after ", i + 1, " of ", total, " steps"));
      }
    }
    result_.total_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return std::move(result_);
  }

 private:
  void Setup() {
    result_.step = config_.step;
    std::set<std::string> resources;
    for (const NodeSet& set : config_.nodes) {
      for (int i = 0; i < set.count; ++i) {
        Node node;
        node.name =
            set.count == 1 && config_.nodes.size() == 1 ? set.name : absl::StrCat(set.name, "-", i);
        node.allocatable = set.allocatable;
        node.labels = set.labels;
        node.gpu_device_memory = set.gpu_device_memory;
        if (set.gpu_device_memory > 0) device_memory_[node.name] = set.gpu_device_memory;
        Add(capacity_, node.allocatable);
        snapshot_.nodes.push_back(std::move(node));
      }
      for (const auto& [resource, amount] : set.allocatable) resources.insert(resource);
    }
    // Kueue divides quotas, not nodes: its resources are those of the quotas.
    std::set<FlavorResource> flavor_resources;
    for (const Queue& queue : config_.queues) {
      for (const auto& [resource, amount] : queue.deserved) resources.insert(resource);
      for (const ResourceGroup& group : queue.resource_groups) {
        for (const std::string& resource : group.covered_resources) {
          resources.insert(resource);
          for (const FlavorQuotas& flavor : group.flavors) {
            flavor_resources.insert(FlavorResource{flavor.flavor, resource});
          }
        }
      }
    }
    result_.resources.assign(resources.begin(), resources.end());
    result_.flavor_resources.assign(flavor_resources.begin(), flavor_resources.end());
    for (const JobStream& stream : config_.jobs) {
      result_.gpu_sharing |= stream.gpu_fraction.has_value() || stream.gpu_memory.has_value();
    }
    snapshot_.queues = config_.queues;
    snapshot_.resource_flavors = config_.resource_flavors;
    std::set<std::string> parents;
    for (const Queue& queue : config_.queues) {
      result_.queues.push_back(queue.name);
      parent_[queue.name] = queue.parent;
      parents.insert(queue.parent);
    }
    for (const Queue& queue : config_.queues) {
      if (parents.count(queue.name) == 0) result_.leaves.push_back(queue.name);
    }
    for (size_t s = 0; s < config_.jobs.size(); ++s) {
      streams_[s].next_arrival = config_.jobs[s].start;
      if (config_.jobs[s].arrival == Arrival::kRate) streams_[s].next_arrival += Gap(s);
    }
  }

  // Seconds to the next arrival of a Poisson stream, from the seeded generator.
  double Gap(size_t stream) {
    const double u = static_cast<double>(rng_() >> 11) * 0x1p-53;  // [0, 1)
    return -std::log1p(-u) * 3600.0 / config_.jobs[stream].rate;
  }

  void Submit(size_t stream, double time) {
    const JobStream& s = config_.jobs[stream];
    StreamState& state = streams_[stream];
    PodGroup group;
    group.name = absl::StrCat(s.name, "-", state.submitted);
    group.queue = s.queue;
    group.priority = s.priority;
    group.preemptibility = s.preemptibility;
    group.min_member = s.min_member > 0 ? s.min_member : s.pods;
    group.creation_time = At(time);
    for (int p = 0; p < s.pods; ++p) {
      Pod pod;
      pod.name = absl::StrCat(group.name, "-", p);
      pod.requests = s.requests;
      pod.node_selector = s.node_selector;
      pod.tolerations = s.tolerations;
      pod.gpu_fraction = s.gpu_fraction;
      pod.gpu_memory = s.gpu_memory;
      pod.gpu_fraction_devices = s.gpu_fraction_devices;
      group.pods.push_back(std::move(pod));
    }
    JobRecord record;
    record.name = group.name;
    record.queue = s.queue;
    record.submit = time;
    live_[group.name] = LiveJob{result_.jobs.size(), stream, 0, false};
    result_.jobs.push_back(std::move(record));
    snapshot_.pod_groups.push_back(std::move(group));
    ++state.submitted;
  }

  void Arrivals(double time) {
    for (size_t s = 0; s < config_.jobs.size(); ++s) {
      const JobStream& stream = config_.jobs[s];
      StreamState& state = streams_[s];
      if (time + 1e-9 < stream.start) continue;
      switch (stream.arrival) {
        case Arrival::kStart:
          while (state.submitted < stream.count) Submit(s, time);
          break;
        case Arrival::kBacklog: {
          int waiting = 0;
          for (const auto& [name, job] : live_) {
            waiting += job.stream == s && !job.running && result_.jobs[job.record].start < 0;
          }
          for (; waiting < stream.count; ++waiting) Submit(s, time);
          break;
        }
        case Arrival::kRate:
          while (state.next_arrival <= time + 1e-9 &&
                 (stream.count == 0 || state.submitted < stream.count)) {
            Submit(s, time);
            state.next_arrival += Gap(s);
          }
          break;
      }
    }
  }

  bool Running(const PodGroup& group) const {
    if (kueue_) return group.admitted;
    int running = 0;
    for (const Pod& pod : group.pods) running += EffectivePhase(pod) == PodPhase::kRunning;
    return running >= std::max(1, group.min_member);
  }

  // A running sharing pod's nvidia.com/gpu for its queue, the G of its effective request
  // (SEMANTICS §4.13.1): d · fraction, or d · memory / gpu_device_memory of its node. Queues
  // hold (and the ledger accounts) effective requests, as the answer's queue rows count them.
  double GpuAmount(const Pod& pod) const {
    const double devices = std::max(1, pod.gpu_fraction_devices);
    if (pod.gpu_fraction) return devices * *pod.gpu_fraction;
    auto found = device_memory_.find(pod.node_name);  // a running memory pod's node has one
    const double memory = found == device_memory_.end() ? 0 : found->second;
    return memory > 0 ? devices * *pod.gpu_memory / memory : devices;
  }

  // What each queue's subtree holds now.
  std::map<std::string, ResourceMap> Held() const {
    std::map<std::string, ResourceMap> held;
    for (const PodGroup& group : snapshot_.pod_groups) {
      for (const Pod& pod : group.pods) {
        const bool holds = kueue_ ? group.admitted : EffectivePhase(pod) == PodPhase::kRunning;
        if (!holds) continue;
        const bool shares = Shares(pod);
        const double gpu = shares ? GpuAmount(pod) : 0;
        for (std::string q = group.queue; !q.empty();) {
          Add(held[q], pod.requests);
          if (shares) held[q][kGpuResource] += gpu;  // its requests have no G (§4.13.6)
          auto parent = parent_.find(q);
          q = parent == parent_.end() ? "" : parent->second;
        }
      }
    }
    return held;
  }

  // GPU sharing: the devices, as (node, key), that each queue's subtree's running pods share.
  std::map<std::string, std::set<std::pair<std::string, std::string>>> Devices() const {
    std::map<std::string, std::set<std::pair<std::string, std::string>>> devices;
    if (!result_.gpu_sharing) return devices;
    for (const PodGroup& group : snapshot_.pod_groups) {
      for (const Pod& pod : group.pods) {
        if (pod.gpu_groups.empty() || EffectivePhase(pod) != PodPhase::kRunning) continue;
        for (std::string q = group.queue; !q.empty();) {
          for (const std::string& key : pod.gpu_groups) devices[q].insert({pod.node_name, key});
          auto parent = parent_.find(q);
          q = parent == parent_.end() ? "" : parent->second;
        }
      }
    }
    return devices;
  }

  // Kueue with flavors: what each queue's subtree holds per flavor and resource, charged by the
  // admissions' flavors (SEMANTICS §5.8.3; a queue without resource groups holds none here).
  std::map<std::string, std::map<std::string, ResourceMap>> FlavorHeld() const {
    std::map<std::string, std::map<std::string, ResourceMap>> held;
    if (result_.flavor_resources.empty()) return held;
    for (const PodGroup& group : snapshot_.pod_groups) {
      if (!group.admitted) continue;
      for (const Pod& pod : group.pods) {
        const PodSetFlavors* flavors = nullptr;
        for (const PodSetFlavors& entry : group.flavors) {
          if (entry.pod_set == pod.pod_set) flavors = &entry;
        }
        if (flavors == nullptr) continue;
        for (const auto& [resource, amount] : pod.requests) {
          auto flavor = flavors->flavors.find(resource);
          if (amount <= 0 || flavor == flavors->flavors.end() || flavor->second.empty()) continue;
          for (std::string q = group.queue; !q.empty();) {
            held[q][flavor->second][resource] += amount;
            auto parent = parent_.find(q);
            q = parent == parent_.end() ? "" : parent->second;
          }
        }
      }
    }
    return held;
  }

  absl::Status Step(double time) {
    Arrivals(time);
    snapshot_.now = At(time);
    snapshot_.usage.clear();
    for (const auto& [queue, amounts] : ledger_.all()) {
      snapshot_.usage.push_back(QueueUsage{queue, amounts});
    }
    snapshot_.usage_capacity = ledger_.capacity();

    const auto asked = std::chrono::steady_clock::now();
    absl::StatusOr<ScheduleResult> answer = decide_(snapshot_, config_.policy);
    result_.decide_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    if (!answer.ok()) return answer.status();
    absl::StatusOr<Snapshot> next = ApplyDecisions(snapshot_, config_.policy, *answer);
    if (!next.ok()) return next.status();
    snapshot_ = *std::move(next);

    // Jobs: starts, evictions, waiting.
    std::map<std::string, int> evicted;
    std::map<std::string, int> pending;
    for (const PodGroup& group : snapshot_.pod_groups) {
      LiveJob& job = live_[group.name];
      JobRecord& record = result_.jobs[job.record];
      const bool running = Running(group);
      if (running && !job.running && record.start < 0) record.start = time;
      if (!running && job.running) {
        ++record.evictions;
        for (std::string q = group.queue; !q.empty(); q = parent_[q]) ++evicted[q];
        job.ran = 0;
      }
      job.running = running;
      if (!running) {
        record.wait += config_.step;
        for (std::string q = group.queue; !q.empty(); q = parent_[q]) ++pending[q];
      }
    }

    // One row per queue.
    const std::map<std::string, ResourceMap> held = Held();
    std::map<std::string, std::map<std::string, ResourceMap>> flavor_held = FlavorHeld();
    const auto devices = Devices();
    std::map<std::string, const QueueShare*> shares;
    for (const QueueShare& share : answer->queues) shares[share.queue] = &share;
    for (const std::string& queue : result_.queues) {
      QueueRow row;
      row.time = time;
      row.queue = queue;
      if (auto h = held.find(queue); h != held.end()) row.allocated = h->second;
      if (auto s = shares.find(queue); s != shares.end()) {
        row.fair_share = s->second->fair_share;
        row.weighted_share = s->second->weighted_share;
        for (const FlavorResourceShare& fr : s->second->flavor_resources) {
          if (fr.borrowed > 0) row.flavor_borrowed[fr.flavor][fr.resource] = fr.borrowed;
        }
      }
      if (auto h = flavor_held.find(queue); h != flavor_held.end()) {
        row.flavor_allocated = std::move(h->second);
      }
      row.usage = ledger_.usage(queue);
      row.pending = pending[queue];
      row.evictions = evicted[queue];
      if (auto d = devices.find(queue); d != devices.end()) {
        row.gpu_devices = static_cast<int>(d->second.size());
      }
      result_.rows.push_back(std::move(row));
    }

    // Usage over the step, then the clock: jobs that ran their duration finish.
    if (absl::Status status = ledger_.Advance(time, held, capacity_); !status.ok()) return status;
    const double end = time + config_.step;
    std::vector<PodGroup> kept;
    kept.reserve(snapshot_.pod_groups.size());
    for (PodGroup& group : snapshot_.pod_groups) {
      LiveJob& job = live_[group.name];
      const double duration = config_.jobs[job.stream].duration;
      if (job.running) {
        job.ran += config_.step;
        if (duration > 0 && job.ran + 1e-9 >= duration) {
          result_.jobs[job.record].end = end;
          live_.erase(group.name);
          continue;
        }
      }
      kept.push_back(std::move(group));
    }
    snapshot_.pod_groups = std::move(kept);
    return absl::OkStatus();
  }

  const SimConfig& config_;
  const Decide& decide_;
  const Progress& progress_;
  const bool kueue_;
  Ledger ledger_;
  std::mt19937_64 rng_;
  std::vector<StreamState> streams_;
  std::map<std::string, LiveJob> live_;
  std::map<std::string, std::string> parent_;
  ResourceMap capacity_;
  std::map<std::string, double> device_memory_;  // node -> gpu_device_memory, where > 0
  Snapshot snapshot_;
  SimResult result_;
};

}  // namespace

Decide InProcess() {
  return [](const Snapshot& snapshot, const Policy& policy) { return Schedule(snapshot, policy); };
}

absl::StatusOr<SimResult> Simulate(const SimConfig& config, const Decide& decide,
                                   const Progress& progress) {
  return Simulation(config, decide, progress).Run();
}

std::vector<double> ResourceSeconds(const SimResult& result, const std::string& resource) {
  std::map<std::string, size_t> index;
  for (size_t q = 0; q < result.queues.size(); ++q) index[result.queues[q]] = q;
  std::vector<double> seconds(result.queues.size(), 0.0);
  for (const QueueRow& row : result.rows) {
    auto found = row.allocated.find(resource);
    if (found != row.allocated.end()) seconds[index[row.queue]] += found->second * result.step;
  }
  return seconds;
}

int Switches(const SimResult& result, const std::string& resource) {
  const std::set<std::string> leaves(result.leaves.begin(), result.leaves.end());
  int switches = 0;
  std::string holder;
  double time = -1;
  std::string best;
  double best_amount = 0;
  auto close_step = [&] {
    if (best.empty()) return;
    if (!holder.empty() && best != holder) ++switches;
    holder = best;
  };
  for (const QueueRow& row : result.rows) {
    if (row.time != time) {
      close_step();
      time = row.time;
      best.clear();
      best_amount = 0;
    }
    if (leaves.count(row.queue) == 0) continue;
    auto found = row.allocated.find(resource);
    const double amount = found == row.allocated.end() ? 0 : found->second;
    // The first leaf of the largest amount holds the step.
    if (amount > best_amount) {
      best = row.queue;
      best_amount = amount;
    }
  }
  close_step();
  return switches;
}

}  // namespace arbiter::simulator
