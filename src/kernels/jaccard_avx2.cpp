// Compiled with -mavx2 only; called only when the CPU has AVX2.
#include <immintrin.h>

#include "kernels/jaccard_block-inl.h"
#include "kernels/jaccard_kernels.h"

namespace neardup::internal {
namespace {

// 8 x 8 all-pairs equality: b is compared in its 4 in-lane rotations, and again with its two
// 128-bit halves swapped, which covers every pairing of the 8 values of a with the 8 of b.
struct Avx2Block {
  static constexpr size_t kWidth = 8;
  static bool any_equal(const uint32_t* a, const uint32_t* b) noexcept {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i vs = _mm256_permute2x128_si256(vb, vb, 0x01);
    __m256i m = _mm256_or_si256(_mm256_cmpeq_epi32(va, vb), _mm256_cmpeq_epi32(va, vs));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vb, 0x39)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vs, 0x39)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vb, 0x4E)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vs, 0x4E)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vb, 0x93)));
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, _mm256_shuffle_epi32(vs, 0x93)));
    return !_mm256_testz_si256(m, m);
  }
};

}  // namespace

long jaccard_block_avx2(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<Avx2Block>(a, la, b, lb, smax);
}

long set_common_at_least_avx2(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept {
  // The block merge of sorted sets (Schlegel, Willhalm and Lehner, "Fast sorted-set intersection
  // using SIMD instructions", ADMS 2011): a block of 4 values of each side is compared all
  // against all (b in its 4 rotations), and the block with the smaller last value moves on (both
  // when the last values are equal): none of its values can equal a later value of the other
  // side. A value common to both is counted in the one step where both its blocks are current.
  // The scalar merge takes a step per value, each waiting on the last one's compare; here a step
  // takes 4 or 8 values.
  size_t i = 0, j = 0;
  long common = 0;
  while (i + 4 <= la && j + 4 <= lb) {
    if (common + static_cast<long>(std::min(la - i, lb - j)) < need) return -1;
    for (int step = 0; step < 16 && i + 4 <= la && j + 4 <= lb; ++step) {
      const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
      const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + j));
      __m256i m = _mm256_or_si256(_mm256_cmpeq_epi64(va, vb), _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x39)));
      m = _mm256_or_si256(m, _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x4E)));
      m = _mm256_or_si256(m, _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64(vb, 0x93)));
      common += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(m))));
      const uint64_t amax = a[i + 3], bmax = b[j + 3];
      i += amax <= bmax ? 4 : 0;
      j += bmax <= amax ? 4 : 0;
    }
  }
  common += count_common(a, la, b, lb, i, j);
  return common >= need ? common : -1;
}

}  // namespace neardup::internal
