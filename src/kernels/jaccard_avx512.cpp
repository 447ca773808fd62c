// Compiled with AVX-512 F/BW/DQ/VL; called only when the CPU has them.
#include <immintrin.h>

#include <algorithm>

#include "kernels/jaccard_block-inl.h"
#include "kernels/jaccard_kernels.h"

namespace neardup::internal {
namespace {

// 16 x 16 all-pairs equality: a is compared with the 16 rotations of b, the results OR-ed into
// one mask register.
struct Avx512Block {
  static constexpr size_t kWidth = 16;
  static bool any_equal(const uint32_t* a, const uint32_t* b) noexcept {
    const __m512i va = _mm512_loadu_si512(a);
    const __m512i vb = _mm512_loadu_si512(b);
    __mmask16 m = _mm512_cmpeq_epi32_mask(va, vb);
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 1));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 2));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 3));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 4));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 5));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 6));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 7));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 8));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 9));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 10));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 11));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 12));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 13));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 14));
    m |= _mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, 15));
    return m != 0;
  }
};

}  // namespace

long jaccard_block_avx512(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<Avx512Block>(a, la, b, lb, smax);
}

long set_common_at_least_avx512(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept {
  // The block merge of set_common_at_least_avx2 with blocks of 8: a's 8 values are compared with
  // b's 8 in their 8 rotations (valignq), and the block with the smaller last value moves on
  // (both when the last values are equal). A value common to both is counted in the one step
  // where both its blocks are current. The tail (fewer than 8 values left on a side) goes to the
  // 4-value kernel from where this walk stopped. On sets of the sizes and similarities an LSH run
  // verifies, 1.2x the 4-value kernel's speed (BM_SetCommon); broadcasting b's values one by one
  // instead of rotating them was no faster than the 4-value kernel.
  size_t i = 0, j = 0;
  long common = 0;
  while (i + 8 <= la && j + 8 <= lb) {
    if (common + static_cast<long>(std::min(la - i, lb - j)) < need) return -1;
    for (int step = 0; step < 8 && i + 8 <= la && j + 8 <= lb; ++step) {
      const __m512i va = _mm512_loadu_si512(a + i), vb = _mm512_loadu_si512(b + j);
      __mmask8 m = _mm512_cmpeq_epi64_mask(va, vb);
      m |= _mm512_cmpeq_epi64_mask(va, _mm512_alignr_epi64(vb, vb, 1));
      m |= _mm512_cmpeq_epi64_mask(va, _mm512_alignr_epi64(vb, vb, 2));
      m |= _mm512_cmpeq_epi64_mask(va, _mm512_alignr_epi64(vb, vb, 3));
      m |= _mm512_cmpeq_epi64_mask(va, _mm512_alignr_epi64(vb, vb, 4));
      m |= _mm512_cmpeq_epi64_mask(va, _mm512_alignr_epi64(vb, vb, 5));
      m |= _mm512_cmpeq_epi64_mask(va, _mm512_alignr_epi64(vb, vb, 6));
      m |= _mm512_cmpeq_epi64_mask(va, _mm512_alignr_epi64(vb, vb, 7));
      common += __builtin_popcount(static_cast<unsigned>(m));
      const uint64_t amax = a[i + 7], bmax = b[j + 7];
      i += amax <= bmax ? 8 : 0;
      j += bmax <= amax ? 8 : 0;
    }
  }
  const long rest = set_common_at_least_avx2(a + i, la - i, b + j, lb - j, std::max(0L, need - common));
  return rest < 0 ? -1 : common + rest;
}

}  // namespace neardup::internal
