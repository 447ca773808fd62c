// Compiled with AVX-512 F/BW/DQ/VL; called only when the CPU has them.
#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "kernels/jaccard_block-inl.h"
#include "kernels/jaccard_kernels.h"
#include "kernels/join_loops-inl.h"
#include "kernels/set_merge-inl.h"

namespace neardup::internal {
namespace {

// Which values of a[0..W) equal some value of b[0..W), W = 64 / sizeof(T) values of 32 or 64
// bits: a against each rotation of b (valign by 0..W-1), the compares OR-ed into one mask.
template <class T, int... R>
unsigned equal_in_rotations(const T* a, const T* b, std::integer_sequence<int, R...>) noexcept {
  const __m512i va = _mm512_loadu_si512(a), vb = _mm512_loadu_si512(b);
  if constexpr (sizeof(T) == 4)
    return (_mm512_cmpeq_epi32_mask(va, _mm512_alignr_epi32(vb, vb, R)) | ...);
  else
    return (_mm512_cmpeq_epi64_mask(va, _mm512_alignr_epi64(vb, vb, R)) | ...);
}
template <class T>
unsigned equal_in_rotations(const T* a, const T* b) noexcept {
  return equal_in_rotations(a, b, std::make_integer_sequence<int, 64 / sizeof(T)>{});
}

// 16 x 16 of the 32-bit fingerprint values (jaccard_block-inl.h): whether any pair is equal.
struct Avx512Block {
  static constexpr size_t kWidth = 16;
  static bool any_equal(const uint32_t* a, const uint32_t* b) noexcept { return equal_in_rotations(a, b) != 0; }
};

// 8 x 8 of the 64-bit set values (set_merge-inl.h): how many of a's are in b's block.
struct Avx512SetBlock {
  static constexpr size_t kWidth = 8;
  static long common(const uint64_t* a, const uint64_t* b) noexcept { return __builtin_popcount(equal_in_rotations(a, b)); }
};

}  // namespace

size_t unmarked_members_avx512(const uint32_t* members, size_t n, uint32_t x, uint32_t* mark, uint32_t* found) noexcept {
  const __m512i vx = _mm512_set1_epi32(static_cast<int>(x));
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  size_t j = 0, k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512i y = _mm512_loadu_si512(members + k);
    const __m512i marked = _mm512_i32gather_epi32(y, mark, 4);
    const __mmask16 fresh = _mm512_cmpneq_epi32_mask(marked, vx) & _mm512_cmpneq_epi32_mask(y, vx);
    if (fresh == 0) continue;
    // The members of one list are distinct: the scatter writes each place once.
    _mm512_mask_i32scatter_epi32(mark, fresh, y, vx, 4);
    _mm512_mask_compressstoreu_epi32(found + j, fresh, _mm512_add_epi32(lanes, _mm512_set1_epi32(static_cast<int>(k))));
    j += static_cast<size_t>(__builtin_popcount(fresh));
  }
  return unmarked_members_loop(members, k, n, x, mark, found, j);
}

long jaccard_block_avx512(const uint32_t* a, size_t la, const uint32_t* b, size_t lb, long smax) noexcept {
  return jaccard_block<Avx512Block>(a, la, b, lb, smax);
}

long set_common_at_least_avx512(const uint64_t* a, size_t la, const uint64_t* b, size_t lb, long need) noexcept {
  // Blocks of 8 (the 4-value kernel's walk, set_merge-inl.h), then the tail (fewer than 8
  // values left on a side) to the 4-value kernel from where this walk stopped. On sets of the
  // sizes and similarities an LSH run verifies, 1.04-1.18x the 4-value kernel's speed
  // (BM_SetCommon); broadcasting b's values one by one instead of rotating them was no faster
  // than the 4-value kernel.
  size_t i = 0, j = 0;
  const long common = set_common_blocks<Avx512SetBlock>(a, la, b, lb, need, i, j);
  if (common < 0) return -1;
  const long rest = set_common_at_least_avx2(a + i, la - i, b + j, lb - j, std::max(0L, need - common));
  return rest < 0 ? -1 : common + rest;
}

size_t dense_walk_avx512(const uint64_t* bits, const uint32_t* before, uint32_t lo, uint32_t hi, uint64_t* met, uint32_t* places) noexcept {
  return dense_walk_loop(bits, before, lo, hi, met, places, [&](size_t w, size_t end, size_t j) {
    alignas(64) uint64_t fresh[8];
    for (; w + 8 <= end; w += 8) {
      const __m512i b = _mm512_loadu_si512(bits + w), m = _mm512_loadu_si512(met + w);
      const __m512i f = _mm512_andnot_si512(m, b);
      _mm512_storeu_si512(met + w, _mm512_or_si512(m, b));
      unsigned lanes = _mm512_test_epi64_mask(f, f);
      if (lanes == 0) continue;
      _mm512_store_si512(fresh, f);
      for (; lanes != 0; lanes &= lanes - 1) {
        const unsigned k = static_cast<unsigned>(__builtin_ctz(lanes));
        j = dense_walk_emit(bits, before, w + k, fresh[k], places, j);
      }
    }
    return dense_walk_words(bits, before, w, end, met, places, j);
  });
}

}  // namespace neardup::internal
