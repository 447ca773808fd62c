// The classical merge of two sorted arrays of distinct values: the one intersection count behind
// exact Jaccard (shingle sets), fingerprint Jaccard and the tail of the block-skip kernels.
#pragma once

#include <algorithm>
#include <cstddef>

namespace neardup::internal {

/// Starts loading the first 512 bytes of a sorted array that a merge will walk: the hardware
/// prefetcher follows a merge's two streams once they run, but not to the start of the next
/// pair's arrays, each a block of its own (verify_pairs prefetches the pair two ahead).
template <class T>
inline void prefetch_merge_start(const T* a, size_t n) noexcept {
  constexpr size_t kLine = 64 / sizeof(T), kLines = 8;
  for (size_t i = 0; i < std::min(n, kLine * kLines); i += kLine) __builtin_prefetch(a + i);
}

/// The number of values common to a[i..la) and b[j..lb), both sorted ascending and distinct.
template <class T>
inline long count_common(const T* a, size_t la, const T* b, size_t lb, size_t i = 0, size_t j = 0) noexcept {
  // Near-duplicates share long runs: four equal values are taken at once; elsewhere each step
  // is branch-free (which side advances is data, not a guess). 1.2-1.7x the branchy merge's
  // speed below J = 0.95, the same above.
  long common = 0;
  while (i + 4 <= la && j + 4 <= lb) {
    if (a[i] == b[j] && a[i + 1] == b[j + 1] && a[i + 2] == b[j + 2] && a[i + 3] == b[j + 3]) {
      common += 4, i += 4, j += 4;
      continue;
    }
    for (int k = 0; k < 4; ++k) {
      const T x = a[i], y = b[j];
      common += x == y;
      i += x <= y;
      j += y <= x;
    }
  }
  while (i < la && j < lb) {
    const T x = a[i], y = b[j];
    common += x == y;
    i += x <= y;
    j += y <= x;
  }
  return common;
}

/// count_common(a, la, b, lb), or -1 once it is certain to be below `need`: every 64 steps the
/// merge checks that the values left on the shorter side could still bring it up to `need`.
template <class T>
inline long count_common_at_least(const T* a, size_t la, const T* b, size_t lb, long need) noexcept {
  long common = 0;
  size_t i = 0, j = 0;
  while (i + 64 <= la && j + 64 <= lb) {
    if (common + static_cast<long>(std::min(la - i, lb - j)) < need) return -1;
    // At least 64 steps of the branch-free merge (each advances i or j or both) stay within
    // both arrays: each side has 64 values left.
    for (int k = 0; k < 64; ++k) {
      const T x = a[i], y = b[j];
      common += x == y;
      i += x <= y;
      j += y <= x;
    }
  }
  common += count_common(a, la, b, lb, i, j);
  return common >= need ? common : -1;
}

/// One step of the classical merge of a[i..) and b[j..): a common value advances both and counts
/// in `common`; otherwise the smaller side advances and counts in `skipped` (the values passed
/// without a match, which the early abort bounds).
template <class T>
inline void merge_step(const T* a, const T* b, size_t& i, size_t& j, long& common, long& skipped) noexcept {
  if (a[i] == b[j]) {
    ++common, ++i, ++j;
  } else if (a[i] < b[j]) {
    ++i, ++skipped;
  } else {
    ++j, ++skipped;
  }
}

}  // namespace neardup::internal
