// The block-skip merge, written once over a block comparator B (docs/architecture.md, "Habits":
// kernels written once) and included by one .cpp per instruction set. B provides kWidth and
// any_equal(a, b): whether some value of a[0..kWidth) equals some value of b[0..kWidth). The walk
// is the reference design's JaccardTurbo with an exact prefilter: a block pair without a common
// value advances the block whose last value is smaller by kWidth (none of its values can match
// anything later); otherwise kWidth steps of the classical merge run. s counts the values passed
// without a match; the abort test runs after each block, and the tail (fewer than kWidth values
// left on a side) is merged without it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "internal/sorted_merge.h"

namespace neardup::internal {

template <class B>
long jaccard_block(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  constexpr size_t W = B::kWidth;
  size_t i = 0, j = 0;
  long common = 0, s = 0;
  while (i + W <= la && j + W <= lb) {
    if (B::any_equal(a + i, b + j)) {
      for (size_t step = 0; step < W; ++step) merge_step(a, b, i, j, common, s);
    } else {
      if (a[i + W - 1] < b[j + W - 1]) {
        i += W;
      } else {
        j += W;
      }
      s += static_cast<long>(W);
    }
    if (s > smax) return -1;
  }
  return common + count_common(a, la, b, lb, i, j);
}

}  // namespace neardup::internal
