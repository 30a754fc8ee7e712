#include "core/kai/placement.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace arbiter::kai {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool Better(const double score, int node, const double best_score, int best_node) {
  if (best_node < 0) return true;
  if (score != best_score) return score > best_score;
  return node < best_node;
}

// Keys further than this above a binpack candidate's key score strictly lower: the exact score
// difference, 9 · (f' − f) / (max − min) >= 9 · 2^-40, is far above the few ulps (<= 2^-46) that
// the score's roundings can lose. Closer keys are scored and compared exactly. When max is 0 or
// max == min every score is the same constant, so every key ties.
double TieReach(double min, double max) {
  if (max == 0 || max == min) return kInfinity;
  return (max - min) * 0x1p-40;
}

}  // namespace

double BinpackScore(double free, double allocatable, double min, double max) {
  if (allocatable == 0 || max == 0) return 0;
  if (max == min) return 9;
  return 9 * (1 - (free - min) / (max - min));
}

double SpreadScore(double free, double allocatable) {
  return allocatable == 0 ? 0 : free / allocatable;
}

Placer::Placer(const Cluster& cluster, Feasibility& feasibility, const NodeIndex& index,
               const WorkingState& state)
    : cluster_(cluster),
      feasibility_(feasibility),
      index_(index),
      state_(state),
      bands_(2 * static_cast<size_t>(feasibility.num_signatures())),
      bands_ready_(bands_.size(), false),
      failures_(2 * static_cast<size_t>(index.num_trees())) {}

bool Placer::KnownToFail(int tree, bool now, const double* requests) {
  Failures& failures = failures_[2 * tree + (now ? 0 : 1)];
  if (failures.epoch != state_.capacity_epoch()) {
    failures.count = 0;
    return false;
  }
  const int r_count = cluster_.num_node_resources();
  for (int i = 0; i < failures.count; ++i) {
    const double* failed = &failures.requests[i * r_count];
    bool dominated = true;
    for (int r = 0; r < r_count && dominated; ++r) dominated = failed[r] <= requests[r];
    if (dominated) return true;
  }
  return false;
}

void Placer::RecordFailure(int tree, bool now, const double* requests) {
  // Only a state no rollback can grow beyond gives a fact that outlives the statement, and only
  // a search that excluded no node says something of every pod with these requests.
  if (!state_.clean() || !excluded_.empty()) return;
  Failures& failures = failures_[2 * tree + (now ? 0 : 1)];
  const int r_count = cluster_.num_node_resources();
  if (failures.epoch != state_.capacity_epoch()) {
    failures.epoch = state_.capacity_epoch();
    failures.count = 0;
    failures.next = 0;
  }
  if (failures.requests.empty()) failures.requests.assign(kMaxFailures * r_count, 0.0);
  int slot;
  if (failures.count < kMaxFailures) {
    slot = failures.count++;
  } else {
    slot = failures.next;
    failures.next = (failures.next + 1) % kMaxFailures;
  }
  std::copy(requests, requests + r_count, &failures.requests[slot * r_count]);
}

size_t Placer::BandsSlot(int pod) const {
  const bool gpu_pod = cluster_.pod(pod).requests_gpu;
  return 2 * static_cast<size_t>(feasibility_.pod_signature(pod)) + (gpu_pod ? 1 : 0);
}

const std::vector<Placer::BandGroup>& Placer::Bands(int pod) {
  const bool gpu_pod = cluster_.pod(pod).requests_gpu;
  const size_t slot = BandsSlot(pod);
  std::vector<BandGroup>& groups = bands_[slot];
  if (bands_ready_[slot]) return groups;
  bands_ready_[slot] = true;
  std::vector<std::pair<int, BucketRef>> refs;  // (band, bucket)
  for (const Feasibility::FeasibleClass& feasible :
       feasibility_.FeasibleClasses(feasibility_.pod_signature(pod))) {
    const int prefer = feasible.preferred ? 50 : 0;
    if (gpu_pod) {
      refs.push_back({prefer, BucketRef{feasible.node_class, NodeIndex::kGpu}});
    } else {
      refs.push_back({prefer + 10, BucketRef{feasible.node_class, NodeIndex::kCpuNoGpu}});
      refs.push_back({prefer, BucketRef{feasible.node_class, NodeIndex::kCpuGpu}});
    }
  }
  std::stable_sort(refs.begin(), refs.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [band, ref] : refs) {
    if (groups.empty() || groups.back().band != band) groups.push_back(BandGroup{band, {}, {}});
    BandGroup& group = groups.back();
    if (!index_.zero_nodes(ref.node_class, ref.bucket).empty()) {
      group.zero_buckets.push_back(static_cast<int>(group.buckets.size()));
    }
    group.buckets.push_back(ref);
  }
  if (group_of_tree_.size() < bands_.size()) group_of_tree_.resize(bands_.size());
  std::vector<int>& group_of = group_of_tree_[slot];
  group_of.assign(index_.num_trees(), -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const BucketRef& ref : groups[g].buckets) {
      group_of[NodeIndex::TreeId(ref.node_class, ref.bucket)] = static_cast<int>(g);
    }
  }
  return groups;
}

void Placer::ExcludeGroupNodes(int pod) {
  excluded_.clear();
  const ClusterPod& placed = cluster_.pod(pod);
  const ClusterGroup& group = cluster_.group(placed.group);
  if (!group.group->one_pod_per_node) return;
  for (int other = group.first_pod; other < group.first_pod + group.pod_count; ++other) {
    if (other == pod) continue;
    switch (state_.pod_state(other)) {
      case PodState::kRunning:
      case PodState::kReleasing:
      case PodState::kBound:
      case PodState::kMoved:
        if (state_.pod_node(other) >= 0) excluded_.push_back(state_.pod_node(other));
        break;
      case PodState::kPending:
      case PodState::kEvicted:
        break;
    }
  }
  std::sort(excluded_.begin(), excluded_.end());
}

bool Placer::Excluded(int node) const {
  return !excluded_.empty() && std::binary_search(excluded_.begin(), excluded_.end(), node);
}

CapacityTree::Found Placer::FindAllowed(const CapacityTree& tree, double bound_key, int bound_node,
                                        double max_key, const double* requests, bool now,
                                        bool skip_stale) const {
  CapacityTree::Walk walk;
  CapacityTree::Found found = tree.FindFirst(bound_key, bound_node, max_key, requests, now, &walk);
  // An excluded node is passed over, and so is a stale entry: its node is weighed on its own
  // (WeighStale).
  while (found.slot >= 0 &&
         (Excluded(tree.member(found.slot)) || (skip_stale && Stale(tree.member(found.slot))))) {
    found = tree.FindNext(&walk);
  }
  return found;
}

void Placer::SetOverlay(const WorkingState::Mark* base) {
  overlay_ = base;
  for (int tree : stale_trees_) stale_by_tree_[tree].clear();
  stale_trees_.clear();
  stale_list_.clear();
  if (base == nullptr) return;
  if (stale_stamp_.empty()) {
    stale_stamp_.assign(cluster_.num_nodes(), 0);
    stale_by_tree_.resize(index_.num_trees());
  }
  if (++stale_epoch_ == 0) {  // the stamps wrapped: start them again
    std::fill(stale_stamp_.begin(), stale_stamp_.end(), 0);
    for (StaleKeys& folded : stale_keys_) folded = StaleKeys{};
    for (CurrentEntries& kept : current_entries_) kept = CurrentEntries{};
    stale_by_group_ = StaleTreesByGroup{};
    stale_fits_.clear();
    stale_epoch_ = 1;
  }
  journal_start_ = base->nodes;
  journal_read_ = base->nodes;
  breaks_read_ = state_.journal_breaks();
}

void Placer::RefreshStale() {
  const std::vector<int>& journal = state_.node_journal();
  // An inner rollback since the last reading took entries away, and later changes may have
  // journaled others in their place: the journal is read again from the overlay's start (a node
  // already stale is passed over). The nodes of the entries taken away stay stale.
  if (breaks_read_ != state_.journal_breaks()) {
    breaks_read_ = state_.journal_breaks();
    journal_read_ = std::min(journal_start_, journal.size());
  }
  for (; journal_read_ < journal.size(); ++journal_read_) {
    const int node = journal[journal_read_];
    if (stale_stamp_[node] == stale_epoch_) continue;
    stale_stamp_[node] = stale_epoch_;
    stale_list_.push_back(node);
    for (int tree : index_.TreesOf(node)) {
      if (tree < 0) continue;
      if (stale_by_tree_[tree].empty()) stale_trees_.push_back(tree);
      stale_by_tree_[tree].push_back(node);
    }
  }
}

double Placer::CurrentKey(int node, int resource) const {
  if (resource < 0) return index_.Key(0.0, 0.0);
  return index_.Key(state_.free(node, resource), cluster_.allocatable(node)[resource]);
}

void Placer::KeyRange(size_t slot, const std::vector<BandGroup>& groups, int resource, double* min,
                      double* max) {
  // The range over the trees' entries, with a member holding each end, is kept per band slot
  // while the trees stay as they are.
  if (ranges_.size() < bands_.size()) ranges_.resize(bands_.size());
  KeyRangeOfEntries& range = ranges_[slot];
  if (!range.known || range.version != index_.version()) {
    range.known = true;
    range.version = index_.version();
    range.min = kInfinity;
    range.max = -kInfinity;
    range.min_node = -1;
    range.max_node = -1;
    for (const BandGroup& group : groups) {
      for (const BucketRef& ref : group.buckets) {
        const CapacityTree& tree = index_.tree(ref.node_class, ref.bucket);
        if (tree.empty()) continue;
        if (tree.MinKey() < range.min) {
          range.min = tree.MinKey();
          range.min_node = tree.member(tree.MinSlot());
        }
        if (tree.MaxKey() > range.max) {
          range.max = tree.MaxKey();
          range.max_node = tree.member(tree.MaxSlot());
        }
      }
    }
  }
  *min = std::min(*min, range.min);
  *max = std::max(*max, range.max);
  if (overlay_ == nullptr || stale_list_.empty()) return;
  if ((range.min_node >= 0 && Stale(range.min_node)) ||
      (range.max_node >= 0 && Stale(range.max_node))) {
    // An end of the entries' range is a stale node's: the range of the entries whose nodes are
    // not stale, and the stale members' keys as they are.
    *min = kInfinity;
    *max = -kInfinity;
    CurrentEntriesRange(slot, groups, min, max);
    FoldStaleKeys(slot, resource, min, max);
    return;
  }
  // Both ends are current entries, so they are the current entries' ends too; the stale members
  // add their keys as they are.
  FoldStaleKeys(slot, resource, min, max);
}

void Placer::FoldStaleKeys(size_t slot, int resource, double* min, double* max) {
  if (stale_keys_.size() < bands_.size()) stale_keys_.resize(bands_.size());
  StaleKeys& folded = stale_keys_[slot];
  if (folded.epoch != stale_epoch_ || folded.resource != resource) {
    folded = StaleKeys{};
    folded.epoch = stale_epoch_;
    folded.resource = resource;
  }
  // A node is in the range when one of its trees is one of the slot's (the group of each tree,
  // from Bands).
  const std::vector<int>& group_of = group_of_tree_[slot];
  const auto in_range = [&group_of, this](int node) {
    for (int tree : index_.TreesOf(node)) {
      if (tree >= 0 && group_of[tree] >= 0) return true;
    }
    return false;
  };
  // Folds `node`'s key in; false when the node holds an end and its key moved inward.
  const auto fold = [&](int node) {
    if (!in_range(node)) return true;
    const double key = CurrentKey(node, resource);
    if ((node == folded.min_node && key > folded.min) ||
        (node == folded.max_node && key < folded.max)) {
      return false;
    }
    folded.Widen(key, node);
    return true;
  };
  bool again = false;
  const std::vector<int>& journal = state_.node_journal();
  if (folded.started && folded.breaks == state_.journal_breaks() &&
      folded.journal <= journal.size()) {
    // Nothing left the journal since the last fold: the nodes changed since are its new entries
    // (a node twice, or one also newly listed, folds to the same range).
    for (size_t i = folded.listed; i < stale_list_.size() && !again; ++i) {
      again = !fold(stale_list_[i]);
    }
    for (size_t i = folded.journal; i < journal.size() && !again; ++i) {
      if (Stale(journal[i])) again = !fold(journal[i]);
    }
  } else {
    for (size_t i = 0; i < stale_list_.size() && !again; ++i) {
      const int node = stale_list_[i];
      if (i < folded.listed && state_.node_stamp(node) <= folded.clock) continue;  // as folded
      again = !fold(node);
    }
  }
  if (again) {
    folded.min = kInfinity;
    folded.max = -kInfinity;
    folded.min_node = -1;
    folded.max_node = -1;
    for (int node : stale_list_) {
      if (!in_range(node)) continue;
      folded.Widen(CurrentKey(node, resource), node);
    }
  }
  folded.clock = state_.node_clock();
  folded.listed = stale_list_.size();
  folded.started = true;
  folded.journal = journal.size();
  folded.breaks = state_.journal_breaks();
  *min = std::min(*min, folded.min);
  *max = std::max(*max, folded.max);
}

void Placer::CurrentEntriesRange(size_t slot, const std::vector<BandGroup>& groups, double* min,
                                 double* max) {
  if (current_entries_.size() < bands_.size()) current_entries_.resize(bands_.size());
  CurrentEntries& kept = current_entries_[slot];
  bool again = kept.epoch != stale_epoch_;
  // The trees do not change in an overlay and stale nodes are only added: the range holds until
  // a node holding an end becomes stale.
  for (size_t i = kept.listed; i < stale_list_.size() && !again; ++i) {
    again = stale_list_[i] == kept.min_node || stale_list_[i] == kept.max_node;
  }
  if (again) {
    kept = CurrentEntries{};
    kept.epoch = stale_epoch_;
    for (const BandGroup& group : groups) {
      for (const BucketRef& ref : group.buckets) {
        const CapacityTree& tree = index_.tree(ref.node_class, ref.bucket);
        if (tree.empty()) continue;
        CapacityTree::Found first{tree.MinSlot(), tree.MinKey()};
        while (first.slot >= 0 && Stale(tree.member(first.slot))) {
          first = tree.FirstFrom(first.key, tree.member(first.slot) + 1);
        }
        if (first.slot >= 0 && (kept.min_node < 0 || first.key < kept.min)) {
          kept.min = first.key;
          kept.min_node = tree.member(first.slot);
        }
        CapacityTree::Found last{tree.MaxSlot(), tree.MaxKey()};
        while (last.slot >= 0 && Stale(tree.member(last.slot))) {
          last = tree.LastBefore(last.key, tree.member(last.slot));
        }
        if (last.slot >= 0 && (kept.max_node < 0 || last.key > kept.max)) {
          kept.max = last.key;
          kept.max_node = tree.member(last.slot);
        }
      }
    }
  }
  kept.listed = stale_list_.size();
  *min = std::min(*min, kept.min);
  *max = std::max(*max, kept.max);
}

bool Placer::InBandGroup(size_t slot, int group_index, int node) const {
  const std::vector<int>& group_of = group_of_tree_[slot];
  for (int tree : index_.TreesOf(node)) {
    if (tree >= 0 && group_of[tree] == group_index) return true;
  }
  return false;
}

Placer::StaleFits& Placer::StaleFitsEntry(size_t slot, int group_index, const double* requests,
                                          int resource, bool now) {
  const int rn = cluster_.num_node_resources();
  // The entries are told apart by a tag of the shape and group first, then compared whole.
  uint64_t tag = (static_cast<uint64_t>(slot) * 0x9E3779B97F4A7C15ull) ^
                 (static_cast<uint64_t>(group_index) << 40) ^
                 (static_cast<uint64_t>(resource + 1) << 48) ^ (now ? 1ull << 63 : 0);
  for (int k = 0; k < rn; ++k) {
    uint64_t bits;
    std::memcpy(&bits, &requests[k], sizeof bits);
    tag = (tag ^ bits) * 0x100000001B3ull;
  }
  StaleFits* entry = nullptr;
  for (StaleFits& kept : stale_fits_) {
    if (kept.tag == tag && kept.known && kept.slot == slot && kept.group == group_index &&
        kept.now == now && kept.resource == resource && kept.epoch == stale_epoch_ &&
        std::equal(kept.requests.begin(), kept.requests.end(), requests)) {
      entry = &kept;
      break;
    }
  }
  if (entry == nullptr) {
    if (stale_fits_.size() < kStaleFitsKept) {
      entry = &stale_fits_.emplace_back();
    } else {
      entry = &*std::min_element(
          stale_fits_.begin(), stale_fits_.end(),
          [](const StaleFits& a, const StaleFits& b) { return a.used < b.used; });
    }
    entry->known = false;
    entry->tag = tag;
    entry->slot = slot;
    entry->group = group_index;
    entry->now = now;
    entry->resource = resource;
    entry->epoch = stale_epoch_;
    entry->requests.assign(requests, requests + rn);
  }
  entry->used = ++stale_fits_clock_;
  return *entry;
}

const Placer::StaleFits& Placer::ReadStaleFits(size_t slot, int group_index, const double* requests,
                                               int resource, bool now) {
  const std::vector<int>& journal = state_.node_journal();
  StaleFits& fits = StaleFitsEntry(slot, group_index, requests, resource, now);
  if (seen_.empty()) seen_.assign(cluster_.num_nodes(), 0);
  if (++seen_mark_ == 0) {  // the marks wrapped: start them again
    std::fill(seen_.begin(), seen_.end(), 0);
    seen_mark_ = 1;
  }
  if (fits.known && fits.breaks == state_.journal_breaks() && fits.journal <= journal.size() &&
      journal_read_ == journal.size()) {
    // The same shape since the last reading, nothing rolled back: the nodes changed since.
    for (size_t i = fits.journal; i < journal.size(); ++i) {
      const int node = journal[i];
      if (seen_[node] == seen_mark_) continue;
      seen_[node] = seen_mark_;
      if (!Stale(node) || !InBandGroup(slot, group_index, node)) continue;
      const bool takes = Fits(node, requests, now);
      auto it = std::find_if(fits.fitting.begin(), fits.fitting.end(),
                             [node](const std::pair<int, double>& e) { return e.first == node; });
      if (takes && it != fits.fitting.end()) {
        it->second = CurrentKey(node, resource);
      } else if (takes) {
        fits.fitting.emplace_back(node, CurrentKey(node, resource));
      } else if (it != fits.fitting.end()) {
        *it = fits.fitting.back();
        fits.fitting.pop_back();
      }
    }
  } else {
    fits.known = true;
    fits.fitting.clear();
    for (int tree_id : stale_by_group_.trees[group_index]) {
      for (int node : stale_by_tree_[tree_id]) {
        if (seen_[node] == seen_mark_) continue;
        seen_[node] = seen_mark_;
        if (Fits(node, requests, now)) fits.fitting.emplace_back(node, CurrentKey(node, resource));
      }
    }
  }
  fits.breaks = state_.journal_breaks();
  fits.journal = journal.size();
  return fits;
}

void Placer::WeighStaleOfGroup(size_t slot, int group_index, const double* requests, int resource,
                               bool now, double min, double max, Candidate* best,
                               double* best_key) {
  if (overlay_ == nullptr || stale_trees_.empty()) return;
  StaleTreesByGroup& sorted = stale_by_group_;
  if (sorted.slot != slot || sorted.epoch != stale_epoch_ || sorted.sorted > stale_trees_.size()) {
    sorted.slot = slot;
    sorted.epoch = stale_epoch_;
    sorted.sorted = 0;
    sorted.trees.resize(bands_[slot].size());
    for (std::vector<int>& trees : sorted.trees) trees.clear();
  }
  const std::vector<int>& group_of = group_of_tree_[slot];
  for (; sorted.sorted < stale_trees_.size(); ++sorted.sorted) {
    const int tree = stale_trees_[sorted.sorted];
    if (group_of[tree] >= 0) sorted.trees[group_of[tree]].push_back(tree);
  }
  const StaleFits& fits = ReadStaleFits(slot, group_index, requests, resource, now);
  const bool spread = index_.spread();
  const bool any_excluded = !excluded_.empty();
  for (const auto& [node, key] : fits.fitting) {
    if (any_excluded && Excluded(node)) continue;
    // The score each search gives a node found in its tree, from the same key.
    const double score =
        spread ? -key : BinpackScore(key, cluster_.allocatable(node)[resource], min, max);
    if (Better(score, node, best->score, best->node)) {
      *best = Candidate{node, score};
      *best_key = key;
    }
  }
}

bool Placer::Fits(int node, const double* requests, bool now) const {
  return now ? state_.FitsNow(node, requests) : state_.FitsPipelined(node, requests);
}

Placer::Candidate Placer::SearchTrees(const BandGroup& group, const double* requests, int resource,
                                      bool now, double min, double max, bool skip_stale,
                                      double* best_key_out) {
  const bool spread = index_.spread();
  const double needed = resource >= 0 && requests[resource] > 0 ? requests[resource] : -kInfinity;
  const double reach = spread ? 0 : TieReach(min, max);
  Candidate best;
  double best_key = kInfinity;  // the key of `best`
  for (const BucketRef& ref : group.buckets) {
    const CapacityTree& tree = index_.tree(ref.node_class, ref.bucket);
    const int tree_id = NodeIndex::TreeId(ref.node_class, ref.bucket);
    if (tree.empty() || KnownToFail(tree_id, now, requests)) continue;
    if (spread) {
      // The key is the negated score, exactly: a later bucket wins only with a key <= the best's.
      const double limit = best.node >= 0 ? -best.score : kInfinity;
      const CapacityTree::Found found =
          FindAllowed(tree, -kInfinity, -1, limit, requests, now, skip_stale);
      if (found.slot < 0 && limit == kInfinity) RecordFailure(tree_id, now, requests);
      if (found.slot < 0) continue;
      const int node = tree.member(found.slot);
      if (Better(-found.key, node, best.score, best.node)) {
        best = Candidate{node, -found.key};
        best_key = found.key;
      }
      continue;
    }
    // A node scoring below `best` cannot win: look no further than best_key's tie reach.
    const double limit = best.node >= 0 ? best_key + reach : kInfinity;
    CapacityTree::Found found = FindAllowed(tree, needed, -1, limit, requests, now, skip_stale);
    // Keys below `needed` belong to nodes without enough of the scoring resource, so a search
    // without limit that finds nothing proves that no node of the tree can take the pod.
    if (found.slot < 0 && limit == kInfinity) RecordFailure(tree_id, now, requests);
    if (found.slot < 0) continue;
    int node = tree.member(found.slot);
    const double score = BinpackScore(found.key, cluster_.allocatable(node)[resource], min, max);
    if (Better(score, node, best.score, best.node)) {
      best = Candidate{node, score};
      best_key = found.key;
    }
    // Nodes with more free score lower, except where rounding makes two scores equal: follow
    // those too (within the tie reach), since an equal score is decided by the name.
    const double tie_limit = found.key + reach;
    while (true) {
      found = FindAllowed(tree, found.key, std::numeric_limits<int>::max(), tie_limit, requests,
                          now, skip_stale);
      if (found.slot < 0) break;
      node = tree.member(found.slot);
      const double next_score =
          BinpackScore(found.key, cluster_.allocatable(node)[resource], min, max);
      if (next_score != score) break;
      if (Better(next_score, node, best.score, best.node)) {
        best = Candidate{node, next_score};
        best_key = found.key;
      }
    }
  }
  *best_key_out = best_key;
  return best;
}

Placer::Candidate Placer::SearchGroup(int pod, int group_index, const BandGroup& group,
                                      const double* requests, int resource, bool now, double min,
                                      double max) {
  double best_key = kInfinity;
  Candidate best;
  if (overlay_ == nullptr) {
    best = SearchTrees(group, requests, resource, now, min, max, /*skip_stale=*/false, &best_key);
  } else if (!excluded_.empty()) {
    best = SearchTrees(group, requests, resource, now, min, max, /*skip_stale=*/true, &best_key);
  } else {
    // The best tree members by the frozen entries, stale ones included, are facts of the frozen
    // trees: remembered per pod until they change. The first of them that is not stale is also
    // the best of the current entries; past those remembered, the trees are searched past the
    // stale nodes.
    TreeAnswer& answer = RememberedAnswer(pod, group_index, now, min, max);
    bool found = false;
    for (int i = 0; !found;) {
      if (i == answer.count) {
        if (answer.exhausted) {
          found = true;  // no current entry fits
          break;
        }
        if (answer.count == kRanked) break;
        // The next best: the trees searched past the members ranked so far.
        for (int k = 0; k < answer.count; ++k) excluded_.push_back(answer.ranked[k].node);
        std::sort(excluded_.begin(), excluded_.end());
        double key = kInfinity;
        const Candidate next =
            SearchTrees(group, requests, resource, now, min, max, /*skip_stale=*/false, &key);
        excluded_.clear();
        if (next.node < 0) {
          answer.exhausted = true;
          continue;
        }
        answer.ranked[answer.count] = next;
        answer.keys[answer.count] = key;
        ++answer.count;
      }
      if (!Stale(answer.ranked[i].node)) {
        best = answer.ranked[i];
        best_key = answer.keys[i];
        found = true;
      }
      ++i;
    }
    if (!found) {
      best = SearchTrees(group, requests, resource, now, min, max, /*skip_stale=*/true, &best_key);
    }
  }
  WeighStaleOfGroup(BandsSlot(pod), group_index, requests, resource, now, min, max, &best,
                    &best_key);
  if (index_.spread()) return best;
  // Binpack's nodes without the scoring resource score 0: per bucket, the first in name order
  // that takes the pod, unless the best so far already beats it (the final best only more so).
  for (const int b : group.zero_buckets) {
    const BucketRef& ref = group.buckets[b];
    for (int node : index_.zero_nodes(ref.node_class, ref.bucket)) {
      if (best.node >= 0 && (best.score > 0 || node > best.node)) break;
      if (!Excluded(node) && Fits(node, requests, now)) {
        if (Better(0, node, best.score, best.node)) {
          best = Candidate{node, 0};
          best_key = kInfinity;
        }
        break;
      }
    }
  }
  return best;
}

Placer::TreeAnswer& Placer::RememberedAnswer(int pod, int group_index, bool now, double min,
                                             double max) {
  if (answers_.empty()) answers_.resize(cluster_.num_pods());
  std::vector<TreeAnswer>& answers = answers_[pod];
  const uint64_t version = index_.version();
  // Only the members ranked so far are read: a reset answer keeps its arrays as they were.
  const auto reset = [&](TreeAnswer& answer) {
    answer.version = version;
    answer.min = min;
    answer.max = max;
    answer.now = now;
    answer.group = group_index;
    answer.count = 0;
    answer.exhausted = false;
  };
  for (TreeAnswer& answer : answers) {
    if (answer.group == group_index && answer.now == now) {
      if (answer.version != version || answer.min != min || answer.max != max) reset(answer);
      return answer;
    }
  }
  answers.emplace_back();
  reset(answers.back());
  return answers.back();
}

void Placer::ScoreRange(int pod, double* min, double* max) {
  *min = kInfinity;
  *max = -kInfinity;
  if (index_.spread() || cluster_.pod(pod).requests_off_nodes) return;
  if (overlay_ != nullptr) RefreshStale();
  const int resource = cluster_.pod(pod).requests_gpu ? cluster_.node_gpu() : cluster_.node_cpu();
  KeyRange(BandsSlot(pod), Bands(pod), resource, min, max);
}

const std::vector<int8_t>& Placer::ClassVerdicts(int pod) {
  const int signature = feasibility_.pod_signature(pod);
  if (class_verdicts_.size() < static_cast<size_t>(feasibility_.num_signatures())) {
    class_verdicts_.resize(feasibility_.num_signatures());
  }
  std::vector<int8_t>& verdicts = class_verdicts_[signature];
  if (!verdicts.empty()) return verdicts;
  verdicts.assign(feasibility_.num_classes(), -1);
  for (const Feasibility::FeasibleClass& feasible : feasibility_.FeasibleClasses(signature)) {
    verdicts[feasible.node_class] = feasible.preferred ? 1 : 0;
  }
  return verdicts;
}

double Placer::SmallestShare(int pod) const {
  // The least share of one device the pod needs on any node: u / M_n over the nodes' distinct
  // device units (a memory pod: its memory over the largest known device memory).
  const ClusterPod& info = cluster_.pod(pod);
  if (info.gpu_memory > 0) {
    return static_cast<double>(info.gpu_memory) / cluster_.largest_device_memory();
  }
  double least = kInfinity;
  for (int64_t units : cluster_.distinct_device_units()) {
    const double exact = std::round(info.gpu_fraction * static_cast<double>(units));
    const double share = std::max(1.0, exact) / static_cast<double>(units);
    least = std::min(least, share);
  }
  return least;
}

Placer::FreeShare Placer::LargestFreeShare(int pod) {
  const ClusterPod& info = cluster_.pod(pod);
  const int signature = feasibility_.pod_signature(pod);
  const double memory = static_cast<double>(info.gpu_memory);
  auto [it, fresh] = free_shares_.try_emplace({signature, memory});
  KeptFreeShare& kept = it->second;
  // Only the nodes changed since the answer was kept can change it, unless its node is one.
  const auto weigh = [&](bool all) {
    for (const auto& feasible : feasibility_.FeasibleClasses(signature)) {
      for (int node : feasibility_.class_nodes(feasible.node_class)) {
        if (!all && state_.node_stamp(node) <= kept.clock) continue;
        if (!all && node == kept.best.node) return false;
        // A memory pod names only the nodes whose devices could hold it.
        if (memory > 0 && !(cluster_.node(node).node->gpu_device_memory >= memory)) continue;
        const double share = LargestFreeDeviceShare(state_, node);
        if (kept.best.node < 0 || share > kept.best.share ||
            (share == kept.best.share && node < kept.best.node)) {
          kept.best = {node, share};
        }
      }
    }
    return true;
  };
  if (fresh || (kept.clock != state_.node_clock() && !weigh(false))) {
    kept.best = FreeShare{};
    weigh(true);
  }
  kept.clock = state_.node_clock();
  return kept.best;
}

double Placer::SharingScore(int node, bool joinable, bool now, bool preferred, double min,
                            double max) const {
  const int gpu = cluster_.node_gpu();
  const double allocatable = cluster_.allocatable(node)[gpu];
  const double free = state_.free(node, gpu);
  const double placement =
      index_.spread() ? SpreadScore(free, allocatable) : BinpackScore(free, allocatable, min, max);
  return (device_binpack_ && joinable ? 200 : 0) + (now ? 100 : 0) + (preferred ? 50 : 0) +
         placement;
}

NodeChoice Placer::ChooseSharingByScan(int pod) {
  const int gpu = cluster_.node_gpu();
  if (gpu < 0) return NodeChoice{};
  const bool spread = index_.spread();
  // Binpack's range: free G over the feasible nodes with allocatable G > 0.
  double min = kInfinity;
  double max = -kInfinity;
  const std::vector<Feasibility::FeasibleClass>& classes =
      feasibility_.FeasibleClasses(feasibility_.pod_signature(pod));
  for (const Feasibility::FeasibleClass& feasible : classes) {
    for (int node : feasibility_.class_nodes(feasible.node_class)) {
      if (spread || !(cluster_.allocatable(node)[gpu] > 0)) continue;
      min = std::min(min, state_.free(node, gpu));
      max = std::max(max, state_.free(node, gpu));
    }
  }
  NodeChoice best;
  double best_score = 0;
  DeviceFit& fit = device_fit_;
  for (const Feasibility::FeasibleClass& feasible : classes) {
    for (int node : feasibility_.class_nodes(feasible.node_class)) {
      if (Excluded(node)) continue;
      ChooseDevices(state_, pod, node, device_binpack_, /*with_devices=*/false, &device_scratch_,
                    &fit);
      if (!fit.fits) continue;
      const double score =
          SharingScore(node, fit.joinable, fit.choice.now, feasible.preferred, min, max);
      if (!Better(score, node, best_score, best.node)) continue;
      best_score = score;
      best.node = node;
      best.fits_now = fit.choice.now;
    }
  }
  if (best.node >= 0) {
    ChooseDevices(state_, pod, best.node, device_binpack_, /*with_devices=*/true, &device_scratch_,
                  &fit);
    best.devices = fit.choice;
  }
  return best;
}

double Placer::SharingPlacement(const SharingSearch& search, int node) const {
  const int gpu = cluster_.node_gpu();
  const double allocatable = cluster_.allocatable(node)[gpu];
  const double free = state_.free(node, gpu);
  return index_.spread() ? SpreadScore(free, allocatable)
                         : BinpackScore(free, allocatable, search.min, search.max);
}

bool Placer::WeighJoinable(SharingSearch& search, int node, double top_bands) {
  const int gpu = cluster_.node_gpu();
  const int pod = search.pod;
  const double free = state_.free(node, gpu);
  const double placement = SharingPlacement(search, node);
  if (search.best.node >= 0 && top_bands + placement < search.best_score) return false;
  const int8_t verdict = ClassVerdicts(pod)[feasibility_.node_class(node)];
  if (verdict < 0 || Excluded(node)) return true;
  if (state_.device_room(node) < cluster_.DeviceUnits(pod, node)) return true;  // J is empty
  if (!device_binpack_ && std::floor(free) >= cluster_.pod(pod).gpu_devices) return true;
  DeviceFit& fit = device_fit_;
  ChooseDevices(state_, pod, node, device_binpack_, /*with_devices=*/false, &device_scratch_, &fit);
  if (!fit.fits) return true;
  const double score =
      SharingScore(node, fit.joinable, fit.choice.now, verdict > 0, search.min, search.max);
  if (Better(score, node, search.best_score, search.best.node)) {
    search.best_score = score;
    search.best.node = node;
    search.best.fits_now = fit.choice.now;
  }
  return true;
}

void Placer::SearchJoinable(SharingSearch& search) {
  // Overlay: the joinable entries are those of the freeze (WorkingState::FreezeIndex), so a stale
  // node's may be out of date. Each stale node is weighed on its own, with the best bands it
  // could reach, and passed over in the order and the tree: a node is taken by its score, not by
  // when it is weighed, and a best found sooner only passes over more nodes.
  const double top_bands = device_binpack_ ? 200 + 100 + 50 : 100 + 50;
  // A node without a device the pod could join (J empty) is not weighed here; most stale nodes
  // have no room on an active device at all.
  const auto weigh_stale = [&](int node) {
    const int64_t room = state_.device_room(node);
    if (room > 0 && room >= cluster_.DeviceUnits(search.pod, node)) {
      WeighJoinable(search, node, top_bands);
    }
  };
  if (!device_binpack_) {
    if (overlay_ != nullptr) {
      for (int node : stale_list_) weigh_stale(node);
    }
    for (const auto& entry : state_.joinable_nodes()) {
      if (Stale(entry.second)) continue;
      if (!WeighJoinable(search, entry.second, 100 + 50)) break;
    }
    return;
  }
  if (overlay_ == nullptr) {
    WalkJoinable(search);
    return;
  }
  // A try re-places the same victims again and again from the same starting state: the tree's
  // best for the pod is kept, and only the nodes stale now or when it was found are weighed.
  if (joinable_answers_.empty()) joinable_answers_.resize(cluster_.num_pods());
  JoinableAnswer& answer = joinable_answers_[search.pod];
  const bool kept = answer.known && answer.generation == state_.base_generation() &&
                    answer.min == search.min && answer.max == search.max &&
                    answer.excluded == excluded_ &&
                    (answer.best.node < 0 || !Stale(answer.best.node));
  if (!kept) {
    SharingSearch tree;
    tree.pod = search.pod;
    tree.min = search.min;
    tree.max = search.max;
    WalkJoinable(tree);
    answer.known = true;
    answer.generation = state_.base_generation();
    answer.min = search.min;
    answer.max = search.max;
    answer.excluded = excluded_;
    answer.unranked = stale_list_;  // weighed below, as stale
    answer.best = tree.best;
    answer.score = tree.best_score;
  }
  if (answer.best.node >= 0 &&
      Better(answer.score, answer.best.node, search.best_score, search.best.node)) {
    search.best_score = answer.score;
    search.best.node = answer.best.node;
    search.best.fits_now = answer.best.fits_now;
  }
  for (int node : stale_list_) weigh_stale(node);
  if (kept) {
    for (int node : answer.unranked) {
      if (!Stale(node)) weigh_stale(node);
    }
  }
}

void Placer::WalkJoinable(SharingSearch& search) {
  // The tree finds, in placement order, the nodes where the pod may join a device (now in the
  // first pass); a fit now in the sharing band beats any fit once releasing pods are gone.
  const CapacityTree& tree = state_.joinable_tree();
  const double* requests = cluster_.node_requests(search.pod);
  const ClusterPod& info = cluster_.pod(search.pod);
  device_request_.assign(requests, requests + cluster_.num_node_resources());
  device_request_[cluster_.node_gpu()] = info.gpu_devices;  // d devices
  device_request_.push_back(SmallestShare(search.pod));
  device_request_.push_back(static_cast<double>(info.gpu_memory));  // 0: a fraction pod
  CapacityTree::Walk walk;
  for (bool now : {true, false}) {
    CapacityTree::Found found =
        tree.FindFirst(-kInfinity, -1, kInfinity, device_request_.data(), now, &walk);
    while (found.slot >= 0) {
      const int node = tree.member(found.slot);
      if (Stale(node)) {  // weighed on its own; its key is the freeze's
        found = tree.FindNext(&walk);
        continue;
      }
      const double top_bands = 200 + (now ? 100 : 0) + 50;
      if (!WeighJoinable(search, node, top_bands)) break;
      // The nodes left with this key come after `node` and score at most what this key allows in
      // the best bands: when that does not exceed a best at or before `node`, none of them wins
      // (a tie goes to the smaller node), and the search goes on at the next key.
      if (search.best.node >= 0 && search.best.node <= node &&
          top_bands + SharingPlacement(search, node) <= search.best_score) {
        found = tree.FindFirst(found.key, std::numeric_limits<int>::max(), kInfinity,
                               device_request_.data(), now, &walk);
      } else {
        found = tree.FindNext(&walk);
      }
    }
    if (search.best.node >= 0 && search.best.fits_now) break;
  }
}

void Placer::SearchWholeGpus(SharingSearch& search, const std::vector<BandGroup>& groups) {
  const int gpu = cluster_.node_gpu();
  const ClusterPod& info = cluster_.pod(search.pod);
  virtual_requests_.assign(cluster_.node_requests(search.pod),
                           cluster_.node_requests(search.pod) + cluster_.num_node_resources());
  virtual_requests_[gpu] = info.gpu_devices;
  const std::vector<int> kept = excluded_;
  // A memory pod cannot use a node whose devices are too small or of unknown memory: such a
  // node found is passed over and the search runs again without it.
  for (bool searching = true; searching;) {
    searching = false;
    bool found = false;
    for (bool now : {true, false}) {
      for (size_t g = 0; g < groups.size() && !found; ++g) {
        const Candidate candidate =
            SearchGroup(search.pod, static_cast<int>(g), groups[g], virtual_requests_.data(), gpu,
                        now, search.min, search.max);
        if (candidate.node < 0) continue;
        found = true;
        const double memory = cluster_.node(candidate.node).node->gpu_device_memory;
        if (info.gpu_memory > 0 && !(memory >= static_cast<double>(info.gpu_memory))) {
          excluded_.insert(std::upper_bound(excluded_.begin(), excluded_.end(), candidate.node),
                           candidate.node);
          searching = true;
          break;
        }
        const double score =
            SharingScore(candidate.node, false, now, groups[g].band >= 50, search.min, search.max);
        if (Better(score, candidate.node, search.best_score, search.best.node)) {
          search.best_score = score;
          search.best.node = candidate.node;
          search.best.fits_now = now;
        }
      }
      if (found) break;
    }
  }
  excluded_ = kept;
}

NodeChoice Placer::ChooseSharing(int pod) {
  const int gpu = cluster_.node_gpu();
  if (gpu < 0) return NodeChoice{};  // no node has GPUs: no device exists or can open
  if (reference_) return ChooseSharingByScan(pod);
  const std::vector<BandGroup>& groups = Bands(pod);
  SharingSearch search;
  search.pod = pod;
  if (!index_.spread()) KeyRange(BandsSlot(pod), groups, gpu, &search.min, &search.max);
  // 1. Where the device choice can differ from a pod asking d whole GPUs (and its other
  // requests): nodes with a joinable device. Under BINPACK they form the sharing band, above
  // every other node; under SPREAD new devices come first, so only nodes with fewer than d whole
  // GPUs free differ (a pod asking d whole GPUs fits none of them). The nodes come in placement
  // order: once even the best bands cannot lift a node above the best found, none after can.
  SearchJoinable(search);
  // 2. Elsewhere the pod takes d new devices, as a pod asking d whole GPUs takes the node's pool:
  // the trees find the best such node. Under BINPACK a node of step 1 is better still.
  if (!(device_binpack_ && search.best.node >= 0)) SearchWholeGpus(search, groups);
  NodeChoice& best = search.best;
  if (best.node >= 0) {
    ChooseDevices(state_, pod, best.node, device_binpack_, /*with_devices=*/true, &device_scratch_,
                  &device_fit_);
    best.devices = device_fit_.choice;
  }
  return best;
}

NodeChoice Placer::Choose(int pod) {
  // A resource outside R_n is 0 on every node for the whole cycle: such a pod fits nowhere.
  if (cluster_.pod(pod).requests_off_nodes) return NodeChoice{};
  if (overlay_ != nullptr) RefreshStale();
  ExcludeGroupNodes(pod);
  if (cluster_.pod(pod).shares()) return ChooseSharing(pod);
  const std::vector<BandGroup>& groups = Bands(pod);
  const double* requests = cluster_.node_requests(pod);
  const int resource = cluster_.pod(pod).requests_gpu ? cluster_.node_gpu() : cluster_.node_cpu();
  double min = kInfinity;
  double max = -kInfinity;
  if (!index_.spread()) KeyRange(BandsSlot(pod), groups, resource, &min, &max);
  for (bool now : {true, false}) {
    for (size_t g = 0; g < groups.size(); ++g) {
      const Candidate best =
          SearchGroup(pod, static_cast<int>(g), groups[g], requests, resource, now, min, max);
      if (best.node >= 0) return NodeChoice{best.node, now, {}};
    }
  }
  return NodeChoice{};
}

int64_t PlacementWork(const Cluster& cluster, int group) {
  return 1 + cluster.tree().entry(cluster.group(group).queue).depth;
}

int PlaceUnit(Placer& placer, WorkingState& state, const Unit& unit, bool all_pipelined,
              CancelPoll* poll) {
  int placed = 0;
  const int64_t work =
      unit.pods.empty() ? 1
                        : PlacementWork(state.cluster(), state.cluster().pod(unit.pods[0]).group);
  for (int pod : unit.pods) {
    if (poll != nullptr && poll->Tick(work)) break;
    const NodeChoice choice = placer.Choose(pod);
    if (choice.node < 0) break;
    state.Bind(pod, choice.node, all_pipelined || !choice.fits_now, &choice.devices);
    ++placed;
  }
  return placed;
}

}  // namespace arbiter::kai
