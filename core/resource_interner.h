// ResourceInterner: small integer ids for the resource names of one request, in the order first
// met.
//
// A request repeats the same few resource names in map after map, and a map's keys come in
// bytewise order, so the name after the previous key of the same map is tried first: walking a
// map whose keys match the last one's costs one string compare per entry. Past 16 names a hash
// index takes over from the linear search.
//
// The interner keeps pointers to the names it was given, not copies: they must outlive it (they
// are the keys of the snapshot being read). Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/resources.h"

namespace arbiter {

class ResourceInterner {
 public:
  // The id of `name` (new names get the next id). `hint` is the caller's cursor for one map:
  // start it at 0 for each map and pass it to every call for that map's keys.
  int Intern(const std::string& name, int& hint) {
    const int n = static_cast<int>(names_.size());
    if (hint < n && *names_[hint] == name) return hint++;
    const int id = FindOrAdd(name);
    hint = id + 1;
    return id;
  }
  // A temporary (a literal's std::string among them) would leave a dangling pointer behind.
  int Intern(std::string&& name, int& hint) = delete;

  // The id of `name`, or -1 when it was never interned; `hint` as for Intern.
  int Find(const std::string& name, int& hint) const {
    const int n = static_cast<int>(names_.size());
    if (hint < n && *names_[hint] == name) return hint++;
    const int id = FindExisting(name);
    if (id >= 0) hint = id + 1;
    return id;
  }

  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int id) const { return *names_[id]; }

  // The names sorted bytewise, and each id's position among them in `position`.
  ResourceSet Sorted(std::vector<int>& position) const;

 private:
  int FindOrAdd(const std::string& name);
  int FindExisting(const std::string& name) const;

  static constexpr int kLinearLimit = 16;
  std::vector<const std::string*> names_;              // by id; point at the caller's strings
  absl::flat_hash_map<absl::string_view, int> index_;  // filled past kLinearLimit names
};

}  // namespace arbiter
