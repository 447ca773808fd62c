// Union-find whose representative is always the smallest element of its set: the partition and
// the representatives do not depend on the order in which edges are added. Public, so that the
// drivers (neardup-mpi's components across ranks) join documents as the library does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

namespace neardup {

/// The place of document `x` in the ascending `sorted` (where it would go if absent): its compact
/// id among those a union-find or a clustering covers, when they are not all of the run's.
inline uint32_t place_in(std::span<const uint32_t> sorted, uint32_t x) noexcept {
  return static_cast<uint32_t>(std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin());
}

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), uint32_t{0}); }

  uint32_t find(uint32_t x) noexcept {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];  // path halving
      x = parent_[x];
    }
    return x;
  }
  /// Joins the sets of a and b; returns true if they were different.
  bool unite(uint32_t a, uint32_t b) noexcept {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    if (a < b) parent_[b] = a; else parent_[a] = b;
    return true;
  }
  size_t size() const noexcept { return parent_.size(); }
  /// Every element's representative, the union-find given up (its array is the result). A
  /// parent is always smaller than its child, so in ascending order each parent already points
  /// at its representative: one step per element.
  std::vector<uint32_t> representatives() && {
    for (size_t x = 0; x < parent_.size(); ++x) parent_[x] = parent_[parent_[x]];
    return std::move(parent_);
  }

 private:
  std::vector<uint32_t> parent_;
};

}  // namespace neardup
