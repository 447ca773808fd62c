// The block merge of two sorted sets of distinct 64-bit values (Schlegel, Willhalm and Lehner,
// "Fast sorted-set intersection using SIMD instructions", ADMS 2011), written once over a block
// comparator B and included by one .cpp per instruction set (as jaccard_block-inl.h is). B
// provides kWidth and common(a, b): how many of a[0..kWidth) equal a value of b[0..kWidth).
//
// A block of each side is compared all against all, and the block with the smaller last value
// moves on (both when the last values are equal): none of its values can equal a later value of
// the other side. A value common to both is therefore counted in the one step where both its
// blocks are current. The scalar merge takes a step per value, each waiting on the last one's
// compare; here a step takes a block or two.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace neardup::internal {

/// The values common to a[i..la) and b[j..lb) found while both sides have a whole block left,
/// with i and j left where the walk stopped (the tail is the caller's); -1 once fewer than
/// `need` can be common in all (checked every 64 values of the faster side).
template <class B>
long set_common_blocks(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need, size_t& i, size_t& j) noexcept {
  constexpr size_t W = B::kWidth;
  long common = 0;
  while (i + W <= la && j + W <= lb) {
    if (common + static_cast<long>(std::min(la - i, lb - j)) < need) return -1;
    for (size_t step = 0; step < 64 / W && i + W <= la && j + W <= lb; ++step) {
      common += B::common(a + i, b + j);
      const uint64_t amax = a[i + W - 1], bmax = b[j + W - 1];
      i += amax <= bmax ? W : 0;
      j += bmax <= amax ? W : 0;
    }
  }
  return common;
}

}  // namespace neardup::internal
