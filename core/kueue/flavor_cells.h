// The flavor-resources of a Kueue request (SEMANTICS.md §5.8.1): every quota, usage and capacity
// of the Kueue model is kept per cell, a (flavor, resource) pair, instead of per resource name.
//
// The first |R| cells are the implicit flavor's: cell r is ("", R[r]), so a request without
// flavors has exactly one cell per resource, numbered as R, and every room that works on cells
// gives it today's answer. The declared flavor-resources (each flavor of each resource group, for
// each covered resource) and the stale ones (a flavor an admitted workload still holds but its
// queue no longer lists) follow, in (flavor, resource) order: the cells are in that order as a
// whole, since "" sorts first.
//
// Immutable once built; the request must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/validated_snapshot.h"

namespace arbiter::kueue {

class FlavorCells {
 public:
  FlavorCells() = default;
  static FlavorCells Build(const ValidatedSnapshot& request);

  int size() const { return static_cast<int>(cells_.size()); }
  // |R|: the resource names, and the implicit flavor's cells.
  int resource_count() const { return resource_count_; }
  // Of cell c: its flavor ("" = the implicit flavor) and its resource (an index of R).
  const std::string& flavor(int cell) const { return *flavors_[cells_[cell].flavor]; }
  int resource(int cell) const { return cells_[cell].resource; }
  // The cell of (flavor, resource), -1 when the request has none. "" is the implicit flavor.
  int Find(std::string_view flavor, int resource) const;

  // The ResourceFlavor named `flavor`, null for the implicit flavor and for flavors the request
  // does not declare (both have no labels, taints or tolerations, §0.2).
  const ResourceFlavor* Declared(std::string_view flavor) const;

  // Some cell has a declared flavor: per-name sums (DRS, allocated) must add up flavors.
  bool has_flavors() const { return size() > resource_count_; }
  // §5.8.1: Snapshot.resource_flavors is non-empty or some queue is flavored. Only then does the
  // answer carry Admission.pod_sets and QueueShare.flavor_resources.
  bool flavored_request() const { return flavored_request_; }

 private:
  struct Cell {
    int flavor = 0;  // into flavors_
    int resource = 0;
  };

  int resource_count_ = 0;
  bool flavored_request_ = false;
  std::vector<const std::string*> flavors_;  // by flavor id; [0] is ""; point into the request
  std::vector<Cell> cells_;
  absl::flat_hash_map<std::string_view, int> flavor_ids_;
  absl::flat_hash_map<int64_t, int> cell_of_;  // (flavor id << 32 | resource) -> cell
  absl::flat_hash_map<std::string_view, const ResourceFlavor*> declared_;
};

// How messages name a cell: "cpu" for the implicit flavor, else "cpu in flavor spot".
std::string CellLabel(const FlavorCells& cells, const ResourceSet& resources, int cell);

}  // namespace arbiter::kueue
