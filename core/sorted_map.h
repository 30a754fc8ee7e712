// SortedMap: a string-keyed map stored as one vector of (key, value) pairs in bytewise key order.
//
// The request's resource and label maps hold a handful of entries each (at most
// --max-resource-names, 64 by default, for resources), and a large request holds hundreds of
// thousands of them. A std::map gives every entry its own heap node; a SortedMap gives the whole
// map one allocation (none for short keys beyond it, by the small-string optimisation) and walks
// it as an array. Iteration is in bytewise key order, like std::map's, so every answer built by
// walking a map is unchanged (SEMANTICS.md §0.5).
//
// The interface is the part of std::map that the code uses, with the same meaning, except:
// - insertion and erasure invalidate every iterator and reference into the map (vector rules);
// - the elements are std::pair<std::string, Value>, so a key can be changed through an iterator
//   (don't: the order would break).
// Lookups are binary searches, O(log n); an insertion is O(n) moves, and an insertion after the
// last key (the decoder's case: deterministic serialisation writes keys in order) is O(1).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace arbiter {

template <typename Value>
class SortedMap {
 public:
  using key_type = std::string;
  using mapped_type = Value;
  using value_type = std::pair<std::string, Value>;
  using size_type = size_t;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;
  using reverse_iterator = typename std::vector<value_type>::reverse_iterator;
  using const_reverse_iterator = typename std::vector<value_type>::const_reverse_iterator;

  SortedMap() = default;
  // Like std::map's: when a key repeats, its first entry is kept.
  SortedMap(std::initializer_list<value_type> entries) {
    for (const value_type& entry : entries) emplace(entry.first, entry.second);
  }
  template <typename InputIt>
  SortedMap(InputIt first, InputIt last) {
    for (; first != last; ++first) emplace(first->first, first->second);
  }

  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  const_iterator cbegin() const { return entries_.cbegin(); }
  const_iterator cend() const { return entries_.cend(); }
  reverse_iterator rbegin() { return entries_.rbegin(); }
  reverse_iterator rend() { return entries_.rend(); }
  const_reverse_iterator rbegin() const { return entries_.rbegin(); }
  const_reverse_iterator rend() const { return entries_.rend(); }

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }
  size_t capacity() const { return entries_.capacity(); }
  void reserve(size_t n) { entries_.reserve(n); }

  iterator find(std::string_view key) {
    const iterator it = LowerBound(key);
    return it != entries_.end() && it->first == key ? it : entries_.end();
  }
  const_iterator find(std::string_view key) const {
    return const_cast<SortedMap*>(this)->find(key);
  }
  size_t count(std::string_view key) const { return find(key) != end() ? 1 : 0; }
  bool contains(std::string_view key) const { return find(key) != end(); }

  // Throws std::out_of_range when `key` is absent, as std::map::at does.
  Value& at(std::string_view key) {
    const iterator it = find(key);
    if (it == entries_.end()) throw std::out_of_range("SortedMap::at: no such key");
    return it->second;
  }
  const Value& at(std::string_view key) const { return const_cast<SortedMap*>(this)->at(key); }

  // The value under `key`, inserted value-initialised when absent.
  Value& operator[](std::string_view key) { return TryEmplace(key).first->second; }

  // Inserts (key, value) unless `key` is present; returns where the key is and whether it was
  // inserted.
  template <typename K, typename... Args>
  std::pair<iterator, bool> emplace(K&& key, Args&&... args) {
    std::string owned(std::forward<K>(key));
    const iterator it = LowerBound(owned);
    if (it != entries_.end() && it->first == owned) return {it, false};
    return {entries_.emplace(it, std::piecewise_construct, std::forward_as_tuple(std::move(owned)),
                             std::forward_as_tuple(std::forward<Args>(args)...)),
            true};
  }
  std::pair<iterator, bool> insert(value_type entry) {
    return emplace(std::move(entry.first), std::move(entry.second));
  }
  // The hint is only used to recognise an append after the last key.
  template <typename K, typename... Args>
  iterator emplace_hint(const_iterator hint, K&& key, Args&&... args) {
    if (hint == entries_.cend() &&
        (entries_.empty() || std::string_view(entries_.back().first) < std::string_view(key))) {
      entries_.emplace_back(std::piecewise_construct, std::forward_as_tuple(std::forward<K>(key)),
                            std::forward_as_tuple(std::forward<Args>(args)...));
      return entries_.end() - 1;
    }
    return emplace(std::forward<K>(key), std::forward<Args>(args)...).first;
  }

  size_t erase(std::string_view key) {
    const iterator it = find(key);
    if (it == entries_.end()) return 0;
    entries_.erase(it);
    return 1;
  }
  iterator erase(const_iterator it) { return entries_.erase(it); }

  friend bool operator==(const SortedMap& a, const SortedMap& b) {
    return a.entries_ == b.entries_;
  }
  friend bool operator!=(const SortedMap& a, const SortedMap& b) { return !(a == b); }

 private:
  iterator LowerBound(std::string_view key) {
    return std::lower_bound(entries_.begin(), entries_.end(), key,
                            [](const value_type& entry, std::string_view k) {
                              return std::string_view(entry.first) < k;
                            });
  }
  std::pair<iterator, bool> TryEmplace(std::string_view key) {
    if (entries_.empty() || std::string_view(entries_.back().first) < key) {
      entries_.emplace_back(std::string(key), Value());
      return {entries_.end() - 1, true};
    }
    const iterator it = LowerBound(key);
    if (it != entries_.end() && it->first == key) return {it, false};
    return {entries_.emplace(it, std::string(key), Value()), true};
  }

  std::vector<value_type> entries_;  // ascending by key, keys distinct
};

}  // namespace arbiter
