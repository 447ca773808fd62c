// Sets stored as their differences from a pivot set, so that the overlap of two near-copies of
// one text is counted on short lists instead of a merge of the whole sets. With Dx = p \ x (what x
// lacks of the pivot p) and Ax = x \ p (what x adds to it), x = (p \ Dx) + Ax and Ax lies outside
// p, so x & y = (p \ (Dx + Dy)) + (Ax & Ay), and
//   |x & y| = |p| - |Dx| - |Dy| + |Dx & Dy| + |Ax & Ay|.
// Near-copies (a licence in thousands of files, a page crawled many times) differ from a pivot of
// their family in a fraction of their values, so these lists are short where x and y are long.
// The exact join (setjoin.cpp) stores its members so, over their shared ranks; any pivot gives
// the same counts. Bucket verification counts a small bucket's pairs so against the bucket's
// first document (bucket_verify.cpp, StarDeltas).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace neardup::internal {

/// A member is stored against a pivot when their differences are at most 1/kDeltaShare of its
/// length: a pair of such members then costs at most about half of a merge of one of them.
inline constexpr size_t kDeltaShare = 4;

/// The differences of sorted, distinct x and p: d gets p's values x lacks, a gets x's values p
/// lacks (both sorted); false, with d and a unfinished, once there are more than `budget` in all.
template <class T>
bool differences_within(std::span<const T> x, std::span<const T> p, size_t budget, std::vector<T>& d, std::vector<T>& a) {
  d.clear();
  a.clear();
  size_t i = 0, j = 0;
  while (i < x.size() && j < p.size()) {
    if (x[i] == p[j]) {
      ++i, ++j;
      continue;
    }
    if (x[i] < p[j])
      a.push_back(x[i++]);
    else
      d.push_back(p[j++]);
    if (a.size() + d.size() > budget) return false;
  }
  if (a.size() + d.size() + (x.size() - i) + (p.size() - j) > budget) return false;
  a.insert(a.end(), x.begin() + static_cast<ptrdiff_t>(i), x.end());
  d.insert(d.end(), p.begin() + static_cast<ptrdiff_t>(j), p.end());
  return true;
}

/// |x & y| from x's and y's differences from one pivot of `pivot_len` values (removed dx, dy;
/// added ax, ay); count(u, v) counts the common values of two sorted lists.
template <class T, class Count>
long delta_common(std::span<const T> dx, std::span<const T> ax, std::span<const T> dy, std::span<const T> ay, size_t pivot_len,
                  Count&& count) noexcept {
  return static_cast<long>(pivot_len) - static_cast<long>(dx.size() + dy.size()) + count(dx, dy) + count(ax, ay);
}

/// Members' differences from their pivots: member m's removed values (its pivot's values it
/// lacks), then its added ones, in one array.
template <class T>
class DeltaStore {
 public:
  static constexpr uint32_t kNoPivot = UINT32_MAX;

  explicit DeltaStore(size_t n = 0) : pivot_(n, kNoPivot), removed_(n, 0), added_(n, 0), at_(n, 0) {}

  /// Member m (once) is stored against `pivot` (itself for a pivot, with no differences).
  void add(uint32_t m, uint32_t pivot, std::span<const T> removed, std::span<const T> added) {
    pivot_[m] = pivot;
    at_[m] = values_.size();
    removed_[m] = static_cast<uint32_t>(removed.size());
    added_[m] = static_cast<uint32_t>(added.size());
    values_.insert(values_.end(), removed.begin(), removed.end());
    values_.insert(values_.end(), added.begin(), added.end());
  }
  /// The members of `part` (numbered from 0 there, their pivots among them) as members first,
  /// first + 1, ...: a store filled by parts of the members, each on a thread of its own.
  void add_part(uint32_t first, const DeltaStore& part) {
    const uint64_t base = values_.size();
    for (size_t m = 0; m < part.pivot_.size(); ++m) {
      if (part.pivot_[m] == kNoPivot) continue;
      pivot_[first + m] = first + part.pivot_[m];
      at_[first + m] = base + part.at_[m];
      removed_[first + m] = part.removed_[m];
      added_[first + m] = part.added_[m];
    }
    values_.insert(values_.end(), part.values_.begin(), part.values_.end());
  }
  uint32_t pivot(uint32_t m) const noexcept { return pivot_[m]; }
  /// How many values member m's differences hold.
  uint64_t size(uint32_t m) const noexcept { return uint64_t{removed_[m]} + added_[m]; }
  /// |x & y| for members x and y of one pivot of `pivot_len` values; count(u, v) counts the
  /// common values of two sorted lists.
  template <class Count>
  long common(uint32_t x, uint32_t y, size_t pivot_len, Count&& count) const noexcept {
    return delta_common(removed(x), added(x), removed(y), added(y), pivot_len, count);
  }

 private:
  std::span<const T> removed(uint32_t m) const noexcept { return {values_.data() + at_[m], removed_[m]}; }
  std::span<const T> added(uint32_t m) const noexcept { return {values_.data() + at_[m] + removed_[m], added_[m]}; }
  std::vector<uint32_t> pivot_, removed_, added_;
  std::vector<uint64_t> at_;
  std::vector<T> values_;
};

}  // namespace neardup::internal
