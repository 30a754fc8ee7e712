#include "core/kueue/flavor_cells.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/echoed_name.h"

namespace arbiter::kueue {
namespace {

const std::string kImplicitFlavor;

int64_t CellKey(int flavor, int resource) {
  return (static_cast<int64_t>(flavor) << 32) | static_cast<uint32_t>(resource);
}

}  // namespace

FlavorCells FlavorCells::Build(const ValidatedSnapshot& request) {
  const Snapshot& snapshot = request.snapshot();
  const ResourceSet& resources = request.resources();
  FlavorCells cells;
  cells.resource_count_ = resources.size();
  cells.flavored_request_ = !snapshot.resource_flavors.empty();
  cells.flavors_.push_back(&kImplicitFlavor);
  for (const ResourceFlavor& flavor : snapshot.resource_flavors) {
    cells.declared_.emplace(std::string_view(flavor.name), &flavor);  // names are unique
  }
  cells.flavor_ids_.emplace(std::string_view(), 0);

  // The declared and stale pairs, as (flavor name, resource) before numbering.
  std::vector<std::pair<const std::string*, int>> named;
  auto add = [&](const std::string& flavor, int resource) {
    if (flavor.empty() || resource < 0) return;  // the implicit flavor's cells exist already
    named.emplace_back(&flavor, resource);
  };
  for (const Queue& queue : snapshot.queues) {
    if (queue.resource_groups.empty()) continue;
    cells.flavored_request_ = true;
    for (const ResourceGroup& group : queue.resource_groups) {
      for (const std::string& name : group.covered_resources) {
        const int r = resources.Find(name);
        for (const FlavorQuotas& flavor : group.flavors) add(flavor.flavor, r);
      }
    }
  }
  // Stale flavors of admitted workloads: charged anyway (§5.8.3), so they need a cell. Only the
  // flavored queues read PodGroup.flavors.
  const QueueTree& tree = request.tree();
  for (size_t g = 0; g < snapshot.pod_groups.size(); ++g) {
    const PodGroup& group = snapshot.pod_groups[g];
    if (!group.admitted || group.flavors.empty()) continue;
    if (tree.queue(request.group_queue(static_cast<int>(g))).resource_groups.empty()) continue;
    for (const PodSetFlavors& pod_set : group.flavors) {
      for (const auto& [resource, flavor] : pod_set.flavors) add(flavor, resources.Find(resource));
    }
  }
  std::sort(named.begin(), named.end(), [](const auto& a, const auto& b) {
    const int order = a.first->compare(*b.first);
    return order != 0 ? order < 0 : a.second < b.second;
  });
  named.erase(std::unique(named.begin(), named.end(),
                          [](const auto& a, const auto& b) {
                            return *a.first == *b.first && a.second == b.second;
                          }),
              named.end());

  cells.cells_.reserve(resources.size() + named.size());
  for (int r = 0; r < resources.size(); ++r) {
    cells.cell_of_.emplace(CellKey(0, r), static_cast<int>(cells.cells_.size()));
    cells.cells_.push_back(Cell{0, r});
  }
  for (const auto& [flavor, resource] : named) {
    auto [it, inserted] = cells.flavor_ids_.emplace(std::string_view(*flavor),
                                                    static_cast<int>(cells.flavors_.size()));
    if (inserted) cells.flavors_.push_back(flavor);
    cells.cell_of_.emplace(CellKey(it->second, resource), static_cast<int>(cells.cells_.size()));
    cells.cells_.push_back(Cell{it->second, resource});
  }
  return cells;
}

int FlavorCells::Find(std::string_view flavor, int resource) const {
  const auto id = flavor_ids_.find(flavor);
  if (id == flavor_ids_.end()) return -1;
  const auto cell = cell_of_.find(CellKey(id->second, resource));
  return cell == cell_of_.end() ? -1 : cell->second;
}

const ResourceFlavor* FlavorCells::Declared(std::string_view flavor) const {
  if (flavor.empty()) return nullptr;
  const auto found = declared_.find(flavor);
  return found == declared_.end() ? nullptr : found->second;
}

std::string CellLabel(const FlavorCells& cells, const ResourceSet& resources, int cell) {
  const std::string resource = CappedName(resources.name(cells.resource(cell)));
  if (cells.flavor(cell).empty()) return resource;
  return absl::StrCat(resource, " in flavor ", CappedName(cells.flavor(cell)));
}

}  // namespace arbiter::kueue
